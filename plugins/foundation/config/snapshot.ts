// The immutable runtime form of a config: deep-frozen, identified by a content hash
// (a hot reload compares hashes and swaps the whole config).
import { createHash } from 'node:crypto'

/** Freezes `value` and everything reachable from it; returns it. */
export function deepFreeze<T> (value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value)) deepFreeze(child)
  }
  return value
}

/** JSON with object keys sorted, so the hash ignores key order but not array order. */
export function stableStringify (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`
  }
  return typeof value === 'bigint' ? value.toString() : JSON.stringify(value) ?? 'null'
}

/** sha256 (hex) of the expanded, merged, defaults-filled config. */
export function configHash (config: unknown): string {
  return createHash('sha256').update(stableStringify(config)).digest('hex')
}
