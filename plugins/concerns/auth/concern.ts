import { concern } from '../../foundation/pipeline/concern.js'
import type { Clock } from '../../foundation/store/clock.js'
import type { Store } from '../../foundation/store/types.js'
import type { KeyCache } from './key-cache.js'
import { compileKeyHeaders, type KeyHeaderRules } from './key-headers.js'

/** The API key: the headers it may come in, the key and account behind it (cached). */
export const authConcern = concern({
  name: 'auth',
  plan: { slice: 'keyHeaders', compile: (config) => compileKeyHeaders(config.auth.headers) },
  plugin: async (parts: { readonly plan: { readonly keyHeaders: KeyHeaderRules }, readonly services: { readonly store: Store, readonly keyCache: KeyCache, readonly clock: Clock } }) =>
    (await import('./index.js')).authPlugin({ keyHeaders: parts.plan.keyHeaders, store: parts.services.store, cache: parts.services.keyCache, clock: parts.services.clock })
})
