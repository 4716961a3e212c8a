// Labelled counters and histograms whose per-request cost is a number added to a cell: the cell
// of a label set is found once (by object identity, no string is built per request) and the
// Prometheus text is produced only at scrape time, through prom-client's Registry.
//
// prom-client's own `counter.labels(...).inc()` hashes the label values into a string on every
// call; these cells do that once per label set, when the set is first seen.
import type { Registry } from 'prom-client'

type Labels = Record<string, string>

interface MetricValue {
  value: number
  labels: Labels
  metricName?: string
}

/** What prom-client's Registry reads from a metric at scrape time. */
interface ScrapedMetric {
  readonly name: string
  readonly help: string
  readonly type: 'counter' | 'histogram'
  readonly aggregator: 'sum'
  get (): Promise<{ name: string, help: string, type: string, values: MetricValue[], aggregator: 'sum' }>
  reset (): void
}

export interface CounterCell {
  value: number
  readonly labels: Labels
}

/** A counter; `cell(labels)` once per label set, then `cell.value += n` per event. */
export class CellCounter implements ScrapedMetric {
  readonly type = 'counter' as const
  readonly aggregator = 'sum' as const
  private readonly cells: CounterCell[] = []

  constructor (readonly name: string, readonly help: string, registry: Registry) {
    registry.registerMetric(this as never)
  }

  cell (labels: Labels): CounterCell {
    const c: CounterCell = { value: 0, labels: Object.freeze({ ...labels }) }
    this.cells.push(c)
    return c
  }

  async get (): Promise<{ name: string, help: string, type: string, values: MetricValue[], aggregator: 'sum' }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.cells.map((c) => ({ value: c.value, labels: c.labels })) }
  }

  reset (): void {
    for (const c of this.cells) c.value = 0
  }
}

export class HistogramCell {
  readonly counts: Float64Array
  sum = 0
  count = 0

  constructor (readonly bounds: readonly number[], readonly labels: Labels) {
    this.counts = new Float64Array(bounds.length)
  }

  observe (v: number): void {
    const b = this.bounds
    for (let i = 0; i < b.length; i++) {
      if (v <= (b[i] as number)) { (this.counts[i] as number)++; break }
    }
    this.sum += v
    this.count++
  }
}

/** A histogram with fixed bucket bounds; same cell discipline as CellCounter. */
export class CellHistogram implements ScrapedMetric {
  readonly type = 'histogram' as const
  readonly aggregator = 'sum' as const
  private readonly cells: HistogramCell[] = []

  constructor (readonly name: string, readonly help: string, readonly bounds: readonly number[], registry: Registry) {
    registry.registerMetric(this as never)
  }

  cell (labels: Labels): HistogramCell {
    const c = new HistogramCell(this.bounds, Object.freeze({ ...labels }))
    this.cells.push(c)
    return c
  }

  async get (): Promise<{ name: string, help: string, type: string, values: MetricValue[], aggregator: 'sum' }> {
    const values: MetricValue[] = []
    for (const c of this.cells) {
      let cumulative = 0
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += c.counts[i] as number
        values.push({ metricName: `${this.name}_bucket`, labels: { ...c.labels, le: String(this.bounds[i]) }, value: cumulative })
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...c.labels, le: '+Inf' }, value: c.count })
      values.push({ metricName: `${this.name}_sum`, labels: c.labels, value: c.sum })
      values.push({ metricName: `${this.name}_count`, labels: c.labels, value: c.count })
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  reset (): void {
    for (const c of this.cells) {
      c.counts.fill(0)
      c.sum = 0
      c.count = 0
    }
  }
}

/** Two-level cache of cells keyed by objects (route plan, model) and a string (code). */
export class CellIndex<K1 extends object, K2, C> {
  private readonly map = new Map<K1, Map<K2, C>>()
  constructor (private readonly create: (k1: K1, k2: K2) => C) {}

  get (k1: K1, k2: K2): C {
    let inner = this.map.get(k1)
    if (inner === undefined) {
      inner = new Map()
      this.map.set(k1, inner)
    }
    let cell = inner.get(k2)
    if (cell === undefined) {
      cell = this.create(k1, k2)
      inner.set(k2, cell)
    }
    return cell
  }
}
