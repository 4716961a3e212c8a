// Email addresses at sign-up: a pragmatic syntax check (what mail servers accept in practice,
// not every RFC 5322 form), normalised to lower case, and the disposable-domain check against
// the maintained `disposable-email-domains` list plus the operator's own domains.
import { createRequire } from 'node:module'

const MAX_EMAIL = 254
const LOCAL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

/** The normalised address, or null when it is not one. */
export function normaliseEmail (input: unknown): string | null {
  if (typeof input !== 'string') return null
  const email = input.trim().toLowerCase()
  if (email.length === 0 || email.length > MAX_EMAIL) return null
  const at = email.lastIndexOf('@')
  if (at <= 0 || at > 64) return null
  const local = email.slice(0, at)
  const domain = email.slice(at + 1)
  if (!LOCAL.test(local)) return null
  const labels = domain.split('.')
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) return null
  return email
}

/**
 * The mailbox an address delivers to, the subject of per-email budgets: a `+tag` sub-address
 * folds into its base (`ann+x@example.org` → `ann@example.org`), so tags buy no extra mails,
 * guesses or sign-in failures. Accounts keep the address as typed (tags are allowed).
 */
export function mailbox (email: string): string {
  const at = email.lastIndexOf('@')
  const plus = email.indexOf('+')
  return plus > 0 && plus < at ? email.slice(0, plus) + email.slice(at) : email
}

let maintained: ReadonlySet<string> | undefined

/** The maintained list (about 120 000 domains), read once per process. */
function maintainedList (): ReadonlySet<string> {
  if (maintained !== undefined) return maintained
  const require = createRequire(import.meta.url)
  const list = require('disposable-email-domains') as unknown
  if (!Array.isArray(list)) throw new TypeError('disposable-email-domains: expected an array of domains')
  maintained = new Set(list.filter((d): d is string => typeof d === 'string').map((d) => d.toLowerCase()))
  return maintained
}

export class DisposableDomains {
  private readonly listed: ReadonlySet<string>
  private readonly extra: ReadonlySet<string>

  constructor (extra: readonly string[]) {
    this.listed = maintainedList()
    this.extra = new Set(extra.map((d) => d.trim().toLowerCase()))
  }

  /** True for a listed domain or any subdomain of one. */
  has (email: string): boolean {
    let domain = email.slice(email.lastIndexOf('@') + 1)
    for (;;) {
      if (this.listed.has(domain) || this.extra.has(domain)) return true
      const dot = domain.indexOf('.')
      if (dot < 0) return false
      domain = domain.slice(dot + 1)
    }
  }
}
