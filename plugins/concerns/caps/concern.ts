import type { GatewayConfig } from '../../foundation/config/types.js'
import { concern } from '../../foundation/pipeline/concern.js'
import type { Clock } from '../../foundation/store/clock.js'
import type { Store } from '../../foundation/store/types.js'

/** The platform's image pause: the config's day, or the admin API's (shared through the store). */
export const capsConcern = concern({
  name: 'caps',
  plugin: async (parts: { readonly plan: { readonly config: Pick<GatewayConfig, 'limits'> }, readonly services: { readonly store: Pick<Store, 'backend'>, readonly clock: Clock } }) => {
    const [{ capsPlugin }, { createImagePauseStore }] = await Promise.all([import('./index.js'), import('../../foundation/store/image-pause.js')])
    return capsPlugin({ pauses: createImagePauseStore(parts.services.store.backend), clock: parts.services.clock, pausedOn: parts.plan.config.limits.images_paused_on })
  }
})
