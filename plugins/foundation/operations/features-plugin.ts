import { gatewayError } from '../errors/index.js'
import type { RequestContext } from '../pipeline/context.js'
import type { GatewayPlugin } from '../pipeline/plugin.js'
import { countReferencedMedia, type MediaCounts } from '../pricing/url-media.js'
import type { CapEdits } from '../request/uses-caps.js'
import { detectFeatures, modelFeatureRefusal, readsUncountedInput, type FeatureStance, type FeatureUse, type ModelFeatures } from './features.js'
import { capEdits } from './uses-caps.js'
import type { CompiledModel, FeatureUsage } from '../shapes/index.js'

/** Media parts a JSON body references by URL or by uploaded file id, or carries inline (url-media.ts). */
export type ReferencedMedia = MediaCounts

declare module '../pipeline/context.js' {
  interface RequestState {
    /** The features the request uses, read once from its body and query (the same for every model). */
    features: readonly FeatureUse[]
    /** Media the body references, counted once. */
    referencedMedia: ReferencedMedia
    /** The uses caps the hold counts and the request left unset, forwarded (null: none). */
    capEdits: CapEdits | null
  }
}

const NO_MEDIA: ReferencedMedia = Object.freeze({ urls: 0, files: 0, inlineImages: 0, inlineUnbounded: 0 })

/** How a compiled model treats a feature by name (undefined: it does not name it). */
export function modelFeatures (model: Pick<CompiledModel, 'contextWindow' | 'price'>): ModelFeatures {
  return {
    contextWindow: model.contextWindow,
    stance (name): FeatureStance | undefined {
      const p = model.price.features?.get(name)
      if (p === undefined) return undefined
      return p.charge === 'refused' || p.charge === 'allowed' ? p.charge : 'priced'
    }
  }
}

/** Media the body references or carries, counted once; only where the model bills input tokens (nothing else reads it). */
export function referencedMedia (ctx: RequestContext, model: CompiledModel): ReferencedMedia {
  if (ctx.state.referencedMedia !== undefined) return ctx.state.referencedMedia
  const body = ctx.body
  if (body?.kind !== 'json' || model.price.input === undefined) return NO_MEDIA
  const media = countReferencedMedia(body.json)
  ctx.state.referencedMedia = media
  return media
}

/** Media parts whose tokens the body does not bound. */
const unboundedMedia = (m: ReferencedMedia): number => m.urls + m.files + m.inlineUnbounded

/** The body key under which a family sends its parts: what a refusal for its media names. */
function partsParam (ctx: RequestContext): string {
  const json = ctx.body?.kind === 'json' ? ctx.body.json : {}
  return json.messages !== undefined ? 'messages' : json.input !== undefined ? 'input' : 'contents'
}

/**
 * How many times the context window the input the request makes the provider read can reach, or
 * undefined when the body bounds it: 1 for media by reference, inline media whose bytes do not
 * bound its tokens (documents, video, audio) or a feature that fetches input,
 * plus one per use of a feature the provider runs in a loop (it reads the context again after
 * each).
 */
export function inputPasses (uses: readonly FeatureUse[], media: ReferencedMedia): number | undefined {
  let passes = unboundedMedia(media) > 0 ? 1 : 0
  let loops = 0
  for (let i = 0; i < uses.length; i++) {
    const use = uses[i] as FeatureUse
    if (!readsUncountedInput(use)) continue
    passes = 1
    if (use.feature.input === 'context_window_per_use') loops += use.uses
  }
  return passes === 0 ? undefined : passes + loops
}

/** The features as the hold counts them: per-use ones at their cap, the others once. */
export function worstFeatures (uses: readonly FeatureUse[]): Readonly<Record<string, FeatureUsage>> | undefined {
  if (uses.length === 0) return undefined
  const out: Record<string, FeatureUsage> = {}
  for (const { feature, uses: n } of uses) out[feature.name] = { charge: feature.charge, uses: feature.charge === 'per_use' ? n : 1, reported: false }
  return out
}

/**
 * resolve: the features the request uses (tools, service tiers, query values, ...) are each
 * priced by the target model or refused, and input the gateway cannot count has a context
 * window to bound it; checked for every model tried, before anything is held or forwarded.
 * Listed after admission, so a service tier the model does not serve is refused as such first.
 */
export function featuresPlugin (): GatewayPlugin {
  const plugin: GatewayPlugin = {
    name: 'features',
    // A route that names no model (a job poll or download) uses no priced feature.
    forRoute: (route) => route.namesModel ? plugin : {},
    resolve (ctx) {
      const model = ctx.model
      if (model === null) return
      const uses = ctx.state.features ??= detectFeatures(ctx.plan.op.features, ctx.body, ctx.query)
      const refusal = uses.length === 0 ? null : modelFeatureRefusal(uses, modelFeatures(model))
      if (refusal !== null) throw refusal
      if (ctx.state.capEdits === undefined) ctx.state.capEdits = capEdits(ctx.plan.op.features, uses, ctx.body)
      if (model.contextWindow !== undefined) return
      const media = referencedMedia(ctx, model)
      if (unboundedMedia(media) > 0) {
        const param = partsParam(ctx)
        throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param, detail: `"${param}" references media by URL or file id, or carries a document, video or audio, which the gateway cannot count, and this model declares no context window to bound it.` })
      }
    }
  }
  return plugin
}
