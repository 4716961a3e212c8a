// Loading gateway.yaml with every concern's part: config/ loads, validates and runs the
// config's own cross-checks, and imports no concern; this list, beside the plan's compile steps
// (PLAN_STEPS, plan.ts), hands it each concern's check of its own sections and the warnings.
// Every caller that loads a config (serve, hot reload, the CLI, `check`, the package entry)
// loads it through here.
import { configLoader, type ConfigConcerns, type GatewayConfig } from '../../foundation/config/index.js'
import { checkAdmission } from '../../concerns/admission/index.js'
import { checkListings } from '../../concerns/listings/index.js'
import { checkAliases, checkModelMeters, modelFactWarnings } from '../../concerns/models/index.js'
import { checkOperations, operationsTable } from '../../foundation/operations/index.js'
import { checkPricing } from '../../foundation/pricing/index.js'

/** Each concern's check, in order, run after the config's own; then the warnings. */
export const CONFIG_CONCERNS: ConfigConcerns = Object.freeze({
  checks: Object.freeze([
    checkOperations,
    // The models' meters and prices are both checked against the operations table, built once.
    (config: GatewayConfig) => {
      const operations = operationsTable(config)
      return [...checkModelMeters(config, operations), ...checkPricing(config, operations)]
    },
    checkAdmission,
    checkAliases,
    checkListings
  ]),
  warnings: Object.freeze([modelFactWarnings])
})

export const { loadConfig, checkConfig } = configLoader(CONFIG_CONCERNS)
