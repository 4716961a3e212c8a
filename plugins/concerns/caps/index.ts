// The platform image pause: the UTC day the config names (`limits.images_paused_on`) or one the
// admin API switched on (stored, so every instance sees it). Key quotas and caps themselves are checked and counted by the wallet
// hold, in the ledger's transaction (plugins/foundation/store/ledger/caps.ts).
import { gatewayError } from '../../foundation/errors/index.js'
import type { RequestContext } from '../../foundation/pipeline/context.js'
import type { GatewayPlugin } from '../../foundation/pipeline/plugin.js'
import { CachedRead } from '../../foundation/store/cached-read.js'
import type { Clock } from '../../foundation/store/clock.js'
import type { ImagePauseStore } from '../../foundation/store/image-pause.js'

/** How long an instance trusts what it read of the pause: a switch reaches every instance within this. */
export const IMAGE_PAUSE_CACHE_MS = 1000
const DAY_MS = 86_400_000

export interface CapsDeps {
  pauses: ImagePauseStore
  clock: Clock
  /** `limits.images_paused_on`: a UTC day the config pauses image generation on. */
  pausedOn?: string | undefined
}

function refuse (now: number): never {
  const end = (Math.floor(now / DAY_MS) + 1) * DAY_MS
  throw gatewayError('LIMIT_IMAGE_PLATFORM_PAUSED', { retryAfterSeconds: Math.max(1, Math.ceil((end - now) / 1000)) })
}

async function admitLater (pending: Promise<boolean>, now: number): Promise<void> {
  if (await pending) refuse(now)
}

/**
 * admit: requests whose operation is metered in images are refused on a UTC day the config or
 * the admin API paused (LIMIT_IMAGE_PLATFORM_PAUSED, 503, Retry-After until 00:00 UTC). Other requests: one
 * property check, or (in a route's chain) no hook at all.
 */
export function capsPlugin (deps: CapsDeps): GatewayPlugin {
  // Synchronous when fresh: image requests wait for the database at most once a second per instance.
  const cache = new CachedRead((day: string) => deps.pauses.isPaused(day), IMAGE_PAUSE_CACHE_MS)
  const configured = deps.pausedOn
  if (configured !== undefined && Number.isNaN(Date.parse(`${configured}T00:00:00.000Z`))) throw new Error(`limits.images_paused_on "${configured}" is not a day`)
  const admitImages = (): Promise<void> | undefined => {
    const now = deps.clock.now().getTime()
    const day = new Date(now).toISOString().slice(0, 10)
    if (day === configured) refuse(now)
    const paused = cache.read(day)
    if (paused === true) refuse(now)
    if (paused === false) return
    return admitLater(paused, now)
  }
  return {
    name: 'caps',
    admit: (ctx: RequestContext) => ctx.plan.op.meter.kind === 'images' ? admitImages() : undefined,
    // Only a route whose operation is metered in images can be paused: the others run no caps hook.
    forRoute: (route) => route.op.meter.kind === 'images' ? { admit: admitImages } : {}
  }
}
