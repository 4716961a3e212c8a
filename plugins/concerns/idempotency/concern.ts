import { concern } from '../../foundation/pipeline/concern.js'
import type { IdempotencyPlugin } from './index.js'

/**
 * Idempotency keys: a duplicate is replayed or refused before it holds anything. Its plugin is
 * made by the composition root (the jobs service names a job create's key through it).
 */
export const idempotencyConcern = concern({
  name: 'idempotency',
  plugin: async (parts: { readonly idempotency: IdempotencyPlugin }) => parts.idempotency
})
