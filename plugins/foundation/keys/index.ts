// API key material, server secret and invalidation buses: a leaf the store imports (the key
// cache, which reads the store, is auth's: plugins/concerns/auth/key-cache.ts).
export {
  DISPLAY_PREFIX_LENGTH,
  KEY_LENGTH,
  KEY_PREFIX,
  LEGACY_KEY_PREFIX,
  displayPrefix,
  generateKey,
  hasValidChecksum,
  isLegacyKey,
  keyKind,
} from './key-format.js'
export type { KeyKind, RandomBytes } from './key-format.js'
export { KeySealError, MIN_SECRET_LENGTH, lookupHash, openKey, safeEqualHex, sealKey } from './key-crypto.js'
export { SECRET_FILE_NAME, ServerSecretError, resolveServerSecret } from './server-secret.js'
export type { ResolveServerSecretOptions, ResolvedServerSecret } from './server-secret.js'
export { LocalInvalidationBus, parseInvalidationMessage } from './invalidation-bus.js'
export type { InvalidationBus, InvalidationHandler, InvalidationMessage } from './invalidation-bus.js'
export { KEY_INVALIDATION_CHANNEL, RedisInvalidationBus } from './redis-invalidation-bus.js'
export type { RedisInvalidationBusOptions } from './redis-invalidation-bus.js'
