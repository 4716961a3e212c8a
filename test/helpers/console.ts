// Drives the account console over HTTP as a browser would: a cookie jar of one cookie, the
// CSRF token from sign-in, the verification code read from the outbox through the admin API.
// Each client sends its own X-Forwarded-For address (a gateway that trusts 127.0.0.1 as its
// proxy counts each client apart; one that trusts no proxy ignores the header).
import { solveChallenge } from '../../plugins/apps/console/index.js'

export const CONSOLE_API = '/console/v1'

export interface ConsoleClient {
  base: string
  /** The client address it claims through X-Forwarded-For (null: none sent). */
  address: string | null
  /** `gw_console=<token>` or null when signed out. */
  cookie: string | null
  csrf: string | null
  call (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>
  /** A call whose answer must be 2xx: its JSON (null for 204). */
  ok<T = Record<string, unknown>> (method: string, path: string, body?: unknown): Promise<T>
}

let addresses = 0
/** A fresh documentation-range address (198.18.0.0/15) per call. */
export function clientAddress (): string {
  addresses++
  return `198.18.${Math.floor(addresses / 250) % 250}.${(addresses % 250) + 1}`
}

export function consoleClient (base: string, address: string | null = clientAddress()): ConsoleClient {
  const client: ConsoleClient = {
    base,
    address,
    cookie: null,
    csrf: null,
    async call (method, path, body, headers = {}) {
      const res = await fetch(`${base}${CONSOLE_API}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(client.cookie === null ? {} : { cookie: client.cookie }),
          ...(client.csrf === null || method === 'GET' ? {} : { 'x-csrf-token': client.csrf }),
          ...(client.address === null ? {} : { 'x-forwarded-for': client.address }),
          ...headers
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const set = res.headers.get('set-cookie')
      if (set !== null) {
        const value = /^gw_console=([^;]*)/.exec(set)?.[1] ?? ''
        client.cookie = value === '' ? null : `gw_console=${value}`
      }
      return res
    },
    async ok (method, path, body) {
      const res = await client.call(method, path, body)
      const text = await res.text()
      if (res.status >= 300) throw new Error(`console ${method} ${path} answered ${res.status}: ${text}`)
      return (text === '' ? null : JSON.parse(text)) as never
    }
  }
  return client
}

/** The mail the outbox holds for `email`, newest first. */
export async function outbox (base: string, adminToken: string, email: string, limit = 1000): Promise<Array<{ subject: string, body: string }>> {
  const res = await fetch(`${base}/admin/v1/console/outbox?email=${encodeURIComponent(email)}&limit=${limit}`, { headers: { authorization: `Bearer ${adminToken}` } })
  return (await res.json() as { data: Array<{ subject: string, body: string }> }).data
}

/** The newest code (verification or reset) mailed to `email`, read through the admin API's outbox. */
export async function outboxCode (base: string, adminToken: string, email: string): Promise<string> {
  const mails = await outbox(base, adminToken, email, 1)
  const code = /\b(\d{6})\b/.exec(mails[0]?.body ?? '')?.[1]
  if (code === undefined) throw new Error(`no code in the outbox for ${email}: ${JSON.stringify(mails)}`)
  return code
}

let counter = 0
export function uniqueEmail (label = 'user'): string {
  counter++
  return `${label}.${process.pid}.${Date.now().toString(36)}.${counter}@example.org`
}

export const PASSWORD = 'correct horse battery staple'

/**
 * Sign up, verify with the outbox's code and sign in (solving the human check when the client's
 * address has failed sign-ins behind it, as the page does): a client with a live session.
 */
export async function signedInClient (base: string, adminToken: string, email = uniqueEmail()): Promise<ConsoleClient & { email: string, accountId: string }> {
  const c = consoleClient(base)
  await c.ok('POST', '/signup', { email, password: PASSWORD })
  const verified = await c.ok<{ account_id: string }>('POST', '/verify', { email, code: await outboxCode(base, adminToken, email) })
  let res = await c.call('POST', '/signin', { email, password: PASSWORD })
  if (res.status === 400) res = await c.call('POST', '/signin', { email, password: PASSWORD, human_check: await humanCheck(c) })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`console sign-in answered ${res.status}: ${text}`)
  const signin = JSON.parse(text) as { csrf_token: string }
  c.csrf = signin.csrf_token
  return Object.assign(c, { email, accountId: verified.account_id })
}

/** Solves a fresh challenge of the console at `c.base`. */
export async function humanCheck (c: ConsoleClient): Promise<{ challenge: string, solution: string }> {
  const res = await c.call('GET', '/challenge')
  const { challenge, difficulty } = await res.json() as { challenge: string, difficulty: number }
  return { challenge, solution: solveChallenge(challenge, difficulty) }
}
