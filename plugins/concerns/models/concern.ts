import type { GatewayConfig } from '../../foundation/config/types.js'
import { operationsTable } from '../../foundation/operations/index.js'
import { concern } from '../../foundation/pipeline/concern.js'
import { checkPricing } from '../../foundation/pricing/completeness.js'
import type { Store } from '../../foundation/store/types.js'
import { checkAliases } from './aliases.js'
import { compileModelTable, type ModelCatalogue } from './catalogue.js'
import { modelFactWarnings } from './facts-check.js'
import { checkModelMeters } from './meter-check.js'

/** The models: their meters, prices, aliases and facts; the requested model resolved per request. */
export const modelsConcern = concern({
  name: 'models',
  checks: [
    // The models' meters and prices are both checked against the operations table, built once.
    (config: GatewayConfig) => {
      const operations = operationsTable(config)
      return [...checkModelMeters(config, operations), ...checkPricing(config, operations)]
    },
    checkAliases
  ],
  warnings: [modelFactWarnings],
  plan: { slice: 'models', compile: (config) => compileModelTable(config) },
  // The admin API's model statuses (publish, pause, retire), shared through the store.
  plugin: async (parts: { readonly models: ModelCatalogue, readonly services: { readonly store: Pick<Store, 'backend'> } }) => {
    const [{ modelsPlugin }, { createModelStatusStore }] = await Promise.all([import('./index.js'), import('../../foundation/store/model-status.js')])
    return modelsPlugin(parts.models, createModelStatusStore(parts.services.store.backend))
  }
})
