// The error contract of the spec (Errors): one test per catalogue code the gateway can produce
// today (request path, authentication, wallet, and the admin API in the chat envelope), each
// checking through HTTP the status, the code and its stable reference, the envelope of the
// family that was called (exactly), and every error header. Then what the official SDKs make of
// our envelopes and of the mid-stream `event: error` frame, and a parity test in the style of
// Fastify's errors table: code thrown in plugins/ ⊆ catalogue, and every catalogue entry is
// either produced here or named in `notYetReachable` with the reason.
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { readFileSync } from 'node:fs'
import { Anthropic } from '@anthropic-ai/sdk'
import { ApiError, GoogleGenAI } from '@google/genai'
import { OpenAI } from 'openai'
import t from 'tap'
import { parse } from 'yaml'
import type { ErrorsConfig } from '../plugins/foundation/config/types.js'
import { outcomeObserver, type GatewayPlugin, type Outcome } from '../plugins/apps/gateway/index.js'
import { ManualClock } from './helpers/store.js'
import { replyChunks } from './fixtures/mock-upstream.js'
import { startTestGateway } from './helpers/gateway.js'
import { modelOf, providerOf, writeTestConfig } from './helpers/test-config.js'
import { answerOn, openConnection, requestHead, type RawAnswer } from './helpers/raw-http.js'
import { closedPort, eventually, multipartBody, sseEvents } from './helpers/wire.js'
import { consoleClient, humanCheck, outboxCode, PASSWORD, signedInClient, uniqueEmail } from './helpers/console.js'
import { repoPath, tsSources } from './helpers/paths.js'

/** The assertions these helpers use; both the root `t` and subtests have them. */
type Assert = Pick<typeof t, 'equal' | 'ok' | 'notOk' | 'match' | 'same' | 'strictSame'>
type Family = 'chat' | 'messages' | 'genai'

const { errors: CATALOGUE } = parse(readFileSync(repoPath('config', 'errors.yaml'), 'utf8')) as { errors: ErrorsConfig }
const DOCS = 'https://docs.model-gateway.dev/errors'

interface Contract {
  reference: string
  status: number
  retryable: boolean
  strategy: string
  /** Seconds of `Retry-After` (and `retry.retry_after_seconds`) when the catalogue defines one. */
  retryAfter?: number
}

