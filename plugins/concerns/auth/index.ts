import { timingSafeEqual } from 'node:crypto'
import { gatewayError } from '../../foundation/errors/index.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { keyKind } from '../../foundation/keys/key-format.js'
import type { CachedKey, KeyCache } from './key-cache.js'
import type { Clock } from '../../foundation/store/clock.js'
import type { Store } from '../../foundation/store/types.js'
import { extractKey, type KeyHeaderRules } from './key-headers.js'

export type { KeyHeaderRules } from './key-headers.js'
export { DEFAULT_KEY_CACHE_MAX, DEFAULT_KEY_CACHE_TTL_MS, KeyCache } from './key-cache.js'
export type { CachedKey, KeyCacheOptions } from './key-cache.js'
export { watchKeyChanges, type KeyChangeWatcher } from './change-watcher.js'

declare module '../../foundation/pipeline/context.js' {
  interface RequestState {
    /** The authenticated key and its account. */
    auth: CachedKey
  }
}

/** The authenticated key and account of a request (set at admission). */
export function authOf (ctx: RequestContext): CachedKey | undefined {
  return ctx.state.auth
}

export interface AuthDeps {
  /** The plan's slice: the headers a key may come in (compileKeyHeaders). */
  keyHeaders: KeyHeaderRules
  store: Store
  cache: KeyCache
  clock: Clock
}

/** The key cache's loader: the key of a lookup hash and its account, from the store (null: no such key). */
export function keyLoader (store: Pick<Store, 'keys' | 'accounts'>): (hash: string) => Promise<CachedKey | null> {
  return async (hash) => {
    const key = await store.keys.findByLookupHash(hash)
    if (!key) return null
    const account = await store.accounts.get(key.accountId)
    return account ? { key, account } : null
  }
}

/** A key a connection presented, and its lookup hash. */
interface PresentedKey { plaintext: Buffer, hash: string }

/**
 * The lookup hash of the key a request presents. A keep-alive connection (an SDK's pool, a load
 * balancer's) sends the same key on every request: the last one a connection presented and its
 * hash are kept while the socket lives (a WeakMap: nothing outlives the connection, and no other
 * connection's requests see it), so the checksum and the HMAC are computed once per connection
 * and key, not once per request. The key is compared in constant time: behind a proxy that
 * pools connections, one connection carries several clients' keys. The cache of key records
 * is still asked on every request, so a revoked key is refused as before.
 */
function presentedKeys (hashKey: (plaintext: string) => string): (socket: object | null | undefined, plaintext: string) => string | null {
  const last = new WeakMap<object, PresentedKey>()
  return (socket, plaintext) => {
    const seen = socket == null ? undefined : last.get(socket)
    const bytes = Buffer.from(plaintext, 'utf8')
    if (seen !== undefined && seen.plaintext.length === bytes.length && timingSafeEqual(seen.plaintext, bytes)) return seen.hash
    // A malformed or mistyped key (keyKind checks an `sk-` key's checksum) is refused without
    // touching the database.
    if (keyKind(plaintext) === null) return null
    const hash = hashKey(plaintext)
    if (socket != null) last.set(socket, { plaintext: bytes, hash })
    return hash
  }
}

/**
 * admit: key headers → key record (cached, no database round trip on the hot path) → key and
 * account state, before the body is read. resolve: the key's allowed models, for the requested
 * model and again for every fallback.
 */
export function authPlugin (deps: AuthDeps): GatewayPlugin {
  const rules = deps.keyHeaders
  const load = keyLoader(deps.store)
  const hashOf = presentedKeys((plaintext) => deps.store.hashKey(plaintext))
  const plugin: GatewayPlugin = {
    name: 'auth',
    async admit (ctx, req) {
      const extracted = extractKey(req.raw.rawHeaders, rules)
      if (!extracted.ok) throw gatewayError(extracted.code)
      const hash = hashOf(req.raw.socket, extracted.key)
      if (hash === null) throw gatewayError('AUTH_INVALID_API_KEY')
      const found = await deps.cache.getOrLoad(hash, load)
      if (!found || found.key.revokedAt !== null) throw gatewayError('AUTH_INVALID_API_KEY')
      if (!found.key.active) throw gatewayError('AUTH_API_KEY_INACTIVE')
      if (found.key.expiresAt !== null && deps.clock.now().getTime() >= found.key.expiresAt.getTime()) throw gatewayError('AUTH_API_KEY_EXPIRED')
      if (found.account.status !== 'active') throw gatewayError('AUTH_ACCOUNT_SUSPENDED')
      ctx.state.auth = found
    },
    resolve (ctx) {
      const auth = ctx.state.auth
      const model = ctx.model
      if (!auth || !model) return
      const allowed = auth.key.allowedModels
      if (allowed && !allowed.includes(model.id)) throw gatewayError('MODEL_ACCESS_DENIED', { param: 'model', detail: 'Refused by the API key\'s allowed models.' })
      const forAccount = auth.account.allowedModels
      if (forAccount && !forAccount.includes(model.id)) throw gatewayError('MODEL_ACCESS_DENIED', { param: 'model', detail: 'Refused by the account\'s allowed models.' })
    },
    // A route that names no model (a job poll or download) has no allowed models to check.
    forRoute: (route) => route.namesModel ? plugin : { admit: plugin.admit }
  }
  return plugin
}
