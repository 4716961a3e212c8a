// FIFO with O(1) push, shift and take-from-front (amortised): an array with a moving
// head, compacted once the consumed prefix outweighs the live part. Array#shift and
// splice(0, n) would copy the whole queue on every batch.
const COMPACT_AFTER = 1024

export class RowQueue<T> {
  #items: Array<T | undefined> = []
  #head = 0

  get length (): number {
    return this.#items.length - this.#head
  }

  push (item: T): void {
    this.#items.push(item)
  }

  shift (): T | undefined {
    if (this.length === 0) return undefined
    const item = this.#items[this.#head]
    this.#items[this.#head] = undefined
    this.#head += 1
    this.#compact()
    return item
  }

  /** Removes and returns up to `n` items from the front. */
  take (n: number): T[] {
    const end = Math.min(this.#items.length, this.#head + n)
    const out = this.#items.slice(this.#head, end) as T[]
    this.#items.fill(undefined, this.#head, end)
    this.#head = end
    this.#compact()
    return out
  }

  takeAll (): T[] {
    return this.take(this.length)
  }

  /** Puts `items` back at the front, in order (a batch whose insert failed). */
  unshiftAll (items: readonly T[]): void {
    if (items.length === 0) return
    if (this.#head >= items.length) {
      this.#head -= items.length
      for (let i = 0; i < items.length; i++) this.#items[this.#head + i] = items[i]
      return
    }
    this.#items = [...items, ...this.#items.slice(this.#head)]
    this.#head = 0
  }

  #compact (): void {
    if (this.#head === this.#items.length) {
      this.#items = []
      this.#head = 0
    } else if (this.#head >= COMPACT_AFTER && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head)
      this.#head = 0
    }
  }
}
