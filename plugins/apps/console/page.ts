// The web page at /console: one HTML file, one script, one stylesheet, read once at
// registration and served from memory with a strict Content-Security-Policy (no inline script
// or style, no third party, no framing). The page holds no secret: it learns its CSRF token
// from GET /console/v1/session, after sign-in, through the HttpOnly session cookie.
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply } from 'fastify'

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'"
].join('; ')

interface Asset { body: Buffer, type: string }

/** The page folder: beside this module in the source tree, or the source's when running from dist/. */
function pageDir (): string {
  for (const candidate of ['./page/', '../../../../plugins/apps/console/page/']) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url))
    if (existsSync(`${dir}index.html`)) return dir
  }
  throw new Error('console: page files not found (plugins/apps/console/page)')
}

export function loadAssets (): Map<string, Asset> {
  const dir = pageDir()
  const read = (name: string, type: string): Asset => ({ body: readFileSync(dir + name), type })
  return new Map([
    ['index.html', read('index.html', 'text/html; charset=utf-8')],
    ['app.js', read('app.js', 'text/javascript; charset=utf-8')],
    ['app.css', read('app.css', 'text/css; charset=utf-8')]
  ])
}

export async function consolePage (app: FastifyInstance): Promise<void> {
  const assets = loadAssets()
  const send = (name: string) => {
    const asset = assets.get(name)
    if (asset === undefined) throw new Error(`console: no asset ${name}`)
    return async (_req: unknown, reply: FastifyReply) => reply
      .header('content-type', asset.type)
      .header('content-security-policy', CONSOLE_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('x-frame-options', 'DENY')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .send(asset.body)
  }
  app.get('/', send('index.html'))
  app.get('/assets/app.js', send('app.js'))
  app.get('/assets/app.css', send('app.css'))
}