/** What the spec (canonical tables, legacy table, stream events) says about each code we test. */
const CONTRACT: Readonly<Record<string, Contract>> = {
  AUTH_REQUIRED: { reference: 'GW-AUTH-1001', status: 401, retryable: false, strategy: 'NONE' },
  AUTH_API_KEY_REQUIRED: { reference: 'GW-AUTH-1002', status: 401, retryable: false, strategy: 'NONE' },
  AUTH_INVALID_API_KEY: { reference: 'GW-AUTH-1003', status: 401, retryable: false, strategy: 'NONE' },
  AUTH_AMBIGUOUS_API_KEY: { reference: 'GW-AUTH-1004', status: 400, retryable: false, strategy: 'NONE' },
  AUTH_API_KEY_INACTIVE: { reference: 'GW-AUTH-1005', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_API_KEY_EXPIRED: { reference: 'GW-AUTH-1006', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_API_KEY_REVOKED: { reference: 'GW-AUTH-1007', status: 400, retryable: false, strategy: 'NONE' },
  AUTH_ACCOUNT_SUSPENDED: { reference: 'GW-AUTH-1008', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_FORBIDDEN: { reference: 'GW-AUTH-1010', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_API_KEY_NOT_FOUND: { reference: 'GW-AUTH-1019', status: 404, retryable: false, strategy: 'NONE' },
  AUTH_API_KEY_CONFIGURATION_INVALID: { reference: 'GW-AUTH-1020', status: 400, retryable: false, strategy: 'NONE' },
  AUTH_API_KEY_NOT_REVEALABLE: { reference: 'GW-AUTH-1021', status: 409, retryable: false, strategy: 'NONE' },
  // The account console (/console/v1), in the chat-completions envelope.
  AUTH_HUMAN_CHECK_REQUIRED: { reference: 'GW-AUTH-1011', status: 400, retryable: false, strategy: 'NONE' },
  AUTH_HUMAN_CHECK_FAILED: { reference: 'GW-AUTH-1012', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_SIGNUP_NOT_ALLOWED: { reference: 'GW-AUTH-1013', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_DISPOSABLE_EMAIL: { reference: 'GW-AUTH-1014', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_CSRF_TOKEN_MISSING: { reference: 'GW-AUTH-1015', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_CSRF_TOKEN_INVALID: { reference: 'GW-AUTH-1017', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_VERIFICATION_CODE_INVALID: { reference: 'GW-AUTH-1018', status: 422, retryable: false, strategy: 'NONE' },
  AUTH_SESSION_NOT_FOUND: { reference: 'GW-AUTH-1022', status: 404, retryable: false, strategy: 'NONE' },
  AUTH_CURRENT_SESSION_REVOKE_FORBIDDEN: { reference: 'GW-AUTH-1023', status: 422, retryable: false, strategy: 'NONE' },
  AUTH_CREDENTIALS_INVALID: { reference: 'GW-AUTH-1024', status: 401, retryable: false, strategy: 'NONE' },
  AUTH_EMAIL_ALREADY_REGISTERED: { reference: 'GW-AUTH-1025', status: 409, retryable: false, strategy: 'NONE' },
  AUTH_EMAIL_NOT_VERIFIED: { reference: 'GW-AUTH-1026', status: 403, retryable: false, strategy: 'NONE' },
  AUTH_EMAIL_INVALID: { reference: 'GW-AUTH-1027', status: 400, retryable: false, strategy: 'NONE' },
  REQUEST_INVALID: { reference: 'GW-REQUEST-2001', status: 400, retryable: false, strategy: 'NONE' },
  REQUEST_MODEL_REQUIRED: { reference: 'GW-REQUEST-2002', status: 400, retryable: false, strategy: 'NONE' },
  REQUEST_TOO_LARGE: { reference: 'GW-REQUEST-2003', status: 413, retryable: false, strategy: 'NONE' },
  REQUEST_CONTENT_TOO_LARGE: { reference: 'GW-REQUEST-2004', status: 413, retryable: false, strategy: 'NONE' },
  REQUEST_MEDIA_TYPE_UNSUPPORTED: { reference: 'GW-REQUEST-2005', status: 415, retryable: false, strategy: 'NONE' },
  REQUEST_CLIENT_DISCONNECTED: { reference: 'GW-REQUEST-2006', status: 499, retryable: true, strategy: 'BACKOFF' },
  REQUEST_ABORTED: { reference: 'GW-REQUEST-2009', status: 499, retryable: true, strategy: 'BACKOFF' },
  REQUEST_ROUTE_NOT_FOUND: { reference: 'GW-REQUEST-2007', status: 404, retryable: false, strategy: 'NONE' },
  REQUEST_IDEMPOTENCY_IN_PROGRESS: { reference: 'GW-REQUEST-2010', status: 409, retryable: true, strategy: 'BACKOFF', retryAfter: 1 },
  REQUEST_IDEMPOTENCY_CONFLICT: { reference: 'GW-REQUEST-2011', status: 409, retryable: false, strategy: 'NONE' },
  REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE: { reference: 'GW-REQUEST-2012', status: 409, retryable: false, strategy: 'NONE' },
  REQUEST_TIMEOUT: { reference: 'GW-REQUEST-2008', status: 408, retryable: true, strategy: 'BACKOFF' },
  LIMIT_RATE_EXCEEDED: { reference: 'GW-LIMIT-4001', status: 429, retryable: true, strategy: 'BACKOFF', retryAfter: 1 },
  REQUEST_VIDEO_INPUT_ENDPOINT_UNSUPPORTED: { reference: 'GW-REQUEST-2014', status: 400, retryable: false, strategy: 'NONE' },
  // Not in the spec's tables (its catalogue is partial): Node's 431 for oversized headers, in the envelope.
  REQUEST_HEADERS_TOO_LARGE: { reference: 'GW-REQUEST-2015', status: 431, retryable: false, strategy: 'NONE' },
  MODEL_NOT_FOUND: { reference: 'GW-MODEL-3001', status: 404, retryable: false, strategy: 'NONE' },
  MODEL_ACCESS_DENIED: { reference: 'GW-MODEL-3002', status: 403, retryable: false, strategy: 'NONE' },
  MODEL_PROTOCOL_UNSUPPORTED: { reference: 'GW-MODEL-3003', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_VISION_UNSUPPORTED: { reference: 'GW-MODEL-3007', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_AUDIO_INPUT_UNSUPPORTED: { reference: 'GW-MODEL-3015', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_PARAMETER_UNSUPPORTED: { reference: 'GW-MODEL-3016', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_REQUIRES_TOPUP: { reference: 'GW-MODEL-3018', status: 403, retryable: false, strategy: 'TOP_UP' },
  MODEL_RETIRED: { reference: 'GW-MODEL-3019', status: 410, retryable: false, strategy: 'NONE' },
  MODEL_VIDEO_INPUT_UNSUPPORTED: { reference: 'GW-MODEL-3020', status: 400, retryable: false, strategy: 'NONE' },
  REQUEST_CONTENT_BLOCKED: { reference: 'GW-REQUEST-2013', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_IMAGE_TO_VIDEO_UNSUPPORTED: { reference: 'GW-MODEL-3008', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_TEXT_TO_VIDEO_UNSUPPORTED: { reference: 'GW-MODEL-3009', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_LAST_FRAME_UNSUPPORTED: { reference: 'GW-MODEL-3010', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_REFERENCE_IMAGE_UNSUPPORTED: { reference: 'GW-MODEL-3011', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_FIRST_FRAME_REQUIRED: { reference: 'GW-MODEL-3012', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_SERVICE_TIER_UNAVAILABLE: { reference: 'GW-MODEL-3013', status: 400, retryable: false, strategy: 'NONE' },
  MODEL_CONTEXT_EXCEEDED: { reference: 'GW-MODEL-3017', status: 400, retryable: false, strategy: 'NONE' },
  // A console (admin API) operation: publishing a model whose pricing is incomplete.
  MODEL_PUBLISH_PRICING_REQUIRED: { reference: 'GW-MODEL-3014', status: 422, retryable: false, strategy: 'NONE' },
  LIMIT_API_KEY_POLICY_NOT_ALLOWED: { reference: 'GW-LIMIT-4003', status: 403, retryable: false, strategy: 'NONE' },
  // The key cap (limits.max_keys_per_account): revoking a key makes room; retrying as is does not.
  LIMIT_API_KEY_COUNT_EXCEEDED: { reference: 'GW-LIMIT-4007', status: 409, retryable: false, strategy: 'NONE' },
  LIMIT_IMAGE_PLATFORM_PAUSED: { reference: 'GW-LIMIT-4005', status: 503, retryable: true, strategy: 'WAIT' },
  // Key caps: not retryable as is (raise or clear the cap, reset the used quota, or wait for the reset).
  LIMIT_API_KEY_QUOTA_EXHAUSTED: { reference: 'GW-LIMIT-4002', status: 429, retryable: false, strategy: 'NONE' },
  LIMIT_IMAGE_DAILY_CAP: { reference: 'GW-LIMIT-4004', status: 429, retryable: false, strategy: 'NONE' },
  LIMIT_API_KEY_DAILY_QUOTA_EXHAUSTED: { reference: 'GW-LIMIT-4006', status: 429, retryable: false, strategy: 'NONE' },
  // Produced by the admin failure throttle; Retry-After is the rest of its window (60 s here).
  MODEL_TEMPORARILY_UNAVAILABLE: { reference: 'GW-MODEL-3021', status: 503, retryable: true, strategy: 'BACKOFF', retryAfter: 30 },
  // The spec leaves the status of GW-BILLING-5001 open (its legacy alias INSUFFICIENT_CREDITS was
  // 422); the catalogue answers 402, which every SDK maps to its plain API error.
  BILLING_INSUFFICIENT_CREDITS: { reference: 'GW-BILLING-5001', status: 402, retryable: false, strategy: 'TOP_UP' },
  PROVIDER_TIMEOUT: { reference: 'GW-PROVIDER-6001', status: 504, retryable: true, strategy: 'BACKOFF' },
  UPSTREAM_ERROR: { reference: 'GW-PROVIDER-6002', status: 502, retryable: true, strategy: 'BACKOFF' },
  // No member of the model's pool can be reached (legacy UPSTREAM_POOL_UNAVAILABLE); Retry-After only when circuits are open.
  MODEL_UNAVAILABLE: { reference: 'GW-MODEL-3004', status: 503, retryable: true, strategy: 'BACKOFF' },
  // The upstream is overloaded (503/529): at least 5 s, or the upstream's own Retry-After when longer.
  MODEL_BUSY: { reference: 'GW-MODEL-3006', status: 503, retryable: true, strategy: 'BACKOFF', retryAfter: 5 },
  PROVIDER_STREAM_INTERRUPTED: { reference: 'GW-PROVIDER-6007', status: 502, retryable: true, strategy: 'BACKOFF' },
  GATEWAY_INTERNAL_ERROR: { reference: 'GW-GATEWAY-9001', status: 500, retryable: true, strategy: 'BACKOFF' }
}

/**
 * Non-external catalogue entries no request can produce yet, with the reason. The parity test
 * fails when an entry is neither produced by a test here nor listed, and when a listed one is
 * produced (the list went stale).
 */
const notYetReachable: Readonly<Record<string, string>> = {}

/** Codes the tests of this file saw the gateway produce. */
const produced = new Set<string>()

function catalogueEntry (code: string): ErrorsConfig['catalogue'][number] {
  const entry = CATALOGUE.catalogue.find((e) => e.code === code)
  if (entry === undefined) throw new Error(`${code} is not in config/errors.yaml`)
  return entry
}

function contractOf (code: string): Contract {
  const c = CONTRACT[code]
  if (c === undefined) throw new Error(`no contract written down for ${code}`)
  return c
}

function envelopeType (code: string, family: 'chat' | 'messages'): string | undefined {
  const entry = catalogueEntry(code)
  return entry.type?.[family] ?? CATALOGUE.type_by_status[family][String(entry.status)]
}

// A stage contributed the way later plugins will be: it fails like a gateway bug when asked to.
const explodingPlugin: GatewayPlugin = {
  name: 'test-exploding',
  resolve (ctx) {
    if (ctx.headers['x-test-explode'] === '1') throw new Error('internal detail: db password hunter2')
  }
}
/** Each request's outcome by its X-Request-ID (settlement runs first, so outcomes can arrive after the next test began). */
const outcomes = new Map<string, Outcome>()
/** Requests that passed admission (auth), in arrival order. */
const admitted: string[] = []
/** The operators' bearer token: the admin API is mounted at /admin/v1 of the main instance. */
const ADMIN_TOKEN = 'contract-admin-token-0123456789abcdef'
const gw = await startTestGateway({ server: { plugins: (d) => [explodingPlugin, ...d, { ...outcomeObserver((ctx, outcome) => { outcomes.set(ctx.requestId, outcome) }), admit: (ctx) => { admitted.push(ctx.requestId) } }], adminToken: ADMIN_TOKEN } })
t.teardown(() => gw.close())
t.beforeEach(() => gw.mock.reset())

/** Tiny body cap; short provider timeouts; a model that accepts no image, audio or video; a paused model. */
const strictConfig = writeTestConfig((c) => {
  c.server.body_limit_bytes = 1024
  providerOf(c, 'openai').timeout_ms = 300
  providerOf(c, 'anthropic').timeout_ms = 300
  providerOf(c, 'openai').answer_timeout_ms = 300
  providerOf(c, 'anthropic').answer_timeout_ms = 300
  const flash = modelOf(c, 'genai/gemini-2.5-flash')
  c.models.push({ ...flash, id: 'genai/gemini-text', upstream_model: 'gemini-text-001', capabilities: [], fallbacks: [] })
  // Declarations of the admission concern (plugins/concerns/admission), on copies so the models above keep their behaviour.
  const veo = modelOf(c, 'genai/veo-3')
  c.models.push({ ...veo, id: 'genai/veo-declared', video_generation: { last_frame: false, reference_images: false } })
  c.models.push({ ...veo, id: 'genai/veo-image-required', video_generation: { text_to_video: false } })
  c.models.push({ ...veo, id: 'genai/veo-no-image', video_generation: { image_to_video: false } })
  c.models.push({
    ...modelOf(c, 'openai/gpt-4o'),
    id: 'openai/gpt-4o-declared',
    fallbacks: [],
    service_tiers: ['default'],
    context_window: 1000,
    content_policy: [{ name: 'contract-rule', terms: ['contract-canary'] }]
  })
  // The default config pauses no model (the generative-content video model ships active).
  modelOf(c, 'genai/veo-3').status = 'paused'
  // The default Claude models lower a max_tokens above their range (cap_output_tokens); this one refuses it.
  const haiku = modelOf(c, 'anthropic/claude-haiku-3.5')
  c.models.push({ ...haiku, id: 'anthropic/claude-uncapped', operations: { messages: { path: '/v1/messages' } }, fallbacks: [] })
  // A draft priced incompletely: not in the published catalogue, and the admin API cannot publish it.
  c.models.push({ ...modelOf(c, 'openai/gpt-4o-mini'), id: 'openai/gpt-draft', status: 'draft', fallbacks: [], pricing: { unit: 'token', input: '1.00' } })
})
t.teardown(strictConfig.remove)
const strict = await startTestGateway({ configFile: strictConfig.file, mock: gw.mock, shareStoreWith: gw, server: { adminToken: ADMIN_TOKEN } })
t.teardown(() => strict.close())

const ADMIN = '/admin/v1'
const OPERATOR = { authorization: `Bearer ${ADMIN_TOKEN}` }

/** One admin API call through HTTP, with the operator's token unless other headers are given. */
function adminCall (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = OPERATOR): Promise<Response> {
  return fetch(`${base}${ADMIN}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
}

/** An admin call that must succeed (test setup): its JSON answer. */
async function adminOk<T = Record<string, unknown>> (base: string, method: string, path: string, body?: unknown): Promise<T> {
  const res = await adminCall(base, method, path, body)
  const text = await res.text()
  if (res.status >= 300) throw new Error(`admin ${method} ${path} answered ${res.status}: ${text}`)
  return JSON.parse(text) as T
}

interface Holder {
  accountId: string
  keyId: string
  /** Plaintext of the key. */
  key: string
}

interface HolderOptions {
  /** Wallet credit, a decimal string (default "10.00"); "0" leaves the wallet empty and never topped up. */
  credit?: string
  /** A top-up (default) or a grant: a grant pays but does not count as a top-up. */
  kind?: 'topup' | 'grant'
  /** Key settings as the admin API takes them (`name` is given). */
  key?: Record<string, unknown>
}

/** A new account with one key, set up through the admin API of the instance at `base`. */
async function newHolder (base: string, opts: HolderOptions = {}): Promise<Holder> {
  const account = await adminOk<{ id: string }>(base, 'POST', '/accounts', { name: 'contract account' })
  const credit = opts.credit ?? '10.00'
  if (credit !== '0') await adminOk(base, 'POST', `/accounts/${account.id}/credits`, { amount: credit, kind: opts.kind ?? 'topup' })
  const key = await adminOk<{ id: string, key: string }>(base, 'POST', `/accounts/${account.id}/keys`, { name: 'contract key', ...(opts.key ?? {}) })
  return { accountId: account.id, keyId: key.id, key: key.key }
}

/**
 * A second instance on its own store: its clock is moved by the tests (key expiry), and one model
 * of each family needs a first top-up (`requires_topup`).
 */
const TOPUP_MODELS = ['openai/gpt-4o-mini', 'anthropic/claude-haiku-3.5', 'genai/gemini-2.5-flash']
const secondConfig = writeTestConfig((c) => {
  for (const id of TOPUP_MODELS) modelOf(c, id).requires_topup = true
})
t.teardown(secondConfig.remove)
const clock = new ManualClock(new Date())
const second = await startTestGateway({ configFile: secondConfig.file, mock: gw.mock, services: { clock }, server: { adminToken: ADMIN_TOKEN } })
t.teardown(() => second.close())

/** Each family's usual key header, as its SDK sends it. */
const KEY_HEADER: Readonly<Record<Family, (key: string) => Record<string, string>>> = {
  chat: (key) => ({ authorization: `Bearer ${key}` }),
  messages: (key) => ({ 'x-api-key': key }),
  genai: (key) => ({ 'x-genai-api-key': key })
}
const FAMILIES: readonly Family[] = ['chat', 'messages', 'genai']
/** A model each family's plain request names (all three funded-account requests answer 200). */
const FAMILY_MODEL: Readonly<Record<Family, string>> = { chat: 'openai/gpt-4o-mini', messages: 'anthropic/claude-haiku-3.5', genai: 'genai/gemini-2.5-flash' }

/** A plain request of the family for `model`, carrying exactly the given key headers (maybe none). */
function callAs (base: string, family: Family, keyHeaders: Record<string, string>, model = FAMILY_MODEL[family]): Promise<Response> {
  const [path, body] = family === 'chat'
    ? ['/v1/chat/completions', chatBody(model)]
    : family === 'messages'
      ? ['/v1/messages', messagesBody(model)]
      : [`/genai/v1beta/models/${encodeURIComponent(model)}:generateContent`, genaiBody()]
  return fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...keyHeaders }, body })
}

/** The key works: a 200 answer (its body drained). */
async function expectServed (t: Assert, res: Response, what: string): Promise<void> {
  await res.arrayBuffer()
  t.equal(res.status, 200, `${what}: served`)
}

/** The seeded key of the gateway instance a URL belongs to (each instance has its own store). */
function authFor (url: string): Record<string, string> {
  return url.startsWith(strict.url) ? strict.auth : gw.auth
}

function post (url: string, body: string | Buffer, contentType: string | null = 'application/json', headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { ...(contentType === null ? {} : { 'content-type': contentType }), ...authFor(url), ...headers },
    body
  })
}

const chatBody = (model: unknown, content: unknown = 'hi', extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model, messages: [{ role: 'user', content }], ...extra })
const messagesBody = (model: unknown, content: unknown = 'hi', extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model, max_tokens: 32, messages: [{ role: 'user', content }], ...extra })
const genaiBody = (parts: unknown[] = [{ text: 'hi' }]): string => JSON.stringify({ contents: [{ role: 'user', parts }] })

/**
 * The whole error contract of one response: status, every header, and the exact envelope of
 * the family. Returns the parsed body.
 */
/** `retryAfter`: the Retry-After this occurrence sets where it differs from the contract's (a throttle's window). */
async function expectError (t: Assert, res: Response, family: Family, code: string, param: string | null = null, retryAfter?: number, fields: Record<string, string> = {}): Promise<unknown> {
  const contract = contractOf(code)
  const c = retryAfter === undefined ? contract : { ...contract, retryAfter }
  const entry = catalogueEntry(code)
  produced.add(code)
  const text = await res.text()
  const body = JSON.parse(text) as Record<string, unknown>
  const documentationUrl = `${DOCS}/${c.reference}`

  t.equal(res.status, c.status, `HTTP ${c.status}`)
  const h = res.headers
  t.match(h.get('content-type'), /^application\/json/, 'JSON body')
  const requestId = h.get('x-request-id')
  t.match(requestId, /^req_[0-9a-f]{32}$/, 'X-Request-ID')
  t.equal(h.get('x-gateway-error-code'), code, 'X-Gateway-Error-Code')
  t.equal(h.get('x-gateway-error-reference'), c.reference, 'X-Gateway-Error-Reference')
  t.equal(h.get('link'), `<${documentationUrl}>; rel="describedby"`, 'Link rel=describedby to the documentation')
  t.equal(h.get('content-language'), 'en', 'Content-Language')
  t.equal(h.get('x-gateway-billed'), 'false', 'X-Gateway-Billed: false')
  t.equal(h.get('retry-after'), c.retryAfter === undefined ? null : String(c.retryAfter), 'Retry-After only where the catalogue defines one')
  t.equal(h.get('cache-control'), 'no-store', 'Cache-Control: no-store')

  // The message is the catalogue's, possibly followed by a detail of this occurrence.
  const message = (body.error as { message?: unknown } | undefined)?.message
  t.ok(typeof message === 'string' && message.startsWith(entry.message), 'public message from the catalogue')
  const retry = { retryable: c.retryable, strategy: c.strategy, ...(c.retryAfter === undefined ? {} : { retry_after_seconds: c.retryAfter }) }

  if (family === 'chat') {
    t.strictSame(body, {
      error: {
        code,
        message,
        reference: c.reference,
        documentation_url: documentationUrl,
        request_id: requestId,
        retry,
        billing: { status: 'NOT_BILLED' },
        type: envelopeType(code, 'chat'),
        param,
        ...fields
      }
    }, 'chat-completions envelope')
  } else if (family === 'messages') {
    t.strictSame(body, {
      type: 'error',
      error: {
        type: envelopeType(code, 'messages'),
        code,
        message,
        reference: c.reference,
        documentation_url: documentationUrl,
        request_id: requestId,
        retry,
        billing: { status: 'NOT_BILLED' },
        ...fields
      },
      request_id: requestId
    }, 'messages envelope')
  } else {
    t.strictSame(body, {
      error: {
        code: c.status,
        status: code,
        message,
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: code,
            domain: 'model-gateway.dev',
            metadata: {
              reference: c.reference,
              documentation_url: documentationUrl,
              request_id: requestId,
              retryable: String(c.retryable),
              retry_strategy: c.strategy,
              billing_status: 'NOT_BILLED',
              ...fields
            }
          },
          {
            '@type': 'type.googleapis.com/google.rpc.Help',
            links: [{ description: `${c.reference} ${code}`, url: documentationUrl }]
          }
        ]
      }
    }, 'generative-content envelope')
  }
  return body
}

/** Refusals happen before anything is sent upstream. */
function nothingForwarded (t: Assert): void {
  t.equal(gw.mock.calls.length, 0, 'nothing was sent upstream')
}

t.test('REQUEST_ROUTE_NOT_FOUND', async (t) => {
  const cases: Array<[string, string, Family]> = [
    ['POST', '/v1/embeddings-unknown', 'chat'],
    ['POST', '/responses/extra', 'chat'],
    ['POST', '/v1/messages/batches', 'messages'],
    ['POST', '/msgs/v1/unknown', 'messages'],
    ['POST', '/genai/v1beta/unknown', 'genai'],
    ['POST', '/elsewhere', 'chat']
  ]
  for (const [method, path, family] of cases) {
    t.test(`unknown path ${method} ${path} answers in the ${family} envelope`, async (t) => {
      await expectError(t, await fetch(gw.url + path, { method }), family, 'REQUEST_ROUTE_NOT_FOUND')
      nothingForwarded(t)
    })
  }
  const wrongMethod: Array<[string, string, Family]> = [
    ['GET', '/v1/chat/completions', 'chat'],
    ['DELETE', '/v1/messages', 'messages'],
    ['GET', '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', 'genai'],
    ['POST', '/v1/videos/video_1/content', 'chat']
  ]
  for (const [method, path, family] of wrongMethod) {
    t.test(`wrong method ${method} ${path}`, async (t) => {
      await expectError(t, await fetch(gw.url + path, { method }), family, 'REQUEST_ROUTE_NOT_FOUND')
      nothingForwarded(t)
    })
  }
  t.test('unknown action under the generative-content prefix', async (t) => {
    await expectError(t, await post(`${gw.url}/genai/v1beta/models/genai%2Fgemini-2.5-flash:countTokens`, genaiBody()), 'genai', 'REQUEST_ROUTE_NOT_FOUND')
    nothingForwarded(t)
  })
})

t.test('REQUEST_INVALID', async (t) => {
  t.test('body that is not JSON', async (t) => {
    await expectError(t, await post(`${gw.url}/v1/chat/completions`, '{"model": "openai/gpt-4o", '), 'chat', 'REQUEST_INVALID')
    nothingForwarded(t)
  })
  t.test('JSON array body', async (t) => {
    await expectError(t, await post(`${gw.url}/v1/messages`, '[{"model":"anthropic/claude-sonnet-4"}]'), 'messages', 'REQUEST_INVALID')
    nothingForwarded(t)
  })
  t.test('non-string model', async (t) => {
    await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody(42)), 'chat', 'REQUEST_INVALID', 'model')
    await expectError(t, await post(`${gw.url}/msgs/v1/messages`, messagesBody(['anthropic/claude-sonnet-4'])), 'messages', 'REQUEST_INVALID', 'model')
    nothingForwarded(t)
  })
  t.test('empty JSON body', async (t) => {
    await expectError(t, await post(`${gw.url}/v1/responses`, ''), 'chat', 'REQUEST_INVALID')
    nothingForwarded(t)
  })
  t.test('no body where one is required', async (t) => {
    await expectError(t, await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: gw.auth }), 'chat', 'REQUEST_INVALID')
    nothingForwarded(t)
  })
  t.test('malformed multipart body', async (t) => {
    const res = await post(`${gw.url}/v1/audio/transcriptions`, '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nopenai/whisper-1', 'multipart/form-data; boundary=b')
    await expectError(t, res, 'chat', 'REQUEST_INVALID')
    nothingForwarded(t)
  })
  t.test('malformed percent-encoding in the model path segment', async (t) => {
    await expectError(t, await post(`${gw.url}/genai/v1beta/models/genai%E0%A4%A:generateContent`, genaiBody()), 'genai', 'REQUEST_INVALID')
    nothingForwarded(t)
  })
})

t.test('REQUEST_TOO_LARGE: body over server.body_limit_bytes', async (t) => {
  const big = 'x'.repeat(2048)
  await expectError(t, await post(`${strict.url}/v1/chat/completions`, chatBody('openai/gpt-4o', big)), 'chat', 'REQUEST_TOO_LARGE')
  await expectError(t, await post(`${strict.url}/v1/messages`, messagesBody('anthropic/claude-sonnet-4', big)), 'messages', 'REQUEST_TOO_LARGE')
  await expectError(t, await post(`${strict.url}/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent`, genaiBody([{ text: big }])), 'genai', 'REQUEST_TOO_LARGE')
  const form = multipartBody([{ name: 'model', value: 'openai/whisper-1' }, { name: 'file', value: Buffer.alloc(2048), filename: 'a.wav', contentType: 'audio/wav' }])
  await expectError(t, await post(`${strict.url}/v1/audio/transcriptions`, form.body, form.contentType), 'chat', 'REQUEST_TOO_LARGE')
  nothingForwarded(t)
})

t.test('REQUEST_CONTENT_TOO_LARGE: one multipart file over the route item limit', async (t) => {
  // /v1/images/edits caps `image` at 20 MiB, under the 25 MiB body cap.
  const image = Buffer.alloc(20 * 1024 * 1024 + 1, 1)
  const form = multipartBody([
    { name: 'model', value: 'openai/gpt-image-1-edit' },
    { name: 'prompt', value: 'too big' },
    { name: 'image', value: image, filename: 'big.png', contentType: 'image/png' }
  ])
  await expectError(t, await post(`${gw.url}/v1/images/edits`, form.body, form.contentType), 'chat', 'REQUEST_CONTENT_TOO_LARGE', 'image')
  nothingForwarded(t)
})

/** A short body deadline and a cap of 2 connections per address (test/hostile/ covers them in depth). */
const boundedConfig = writeTestConfig((c) => {
  c.server.request_timeout_ms = 1000
  c.server.max_connections_per_address = 2
})
t.teardown(boundedConfig.remove)
const bounded = await startTestGateway({ configFile: boundedConfig.file, mock: gw.mock, shareStoreWith: gw })
t.teardown(() => bounded.close())

function asResponse (a: RawAnswer | null): Response {
  if (a === null) throw new Error('the connection closed without an answer')
  return new Response(a.body, { status: a.status, headers: a.headers })
}

t.test('REQUEST_TIMEOUT: a body that does not arrive within server.request_timeout_ms', async (t) => {
  for (const [path, family, headers] of [
    ['/v1/chat/completions', 'chat', gw.auth],
    ['/v1/messages', 'messages', { 'x-api-key': gw.key }]
  ] as const) {
    const conn = await openConnection(bounded.url)
    conn.socket.write(requestHead('POST', path, { ...headers, 'content-type': 'application/json', 'content-length': 64 }) + '{')
    const res = asResponse(await answerOn(conn, 5000))
    t.equal(res.headers.get('connection'), 'close', 'the rest of the body is not read')
    await expectError(t, res, family, 'REQUEST_TIMEOUT')
    conn.socket.destroy()
  }
  nothingForwarded(t)
})

t.test('LIMIT_IMAGE_PLATFORM_PAUSED: image generation on the pause day (limits.images_paused_on), chat and genai; resumes at 00:00 UTC', async (t) => {
  // The messages family has no image route: the code is reachable from chat and genai only.
  const pauseClock = new ManualClock('2030-03-04T22:00:00.000Z')
  const paused = await startTestGateway({ mock: gw.mock, services: { clock: pauseClock }, limits: { images_paused_on: '2030-03-04' } })
  t.teardown(() => paused.close())
  const calls = gw.mock.calls.length
  const image = async (family: 'chat' | 'genai'): Promise<Response> => family === 'chat'
    ? await fetch(`${paused.url}/v1/images/generations`, { method: 'POST', headers: { ...paused.auth, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-image-1', prompt: 'a cat' }) })
    : await fetch(`${paused.url}/genai/v1beta/models/genai%2Fimagen-4:generateImages`, { method: 'POST', headers: { 'x-genai-api-key': paused.key, 'content-type': 'application/json' }, body: JSON.stringify({ instances: [{ prompt: 'a cat' }], parameters: { sampleCount: 1 } }) })
  // 22:00 UTC: two hours until it resumes.
  await expectError(t, await image('chat'), 'chat', 'LIMIT_IMAGE_PLATFORM_PAUSED', null, 7200)
  await expectError(t, await image('genai'), 'genai', 'LIMIT_IMAGE_PLATFORM_PAUSED', null, 7200)
  t.equal(gw.mock.calls.length, calls, 'nothing forwarded while paused')
  const text = await fetch(`${paused.url}/v1/chat/completions`, { method: 'POST', headers: { ...paused.auth, 'content-type': 'application/json' }, body: chatBody('openai/gpt-4o-mini') })
  t.equal(text.status, 200, 'other features are unaffected')
  await text.arrayBuffer()
  pauseClock.advance(2 * 3600_000 - 1000)
  await expectError(t, await image('chat'), 'chat', 'LIMIT_IMAGE_PLATFORM_PAUSED', null, 1)
  pauseClock.advance(1000)
  const resumed = await image('chat')
  t.equal(resumed.status, 200, 'at 00:00 UTC the next day image generation resumes by itself')
  await resumed.arrayBuffer()
  const genaiResumed = await image('genai')
  t.equal(genaiResumed.status, 200, 'on genai too')
  await genaiResumed.arrayBuffer()
})

t.test('key caps: LIMIT_API_KEY_QUOTA_EXHAUSTED (quota, 30-day cap), LIMIT_API_KEY_DAILY_QUOTA_EXHAUSTED, LIMIT_IMAGE_DAILY_CAP in every family that can reach them; nothing forwarded or held', async (t) => {
  const keyWith = async (fields: Record<string, unknown>): Promise<string> => {
    const created = await gw.services.store.keys.create({ accountId: gw.account.id, name: 'capped', ...fields })
    if (!created.ok) throw new Error(created.error)
    return created.value.plaintext
  }
  const quota = await keyWith({ quota: 0n })
  const monthly = await keyWith({ monthlySpendCap: 0n })
  const daily = await keyWith({ dailySpendCap: 0n, timezone: 'Asia/Tokyo' })
  const images = await keyWith({ dailyImageCap: 0 })
  const heldBefore = (await gw.services.store.ledger.wallet(gw.account.id)).held
  for (const family of FAMILIES) {
    await expectError(t, await callAs(gw.url, family, KEY_HEADER[family](quota)), family, 'LIMIT_API_KEY_QUOTA_EXHAUSTED')
    await expectError(t, await callAs(gw.url, family, KEY_HEADER[family](monthly)), family, 'LIMIT_API_KEY_QUOTA_EXHAUSTED')
    await expectError(t, await callAs(gw.url, family, KEY_HEADER[family](daily)), family, 'LIMIT_API_KEY_DAILY_QUOTA_EXHAUSTED')
  }
  // The messages family has no image route; a text request of an image-capped key is served.
  await expectError(t, await fetch(`${gw.url}/v1/images/generations`, { method: 'POST', headers: { authorization: `Bearer ${images}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-image-1', prompt: 'a cat' }) }), 'chat', 'LIMIT_IMAGE_DAILY_CAP')
  await expectError(t, await fetch(`${gw.url}/genai/v1beta/models/genai%2Fimagen-4:generateImages`, { method: 'POST', headers: { 'x-genai-api-key': images, 'content-type': 'application/json' }, body: JSON.stringify({ instances: [{ prompt: 'a cat' }], parameters: { sampleCount: 1 } }) }), 'genai', 'LIMIT_IMAGE_DAILY_CAP')
  nothingForwarded(t)
  t.equal((await gw.services.store.ledger.wallet(gw.account.id)).held, heldBefore, 'nothing held')
  await expectServed(t, await callAs(gw.url, 'messages', KEY_HEADER.messages(images)), 'a text request of the image-capped key')
})

t.test('LIMIT_RATE_EXCEEDED: a connection over server.max_connections_per_address', async (t) => {
  const held = [await openConnection(bounded.url), await openConnection(bounded.url)]
  const extra = await openConnection(bounded.url)
  const body = genaiBody()
  extra.socket.write(requestHead('POST', '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', {
    'x-genai-api-key': gw.key, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body)
  }) + body)
  await expectError(t, asResponse(await answerOn(extra, 5000)), 'genai', 'LIMIT_RATE_EXCEEDED')
  for (const c of [...held, extra]) c.socket.destroy()
  nothingForwarded(t)
})

t.test('REQUEST_HEADERS_TOO_LARGE: headers over Node\'s size limit, answered before any route in the envelope of the request line\'s path', async (t) => {
  for (const [path, family] of [['/v1/chat/completions', 'chat'], ['/v1/messages', 'messages'], ['/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', 'genai']] as const) {
    const conn = await openConnection(gw.url)
    conn.socket.write(requestHead('POST', path, { ...authFor(gw.url), 'content-type': 'application/json', 'content-length': 2, 'x-padding': 'p'.repeat(20_000) }) + '{}')
    await expectError(t, asResponse(await answerOn(conn, 5000)), family, 'REQUEST_HEADERS_TOO_LARGE')
    conn.socket.destroy()
  }
  nothingForwarded(t)
})

t.test('MODEL_PARAMETER_UNSUPPORTED: deferred work on a route that declares it (background responses)', async (t) => {
  await expectError(t, await post(`${gw.url}/v1/responses`, JSON.stringify({ model: 'openai/gpt-4o', input: 'hi', background: true })), 'chat', 'MODEL_PARAMETER_UNSUPPORTED', 'background')
  nothingForwarded(t)
})

t.test('REQUEST_MEDIA_TYPE_UNSUPPORTED', async (t) => {
  t.test('text/plain', async (t) => {
    await expectError(t, await post(`${gw.url}/v1/chat/completions`, 'hello', 'text/plain'), 'chat', 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
    await expectError(t, await post(`${gw.url}/v1/messages`, 'hello', 'text/plain'), 'messages', 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
    await expectError(t, await post(`${gw.url}/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent`, 'hello', 'text/plain'), 'genai', 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
    nothingForwarded(t)
  })
  t.test('multipart on a JSON-only route', async (t) => {
    const form = multipartBody([{ name: 'model', value: 'openai/gpt-4o' }, { name: 'messages', value: '[]' }])
    await expectError(t, await post(`${gw.url}/v1/chat/completions`, form.body, form.contentType), 'chat', 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
    nothingForwarded(t)
  })
  t.test('JSON on a multipart-only route', async (t) => {
    await expectError(t, await post(`${gw.url}/v1/audio/transcriptions`, '{"model":"openai/whisper-1"}'), 'chat', 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
    nothingForwarded(t)
  })
  t.test('a body without Content-Type', async (t) => {
    await expectError(t, await post(`${gw.url}/v1/chat/completions`, Buffer.from(chatBody('openai/gpt-4o')), null), 'chat', 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
    nothingForwarded(t)
  })
})

t.test('REQUEST_MODEL_REQUIRED', async (t) => {
  t.test('JSON body without model', async (t) => {
    await expectError(t, await post(`${gw.url}/v1/chat/completions`, JSON.stringify({ messages: [] })), 'chat', 'REQUEST_MODEL_REQUIRED', 'model')
    await expectError(t, await post(`${gw.url}/v1/messages`, messagesBody('')), 'messages', 'REQUEST_MODEL_REQUIRED', 'model')
    nothingForwarded(t)
  })
  t.test('multipart body without a model field', async (t) => {
    const form = multipartBody([{ name: 'file', value: Buffer.alloc(64), filename: 'a.wav', contentType: 'audio/wav' }])
    await expectError(t, await post(`${gw.url}/v1/audio/transcriptions`, form.body, form.contentType), 'chat', 'REQUEST_MODEL_REQUIRED', 'model')
    nothingForwarded(t)
  })
  t.test('empty {model} path segment', async (t) => {
    await expectError(t, await post(`${gw.url}/genai/v1beta/models/:generateContent`, genaiBody()), 'genai', 'REQUEST_MODEL_REQUIRED', 'model')
    await expectError(t, await post(`${gw.url}/genai/v1beta/models/models%2F:streamGenerateContent`, genaiBody()), 'genai', 'REQUEST_MODEL_REQUIRED', 'model')
    nothingForwarded(t)
  })
})

t.test('MODEL_NOT_FOUND', async (t) => {
  await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('openai/gpt-99')), 'chat', 'MODEL_NOT_FOUND', 'model')
  await expectError(t, await post(`${gw.url}/v1/messages`, messagesBody('anthropic/claude-0')), 'messages', 'MODEL_NOT_FOUND', 'model')
  await expectError(t, await post(`${gw.url}/genai/v1beta/models/genai%2Fgemini-0:generateContent`, genaiBody()), 'genai', 'MODEL_NOT_FOUND', 'model')
  // A bare name no family aliases (gpt-4o is a shipped alias of openai/gpt-4o).
  await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('gpt-99')), 'chat', 'MODEL_NOT_FOUND', 'model')
  nothingForwarded(t)
})

t.test('MODEL_RETIRED', async (t) => {
  await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('openai/gpt-3.5-turbo')), 'chat', 'MODEL_RETIRED', 'model')
  nothingForwarded(t)
})

t.test('MODEL_TEMPORARILY_UNAVAILABLE: a paused model, with Retry-After', async (t) => {
  const body = JSON.stringify({ instances: [{ prompt: 'a coast' }] })
  await expectError(t, await post(`${strict.url}/genai/v1beta/models/genai%2Fveo-3:generateVideos`, body), 'genai', 'MODEL_TEMPORARILY_UNAVAILABLE', 'model')
  nothingForwarded(t)
})

t.test('MODEL_PROTOCOL_UNSUPPORTED: the model does not serve this operation', async (t) => {
  await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('openai/tts-1')), 'chat', 'MODEL_PROTOCOL_UNSUPPORTED', 'model')
  // A model of a provider with an OpenAI-compatible endpoint whose catalogue entry does not offer
  // chat.completions (Claude and Gemini text models do since issue 29: the providers' own endpoints).
  await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('genai/imagen-4')), 'chat', 'MODEL_PROTOCOL_UNSUPPORTED', 'model')
  await expectError(t, await post(`${gw.url}/v1/messages`, messagesBody('openai/gpt-4o')), 'messages', 'MODEL_PROTOCOL_UNSUPPORTED', 'model')
  await expectError(t, await post(`${gw.url}/genai/v1beta/models/genai%2Fimagen-4:generateContent`, genaiBody()), 'genai', 'MODEL_PROTOCOL_UNSUPPORTED', 'model')
  nothingForwarded(t)
})

t.test('REQUEST_VIDEO_INPUT_ENDPOINT_UNSUPPORTED: video sent to a chat-shaped endpoint', async (t) => {
  const video = [{ type: 'text', text: 'what happens here?' }, { type: 'video_url', video_url: { url: 'https://example.test/clip.mp4' } }]
  await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('openai/gpt-4o', video)), 'chat', 'REQUEST_VIDEO_INPUT_ENDPOINT_UNSUPPORTED', 'messages')
  // Even a model that accepts video must take it on :generateContent.
  await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('genai/gemini-2.5-flash', video)), 'chat', 'REQUEST_VIDEO_INPUT_ENDPOINT_UNSUPPORTED', 'messages')
  nothingForwarded(t)
})

t.test('MODEL_PARAMETER_UNSUPPORTED: a billable parameter above the model\'s declared range', async (t) => {
  await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('openai/gpt-4o', 'hi', { max_tokens: 16385 })), 'chat', 'MODEL_PARAMETER_UNSUPPORTED', 'max_tokens')
  await expectError(t, await post(`${strict.url}/v1/messages`, messagesBody('anthropic/claude-uncapped', 'hi', { max_tokens: 8193 })), 'messages', 'MODEL_PARAMETER_UNSUPPORTED', 'max_tokens')
  await expectError(t, await post(`${gw.url}/genai/v1beta/models/genai%2Fimagen-4:generateImages`, JSON.stringify({ instances: [{ prompt: 'x' }], parameters: { sampleCount: 11 } })), 'genai', 'MODEL_PARAMETER_UNSUPPORTED', 'parameters.sampleCount')
  nothingForwarded(t)
})

t.test('capabilities: a model without vision, audio or video input', async (t) => {
  const url = `${strict.url}/genai/v1beta/models/genai%2Fgemini-text:generateContent`
  const inline = (mime: string): unknown[] => [{ text: 'describe' }, { inline_data: { mime_type: mime, data: 'AAAA' } }]
  t.test('MODEL_VIDEO_INPUT_UNSUPPORTED', async (t) => {
    await expectError(t, await post(url, genaiBody(inline('video/mp4'))), 'genai', 'MODEL_VIDEO_INPUT_UNSUPPORTED', 'model')
    nothingForwarded(t)
  })
  t.test('MODEL_VISION_UNSUPPORTED', async (t) => {
    await expectError(t, await post(url, genaiBody(inline('image/png'))), 'genai', 'MODEL_VISION_UNSUPPORTED', 'model')
    const image = [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }]
    await expectError(t, await post(`${strict.url}/v1/chat/completions`, chatBody('genai/gemini-text', image)), 'chat', 'MODEL_VISION_UNSUPPORTED', 'model')
    nothingForwarded(t)
  })
  t.test('MODEL_AUDIO_INPUT_UNSUPPORTED', async (t) => {
    await expectError(t, await post(url, genaiBody(inline('audio/wav'))), 'genai', 'MODEL_AUDIO_INPUT_UNSUPPORTED', 'model')
    const audio = [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }]
    await expectError(t, await post(`${gw.url}/v1/chat/completions`, chatBody('openai/gpt-4o', audio)), 'chat', 'MODEL_AUDIO_INPUT_UNSUPPORTED', 'model')
    nothingForwarded(t)
  })
  t.test('the same model answers text-only requests', async (t) => {
    const res = await post(url, genaiBody())
    t.equal(res.status, 200)
    t.equal(gw.mock.calls[0]?.path, '/v1beta/models/gemini-text-001:generateContent')
  })
})

t.test('PROVIDER_TIMEOUT: no response headers within the provider answer_timeout_ms (not streamed)', async (t) => {
  const slow = { 'x-mock-delay-ms': '5000' }
  await expectError(t, await post(`${strict.url}/v1/chat/completions`, chatBody('openai/gpt-4o-mini'), 'application/json', slow), 'chat', 'PROVIDER_TIMEOUT')
  await expectError(t, await post(`${strict.url}/v1/messages`, messagesBody('anthropic/claude-haiku-3.5'), 'application/json', slow), 'messages', 'PROVIDER_TIMEOUT')
  t.equal(gw.mock.calls.length, 2, 'one attempt each (these models have no fallbacks)')
})

t.test('UPSTREAM_ERROR: the provider answered 5xx', async (t) => {
  const res500 = await post(`${gw.url}/v1/chat/completions`, chatBody('openai/gpt-4o-mini'), 'application/json', { 'x-mock-status': '500' })
  const body = await expectError(t, res500, 'chat', 'UPSTREAM_ERROR')
  t.notMatch(JSON.stringify(body), /Mock upstream error/, 'the provider body is not relayed')
  const res503 = await post(`${gw.url}/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent`, genaiBody(), 'application/json', { 'x-mock-status': '503', 'x-mock-retry-after': '7' })
  // An overloaded upstream (503) is MODEL_BUSY, with the upstream's Retry-After as it is above 5 s.
  await expectError(t, res503, 'genai', 'MODEL_BUSY', null, 7)
  const res502 = await post(`${gw.url}/v1/messages`, messagesBody('anthropic/claude-haiku-3.5'), 'application/json', { 'x-mock-status': '502' })
  await expectError(t, res502, 'messages', 'UPSTREAM_ERROR')
  t.equal(gw.mock.calls.length, 3)
})

t.test('MODEL_UNAVAILABLE (legacy UPSTREAM_POOL_UNAVAILABLE): the provider cannot be reached', async (t) => {
  const port = await closedPort()
  const dead = await startTestGateway({ mock: gw.mock, shareStoreWith: gw, env: { OPENAI_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` } })
  t.teardown(() => dead.close())
  await expectError(t, await post(`${dead.url}/v1/chat/completions`, chatBody('openai/gpt-4o')), 'chat', 'MODEL_UNAVAILABLE')
  await expectError(t, await post(`${dead.url}/v1/messages`, messagesBody('anthropic/claude-sonnet-4')), 'messages', 'MODEL_UNAVAILABLE')
  nothingForwarded(t)
})

t.test('GATEWAY_INTERNAL_ERROR: an unexpected failure inside the gateway', async (t) => {
  const res = await post(`${gw.url}/v1/messages`, messagesBody('anthropic/claude-sonnet-4'), 'application/json', { 'x-test-explode': '1' })
  const body = await expectError(t, res, 'messages', 'GATEWAY_INTERNAL_ERROR')
  t.notMatch(JSON.stringify(body), /hunter2|internal detail/, 'the exception text never reaches the client')
  nothingForwarded(t)
})

t.test('PROVIDER_STREAM_INTERRUPTED: HTTP 200, the chunks sent, then an event: error frame', async (t) => {
  const streams: Array<{ name: string, path: string, body: string, chunks: number }> = [
    { name: 'chat completions', path: '/v1/chat/completions', body: chatBody('openai/gpt-4o', 'one two three four', { stream: true }), chunks: 2 },
    { name: 'responses', path: '/v1/responses', body: JSON.stringify({ model: 'openai/gpt-4o', input: 'one two three', stream: true }), chunks: 1 },
    { name: 'messages', path: '/v1/messages', body: messagesBody('anthropic/claude-sonnet-4', 'one two three', { stream: true }), chunks: 3 },
    { name: 'generative content', path: '/genai/v1beta/models/genai%2Fgemini-2.5-flash:streamGenerateContent?alt=sse', body: genaiBody([{ text: 'one two three' }]), chunks: 2 }
  ]
  for (const s of streams) {
    t.test(s.name, async (t) => {
      const res = await post(gw.url + s.path, s.body, 'application/json', { 'x-mock-cut-after': String(s.chunks) })
      t.equal(res.status, 200, 'the status was already sent')
      t.match(res.headers.get('content-type'), /^text\/event-stream/)
      const text = await res.text()
      const call = gw.mock.calls[0]
      t.equal(call?.cut, true, 'the provider cut the stream')
      const upstream = call?.response?.toString() ?? ''
      t.ok(upstream.length > 0 && text.startsWith(upstream), 'every byte the provider sent was relayed first')
      const events = sseEvents(text.slice(upstream.length))
      t.equal(events.length, 1, 'exactly one frame follows')
      const frame = events[0]
      t.equal(frame?.event, 'error', 'event: error')
      const data = JSON.parse(frame?.data ?? 'null') as { error: Record<string, unknown> }
      t.same(Object.keys(data), ['error'], 'data is an object with the single key error')
      const c = contractOf('PROVIDER_STREAM_INTERRUPTED')
      const { code, message, reference, documentation_url: doc, request_id: rid, retry, billing } = data.error
      t.strictSame({ code, message, reference, documentation_url: doc, request_id: rid, retry, billing }, {
        code: 'PROVIDER_STREAM_INTERRUPTED',
        message: catalogueEntry('PROVIDER_STREAM_INTERRUPTED').message,
        reference: c.reference,
        documentation_url: `${DOCS}/${c.reference}`,
        request_id: res.headers.get('x-request-id'),
        retry: { retryable: true, strategy: 'BACKOFF' },
        // Chunks were produced before the cut and are charged (Money: what the upstream produced),
        // so the frame says BILLED; a cut before any content says NOT_BILLED (billing-errors.test.ts).
        billing: { status: 'BILLED' }
      }, 'the error object: code, message, reference, documentation_url, request_id, retry, billing')
      produced.add('PROVIDER_STREAM_INTERRUPTED')
    })
  }
})

t.test('REQUEST_CLIENT_DISCONNECTED: recorded for a client that left mid-stream, never sent', async (t) => {
  const res = await post(`${gw.url}/v1/chat/completions`, chatBody('openai/gpt-4o', 'a b c', { stream: true }), 'application/json', {
    'x-mock-chunks': '10', 'x-mock-chunk-delay-ms': '50'
  })
  const reader = res.body?.getReader()
  await reader?.read()
  await reader?.cancel()
  const id = res.headers.get('x-request-id') ?? ''
  await eventually(() => outcomes.has(id), 'the request outcome')
  t.match(outcomes.get(id), { kind: 'client_disconnected', errorCode: 'REQUEST_CLIENT_DISCONNECTED' })
  produced.add('REQUEST_CLIENT_DISCONNECTED')
})

t.test('REQUEST_ABORTED: a client that left while its body was still being sent is recorded, nothing forwarded', async (t) => {
  const before = admitted.length
  const socket = connect(Number(new URL(gw.url).port), '127.0.0.1')
  t.teardown(() => socket.destroy())
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${gw.key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"model":"openai/gpt-4o","messages":[`)
  // Admitted (its key checked) while the rest of the body has not arrived; then the client leaves.
  await eventually(() => admitted.length > before, 'the admission of the partial upload')
  const id = admitted[before] ?? ''
  socket.destroy()
  await eventually(() => outcomes.has(id), 'the aborted request outcome')
  t.match(outcomes.get(id), { kind: 'client_disconnected', errorCode: 'REQUEST_ABORTED', httpStatus: 499 })
  await gw.services.requestLog.flush()
  t.match(await gw.services.store.requestLog.get(id), { errorCode: 'REQUEST_ABORTED', billingStatus: 'NOT_BILLED' })
  nothingForwarded(t)
  produced.add('REQUEST_ABORTED')
})

t.test('AUTH_API_KEY_REQUIRED: no key header, in the envelope of the entry protocol', async (t) => {
  const noKey: Array<[string, string, string, Family]> = [
    ['POST', '/v1/chat/completions', chatBody('openai/gpt-4o'), 'chat'],
    ['POST', '/responses', JSON.stringify({ model: 'openai/gpt-4o', input: 'hi' }), 'chat'],
    ['POST', '/v1/messages', messagesBody('anthropic/claude-sonnet-4'), 'messages'],
    ['POST', '/msgs/v1/messages', messagesBody('anthropic/claude-sonnet-4'), 'messages'],
    ['POST', '/genai/v1beta/models/genai%2Fgemini-2.5-flash:generateContent', genaiBody(), 'genai'],
    ['POST', '/genai/v1beta/models/genai%2Fgemini-2.5-flash:streamGenerateContent?alt=sse', genaiBody(), 'genai'],
    ['GET', '/v1/jobs/job_1', '', 'chat']
  ]
  for (const [method, path, body, family] of noKey) {
    t.test(`${method} ${path}`, async (t) => {
      const res = await fetch(gw.url + path, { method, ...(method === 'GET' ? {} : { headers: { 'content-type': 'application/json' }, body }) })
      await expectError(t, res, family, 'AUTH_API_KEY_REQUIRED')
      nothingForwarded(t)
    })
  }
  t.test('the key is asked for before the model is looked at', async (t) => {
    await expectError(t, await callAs(gw.url, 'chat', {}, 'openai/gpt-99'), 'chat', 'AUTH_API_KEY_REQUIRED')
    await expectError(t, await callAs(gw.url, 'genai', {}, 'genai/veo-3'), 'genai', 'AUTH_API_KEY_REQUIRED')
    nothingForwarded(t)
  })
  t.test('empty key headers count as absent', async (t) => {
    await expectError(t, await callAs(gw.url, 'chat', { authorization: 'Bearer ' }), 'chat', 'AUTH_API_KEY_REQUIRED')
    await expectError(t, await callAs(gw.url, 'messages', { 'x-api-key': '' }), 'messages', 'AUTH_API_KEY_REQUIRED')
    await expectError(t, await callAs(gw.url, 'genai', { 'x-genai-api-key': ' ' }), 'genai', 'AUTH_API_KEY_REQUIRED')
    nothingForwarded(t)
  })
})

t.test('AUTH_INVALID_API_KEY', async (t) => {
  t.test('a key that does not exist, in each family\'s own header', async (t) => {
    const unknown = ['sk-' + 'A'.repeat(49), `gw_live_${randomBytes(12).toString('hex')}`, 'not-a-key']
    for (const family of FAMILIES) {
      for (const key of unknown) await expectError(t, await callAs(gw.url, family, KEY_HEADER[family](key)), family, 'AUTH_INVALID_API_KEY')
    }
    // A credential in a foreign scheme is no API key.
    await expectError(t, await callAs(gw.url, 'chat', { authorization: 'Basic dXNlcjpwYXNz' }), 'chat', 'AUTH_INVALID_API_KEY')
    nothingForwarded(t)
  })
  t.test('a revoked key, on its next request', async (t) => {
    const holder = await newHolder(gw.url)
    for (const family of FAMILIES) await expectServed(t, await callAs(gw.url, family, KEY_HEADER[family](holder.key)), family)
    gw.mock.reset()
    await adminOk(gw.url, 'POST', `/keys/${holder.keyId}/revoke`)
    for (const family of FAMILIES) await expectError(t, await callAs(gw.url, family, KEY_HEADER[family](holder.key)), family, 'AUTH_INVALID_API_KEY')
    nothingForwarded(t)
  })
})

t.test('AUTH_AMBIGUOUS_API_KEY: different keys in two key headers', async (t) => {
  const other = await newHolder(gw.url)
  const pairs: Record<Family, Record<string, string>> = {
    chat: { authorization: `Bearer ${gw.key}`, 'x-api-key': other.key },
    messages: { 'x-api-key': gw.key, 'x-genai-api-key': other.key },
    genai: { 'x-genai-api-key': gw.key, 'x-goog-api-key': other.key }
  }
  for (const family of FAMILIES) await expectError(t, await callAs(gw.url, family, pairs[family]), family, 'AUTH_AMBIGUOUS_API_KEY')
  nothingForwarded(t)
  // The same key in several headers is accepted.
  await expectServed(t, await callAs(gw.url, 'chat', { authorization: `Bearer ${gw.key}`, 'x-api-key': gw.key, 'x-genai-api-key': gw.key }), 'one key, three headers')
})

t.test('AUTH_API_KEY_INACTIVE: a key set inactive', async (t) => {
  const holder = await newHolder(gw.url, { key: { active: false } })
  for (const family of FAMILIES) await expectError(t, await callAs(gw.url, family, KEY_HEADER[family](holder.key)), family, 'AUTH_API_KEY_INACTIVE')
  nothingForwarded(t)
  await adminOk(gw.url, 'PATCH', `/keys/${holder.keyId}`, { active: true })
  await expectServed(t, await callAs(gw.url, 'chat', KEY_HEADER.chat(holder.key)), 'active again')
})

t.test('AUTH_API_KEY_EXPIRED: from the expiry instant on', async (t) => {
  const expiresAt = new Date(clock.now().getTime() + 60_000)
  const holder = await newHolder(second.url, { key: { expires_at: expiresAt.toISOString() } })
  clock.advance(59_999)
  await expectServed(t, await callAs(second.url, 'chat', KEY_HEADER.chat(holder.key)), '1 ms before expiry')
  gw.mock.reset()
  clock.advance(1)
  for (const family of FAMILIES) await expectError(t, await callAs(second.url, family, KEY_HEADER[family](holder.key)), family, 'AUTH_API_KEY_EXPIRED')
  nothingForwarded(t)
})

t.test('AUTH_ACCOUNT_SUSPENDED: the owning account was suspended', async (t) => {
  const holder = await newHolder(gw.url)
  await expectServed(t, await callAs(gw.url, 'chat', KEY_HEADER.chat(holder.key)), 'before the suspension')
  gw.mock.reset()
  await adminOk(gw.url, 'PATCH', `/accounts/${holder.accountId}`, { status: 'suspended' })
  for (const family of FAMILIES) await expectError(t, await callAs(gw.url, family, KEY_HEADER[family](holder.key)), family, 'AUTH_ACCOUNT_SUSPENDED')
  nothingForwarded(t)
  await adminOk(gw.url, 'PATCH', `/accounts/${holder.accountId}`, { status: 'active' })
  await expectServed(t, await callAs(gw.url, 'chat', KEY_HEADER.chat(holder.key)), 'reactivated')
})

t.test('MODEL_ACCESS_DENIED: a model outside the key\'s allowed list, never forwarded', async (t) => {
  const holder = await newHolder(gw.url, { key: { allowed_models: ['openai/gpt-4o-mini'] } })
  await expectError(t, await callAs(gw.url, 'chat', KEY_HEADER.chat(holder.key), 'openai/gpt-4o'), 'chat', 'MODEL_ACCESS_DENIED', 'model')
  for (const family of ['messages', 'genai'] as const) {
    await expectError(t, await callAs(gw.url, family, KEY_HEADER[family](holder.key)), family, 'MODEL_ACCESS_DENIED', 'model')
  }
  nothingForwarded(t)
  await expectServed(t, await callAs(gw.url, 'chat', KEY_HEADER.chat(holder.key), 'openai/gpt-4o-mini'), 'the allowed model')
  t.equal(gw.mock.calls.length, 1, 'only the allowed request reached the upstream')
})

t.test('BILLING_INSUFFICIENT_CREDITS: 402, retry TOP_UP, not retryable; nothing held, nothing forwarded', async (t) => {
  t.test('an empty wallet', async (t) => {
    const holder = await newHolder(gw.url, { credit: '0' })
    for (const family of FAMILIES) {
      const res = await callAs(gw.url, family, KEY_HEADER[family](holder.key))
      t.equal(res.status, 402, `${family}: HTTP 402`)
      const body = await expectError(t, res, family, 'BILLING_INSUFFICIENT_CREDITS') as { error: Record<string, any> }
      if (family === 'messages') {
        t.equal(body.error.type, 'billing_error', 'messages-family error.type is billing_error')
        t.strictSame(body.error.retry, { retryable: false, strategy: 'TOP_UP' })
      } else if (family === 'chat') {
        t.strictSame(body.error.retry, { retryable: false, strategy: 'TOP_UP' })
      } else {
        t.match(body.error.details[0].metadata, { retryable: 'false', retry_strategy: 'TOP_UP', billing_status: 'NOT_BILLED' })
      }
    }
    nothingForwarded(t)
    const wallet = await adminOk(gw.url, 'GET', `/accounts/${holder.accountId}/wallet`)
    t.match(wallet, { balance: '0.00', held: '0.00', available: '0.00' }, 'no hold was left behind')
  })
  t.test('a balance below the worst-case cost of the request, until a top-up', async (t) => {
    const holder = await newHolder(gw.url, { credit: '0.000001' })
    await expectError(t, await callAs(gw.url, 'chat', KEY_HEADER.chat(holder.key)), 'chat', 'BILLING_INSUFFICIENT_CREDITS')
    nothingForwarded(t)
    await adminOk(gw.url, 'POST', `/accounts/${holder.accountId}/credits`, { amount: '10.00' })
    await expectServed(t, await callAs(gw.url, 'chat', KEY_HEADER.chat(holder.key)), 'after the top-up')
  })
})

t.test('MODEL_REQUIRES_TOPUP: an account that never topped up, whatever its balance', async (t) => {
  t.same(TOPUP_MODELS, FAMILIES.map((f) => FAMILY_MODEL[f]), 'each family\'s plain request names a model that needs a top-up')
  t.test('granted credit pays but does not unlock', async (t) => {
    const holder = await newHolder(second.url, { credit: '10.00', kind: 'grant' })
    for (const family of FAMILIES) {
      const body = await expectError(t, await callAs(second.url, family, KEY_HEADER[family](holder.key)), family, 'MODEL_REQUIRES_TOPUP', 'model') as { error: Record<string, any> }
      if (family !== 'genai') t.strictSame(body.error.retry, { retryable: false, strategy: 'TOP_UP' })
    }
    nothingForwarded(t)
    await expectServed(t, await callAs(second.url, 'chat', KEY_HEADER.chat(holder.key), 'openai/gpt-4o'), 'a model without the requirement, paid by the grant')
    gw.mock.reset()
    // Any top-up unlocks it, on the next request (the cached account is refreshed).
    await adminOk(second.url, 'POST', `/accounts/${holder.accountId}/credits`, { amount: '1.00', kind: 'topup' })
    for (const family of FAMILIES) await expectServed(t, await callAs(second.url, family, KEY_HEADER[family](holder.key)), `${family} after a top-up`)
  })
  t.test('an empty wallet: the top-up requirement is named, not the balance', async (t) => {
    const holder = await newHolder(second.url, { credit: '0' })
    await expectError(t, await callAs(second.url, 'chat', KEY_HEADER.chat(holder.key)), 'chat', 'MODEL_REQUIRES_TOPUP', 'model')
    nothingForwarded(t)
  })
})

t.test('REQUEST_IDEMPOTENCY_*: one request per X-Idempotency-Key of the account, never forwarded twice', async (t) => {
  for (const family of FAMILIES) {
    t.test(family, async (t) => {
      const key = `contract-${family}-${randomBytes(6).toString('hex')}`
      const headers = { ...KEY_HEADER[family](gw.key), 'x-idempotency-key': key }
      // The first request runs against a slow upstream; its duplicate arrives while it runs.
      const first = callAs(gw.url, family, { ...headers, 'x-mock-delay-ms': '1000' })
      await gw.mock.waitForCalls(1)
      const busy = await callAs(gw.url, family, headers)
      const res = await first
      await expectServed(t, res, 'the first request')
      const id = res.headers.get('x-request-id') ?? ''
      // Both refusals name the request that holds the key (docs/idempotency.md).
      await expectError(t, busy, family, 'REQUEST_IDEMPOTENCY_IN_PROGRESS', null, undefined, { original_request_id: id })
      // Its settle phase (which records the key's end) ran before its finish phase.
      await eventually(() => outcomes.has(id), 'the first request to settle')
      await expectError(t, await callAs(gw.url, family, headers), family, 'REQUEST_IDEMPOTENCY_REPLAY_UNAVAILABLE', null, undefined, { original_request_id: id })
      // The same key with another question.
      const [path, changed] = family === 'chat'
        ? ['/v1/chat/completions', chatBody(FAMILY_MODEL.chat, 'another question')]
        : family === 'messages'
          ? ['/v1/messages', messagesBody(FAMILY_MODEL.messages, 'another question')]
          : [`/genai/v1beta/models/${encodeURIComponent(FAMILY_MODEL.genai)}:generateContent`, genaiBody([{ text: 'another question' }])]
      const conflict = await fetch(gw.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: changed })
      await expectError(t, conflict, family, 'REQUEST_IDEMPOTENCY_CONFLICT')
      t.equal(gw.mock.calls.length, 1, 'the upstream was called once')
    })
  }
})

t.test('admin API refusals, in the chat-completions envelope', async (t) => {
  const account = await adminOk<{ id: string, tier: string }>(gw.url, 'POST', '/accounts', { name: 'admin contract' })

  t.test('AUTH_REQUIRED: no admin token, or no Bearer credential', async (t) => {
    const cases: Array<[string, string, Record<string, string>]> = [
      ['no Authorization header', '/accounts', {}],
      ['a Basic credential', '/accounts', { authorization: `Basic ${ADMIN_TOKEN}` }],
      ['Bearer without a token', '/accounts', { authorization: 'Bearer ' }],
      ['an unknown admin path: nothing is told about paths', '/nothing-here', {}]
    ]
    for (const [what, path, headers] of cases) {
      const res = await adminCall(gw.url, 'GET', path, undefined, headers)
      t.equal(res.headers.get('www-authenticate'), 'Bearer realm="model-gateway admin"', `${what}: WWW-Authenticate`)
      await expectError(t, res, 'chat', 'AUTH_REQUIRED')
    }
    // A write without the token changes nothing.
    await expectError(t, await adminCall(gw.url, 'POST', '/accounts', { name: 'sneaky' }, {}), 'chat', 'AUTH_REQUIRED')
  })

  t.test('AUTH_FORBIDDEN: a wrong admin token', async (t) => {
    await expectError(t, await adminCall(gw.url, 'GET', '/accounts', undefined, { authorization: `Bearer ${ADMIN_TOKEN}x` }), 'chat', 'AUTH_FORBIDDEN')
    await expectError(t, await adminCall(gw.url, 'PATCH', `/accounts/${account.id}`, { status: 'suspended' }, { authorization: 'Bearer wrong' }), 'chat', 'AUTH_FORBIDDEN')
    // A gateway API key is not an admin token.
    await expectError(t, await adminCall(gw.url, 'GET', '/accounts', undefined, gw.auth), 'chat', 'AUTH_FORBIDDEN')
    const after = await adminOk<{ status: string }>(gw.url, 'GET', `/accounts/${account.id}`)
    t.equal(after.status, 'active', 'the refused write changed nothing')
  })

  t.test('LIMIT_RATE_EXCEEDED: admin authentication failures past the throttle', async (t) => {
    // An instance of its own (same store), whose clock stands still: its window is exactly 60 s.
    const throttled = await startTestGateway({ mock: gw.mock, shareStoreWith: gw, services: { clock: new ManualClock() }, server: { adminToken: ADMIN_TOKEN } })
    t.teardown(() => throttled.close())
    for (let i = 0; i < throttled.config.admin.max_failures; i++) {
      await expectError(t, await adminCall(throttled.url, 'GET', '/accounts', undefined, { authorization: 'Bearer wrong' }), 'chat', 'AUTH_FORBIDDEN')
    }
    // Retry-After: the rest of the throttle's window, all of it on a clock that stands still.
    await expectError(t, await adminCall(throttled.url, 'GET', '/accounts', undefined, { authorization: 'Bearer wrong' }), 'chat', 'LIMIT_RATE_EXCEEDED', null, 60)
    await expectError(t, await adminCall(throttled.url, 'GET', '/accounts'), 'chat', 'LIMIT_RATE_EXCEEDED', null, 60)
  })

  t.test('AUTH_API_KEY_NOT_FOUND: every key route, param key_id', async (t) => {
    await expectError(t, await adminCall(gw.url, 'GET', '/keys/key_missing'), 'chat', 'AUTH_API_KEY_NOT_FOUND', 'key_id')
    await expectError(t, await adminCall(gw.url, 'PATCH', '/keys/key_missing', { name: 'x' }), 'chat', 'AUTH_API_KEY_NOT_FOUND', 'key_id')
    await expectError(t, await adminCall(gw.url, 'POST', '/keys/key_missing/revoke'), 'chat', 'AUTH_API_KEY_NOT_FOUND', 'key_id')
    await expectError(t, await adminCall(gw.url, 'GET', '/keys/key_missing/reveal'), 'chat', 'AUTH_API_KEY_NOT_FOUND', 'key_id')
  })

  t.test('AUTH_API_KEY_CONFIGURATION_INVALID: param names the field', async (t) => {
    const keys = `/accounts/${account.id}/keys`
    const cases: Array<[string, unknown, string]> = [
      ['name missing', {}, 'name'],
      ['expiry not a date', { name: 'k', expires_at: 'tomorrow' }, 'expires_at'],
      ['expiry in the past', { name: 'k', expires_at: '2001-01-01T00:00:00Z' }, 'expires_at'],
      ['unknown model', { name: 'k', allowed_models: ['openai/gpt-99'] }, 'allowed_models'],
      ['money as a number', { name: 'k', quota: 25 }, 'quota'],
      ['bad tag', { name: 'k', tags: ['has space'] }, 'tags'],
      ['unknown policy', { name: 'k', rate_limit_policy: 'platinum' }, 'rate_limit_policy'],
      ['misspelt field', { name: 'k', allowed_model: ['openai/gpt-4o'] }, 'allowed_model']
    ]
    for (const [what, body, param] of cases) {
      t.test(what, async (t) => {
        await expectError(t, await adminCall(gw.url, 'POST', keys, body), 'chat', 'AUTH_API_KEY_CONFIGURATION_INVALID', param)
      })
    }
    const key = await adminOk<{ id: string }>(gw.url, 'POST', keys, { name: 'to patch' })
    await expectError(t, await adminCall(gw.url, 'PATCH', `/keys/${key.id}`, { timezone: 'Mars/Olympus' }), 'chat', 'AUTH_API_KEY_CONFIGURATION_INVALID', 'timezone')
    await expectError(t, await adminCall(gw.url, 'POST', `${keys}/import-legacy`, { key: 'sk-not-legacy', name: 'old' }), 'chat', 'AUTH_API_KEY_CONFIGURATION_INVALID', 'key')
  })

  t.test('MODEL_PUBLISH_PRICING_REQUIRED: publishing a draft priced incompletely; param the field at fault', async (t) => {
    await expectError(t, await post(`${strict.url}/v1/chat/completions`, chatBody('openai/gpt-draft')), 'chat', 'MODEL_NOT_FOUND', 'model')
    const body = await expectError(t, await adminCall(strict.url, 'POST', '/models/openai%2Fgpt-draft/publish'), 'chat', 'MODEL_PUBLISH_PRICING_REQUIRED', 'pricing')
    t.match((body as { error: { message: string } }).error.message, /pricing: token pricing needs output, per\.$/, 'the missing fields named')
  })

  t.test('AUTH_API_KEY_NOT_REVEALABLE: an imported legacy key', async (t) => {
    const legacy = `gw_live_${randomBytes(12).toString('hex')}`
    const imported = await adminOk<{ id: string, legacy: boolean }>(gw.url, 'POST', `/accounts/${account.id}/keys/import-legacy`, { key: legacy, name: 'old system' })
    t.equal(imported.legacy, true)
    const res = await adminCall(gw.url, 'GET', `/keys/${imported.id}/reveal`)
    const body = await expectError(t, res, 'chat', 'AUTH_API_KEY_NOT_REVEALABLE', 'key_id')
    t.notOk(JSON.stringify(body).includes(legacy), 'the refusal does not echo the key')
  })

  t.test('AUTH_API_KEY_REVOKED: update or reveal after revoke', async (t) => {
    const key = await adminOk<{ id: string }>(gw.url, 'POST', `/accounts/${account.id}/keys`, { name: 'to revoke' })
    await adminOk(gw.url, 'POST', `/keys/${key.id}/revoke`)
    await expectError(t, await adminCall(gw.url, 'PATCH', `/keys/${key.id}`, { active: true }), 'chat', 'AUTH_API_KEY_REVOKED', 'key_id')
    await expectError(t, await adminCall(gw.url, 'PATCH', `/keys/${key.id}`, { name: 'renamed' }), 'chat', 'AUTH_API_KEY_REVOKED', 'key_id')
    await expectError(t, await adminCall(gw.url, 'GET', `/keys/${key.id}/reveal`), 'chat', 'AUTH_API_KEY_REVOKED', 'key_id')
  })

  t.test('LIMIT_API_KEY_POLICY_NOT_ALLOWED: a key policy above the account tier', async (t) => {
    t.equal(account.tier, 'free', 'the account is on the lowest tier')
    await expectError(t, await adminCall(gw.url, 'POST', `/accounts/${account.id}/keys`, { name: 'k', rate_limit_policy: 'enterprise' }), 'chat', 'LIMIT_API_KEY_POLICY_NOT_ALLOWED', 'rate_limit_policy')
    const key = await adminOk<{ id: string }>(gw.url, 'POST', `/accounts/${account.id}/keys`, { name: 'k', rate_limit_policy: 'free' })
    await expectError(t, await adminCall(gw.url, 'PATCH', `/keys/${key.id}`, { rate_limit_policy: 'standard' }), 'chat', 'LIMIT_API_KEY_POLICY_NOT_ALLOWED', 'rate_limit_policy')
  })

  t.test('LIMIT_API_KEY_COUNT_EXCEEDED: one key past limits.max_keys_per_account', async (t) => {
    const max = gw.config.limits.max_keys_per_account
    const full = await adminOk<{ id: string }>(gw.url, 'POST', '/accounts', { name: 'full of keys' })
    for (let i = 0; i < max; i++) await adminOk(gw.url, 'POST', `/accounts/${full.id}/keys`, { name: `k${i}` })
    await expectError(t, await adminCall(gw.url, 'POST', `/accounts/${full.id}/keys`, { name: 'one too many' }), 'chat', 'LIMIT_API_KEY_COUNT_EXCEEDED')
  })
})

t.test('console API refusals (/console/v1), in the chat-completions envelope', async (t) => {
  const c = consoleClient(gw.url)
  const email = uniqueEmail('contract')
  await expectError(t, await c.call('POST', '/signup', { email: 'not an email', password: PASSWORD }), 'chat', 'AUTH_EMAIL_INVALID', 'email')
  await expectError(t, await c.call('POST', '/signup', { email: 'x@mailinator.com', password: PASSWORD }), 'chat', 'AUTH_DISPOSABLE_EMAIL', 'email')
  t.equal((await c.call('POST', '/signup', { email, password: PASSWORD })).status, 201)
  await expectError(t, await c.call('POST', '/signup', { email, password: PASSWORD }), 'chat', 'AUTH_EMAIL_ALREADY_REGISTERED', 'email')
  await expectError(t, await c.call('POST', '/signin', { email, password: PASSWORD }), 'chat', 'AUTH_EMAIL_NOT_VERIFIED')
  const code = await outboxCode(gw.url, ADMIN_TOKEN, email)
  await expectError(t, await c.call('POST', '/verify', { email, code: code === '999999' ? '999998' : '999999' }), 'chat', 'AUTH_VERIFICATION_CODE_INVALID', 'code')
  t.equal((await c.call('POST', '/verify', { email, code })).status, 200)
  for (let i = 0; i < gw.config.console.human_check_after_failures; i++) {
    await expectError(t, await c.call('POST', '/signin', { email, password: 'wrong password' }), 'chat', 'AUTH_CREDENTIALS_INVALID')
  }
  await expectError(t, await c.call('POST', '/signin', { email, password: PASSWORD }), 'chat', 'AUTH_HUMAN_CHECK_REQUIRED', 'human_check')
  const check = await humanCheck(c)
  await expectError(t, await c.call('POST', '/signin', { email, password: PASSWORD, human_check: { challenge: check.challenge, solution: '' } }), 'chat', 'AUTH_HUMAN_CHECK_FAILED', 'human_check')
  const signin = await c.call('POST', '/signin', { email, password: PASSWORD, human_check: check })
  t.equal(signin.status, 200)
  c.csrf = (await signin.json() as { csrf_token: string }).csrf_token
  await expectError(t, await c.call('POST', '/keys', { name: 'k' }, { 'x-csrf-token': '' }), 'chat', 'AUTH_CSRF_TOKEN_MISSING')
  await expectError(t, await c.call('POST', '/keys', { name: 'k' }, { 'x-csrf-token': 'forged' }), 'chat', 'AUTH_CSRF_TOKEN_INVALID')
  await expectError(t, await c.call('DELETE', '/sessions/ses_missing'), 'chat', 'AUTH_SESSION_NOT_FOUND', 'session_id')
  const me = await c.ok<{ session: { id: string } }>('GET', '/session')
  await expectError(t, await c.call('DELETE', `/sessions/${me.session.id}`), 'chat', 'AUTH_CURRENT_SESSION_REVOKE_FORBIDDEN', 'session_id')
  const other = await signedInClient(gw.url, ADMIN_TOKEN)
  const key = await other.ok<{ id: string }>('POST', '/keys', { name: 'not yours' })
  await expectError(t, await c.call('GET', `/keys/${key.id}`), 'chat', 'AUTH_API_KEY_NOT_FOUND', 'key_id')
  await expectError(t, await consoleClient(gw.url).call('GET', '/keys'), 'chat', 'AUTH_REQUIRED')

  const closedConfig = writeTestConfig((cfg) => { (cfg as unknown as Record<string, Record<string, unknown>>).console = { signup: 'closed' } })
  t.teardown(closedConfig.remove)
  const closed = await startTestGateway({ configFile: closedConfig.file, mock: gw.mock, shareStoreWith: gw })
  t.teardown(() => closed.close())
  await expectError(t, await consoleClient(closed.url).call('POST', '/signup', { email: uniqueEmail(), password: PASSWORD }), 'chat', 'AUTH_SIGNUP_NOT_ALLOWED')
})

t.test('official SDKs parse our envelopes into their own error classes', async (t) => {
  t.test('openai: APIError with status, code and our error object', async (t) => {
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const err = await openai.chat.completions.create({ model: 'openai/gpt-99', messages: [] }).then(() => null, (e: unknown) => e)
    t.ok(err instanceof OpenAI.NotFoundError && err instanceof OpenAI.APIError, 'NotFoundError, an APIError')
    if (!(err instanceof OpenAI.APIError)) return
    t.equal(err.status, 404)
    t.equal(err.code, 'MODEL_NOT_FOUND')
    t.equal(err.type, 'not_found_error')
    t.equal(err.param, 'model')
    t.match(err.error, { code: 'MODEL_NOT_FOUND', reference: 'GW-MODEL-3001', retry: { retryable: false } })
    t.equal(err.requestID, err.headers?.get('x-request-id'), 'the SDK reads our X-Request-ID')

    const upstream = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [] }, { headers: { 'x-mock-status': '500' } })
      .then(() => null, (e: unknown) => e)
    t.ok(upstream instanceof OpenAI.InternalServerError)
    if (upstream instanceof OpenAI.APIError) t.match({ status: upstream.status, code: upstream.code }, { status: 502, code: 'UPSTREAM_ERROR' })
  })

  t.test('anthropic: APIError with status and our envelope in .error', async (t) => {
    const anthropic = new Anthropic({ baseURL: `${gw.url}/msgs`, apiKey: gw.key, maxRetries: 0 })
    const err = await anthropic.messages.create({ model: 'anthropic/claude-0', max_tokens: 8, messages: [] }).then(() => null, (e: unknown) => e)
    t.ok(err instanceof Anthropic.NotFoundError && err instanceof Anthropic.APIError, 'NotFoundError, an APIError')
    if (!(err instanceof Anthropic.APIError)) return
    t.equal(err.status, 404)
    t.equal(err.type, 'not_found_error')
    t.match(err.error, { type: 'error', error: { type: 'not_found_error', code: 'MODEL_NOT_FOUND', reference: 'GW-MODEL-3001' } })
  })

  t.test('genai: ApiError with status, our code in the message', async (t) => {
    const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 } } })
    const err = await genai.models.generateContent({ model: 'genai/gemini-0', contents: 'hi' }).then(() => null, (e: unknown) => e)
    t.ok(err instanceof ApiError, 'ApiError')
    if (!(err instanceof ApiError)) return
    t.equal(err.status, 404)
    t.match(err.message, /MODEL_NOT_FOUND/)
    t.match(err.message, /GW-MODEL-3001/)

    const onStrict = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${strict.url}/genai`, retryOptions: { attempts: 1 } } })
    const paused = await onStrict.models.generateContent({ model: 'genai/veo-3', contents: 'hi' }).then(() => null, (e: unknown) => e)
    t.ok(paused instanceof ApiError && paused.status === 503 && paused.message.includes('MODEL_TEMPORARILY_UNAVAILABLE'), 'a paused model: ApiError 503')
  })
})

t.test('what each SDK does with the mid-stream event: error frame', async (t) => {
  const cut = { headers: { 'x-mock-cut-after': '2' } }

  t.test('openai chat stream: iteration throws an APIError carrying our error object', async (t) => {
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const stream = await openai.chat.completions.create({ model: 'openai/gpt-4o', stream: true, messages: [{ role: 'user', content: 'one two three' }] }, cut)
    let text = ''
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    })().then(() => null, (e: unknown) => e)
    t.equal(text, replyChunks('one two three', 2).join(''), 'the chunks before the break were delivered')
    t.ok(err instanceof OpenAI.APIError, 'APIError')
    if (!(err instanceof OpenAI.APIError)) return
    t.equal(err.status, undefined, 'no HTTP status: the answer was already 200')
    t.equal(err.code, 'PROVIDER_STREAM_INTERRUPTED')
    t.match(err.error, { code: 'PROVIDER_STREAM_INTERRUPTED', reference: 'GW-PROVIDER-6007', retry: { retryable: true, strategy: 'BACKOFF' }, billing: { status: 'BILLED' } }) // two chunks were produced and charged
  })

  t.test('openai responses stream: same APIError', async (t) => {
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const stream = openai.responses.stream({ model: 'openai/gpt-4o', input: 'one two three' }, cut)
    const events: unknown[] = []
    const err = await (async () => { for await (const event of stream) events.push(event) })().then(() => null, (e: unknown) => e)
    t.ok(err instanceof OpenAI.APIError && err.code === 'PROVIDER_STREAM_INTERRUPTED', 'APIError with our code')
  })

  t.test('anthropic stream: iteration throws an APIError whose .error is our frame data', async (t) => {
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
    const stream = await anthropic.messages.create({ model: 'anthropic/claude-sonnet-4', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'one two three' }] }, cut)
    const types: string[] = []
    const err = await (async () => { for await (const event of stream) types.push(event.type) })().then(() => null, (e: unknown) => e)
    t.same(types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta'])
    t.ok(err instanceof Anthropic.APIError, 'APIError')
    if (!(err instanceof Anthropic.APIError)) return
    t.equal(err.status, undefined)
    t.match(err.error, { error: { code: 'PROVIDER_STREAM_INTERRUPTED', reference: 'GW-PROVIDER-6007' } })
  })

  t.test('genai stream: the SDK ignores named events, so the stream just ends early', async (t) => {
    // @google/genai only reads frames that start with `data:` and only throws for an error whose
    // `code` is a number; the spec's frame (`event: error`, code a string) is invisible to it.
    const genai = new GoogleGenAI({ apiKey: gw.key, httpOptions: { baseUrl: `${gw.url}/genai`, retryOptions: { attempts: 1 } } })
    const stream = await genai.models.generateContentStream({ model: 'genai/gemini-2.5-flash', contents: 'one two three', config: { httpOptions: cut } })
    let text = ''
    const err = await (async () => { for await (const chunk of stream) text += chunk.text ?? '' })().then(() => null, (e: unknown) => e)
    t.equal(err, null, 'no error surfaces')
    t.equal(text, replyChunks('one two three', 2).join(''), 'only the chunks before the break')
  })
})

t.test('refusals a model declares in the catalogue (plugins/concerns/admission): before the hold, in the family envelope', async (t) => {
  const veoUrl = (model: string): string => `${strict.url}/genai/v1beta/models/${encodeURIComponent(model)}:predictLongRunning`
  const image = { bytesBase64Encoded: 'iVBORw0KGgo=', mimeType: 'image/png' }
  const veoBody = (instance: Record<string, unknown>): string => JSON.stringify({ instances: [{ prompt: 'a cat', ...instance }], parameters: {} })
  await expectError(t, await post(`${strict.url}/v1/chat/completions`, chatBody('openai/gpt-4o-declared', 'say contract-canary')), 'chat', 'REQUEST_CONTENT_BLOCKED')
  await expectError(t, await post(`${strict.url}/v1/chat/completions`, chatBody('openai/gpt-4o-declared', 'hi', { service_tier: 'flex' })), 'chat', 'MODEL_SERVICE_TIER_UNAVAILABLE', 'service_tier')
  await expectError(t, await post(`${strict.url}/v1/chat/completions`, chatBody('openai/gpt-4o-declared', 'hi', { max_tokens: 1000 })), 'chat', 'MODEL_CONTEXT_EXCEEDED', 'messages')
  await expectError(t, await post(veoUrl('genai/veo-no-image'), veoBody({ image })), 'genai', 'MODEL_IMAGE_TO_VIDEO_UNSUPPORTED')
  await expectError(t, await post(veoUrl('genai/veo-image-required'), veoBody({})), 'genai', 'MODEL_TEXT_TO_VIDEO_UNSUPPORTED')
  await expectError(t, await post(veoUrl('genai/veo-declared'), veoBody({ image, lastFrame: image })), 'genai', 'MODEL_LAST_FRAME_UNSUPPORTED')
  await expectError(t, await post(veoUrl('genai/veo-declared'), veoBody({ lastFrame: image })), 'genai', 'MODEL_FIRST_FRAME_REQUIRED')
  await expectError(t, await post(veoUrl('genai/veo-declared'), veoBody({ referenceImages: [{ image }] })), 'genai', 'MODEL_REFERENCE_IMAGE_UNSUPPORTED')
  t.equal(gw.mock.calls.length, 0, 'none of them reached the upstream')
})

t.test('parity: the code and the error catalogue', async (t) => {
  const codes = new Set(CATALOGUE.catalogue.map((e) => e.code))
  const pluginsDir = repoPath('plugins')
  const thrown = new Map<string, string>()
  for (const file of tsSources(pluginsDir)) {
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/gatewayError\(\s*'([A-Z][A-Z0-9_]*)'/g)) if (m[1] !== undefined) thrown.set(m[1], file)
    // Framework failures mapped to codes (errors/to-occurrence.ts).
    // CLI-only codes (admin/cli-runtime.ts: USAGE, CONFIG_INVALID…) never reach an HTTP client.
    if (file.includes('/admin/cli')) continue
    for (const m of text.matchAll(/(?:FST_ERR_[A-Z_]+: |code: )'([A-Z][A-Z0-9_]*)'/g)) if (m[1] !== undefined) thrown.set(m[1], file)
  }
  t.ok(thrown.size > 10, `found the codes the gateway throws (${thrown.size})`)
  for (const [code, file] of thrown) t.ok(codes.has(code), `${code} (${file.slice(pluginsDir.length + 1)}) is in config/errors.yaml`)

  for (const entry of CATALOGUE.catalogue) {
    if (entry.external === true) {
      t.notOk(thrown.has(entry.code), `${entry.code} is external, so no gateway code throws it`)
      continue
    }
    const listed = notYetReachable[entry.code]
    if (produced.has(entry.code)) {
      t.equal(listed, undefined, `${entry.code} is produced by a test, so it is not listed as unreachable`)
    } else {
      t.ok(listed !== undefined, `${entry.code} is produced by a test here or listed in notYetReachable`)
    }
  }
  for (const code of Object.keys(notYetReachable)) {
    t.ok(codes.has(code) && catalogueEntry(code).external !== true, `${code} in notYetReachable is a non-external catalogue entry`)
    // Once a plugin throws it, it is reachable: it needs a contract test, not a place on the list.
    t.notOk(thrown.has(code), `${code} in notYetReachable is thrown by no plugin`)
  }
  for (const code of produced) t.ok(CONTRACT[code] !== undefined && codes.has(code), `${code} has a written contract and a catalogue entry`)
})
