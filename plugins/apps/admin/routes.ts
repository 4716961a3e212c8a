// The admin HTTP API: an encapsulated Fastify plugin, registered by the server with
// `prefix: '/admin/v1'` when GATEWAY_ADMIN_TOKEN is set. JSON in and out; every error in
// the chat-completions envelope with the spec's error headers.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayConfig } from '../../foundation/config/types.js'
import { type Catalogue, type ErrorCode, classify, compileCatalogue, gatewayError, renderError, toOccurrence } from '../../foundation/errors/index.js'
import type { Clock, Store } from '../../foundation/store/index.js'
import { ADMIN_BODY_LIMIT_BYTES } from './constants.js'
import * as admin from '../../concerns/accounts/service.js'
import { getKeyUsage, resetKeyUsage } from './usage.js'
import { createImagePauseStore } from '../../foundation/store/image-pause.js'
import { imagePauseView } from './image-pause.js'
import { getModel, listModels, MODEL_ACTIONS, type ModelAction, resetModelStatus, setModelStatus } from './models.js'
import type { AdminContext } from '../../concerns/accounts/service.js'
import { ADMIN_SCHEMAS as S, KEY_SCHEMA_CODE, adminValidatorCompiler, schemaRefusal } from './schemas.js'
import { AdminThrottle } from './throttle.js'
import { ADMIN_ACCESS_LOG_MESSAGE, closeIfBodyUnread, schemaEveryRoute } from './route-hooks.js'
import { logRouteCalls } from '../../concerns/access-log/route-calls.js'

export interface AdminRoutesOptions {
  store: Store
  config: GatewayConfig
  /** The bearer token operators send (GATEWAY_ADMIN_TOKEN); no whitespace, at least `config.admin.token_min_length` long. */
  token: string
  /** Failed authentications per client address; default one built from `config.admin`. */
  throttle?: AdminThrottle
  /** The compiled error catalogue; default compiled from `config`. Pass the gateway's to share it. */
  catalogue?: Catalogue
  /** "Now" for key expiry checks and derived key status; default the system clock. */
  clock?: Clock
  /** Writes the gateway's queued request log rows before GET /requests lists them (same process). */
  flushRequestLog?: () => Promise<void>
  /**
   * Routes of later slices (credits, wallet, request log), registered inside this plugin so
   * they get the same token check, JSON parser, error envelope and `Cache-Control: no-store`.
   */
  extraRoutes?: (app: FastifyInstance, ctx: AdminContext) => void | Promise<void>
  /**
   * The config in force, when it can change under the routes (a hot reload): models, tiers and
   * the wallet floor are read from it. Default `config`.
   */
  currentConfig?: () => GatewayConfig
}

interface IdParams {
  id: string
}

type ModelParams = { id: string } | { provider: string, name: string }

const modelIdOf = (p: ModelParams): string => 'id' in p ? p.id : `${p.provider}/${p.name}`

/** Routes that take no body: anything but an empty JSON object is refused (REQUEST_INVALID). */
export const NO_BODY = { schema: { body: { type: ['object', 'null'], additionalProperties: false, maxProperties: 0 } } } as const

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()
const BEARER = /^Bearer +(\S+) *$/i

/** Why `token` may not guard the admin API, or null when it may. Never echoes the token. */
export function adminTokenProblem (token: string, minLength: number): string | null {
  if (!/^\S+$/.test(token)) return 'GATEWAY_ADMIN_TOKEN must not be empty or contain whitespace'
  if (token.length < minLength) {
    return `GATEWAY_ADMIN_TOKEN must be at least ${minLength} characters (got ${token.length}); generate one with: openssl rand -hex 32`
  }
  return null
}

