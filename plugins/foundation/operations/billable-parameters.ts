// The body parameters that bound a request's worst-case cost are checked before the hold:
// a value the hold could not honestly bound (a string, 2.5, 1e23, -5, 0) would be held as the
// default and forwarded as is, and the upstream could then produce, and bill, far more.
//
// The split, applied to every bound parameter alike:
//   REQUEST_INVALID              the value is not a positive safe integer (wrong JSON type,
//                                fraction, above 2^53 - 1, zero or negative; a multipart field
//                                that is not plain decimal digits). The request is malformed
//                                whatever the model.
//   MODEL_PARAMETER_UNSUPPORTED  a positive integer above the model's declared range: a
//                                max-tokens parameter above its max_output_tokens, an image
//                                count above its max_images (default 10).
// A parameter that is absent or JSON null is the upstream's default and bounded as such.
import { gatewayError } from '../errors/index.js'
import { findModelPart } from '../request/multipart-model.js'
import type { CompiledOperation } from './compile.js'
import type { ParsedBody } from '../shapes/index.js'
import type { ParamPath } from '../shapes/index.js'

/** What a model declares about its range. */
export interface ParameterRange {
  readonly maxOutputTokens: number | undefined
  readonly maxImages: number
}

const DIGITS = /^[0-9]{1,16}$/

/** The value at `path` in a JSON body, or in a multipart text field of a one-step path. */
export function paramValue (body: ParsedBody | undefined, path: ParamPath): unknown {
  if (body === undefined) return undefined
  if (body.kind === 'multipart') return path.keys.length === 1 ? body.summary.fields[path.name] : undefined
  let v: unknown = body.json
  const keys = path.keys
  for (let i = 0; i < keys.length; i++) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined
    v = (v as Record<string, unknown>)[keys[i] as string]
  }
  return v
}

/**
 * A bound parameter of a multipart form must be one plain field: sent twice, or as a file part,
 * the gateway reads one value (busboy: the last plain field) while the provider may read another
 * (the first, or the file's text), and the hold would bound the wrong one. REQUEST_INVALID, as for
 * a second `model` field (the same part check).
 */
function checkFormField (body: ParsedBody | undefined, path: ParamPath): void {
  if (body?.kind !== 'multipart' || path.keys.length !== 1) return
  const { fields, files, boundary } = body.summary
  if (fields[path.name] === undefined && !files.some((f) => f.field === path.name)) return
  findModelPart(body.raw, boundary, fields[path.name], path.name)
}

/** The positive safe integer a parameter holds, undefined when absent; throws REQUEST_INVALID otherwise. */
function positiveInteger (body: ParsedBody | undefined, path: ParamPath): number | undefined {
  checkFormField(body, path)
  const v = paramValue(body, path)
  if (v === undefined || v === null) return undefined
  const n = typeof v === 'string' && body?.kind === 'multipart' && DIGITS.test(v) ? Number(v) : v
  if (typeof n === 'number' && Number.isSafeInteger(n) && n > 0) return n
  throw gatewayError('REQUEST_INVALID', { param: path.name, detail: `"${path.name}" must be a positive integer.` })
}

/**
 * A job's billed units (`bounds.jobUnits`): the product of its parameters, each a positive
 * integer — a JSON number or a string of decimal digits (Sora's `seconds` is the string "12";
 * Google's JSON takes "8" for an integer too) — or its default when absent; 1 for an operation
 * that declares none. A malformed value is REQUEST_INVALID: it would be held as the default and
 * rendered as whatever the provider makes of it.
 */
export function jobUnits (op: Pick<CompiledOperation, 'bounds'>, body: ParsedBody | undefined): number {
  let units = 1
  const all = op.bounds.jobUnits
  for (let i = 0; i < all.length; i++) {
    const unit = all[i] as typeof all[number]
    checkFormField(body, unit.path)
    const v = paramValue(body, unit.path)
    const n = v === undefined || v === null ? unit.default : typeof v === 'string' && DIGITS.test(v) ? Number(v) : v
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0) {
      throw gatewayError('REQUEST_INVALID', { param: unit.path.name, detail: `"${unit.path.name}" must be a positive integer.` })
    }
    units = Math.min(units * n, Number.MAX_SAFE_INTEGER)
  }
  return units
}

/**
 * Throws the catalogue error of the first bound parameter that is malformed or out of the
 * model's range; returns when every one is absent or acceptable. Pure.
 */
export function checkBillableParameters (op: CompiledOperation, model: ParameterRange, body: ParsedBody | undefined): void {
  const { maxTokens, count, countIsImages } = op.bounds
  for (let i = 0; i < maxTokens.length; i++) {
    const path = maxTokens[i] as ParamPath
    const n = positiveInteger(body, path)
    if (n !== undefined && model.maxOutputTokens !== undefined && n > model.maxOutputTokens) {
      throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param: path.name, detail: `"${path.name}" is above this model's limit of ${model.maxOutputTokens}.` })
    }
  }
  for (let i = 0; i < count.length; i++) {
    const path = count[i] as ParamPath
    const n = positiveInteger(body, path)
    if (n !== undefined && countIsImages && n > model.maxImages) {
      throw gatewayError('MODEL_PARAMETER_UNSUPPORTED', { param: path.name, detail: `"${path.name}" is above this model's limit of ${model.maxImages} images.` })
    }
  }
  jobUnits(op, body)
}
