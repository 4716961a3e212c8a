// The three families' model-list formats, from the catalogue's facts. The catalogue holds no
// release dates: `created` is 0 and `created_at` the epoch (the formats require the field).
import type { ListingFormat } from '../config/types.js'
import type { CompiledModel } from '../models/catalogue.js'

/** The provider part of a catalogue id (`openai/gpt-4o` → `openai`), its owner in the OpenAI format. */
const ownerOf = (id: string): string => id.slice(0, Math.max(0, id.indexOf('/')))
/** The name part (`anthropic/claude-sonnet-4` → `claude-sonnet-4`): the display name. */
const nameOf = (id: string): string => id.slice(id.indexOf('/') + 1)
const EPOCH = new Date(0).toISOString()

/** GET /v1/models/{id} (OpenAI): one model object. */
export function openaiModel (model: CompiledModel): Record<string, unknown> {
  return { id: model.id, object: 'model', created: 0, owned_by: ownerOf(model.id) }
}

/** GET /v1/models/{id} (Anthropic, the ModelInfo object). */
export function anthropicModel (model: CompiledModel): Record<string, unknown> {
  return { type: 'model', id: model.id, display_name: nameOf(model.id), created_at: EPOCH }
}

/** GET /v1beta/models/{id} (Google GenAI): the generation methods are the family's actions the model serves. */
export function genaiModel (model: CompiledModel, operations: ReadonlySet<string>): Record<string, unknown> {
  const methods = [...model.operations.keys()].filter((op) => operations.has(op)).map((op) => op.startsWith('genai.') ? op.slice('genai.'.length) : op)
  return {
    name: `models/${model.id}`,
    displayName: nameOf(model.id),
    ...(model.contextWindow === undefined ? {} : { inputTokenLimit: model.contextWindow }),
    ...(model.maxOutputTokens === undefined ? {} : { outputTokenLimit: model.maxOutputTokens }),
    supportedGenerationMethods: methods
  }
}

/** One model in `format`. */
export function oneModel (format: ListingFormat, model: CompiledModel, operations: ReadonlySet<string>): Record<string, unknown> {
  if (format === 'openai') return openaiModel(model)
  if (format === 'anthropic') return anthropicModel(model)
  return genaiModel(model, operations)
}

/** The whole list in `format` (one page: every model the key may use). */
export function modelList (format: ListingFormat, models: readonly CompiledModel[], operations: ReadonlySet<string>): Record<string, unknown> {
  if (format === 'openai') return { object: 'list', data: models.map(openaiModel) }
  if (format === 'anthropic') {
    return { data: models.map(anthropicModel), has_more: false, first_id: models[0]?.id ?? null, last_id: models.at(-1)?.id ?? null }
  }
  return { models: models.map((m) => genaiModel(m, operations)) }
}
