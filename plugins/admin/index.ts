// The operators' admin API (HTTP) and CLI commands, over one set of service functions.
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
} from './service.js'
export { getModel, listModels, MODEL_ACTIONS, resetModelStatus, setModelStatus, type ModelAction } from './models.js'
export type { AccountView, KeyStatus, KeyView, ModelView, Page, PricingProblemView, RevealedKeyView } from './views.js'
export { accountView, formatMinorUnits, keyView, modelView } from './views.js'
export { KEY_INVALIDATION_CHANNEL } from '../keys/index.js'
export {
  ADMIN_BODY_LIMIT_BYTES,
  ADMIN_PREFIX,
  DEFAULT_PAGE_LIMIT,
  MAX_PAGE_LIMIT,
  MINOR_UNIT_DIGITS,
} from './constants.js'
