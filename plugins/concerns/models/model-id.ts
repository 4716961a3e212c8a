import { gatewayError } from '../../foundation/errors/index.js'
import type { ParsedBody } from '../../foundation/shapes/index.js'

/** The requested model id from the body `model` field or the multipart `model` field. */
export function modelFromBody (body: ParsedBody | undefined): string {
  let value: unknown
  if (body?.kind === 'json') value = body.json.model
  else if (body?.kind === 'multipart') value = body.summary.fields.model
  if (value === undefined || value === null || value === '') throw gatewayError('REQUEST_MODEL_REQUIRED', { param: 'model' })
  if (typeof value !== 'string') throw gatewayError('REQUEST_INVALID', { param: 'model', detail: 'The `model` field must be a string.' })
  return value.trim()
}

/** The `{model}` path segment, URL-encoded (`openai%2Fgpt-4o`) or not (`openai/gpt-4o`). */
export function modelFromPath (encoded: string): string {
  let id: string
  try {
    id = decodeURIComponent(encoded)
  } catch {
    throw gatewayError('REQUEST_INVALID', { param: 'model', detail: 'The model path segment is not valid URL encoding.' })
  }
  // Some SDKs prefix the resource name.
  if (id.startsWith('models/')) id = id.slice('models/'.length)
  if (id === '') throw gatewayError('REQUEST_MODEL_REQUIRED', { param: 'model' })
  return id
}
