// The operators' admin API (HTTP) and CLI commands, over the account and key service
// (plugins/concerns/accounts/, which the console uses too).
export { adminRoutes, adminTokenProblem, type AdminRoutesOptions } from './routes.js'
export { AdminThrottle, type AdminThrottleOptions } from './throttle.js'
export {
  adminContext,
  createAccount,
  createKey,
  getAccount,
  getKey,
  importLegacyKey,
  listAccounts,
  listKeys,
  revealKey,
  revokeKey,
  updateAccount,
  updateKey,
  type AdminContext,
} from '../../concerns/accounts/index.js'
export { getModel, listModels, MODEL_ACTIONS, resetModelStatus, setModelStatus, type ModelAction } from './models.js'
export type { AccountView, KeyStatus, KeyView, ModelView, Page, PricingProblemView, RevealedKeyView } from '../../concerns/accounts/index.js'
export { accountView, formatMinorUnits, keyView, modelView } from '../../concerns/accounts/index.js'
export { KEY_INVALIDATION_CHANNEL } from '../../foundation/keys/index.js'
export { ADMIN_BODY_LIMIT_BYTES, ADMIN_PREFIX } from './constants.js'
export { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, MINOR_UNIT_DIGITS } from '../../concerns/accounts/index.js'
