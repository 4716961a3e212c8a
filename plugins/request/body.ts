import type { FastifyInstance } from 'fastify'
import { gatewayError } from '../errors/index.js'
import { summariseMultipart, type MultipartSummary } from './multipart.js'
import { findModelPart } from './multipart-model.js'

export type ParsedBody =
  | { kind: 'json', raw: Buffer, json: Record<string, unknown> }
  | { kind: 'multipart', raw: Buffer, contentType: string, summary: MultipartSummary }

export function isParsedBody (body: unknown): body is ParsedBody {
  return typeof body === 'object' && body !== null && 'kind' in body && 'raw' in body
}

/**
 * Keeps the exact request bytes (they are forwarded untouched) next to what the gateway reads of them.
 * Any other Content-Type is refused by Fastify and mapped to REQUEST_MEDIA_TYPE_UNSUPPORTED.
 */
export function registerBodyParsers (app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (_req, raw, done) => {
    const buf = raw as Buffer
    let json: unknown
    try {
      json = JSON.parse(buf.toString('utf8'))
    } catch {
      done(gatewayError('REQUEST_INVALID', { detail: 'The body is not valid JSON.' }), undefined)
      return
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      done(gatewayError('REQUEST_INVALID', { detail: 'The JSON body must be an object.' }), undefined)
      return
    }
    done(null, { kind: 'json', raw: buf, json: json as Record<string, unknown> } satisfies ParsedBody)
  })
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer', bodyLimit }, (req, raw, done) => {
    const buf = raw as Buffer
    const contentType = req.headers['content-type'] ?? ''
    summariseMultipart(buf, contentType).then(
      (summary) => {
        // An ambiguous model field is refused here, before auth, holds or the upstream.
        try {
          findModelPart(buf, summary.boundary, summary.fields.model)
        } catch (err) {
          done(err as Error, undefined)
          return
        }
        done(null, { kind: 'multipart', raw: buf, contentType, summary } satisfies ParsedBody)
      },
      () => done(gatewayError('REQUEST_INVALID', { detail: 'The multipart body is malformed.' }), undefined)
    )
  })
}
