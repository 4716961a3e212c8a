// The shape of gateway.yaml after `${ENV}` expansion and schema validation.
// schemas/gateway.schema.json is the source of truth; these types mirror it and
// test/config-types.test.ts fails when a schema property has no counterpart here.

export type FamilyName = string
export type EnvelopeKind = 'chat' | 'messages' | 'genai'
export type BodyKind = 'json' | 'multipart' | 'none'
export type RetryStrategy = 'NONE' | 'BACKOFF' | 'TOP_UP' | 'WAIT' | 'CHANGE_REQUEST' | 'SWITCH_MODEL'
export type ModelStatus = 'active' | 'paused' | 'retired'

export interface ServerConfig {
  port: number
  host: string
  /** Whole request body cap in bytes (REQUEST_TOO_LARGE above it). */
  body_limit_bytes: number
  /** Content-Language of public messages and documentation links. */
  content_language: string
  /** Base URL of the error documentation; an entry's link is `<base>/<reference>`. */
  docs_base_url: string
  /** How long a disconnected client's upstream may still be read for usage, in ms. */
  drain_timeout_ms: number
  /** On shutdown, how long in-flight answers may still run before connections are closed, ms. */
  shutdown_grace_ms: number
}

export interface FamilyConfig {
  envelope: EnvelopeKind
  /** Path prefixes that imply this family for unknown paths (REQUEST_ROUTE_NOT_FOUND envelope). */
  prefixes: string[]
}

export interface RouteConfig {
  path: string
  aliases: string[]
  method: 'GET' | 'POST' | 'DELETE'
  family: FamilyName
  /** Operation name; models declare which operations they serve. */
  operation: string
  /** Accepted request body kinds, in order of preference. */
  body: BodyKind[]
  /** Per-item size caps in bytes (multipart file fields, base64 inline data). */
  item_limits?: Record<string, number>
  /** Response kind, used by metering and error framing. */
  response: 'json' | 'sse' | 'binary' | 'auto'
  /** Job routes: create / poll / content. Forwarded as-is in this version. */
  job?: 'create' | 'poll' | 'content'
  /** Where a route that names no model goes (job polls): a pool and an upstream path. */
  upstream?: { pool: string; path: string }
}

export interface AuthHeaderConfig {
  name: string
  /** Authorization scheme, e.g. Bearer; absent means the whole value is the key. */
  scheme?: string
}

export interface AuthConfig {
  headers: AuthHeaderConfig[]
  /** Request headers never forwarded upstream (client credentials, cookies). */
  strip_headers: string[]
  /** How long an unknown key is remembered per instance, ms (0: never). */
  unknown_key_ttl_ms: number
  /** Most unknown keys remembered per instance. */
  unknown_key_cache_max: number
}

export interface ProviderConfig {
  base_url: string
  /** Headers injected on every upstream request (credentials); values never logged. */
  headers: Record<string, string>
  /** Time to first response byte, ms (PROVIDER_TIMEOUT when exceeded). */
  timeout_ms: number
  /** Max idle time between two body chunks, ms. */
  body_timeout_ms: number
  /** Upstream connection pool size for this provider's origin. */
  connections: number
  /** Client request headers (lower-case) forwarded to this provider; every other one is dropped. */
  allow_request_headers: string[]
  /** Provider response headers (lower-case) passed back to the client; every other one is dropped. */
  allow_response_headers: string[]
  /** Query parameter names (decoded, lower-case) forwarded to this provider; every other one is dropped. */
  allow_query_params: string[]
}

export interface PoolMember {
  provider: string
  weight: number
}

export interface ModelOperationConfig {
  /** Upstream path; `{model}` is replaced by the URL-encoded upstream model name, `{id}` by the job id. */
  path: string
}

export interface PriceConfig {
  /** Billing unit of this price list. */
  unit: 'token' | 'image' | 'audio_second' | 'character' | 'call' | 'job'
  /** Decimal strings, in account currency per `per` units. */
  input?: string
  output?: string
  cached_input?: string
  /** Price of one unit for image/audio_second/character/call/job. */
  unit_price?: string
  /** Units the prices refer to (e.g. 1000000 tokens). */
  per?: number
}

export interface ModelConfig {
  id: string
  status: ModelStatus
  pool: string
  upstream_model: string
  operations: Record<string, ModelOperationConfig>
  capabilities: string[]
  pricing: PriceConfig
  fallbacks: string[]
  /** Largest output a request can ask for; the worst-case hold uses it. */
  max_output_tokens?: number
  requires_topup?: boolean
}

export interface TierConfig {
  rank: number
  requests_per_minute: number
  concurrent_streams: number
}

export interface LimitsConfig {
  default_tier: string
  tiers: Record<string, TierConfig>
}

/** Envelope `type` (GenAI: `status`) of one catalogue entry, per envelope. */
export interface ErrorTypeOverrides {
  chat?: string
  messages?: string
  genai?: string
}

/** Default envelope `type` per envelope, keyed by HTTP status ("400", "429", ...). */
export interface TypeByStatus {
  chat: Record<string, string>
  messages: Record<string, string>
  genai: Record<string, string>
}

export interface ErrorEntryConfig {
  code: string
  reference: string
  status: number
  message: string
  /** Family-specific `type` values; defaults come from `type_by_status`. */
  type?: ErrorTypeOverrides
  retry?: { strategy: RetryStrategy; after_seconds?: number }
  aliases?: string[]
  /** Raised outside this gateway (console, jobs) and so not reachable from gateway code yet. */
  external?: boolean
}

export interface ErrorsConfig {
  domain: string
  type_by_status: TypeByStatus
  catalogue: ErrorEntryConfig[]
}

export interface WalletConfig {
  /** Lowest available balance a hold may leave (decimal string). */
  floor: string
  hold_ttl_ms: number
  job_hold_ttl_ms: number
  reaper_interval_ms: number
}

export interface AdminConfig {
  /** Interface of the admin listener (GATEWAY_ADMIN_HOST overrides it). */
  host: string
  /** Port of the admin listener (GATEWAY_ADMIN_PORT overrides it). */
  port: number
  /** Shortest admin token the gateway starts with. */
  token_min_length: number
  /** Failed admin authentications per address and window before 429. */
  max_failures: number
  /** Failure window length, ms. */
  failure_window_ms: number
}

export interface GatewayConfig {
  server: ServerConfig
  families: Record<FamilyName, FamilyConfig>
  auth: AuthConfig
  routes: RouteConfig[]
  providers: Record<string, ProviderConfig>
  pools: Record<string, PoolMember[]>
  models: ModelConfig[]
  limits: LimitsConfig
  wallet: WalletConfig
  admin: AdminConfig
  errors: ErrorsConfig
}
