// The three families' model-list formats, from the catalogue's facts, with the paging each SDK
// drives (docs/providers-research.md, "Model listings"). The catalogue holds no release dates:
// `created` is 0 and `created_at` the epoch (the formats require the field).
import type { ListingFormat } from '../../foundation/config/types.js'
import { gatewayError } from '../../foundation/errors/index.js'
import type { CompiledModel } from '../../foundation/shapes/index.js'

/** The provider part of a catalogue id (`openai/gpt-4o` → `openai`), its owner in the OpenAI format. */
const ownerOf = (id: string): string => id.slice(0, Math.max(0, id.indexOf('/')))
/** The name part (`anthropic/claude-sonnet-4` → `claude-sonnet-4`): the display name. */
const nameOf = (id: string): string => id.slice(id.indexOf('/') + 1)
const EPOCH = new Date(0).toISOString()

/** The model's limits under the names a format gives them, only those the catalogue declares. */
function limits (model: CompiledModel, input: string, output: string): Record<string, number> {
  return {
    ...(model.contextWindow === undefined ? {} : { [input]: model.contextWindow }),
    ...(model.maxOutputTokens === undefined ? {} : { [output]: model.maxOutputTokens })
  }
}

/**
 * OpenAI's model object. Its format has no limits; like OpenAI-compatible servers the gateway
 * adds `context_window` and `max_output_tokens` (clients ignore members they do not know).
 */
export function openaiModel (model: CompiledModel): Record<string, unknown> {
  return { id: model.id, object: 'model', created: 0, owned_by: ownerOf(model.id), ...limits(model, 'context_window', 'max_output_tokens') }
}

/** Anthropic's ModelInfo, with its `max_input_tokens` and `max_tokens`. */
export function anthropicModel (model: CompiledModel): Record<string, unknown> {
  return { type: 'model', id: model.id, display_name: nameOf(model.id), created_at: EPOCH, ...limits(model, 'max_input_tokens', 'max_tokens') }
}

/** Google GenAI's Model: the generation methods are the family's actions the model serves. */
export function genaiModel (model: CompiledModel, operations: ReadonlySet<string>): Record<string, unknown> {
  const methods = [...model.operations.keys()].filter((op) => operations.has(op)).map((op) => op.startsWith('genai.') ? op.slice('genai.'.length) : op)
  return { name: `models/${model.id}`, displayName: nameOf(model.id), ...limits(model, 'inputTokenLimit', 'outputTokenLimit'), supportedGenerationMethods: methods }
}

/** One model in `format`. */
export function oneModel (format: ListingFormat, model: CompiledModel, operations: ReadonlySet<string>): Record<string, unknown> {
  if (format === 'openai') return openaiModel(model)
  if (format === 'anthropic') return anthropicModel(model)
  return genaiModel(model, operations)
}

/** A page size from the query: an integer in [1, max], else REQUEST_INVALID naming it. */
function pageSize (query: URLSearchParams, param: string, fallback: number, max: number): number {
  const raw = query.get(param)
  if (raw === null) return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1) throw gatewayError('REQUEST_INVALID', { param, detail: `${param} must be a positive integer.` })
  return Math.min(n, max)
}

/** Where a page starts after (or ends before) the model `id`; an id not listed is REQUEST_INVALID. */
function indexOf (models: readonly CompiledModel[], id: string, param: string): number {
  const at = models.findIndex((m) => m.id === id)
  if (at === -1) throw gatewayError('REQUEST_INVALID', { param, detail: `${param} names no model of this list.` })
  return at
}

/**
 * Anthropic's cursor page: `limit` (default 20, at most 1000), `after_id` or `before_id`; the
 * SDK asks for the next page with `after_id = last_id` while `has_more`.
 */
function anthropicPage (models: readonly CompiledModel[], query: URLSearchParams): Record<string, unknown> {
  const limit = pageSize(query, 'limit', 20, 1000)
  const after = query.get('after_id')
  const before = query.get('before_id')
  let from = 0
  let to = models.length
  if (after !== null) from = indexOf(models, after, 'after_id') + 1
  else if (before !== null) to = indexOf(models, before, 'before_id')
  const start = before !== null && after === null ? Math.max(0, to - limit) : from
  const page = models.slice(start, Math.min(to, start + limit))
  const hasMore = before !== null && after === null ? start > 0 : start + page.length < to
  return { data: page.map(anthropicModel), has_more: hasMore, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null }
}

/**
 * Google's page: `pageSize` (default 50, at most 1000) and `pageToken`, the `nextPageToken` of the
 * page before (the last id listed, base64url); no `nextPageToken` on the last page.
 */
function genaiPage (models: readonly CompiledModel[], query: URLSearchParams, operations: ReadonlySet<string>): Record<string, unknown> {
  const size = pageSize(query, 'pageSize', 50, 1000)
  const token = query.get('pageToken')
  const from = token === null || token === '' ? 0 : indexOf(models, Buffer.from(token, 'base64url').toString('utf8'), 'pageToken') + 1
  const page = models.slice(from, from + size)
  const last = page.at(-1)
  const more = from + page.length < models.length && last !== undefined
  return { models: page.map((m) => genaiModel(m, operations)), ...(more ? { nextPageToken: Buffer.from(last.id, 'utf8').toString('base64url') } : {}) }
}

/** The list in `format`, paged as its SDK asks (OpenAI's list is one page: its SDK asks for no other). */
export function modelList (format: ListingFormat, models: readonly CompiledModel[], operations: ReadonlySet<string>, query: string): Record<string, unknown> {
  const params = new URLSearchParams(query.startsWith('?') ? query.slice(1) : query)
  if (format === 'openai') return { object: 'list', data: models.map(openaiModel) }
  if (format === 'anthropic') return anthropicPage(models, params)
  return genaiPage(models, params, operations)
}
