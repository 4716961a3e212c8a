import type { GatewayConfig } from '../../foundation/config/types.js'
import type { CompiledOperations } from '../../foundation/operations/index.js'
import { concern } from '../../foundation/pipeline/concern.js'
import type { Jobs } from './index.js'
import { compileJobRoutes } from './job-routes.js'

/** Async jobs (video, music): where each kind is polled and downloaded, a job's hold kept until it ends, the watcher. */
export const jobsConcern = concern({
  name: 'jobs',
  plan: { slice: 'jobs', compile: (config, plan: { readonly operations: CompiledOperations }) => compileJobRoutes(config, plan.operations) },
  // The jobs service itself is the composition root's (the wallet and the idempotency concern meet in it).
  plugin: async (parts: { readonly jobs: Jobs, readonly plan: { readonly config: Pick<GatewayConfig, 'jobs'> } }) =>
    (await import('./index.js')).jobsPlugin(parts.jobs, { watch: parts.plan.config.jobs.watcher.enabled })
})
