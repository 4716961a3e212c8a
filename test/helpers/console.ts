// Drives the account console over HTTP as a browser would: a cookie jar of one cookie, the
// CSRF token from sign-in, the verification code read from the outbox through the admin API.
import { solveChallenge } from '../../plugins/console/index.js'

export const CONSOLE_API = '/console/v1'

export interface ConsoleClient {
  base: string
  /** `gw_console=<token>` or null when signed out. */
  cookie: string | null
  csrf: string | null
  call (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>
  /** A call whose answer must be 2xx: its JSON (null for 204). */
  ok<T = Record<string, unknown>> (method: string, path: string, body?: unknown): Promise<T>
}

export function consoleClient (base: string): ConsoleClient {
  const client: ConsoleClient = {
    base,
    cookie: null,
    csrf: null,
    async call (method, path, body, headers = {}) {
      const res = await fetch(`${base}${CONSOLE_API}${path}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(client.cookie === null ? {} : { cookie: client.cookie }),
          ...(client.csrf === null || method === 'GET' ? {} : { 'x-csrf-token': client.csrf }),
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

/** The newest verification code mailed to `email`, read through the admin API's outbox. */
export async function outboxCode (base: string, adminToken: string, email: string): Promise<string> {
  const res = await fetch(`${base}/admin/v1/console/outbox?email=${encodeURIComponent(email)}&limit=1`, { headers: { authorization: `Bearer ${adminToken}` } })
  const body = await res.json() as { data: Array<{ body: string }> }
  const code = /\b(\d{6})\b/.exec(body.data[0]?.body ?? '')?.[1]
  if (code === undefined) throw new Error(`no verification code in the outbox for ${email}: ${JSON.stringify(body)}`)
  return code
}

let counter = 0
export function uniqueEmail (label = 'user'): string {
  counter++
  return `${label}.${process.pid}.${Date.now().toString(36)}.${counter}@example.org`
}

export const PASSWORD = 'correct horse battery staple'

/** Sign up, verify with the outbox's code and sign in: a client with a live session. */
export async function signedInClient (base: string, adminToken: string, email = uniqueEmail()): Promise<ConsoleClient & { email: string, accountId: string }> {
  const c = consoleClient(base)
  const signup = await c.ok<{ account_id: string }>('POST', '/signup', { email, password: PASSWORD })
  await c.ok('POST', '/verify', { email, code: await outboxCode(base, adminToken, email) })
  const signin = await c.ok<{ csrf_token: string }>('POST', '/signin', { email, password: PASSWORD })
  c.csrf = signin.csrf_token
  return Object.assign(c, { email, accountId: signup.account_id })
}

/** Solves a fresh challenge of the console at `c.base`. */
export async function humanCheck (c: ConsoleClient): Promise<{ challenge: string, solution: string }> {
  const res = await c.call('GET', '/challenge')
  const { challenge, difficulty } = await res.json() as { challenge: string, difficulty: number }
  return { challenge, solution: solveChallenge(challenge, difficulty) }
}
