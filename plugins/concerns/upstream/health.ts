// Passive circuit breaking per provider (a pool member): consecutive failures open its
// circuit for a cool-down, during which it is skipped at once; then one request probes it
// (half-open) and closes the circuit on success or opens it again on failure. State lives in
// one mutable object per provider, made at compile time: reading it on a request allocates
// nothing.

export type CircuitState = 'closed' | 'open' | 'half_open'

export interface BreakerSettings {
  /** Consecutive failures that open the circuit; 0 never opens it. */
  readonly failures: number
  readonly cooldownMs: number
}

export class MemberHealth {
  state: CircuitState = 'closed'
  consecutiveFailures = 0
  /** When an open circuit lets its probe through (ms, Date.now()). */
  openUntil = 0
  /** A half-open probe is on its way. */
  probing = false
  /** Counters since start, for the admin view. */
  successes = 0
  failures = 0
  opened = 0
  lastFailure: string | null = null
  lastFailureAt = 0
  /** The last active health check's result (null: none ran). */
  lastCheckOk: boolean | null = null
  lastCheckAt = 0

  constructor (readonly settings: BreakerSettings) {}

  /**
   * Whether a request may be sent now. An open circuit whose cool-down passed lets exactly one
   * request through (the probe) and turns half-open.
   */
  available (now: number): boolean {
    if (this.state === 'closed') return true
    if (this.state === 'open') {
      if (now < this.openUntil) return false
      this.state = 'half_open'
      this.probing = true
      return true
    }
    // half-open: one probe at a time
    if (this.probing) return false
    this.probing = true
    return true
  }

  /** Milliseconds until the circuit lets a probe through (0 when it already would). */
  waitMs (now: number): number {
    return this.state === 'open' ? Math.max(0, this.openUntil - now) : 0
  }

  succeeded (): void {
    this.successes++
    this.consecutiveFailures = 0
    if (this.state !== 'closed') {
      this.state = 'closed'
      this.probing = false
    }
  }

  failed (now: number, why: string): void {
    this.failures++
    this.consecutiveFailures++
    this.lastFailure = why
    this.lastFailureAt = now
    if (this.settings.failures <= 0) return
    if (this.state === 'half_open' || this.consecutiveFailures >= this.settings.failures) {
      if (this.state !== 'open') this.opened++
      this.state = 'open'
      this.probing = false
      this.openUntil = now + this.settings.cooldownMs
    }
  }

  /** An attempt that ended without a verdict (the client left first): a probe slot is freed. */
  released (): void {
    if (this.state === 'half_open') this.probing = false
  }

  view (now: number): MemberHealthView {
    return {
      state: this.state === 'open' && now >= this.openUntil ? 'half_open' : this.state,
      consecutive_failures: this.consecutiveFailures,
      open_for_ms: this.waitMs(now),
      successes: this.successes,
      failures: this.failures,
      times_opened: this.opened,
      last_failure: this.lastFailure,
      last_failure_at: this.lastFailureAt === 0 ? null : new Date(this.lastFailureAt).toISOString(),
      last_check_ok: this.lastCheckOk,
      last_check_at: this.lastCheckAt === 0 ? null : new Date(this.lastCheckAt).toISOString()
    }
  }
}

export interface MemberHealthView {
  state: CircuitState
  consecutive_failures: number
  open_for_ms: number
  successes: number
  failures: number
  times_opened: number
  last_failure: string | null
  last_failure_at: string | null
  last_check_ok: boolean | null
  last_check_at: string | null
}
