import { concern } from '../pipeline/concern.js'
import { checkOperations } from './check.js'
import { compileOperations } from './compile.js'

/** The operations table (built-ins and the config's): meter, job role, bounds, features; the billable parameters checked per request. */
export const operationsConcern = concern({
  name: 'operations',
  checks: [checkOperations],
  plan: { slice: 'operations', compile: (config) => compileOperations(config) },
  plugin: async () => (await import('./plugin.js')).operationsPlugin()
})

/** The priced features a request uses: refused unless its model prices them (after admission, before the hold). */
export const featuresConcern = concern({
  name: 'features',
  plugin: async () => (await import('./features-plugin.js')).featuresPlugin()
})
