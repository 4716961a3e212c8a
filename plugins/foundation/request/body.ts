import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ServerConfig } from '../config/types.js'
import { gatewayError, type GatewayError } from '../errors/index.js'
import type { CompiledRoutes } from '../routes/compile.js'
import { BothGuards, JsonDepthGuard, MultipartItemGuard, MultipartPartCounter } from './body-guards.js'
import type { ParsedBody } from '../shapes/index.js'
import { boundaryOf, MultipartLimitError, summariseMultipart, type MultipartLimits } from './multipart.js'
import { findModelPart } from './multipart-model.js'
import { BodyDeadlines, readBody } from './read-body.js'

export function isParsedBody (body: unknown): body is ParsedBody {
  return typeof body === 'object' && body !== null && 'kind' in body && 'raw' in body
}

/** Body caps of one route, by body kind. */
export interface BodyLimits { json: number, multipart: number }

export interface BodyOptions {
  /** Caps of the route a request matched (by Fastify's method and URL pattern). */
  limitsFor (method: string, url: string | undefined): BodyLimits
  jsonMaxDepth: number
  multipart: MultipartLimits
  /** The whole body must arrive within this many ms. */
  requestTimeoutMs: number
}

/**
 * The body bounds of `server` and of each route: a route's `body_limit_bytes` caps every body
 * kind on it; otherwise JSON bodies get `json_body_limit_bytes` (at most `body_limit_bytes`)
 * and uploads `body_limit_bytes`.
 */
export function bodyOptionsOf (server: ServerConfig, routes: CompiledRoutes): BodyOptions {
  // body_limit_bytes is the gateway's cap: a JSON cap set above it does not lift it.
  const defaults: BodyLimits = { json: Math.min(server.json_body_limit_bytes, server.body_limit_bytes), multipart: server.body_limit_bytes }
  // By method, then URL pattern: no key string is built per request (a `${method} ${url}` key
  // was concatenated, flattened and hashed on every body, 1.5 µs at 50 connections).
  const byRoute = new Map<string, Map<string, BodyLimits>>()
  const limitsOf = (own: number | undefined): BodyLimits => own === undefined ? defaults : { json: own, multipart: own }
  for (const spec of routes.fastifyRoutes) {
    const plans = spec.kind === 'plain' ? [spec.plan] : spec.matchers.map((m) => m.plan)
    // Plans behind one wildcard route share it: the largest of their caps applies.
    const limits = plans.map((p) => limitsOf(p.bodyLimitBytes))
    let byUrl = byRoute.get(spec.method)
    if (byUrl === undefined) byRoute.set(spec.method, byUrl = new Map())
    byUrl.set(spec.url, {
      json: Math.max(...limits.map((l) => l.json)),
      multipart: Math.max(...limits.map((l) => l.multipart))
    })
  }
  return {
    limitsFor: (method, url) => (url === undefined ? undefined : byRoute.get(method)?.get(url)) ?? defaults,
    jsonMaxDepth: server.json_max_depth,
    multipart: { parts: server.multipart_max_parts, fields: server.multipart_max_fields, files: server.multipart_max_files },
    requestTimeoutMs: server.request_timeout_ms
  }
}

function limitsOfRequest (opts: BodyOptions, req: FastifyRequest): BodyLimits {
  return opts.limitsFor(req.method, req.routeOptions.url)
}

function contentLength (req: FastifyRequest): string | undefined {
  const v = req.headers['content-length']
  return typeof v === 'string' ? v : undefined
}

/**
 * Keeps the exact request bytes (they are forwarded untouched) next to what the gateway reads of them.
 * Any other Content-Type is refused by Fastify and mapped to REQUEST_MEDIA_TYPE_UNSUPPORTED.
 * Bodies are read under the bounds of read-body.ts: a hostile one is refused while it arrives.
 */
export function registerBodyParsers (app: FastifyInstance, opts: BodyOptions): void {
  const deadlines = new BodyDeadlines(opts.requestTimeoutMs)
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', (req, payload, done) => {
    const guard = new JsonDepthGuard(opts.jsonMaxDepth)
    readBody(payload, contentLength(req), {
      limit: limitsOfRequest(opts, req).json,
      guard: {
        check: guard,
        error: () => gatewayError('REQUEST_INVALID', { closeConnection: true, detail: `The JSON body nests deeper than ${opts.jsonMaxDepth} levels.` })
      }
    }, deadlines).then((buf) => {
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
    }, (err: Error) => { done(err, undefined) })
  })
  app.addContentTypeParser('multipart/form-data', (req, payload, done) => {
    const contentType = req.headers['content-type'] ?? ''
    const boundary = boundaryOf(contentType)
    if (!boundary) {
      done(gatewayError('REQUEST_INVALID', { detail: 'The multipart body is malformed.' }), undefined)
      return
    }
    const counter = new MultipartPartCounter(boundary, opts.multipart.parts)
    const tooManyParts = (): GatewayError => gatewayError('REQUEST_TOO_LARGE', { closeConnection: true, detail: `The multipart body has more than ${opts.multipart.parts} parts.` })
    // The route's per-file caps (item_limits) are checked while the body arrives: an over-cap
    // upload is refused without reading the rest of it.
    const caps = req.gatewayContext?.plan.itemLimits
    const items = caps !== undefined && Object.keys(caps).length > 0 ? new MultipartItemGuard(boundary, caps) : null
    const both = items === null ? null : new BothGuards(counter, items)
    readBody(payload, contentLength(req), {
      limit: limitsOfRequest(opts, req).multipart,
      guard: both === null || items === null
        ? { check: counter, error: tooManyParts }
        : {
            check: both,
            error: () => both.failed === 2
              ? gatewayError('REQUEST_CONTENT_TOO_LARGE', { param: items.field, closeConnection: true, detail: `The ${items.field} file is larger than ${caps?.[items.field] ?? 0} bytes.` })
              : tooManyParts()
          }
    }, deadlines).then((buf) => summariseMultipart(buf, contentType, opts.multipart).then(
      (summary) => {
        // An ambiguous model field is refused here, before any hold or the upstream.
        try {
          findModelPart(buf, summary.boundary, summary.fields.model)
        } catch (err) {
          done(err as Error, undefined)
          return
        }
        done(null, { kind: 'multipart', raw: buf, contentType, summary } satisfies ParsedBody)
      },
      (err: unknown) => {
        done(err instanceof MultipartLimitError
          ? gatewayError('REQUEST_TOO_LARGE', { detail: `The multipart body has more ${err.what} than this gateway accepts.` })
          : gatewayError('REQUEST_INVALID', { detail: 'The multipart body is malformed.' }), undefined)
      }
    ), (err: Error) => { done(err, undefined) })
  })
}
