// The composition root's one list: the concerns of a request, in the order their hooks run in
// every phase. Each is a declaration beside its code (plugins/foundation/pipeline/concern.ts):
// its config checks, its slice of the plan, the routes it adds, its plugin. This list drives the
// config's checks (config.ts), the plan's compile (plan.ts) and the hooks (gatewayPlugins,
// index.ts) alike; a new concern is its folder plus one line here. The host
// (plugins/foundation/pipeline) runs their phases and knows none of them.
import { accessLogConcern } from '../../concerns/access-log/concern.js'
import { admissionConcern } from '../../concerns/admission/concern.js'
import { authConcern } from '../../concerns/auth/concern.js'
import { capsConcern } from '../../concerns/caps/concern.js'
import { idempotencyConcern } from '../../concerns/idempotency/concern.js'
import { jobsConcern } from '../../concerns/jobs/concern.js'
import { limitsConcern } from '../../concerns/limits/concern.js'
import { listingsConcern } from '../../concerns/listings/concern.js'
import { metricsConcern } from '../../concerns/metrics/concern.js'
import { modelsConcern } from '../../concerns/models/concern.js'
import { requestLogConcern } from '../../concerns/request-log/concern.js'
import { upstreamConcern } from '../../concerns/upstream/concern.js'
import { walletConcern } from '../../concerns/wallet/concern.js'
import { featuresConcern, operationsConcern } from '../../foundation/operations/concern.js'
import { requestConcern } from '../../foundation/request/concern.js'

export const CONCERNS = Object.freeze([
  requestConcern,
  // The admin API's model statuses (publish, pause, retire), shared through the store.
  modelsConcern,
  authConcern,
  // After auth (the key's policy), before anything reads the body or holds money.
  limitsConcern,
  capsConcern,
  jobsConcern,
  operationsConcern,
  // After the model is known, before the hold: refusals the request earns by itself.
  admissionConcern,
  // After admission (a tier the model does not serve is refused as such), before the hold.
  featuresConcern,
  // Before the wallet: a duplicate is refused before it holds anything.
  idempotencyConcern,
  walletConcern,
  // Answers the listing routes itself, in place of the upstream (nothing held, nothing sent).
  listingsConcern,
  upstreamConcern,
  requestLogConcern,
  // Observability: listed only when configured (off costs nothing per request).
  metricsConcern,
  accessLogConcern
] as const)
