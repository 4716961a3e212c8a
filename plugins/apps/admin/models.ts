// The model catalogue in the admin API and CLI: every declared model with its configured status,
// the status requests meet and whether its pricing is complete; publishing, pausing, retiring
// and unpublishing store a status in the shared database (plugins/foundation/store/model-status.ts) that
// overrides gateway.yaml's, and every instance meets it within MODEL_STATUS_CACHE_MS.
//
// Every status but draft puts the model in the published catalogue, so it needs complete
// pricing: the same definition `check` applies to gateway.yaml (pricing/completeness.ts).
// Without it, publish, pause and retire are refused with MODEL_PUBLISH_PRICING_REQUIRED (422),
// naming each field at fault. A model gateway.yaml does not declare is MODEL_NOT_FOUND (404).
import type { ModelConfig, ModelStatus } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import { effectiveStatus } from '../../concerns/models/index.js'
import { pricingProblems } from '../../foundation/pricing/completeness.js'
import { createModelStatusStore, type ModelStatusStore, type StoredModelStatus } from '../../foundation/store/model-status.js'
import type { StoreBackend } from '../../foundation/store/types.js'
import type { AdminContext } from '../../concerns/accounts/service.js'
import { type ModelView, type Page, type PricingProblemView, modelView } from '../../concerns/accounts/views.js'
import { operationsTable } from '../../foundation/operations/index.js'

/** What each action stores; `unpublish` takes the model out of the published catalogue. */
export const MODEL_ACTIONS = { publish: 'active', pause: 'paused', retire: 'retired', unpublish: 'draft' } as const satisfies Record<string, ModelStatus>
export type ModelAction = keyof typeof MODEL_ACTIONS

// One prepared store per backend: the admin API and the CLI call these once per operation.
const stores = new WeakMap<StoreBackend, ModelStatusStore>()
function statusStore (ctx: AdminContext): ModelStatusStore {
  let store = stores.get(ctx.store.backend)
  if (store === undefined) {
    store = createModelStatusStore(ctx.store.backend)
    stores.set(ctx.store.backend, store)
  }
  return store
}

function problemsOf (ctx: AdminContext, m: ModelConfig): PricingProblemView[] {
  return pricingProblems(m, operationsTable(ctx.config)).map((p) => ({ field: p.path.join('.'), message: p.message }))
}

function view (ctx: AdminContext, m: ModelConfig, stored: StoredModelStatus | undefined): ModelView {
  const problems = problemsOf(ctx, m)
  return modelView(m, {
    status: effectiveStatus(m.status, stored?.status, problems.length === 0),
    stored: stored ?? null,
    pricingProblems: problems
  })
}

function declared (ctx: AdminContext, id: string): ModelConfig {
  const model = ctx.config.models.find((m) => m.id === id)
  if (model === undefined) throw gatewayError('MODEL_NOT_FOUND', { param: 'model', detail: `${JSON.stringify(id)} is not declared in gateway.yaml.` })
  return model
}

/** Every declared model, drafts included, in gateway.yaml's order. */
export async function listModels (ctx: AdminContext): Promise<Page<ModelView>> {
  const stored = await statusStore(ctx).list()
  return { data: ctx.config.models.map((m) => view(ctx, m, stored.get(m.id))), has_more: false, next_after: null }
}

export async function getModel (ctx: AdminContext, id: string): Promise<ModelView> {
  const model = declared(ctx, id)
  return view(ctx, model, (await statusStore(ctx).list()).get(id))
}

/** Stores the status `action` stands for; refused for a model priced incompletely unless it unpublishes. */
export async function setModelStatus (ctx: AdminContext, id: string, action: ModelAction): Promise<ModelView> {
  const model = declared(ctx, id)
  const status = MODEL_ACTIONS[action]
  const problems = problemsOf(ctx, model)
  if (status !== 'draft' && problems.length > 0) {
    throw gatewayError('MODEL_PUBLISH_PRICING_REQUIRED', {
      param: problems[0]?.field ?? 'pricing',
      detail: `${id} cannot be ${status === 'active' ? 'published' : status} (every status but draft needs complete pricing): ` +
        problems.map((p) => `${p.field}: ${p.message}`).join('; ') + '.'
    })
  }
  await statusStore(ctx).set(id, status, ctx.now())
  return await getModel(ctx, id)
}

/** Drops the stored status: the model meets gateway.yaml's again. */
export async function resetModelStatus (ctx: AdminContext, id: string): Promise<ModelView> {
  declared(ctx, id)
  await statusStore(ctx).clear(id)
  return await getModel(ctx, id)
}