export async function adminRoutes (app: FastifyInstance, opts: AdminRoutesOptions): Promise<void> {
  // A token with whitespace could never be sent as one Bearer credential: refuse it at boot.
  if (typeof opts.token !== 'string' || !/^\S+$/.test(opts.token)) {
    throw new TypeError('adminRoutes: token must be a non-empty string without whitespace')
  }
  const problem = adminTokenProblem(opts.token, opts.config.admin.token_min_length)
  if (problem !== null) throw new TypeError(`adminRoutes: ${problem}`)
  const throttle = opts.throttle ?? new AdminThrottle({
    maxFailures: opts.config.admin.max_failures,
    windowMs: opts.config.admin.failure_window_ms,
    ...(opts.clock ? { clock: opts.clock } : {}),
  })
  const catalogue = opts.catalogue ?? compileCatalogue(opts.config.errors, opts.config.server)
  const ctx = admin.adminContext(opts.store, opts.currentConfig ?? opts.config, opts.clock, opts.flushRequestLog)
  // Digests have equal length whatever was sent, so timingSafeEqual never leaks the token's length.
  const expected = sha256(opts.token)

  const sendError = (req: FastifyRequest, reply: FastifyReply, caught: unknown): FastifyReply => {
    // A body the route's schema refused: a 400 naming the field, in the route's code; a query
    // parameter or a path id: REQUEST_INVALID naming it.
    const context = (caught as { validationContext?: string } | null)?.validationContext
    const routeCode = (req.routeOptions.config as { invalidCode?: ErrorCode } | undefined)?.invalidCode
    const code = context === 'body' && routeCode !== undefined ? routeCode : 'REQUEST_INVALID'
    const err = schemaRefusal(caught, code) ?? caught
    closeIfBodyUnread(req, reply)
    // Only the error itself is logged: never the request's headers or body (token, keys).
    if (classify(err).internal) req.log.error({ err }, 'admin API: unexpected error')
    const rendered = renderError(toOccurrence(err, req.id, catalogue), 'chat', catalogue)
    if (rendered.status === 401) reply.header('www-authenticate', 'Bearer realm="model-gateway admin"')
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body)
  }

  schemaEveryRoute(app)
  // One line per admin call (the audit trail): never a header (the token), a body or an answer.
  logRouteCalls(app, { log: app.log, config: opts.config.observability?.access_log, message: ADMIN_ACCESS_LOG_MESSAGE, ids: true })
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err))
  app.setNotFoundHandler((req, reply) => sendError(req, reply, gatewayError('REQUEST_ROUTE_NOT_FOUND')))

  app.addHook('onRequest', async (req, reply) => {
    // Answers carry keys and account data: no cache may keep any of them, errors included.
    reply.header('cache-control', 'no-store').header('x-request-id', req.id)
    const wait = throttle.retryAfterSeconds(req.ip)
    if (wait > 0) throw gatewayError('LIMIT_RATE_EXCEEDED', { retryAfterSeconds: wait, detail: 'Too many failed admin authentications from this address.' })
    const header = req.headers.authorization
    const bearer = header === undefined ? null : BEARER.exec(header)
    if (!bearer?.[1]) {
      throttle.fail(req.ip)
      throw gatewayError('AUTH_REQUIRED', { detail: 'Send Authorization: Bearer <admin token>.' })
    }
    if (!timingSafeEqual(sha256(bearer[1]), expected)) {
      throttle.fail(req.ip)
      throw gatewayError('AUTH_FORBIDDEN')
    }
    throttle.succeed(req.ip)
  })

  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: ADMIN_BODY_LIMIT_BYTES }, (_req, text, done) => {
    const body = String(text)
    // An empty body (e.g. a bare POST .../revoke with a JSON content type) is no body.
    if (body.trim() === '') {
      done(null, undefined)
      return
    }
    try {
      done(null, JSON.parse(body))
    } catch {
      done(gatewayError('REQUEST_INVALID', { param: 'body', detail: 'The body is not valid JSON.' }), undefined)
    }
  })

  app.setValidatorCompiler(adminValidatorCompiler())
  const keyRoute = { invalidCode: KEY_SCHEMA_CODE }

  app.post('/accounts', { schema: S.createAccount }, async (req, reply) => reply.code(201).send(await admin.createAccount(ctx, req.body)))
  app.get('/accounts', { schema: S.listAccounts }, async (req) => await admin.listAccounts(ctx, req.query))
  app.get<{ Params: IdParams }>('/accounts/:id', { schema: S.accountId }, async (req) => await admin.getAccount(ctx, req.params.id))
  app.patch<{ Params: IdParams }>('/accounts/:id', { schema: S.updateAccount }, async (req) => await admin.updateAccount(ctx, req.params.id, req.body))

  app.post<{ Params: IdParams }>('/accounts/:id/keys', { schema: S.createKey, config: keyRoute }, async (req, reply) =>
    reply.code(201).send(await admin.createKey(ctx, req.params.id, req.body)))
  app.get<{ Params: IdParams }>('/accounts/:id/keys', async (req) => await admin.listKeys(ctx, req.params.id))
  app.post<{ Params: IdParams }>('/accounts/:id/keys/import-legacy', { schema: S.importLegacyKey, config: keyRoute }, async (req, reply) =>
    reply.code(201).send(await admin.importLegacyKey(ctx, req.params.id, req.body)))

  app.get<{ Params: IdParams }>('/keys/:id', async (req) => await admin.getKey(ctx, req.params.id))
  app.patch<{ Params: IdParams }>('/keys/:id', { schema: S.updateKey, config: keyRoute }, async (req) => await admin.updateKey(ctx, req.params.id, req.body))
  app.post<{ Params: IdParams }>('/keys/:id/revoke', async (req) => await admin.revokeKey(ctx, req.params.id))
  app.get<{ Params: IdParams }>('/keys/:id/reveal', async (req) => await admin.revealKey(ctx, req.params.id))
  app.get<{ Params: IdParams }>('/keys/:id/usage', async (req) => await getKeyUsage(ctx, req.params.id))
  app.post<{ Params: IdParams }>('/keys/:id/usage/reset', NO_BODY, async (req) => await resetKeyUsage(ctx, req.params.id))

  const pauses = createImagePauseStore(opts.store.backend)
  const today = (): string => ctx.now().toISOString().slice(0, 10)
  app.get('/images/pause', async () => imagePauseView(today(), await pauses.isPaused(today()), ctx.now()))
  app.post('/images/pause', NO_BODY, async () => {
    await pauses.pause(today(), ctx.now())
    return imagePauseView(today(), true, ctx.now())
  })
  app.delete('/images/pause', async () => {
    await pauses.resume(today())
    return imagePauseView(today(), false, ctx.now())
  })

  // A model id has one slash (`openai/gpt-4o`): it may be sent as two segments or URL-encoded as one.
  app.get('/models', async () => await listModels(ctx))
  for (const [path, schema] of [['/models/:provider/:name', S.modelPath], ['/models/:id', S.modelId]] as const) {
    app.get<{ Params: ModelParams }>(path, { schema }, async (req) => await getModel(ctx, modelIdOf(req.params)))
    for (const action of Object.keys(MODEL_ACTIONS) as ModelAction[]) {
      app.post<{ Params: ModelParams }>(`${path}/${action}`, { schema: { ...schema, body: NO_BODY.schema.body } }, async (req) =>
        await setModelStatus(ctx, modelIdOf(req.params), action))
    }
    app.delete<{ Params: ModelParams }>(`${path}/status`, { schema }, async (req) => await resetModelStatus(ctx, modelIdOf(req.params)))
  }
  app.get('/tiers', async () => admin.listTiers(ctx))

  app.post<{ Params: IdParams }>('/accounts/:id/credits', { schema: S.credit }, async (req) => await admin.creditAccount(ctx, req.params.id, req.body))
  app.get<{ Params: IdParams }>('/accounts/:id/wallet', async (req) => await admin.getWallet(ctx, req.params.id))
  app.get('/requests', { schema: S.listRequests }, async (req) => await admin.listRequests(ctx, req.query))

  await opts.extraRoutes?.(app, ctx)
}
