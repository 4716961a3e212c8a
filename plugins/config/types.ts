// The shape of gateway.yaml after `${ENV}` expansion and schema validation.
// schemas/gateway.schema.json is the source of truth; these types mirror it and
// test/config-types.test.ts fails when a schema property has no counterpart here.

export type FamilyName = string
export type EnvelopeKind = 'chat' | 'messages' | 'genai'
export type BodyKind = 'json' | 'multipart' | 'none'
export type RetryStrategy = 'NONE' | 'BACKOFF' | 'TOP_UP' | 'WAIT' | 'CHANGE_REQUEST' | 'SWITCH_MODEL'
/** `draft`: declared, not in the published catalogue (its pricing may be incomplete); the admin API publishes it. */
export type ModelStatus = 'draft' | 'active' | 'paused' | 'retired'

export interface ServerConfig {
  port: number
  host: string
  /** Body cap of uploads and of any body a route does not cap otherwise (REQUEST_TOO_LARGE above it). */
  body_limit_bytes: number
  /** Body cap of JSON bodies, unless the route sets its own. */
  json_body_limit_bytes: number
  /** Deepest object/array nesting of a JSON body (REQUEST_INVALID while it arrives). */
  json_max_depth: number
  /** Most parts (fields + files) of a multipart body. */
  multipart_max_parts: number
  /** Most plain fields of a multipart body. */
  multipart_max_fields: number
  /** Most file parts of a multipart body. */
  multipart_max_files: number
  /** Content-Language of public messages and documentation links. */
  content_language: string
  /** Base URL of the error documentation; an entry's link is `<base>/<reference>`. */
  docs_base_url: string
  /** How long a disconnected client's upstream may still be read for usage, in ms. */
  drain_timeout_ms: number
  /** How long a client may read nothing of its answer before it is cut and billed for what was produced; 0 never. */
  client_write_stall_ms: number
  /** Deadline for the whole request (headers and body) to arrive, ms (REQUEST_TIMEOUT). */
  request_timeout_ms: number
  /** Deadline for the request headers, ms (Node answers a bare 408). */
  headers_timeout_ms: number
  /** A connection with no traffic either way for this long is closed, ms. */
  connection_idle_timeout_ms: number
  /** Idle keep-alive connection lifetime between requests, ms. */
  keep_alive_timeout_ms: number
  /** Most open connections per client address; 0 no cap (LIMIT_RATE_EXCEEDED beyond it). */
  max_connections_per_address: number
  /** Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (addresses, CIDRs, loopback…); empty: none. */
  trust_proxy: string[]
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
  /** This route's body cap in bytes, for every body kind. */
  body_limit_bytes?: number
  /** Body parameters asking for deferred work; refused unless the route is a job route. */
  deferred_params?: string[]
  /** Response kind, used by metering and error framing. */
  response: 'json' | 'sse' | 'binary' | 'auto'
  /** Optional restatement of the operation's job role; must agree with the operation's `job`. */
  job?: JobRole
  /** Where a route that names no model goes (job polls): a pool and an upstream path. */
  upstream?: { pool: string; path: string }
  /** Caps of items inside a JSON or multipart body (REQUEST_CONTENT_TOO_LARGE); see docs/refusals.md. */
  content_limits?: ContentLimitsConfig
  /** Formats (magic bytes) each multipart file field accepts, by field: format names or kinds (REQUEST_MEDIA_TYPE_UNSUPPORTED). */
  file_formats?: Record<string, string[]>
  /** Content policy rules applied to the text of every request on this route (REQUEST_CONTENT_BLOCKED). */
  content_policy?: ContentRuleConfig[]
  /** Longest wait for the upstream's first byte (its response headers), ms, before REQUEST_TIMEOUT (408); unset: none. */
  first_byte_timeout_ms?: number
}

/** Per-item caps of one route (each optional: absent means unchecked). */
export interface ContentLimitsConfig {
  /** Decoded bytes of one inline base64 image in a JSON body (data URL, inline_data, base64 source). */
  inline_image_bytes?: number
  /** Decoded bytes of one inline base64 video in a JSON body. */
  inline_video_bytes?: number
  /** Characters (code points) of the prompt text of the whole request. */
  prompt_chars?: number
}

/** One named content-policy rule: case-insensitive terms and/or regular expressions, compiled at load. */
export interface ContentRuleConfig {
  /** Name logged when the rule refuses a request (the content never is). */
  name: string
  /** Blocked terms, matched case-insensitively anywhere in a text part. */
  terms?: string[]
  /** Blocked patterns, JavaScript regular expressions (flag `i` applied), compiled once at load. */
  patterns?: string[]
}

/** Range or allowed values of one body parameter a model accepts. */
export interface ParameterRuleConfig {
  /** Smallest accepted number. */
  min?: number
  /** Largest accepted number. */
  max?: number
  /** The only accepted values (strings, numbers or booleans). */
  values?: Array<string | number | boolean>
}

/** Which inputs a video-generation model accepts; an absent key is accepted. */
export interface VideoGenerationConfig {
  /** A prompt without a start image (false: MODEL_TEXT_TO_VIDEO_UNSUPPORTED). */
  text_to_video?: boolean
  /** A start (first-frame) image (false: MODEL_IMAGE_TO_VIDEO_UNSUPPORTED). */
  image_to_video?: boolean
  /** A last-frame image (false: MODEL_LAST_FRAME_UNSUPPORTED); never without a first frame (MODEL_FIRST_FRAME_REQUIRED). */
  last_frame?: boolean
  /** Reference images (false: MODEL_REFERENCE_IMAGE_UNSUPPORTED). */
  reference_images?: boolean
}

export type MeterKind = 'tokens' | 'images' | 'transcription' | 'speech' | 'call' | 'job' | 'job_poll' | 'none'
export type TokenDialectName = 'chat' | 'responses' | 'messages' | 'genai'
export type JobRole = 'create' | 'poll' | 'content'

export interface MeterConfig {
  kind: MeterKind
  /** For kind tokens: the wire format that reports the usage. */
  dialect?: TokenDialectName
  /** For kind images: the answer also bills one call. */
  per_call?: boolean
}

export interface OperationJobConfig {
  role: JobRole
  /** Upstream id space of the job ids; a create and its poll name the same one. */
  namespace: string
}

export interface OperationBoundsConfig {
  /** Dotted body paths capping the output tokens of one generation. */
  max_tokens: string[]
  /** Dotted body paths asking for several generations. */
  count: string[]
  /** The count is a number of images (billed per image, capped by the model's max_images). */
  count_is_images: boolean
  /** A job's billed units: the product of these parameters (video seconds × videos), each defaulted. */
  job_units: JobUnitConfig[]
}

/** One factor of a job's billed units: a body parameter and the provider's default for it. */
export interface JobUnitConfig {
  param: string
  default: number
}

/** A JSON value a body field is compared with. */
export type MatchValue = string | number | boolean

/** How a request is seen to use a feature (exactly one form; `check` says which combinations hold). */
export interface FeatureMatchConfig {
  /** Dotted path of a body list whose entries are examined. */
  list?: string
  /** With `list`: the entry field compared with `values`. */
  field?: string
  /** With `list`: entry keys any one of which marks the feature. */
  keys?: string[]
  /** Body parameters any one of which, present and not null, marks the feature. */
  param?: string[]
  /** A query parameter (lower-case name) that marks the feature. */
  query?: string
  /** The values that mark it (of the entry field, the param or the query parameter). */
  values?: MatchValue[]
}

export type FeatureCharge = 'per_call' | 'per_use' | 'multiplier' | 'tokens'
export type FeatureInput = 'countable' | 'context_window' | 'context_window_per_use'

export interface FeatureUsesConfig {
  /** A body parameter capping the uses (max_tool_calls). */
  param?: string
  /** A field of the matched list entry capping its uses (max_uses). */
  item_field?: string
  /** Uses held for when the request caps none. */
  default: number
}

/** Where the provider's answer says how much a feature was used (exactly one key). */
export interface FeatureReportConfig {
  /** A count at this path of the answer's usage object. */
  usage?: string
  /** Answer output[] items of these types, one use each. */
  output_items?: string[]
  /** A candidate carrying this field: one use. */
  candidates_with?: string
  /** The answer field equal to one of the values: the feature applied. */
  answer_value?: { field: string, values: MatchValue[] }
}

/** One body feature or query value that changes what the provider charges. */
export interface FeatureConfig {
  match: FeatureMatchConfig
  charge: FeatureCharge
  uses?: FeatureUsesConfig
  input: FeatureInput
  report?: FeatureReportConfig
  /** What a model that does not name the feature does with it; absent: each model must decide. */
  default?: 'refused' | 'allowed'
}

/** A body list whose entries must be plain or a declared feature. */
export interface ToolListConfig {
  list: string
  /** The entry field checked; absent: every key of the entry. */
  field?: string
  /** Values (or keys) billed as tokens only. */
  plain: string[]
}

/** One entry of `operations:` (and of the built-in config/operations.yaml). */
export interface OperationConfig {
  meter: MeterConfig
  job?: OperationJobConfig
  usage_chunk: boolean
  video_parts: boolean
  bounds: OperationBoundsConfig
  /** Body features and query values the provider charges for, by feature name. */
  features?: Record<string, FeatureConfig>
  /** Closed body lists (tools): unknown entry types are refused. */
  tool_lists?: ToolListConfig[]
  /** Query parameters forwarded, each with the values that keep the answer meterable (none: nothing forwarded). */
  query?: Record<string, string[]>
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
  /** Time to open a connection to this provider, ms (the member is then retried on another). */
  connect_timeout_ms: number
  /**
   * A streaming client left: false cancels the upstream at once and bills what was produced
   * (estimated when no usage arrived); true reads the upstream for up to server.drain_timeout_ms.
   */
  drain_on_disconnect: boolean
  /** Path an active health check GETs (upstream.health_check_interval_ms); absent: none. */
  health_check_path?: string
  /** Upstream connection pool size for this provider's origin. */
  connections: number
  /** Client request headers (lower-case) forwarded to this provider; every other one is dropped. */
  allow_request_headers: string[]
  /** Provider response headers (lower-case) passed back to the client; every other one is dropped. */
  allow_response_headers: string[]
  /** Query parameter names (decoded, lower-case) forwarded to this provider; every other one is dropped. */
  allow_query_params: string[]
}

export interface UpstreamConfig {
  /** Most members of one pool a request is sent to (first try included), before the first byte. */
  max_tries: number
  /** Upstream statuses retried on another member of the pool. */
  retry_statuses: number[]
  /** Consecutive failures that open a member's circuit; 0 off. */
  breaker_failures: number
  /** How long an open circuit skips its member before one probe, ms. */
  breaker_cooldown_ms: number
  /** Active health check interval, ms; 0 none. */
  health_check_interval_ms: number
}

export interface PoolMember {
  provider: string
  weight: number
}

export interface ModelOperationConfig {
  /** Upstream path; `{model}` is replaced by the URL-encoded upstream model name, `{id}` by the job id. */
  path: string
  /** Top-level JSON body fields the provider refuses for this model, removed before forwarding. */
  drop_fields?: string[]
  /** Lower an output-token limit above the model's `max_output_tokens` to it before forwarding. */
  cap_output_tokens?: boolean
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
  /** Hold per media item sent by URL or file id, a decimal string per single item; needs an input token price. */
  url_media_item?: string
  /** Operation features this model serves: a price, `allowed` (charge tokens only) or `refused`. */
  features?: Record<string, FeaturePriceConfig | 'refused' | 'allowed'>
}

/** The price of one feature: exactly one of the three. */
export interface FeaturePriceConfig {
  /** Per request that uses the feature. */
  per_call?: string
  /** Per use (one search, one image). */
  per_use?: string
  /** Factor on every token price (a priority tier). */
  multiplier?: string
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
  /** Most images one request may ask for (default 10); more is MODEL_PARAMETER_UNSUPPORTED. */
  max_images?: number
  requires_topup?: boolean
  /** Context window in tokens: estimated input plus requested output above it is MODEL_CONTEXT_EXCEEDED. */
  context_window?: number
  /** Service tiers the model serves; a `service_tier` outside the list is MODEL_SERVICE_TIER_UNAVAILABLE. */
  service_tiers?: string[]
  /** Ranges or values of body parameters (dotted paths), MODEL_PARAMETER_UNSUPPORTED outside them. */
  parameters?: Record<string, ParameterRuleConfig>
  /** The video-generation input matrix (only checked when declared). */
  video_generation?: VideoGenerationConfig
  /** Content policy rules applied to the text of every request for this model (REQUEST_CONTENT_BLOCKED). */
  content_policy?: ContentRuleConfig[]
}

export interface TierConfig {
  rank: number
  requests_per_minute: number
  concurrent_streams: number
  /**
   * How far below wallet.floor an account of this tier may go (decimal string, default "0"):
   * its bound is floor − overdraft. Optional here: tiers built in code (tests) leave it out.
   */
  overdraft?: string
}

export interface LimitsConfig {
  default_tier: string
  tiers: Record<string, TierConfig>
  /** Enforce requests per minute and concurrent streams (default true). */
  enabled: boolean
  /** Lifetime of a stream lease unless renewed (default 30 000). */
  stream_lease_ttl_ms: number
  /** Renewal period of live leases (default 10 000). */
  stream_lease_renew_ms: number
  /** Longest wait for Redis per check before the in-process limiter decides (default 250). */
  redis_timeout_ms: number
  /** Most keys and accounts the in-process limiter tracks (default 100 000). */
  local_max_entries: number
  /** Most API keys an account may hold that are not revoked (default 50): LIMIT_API_KEY_COUNT_EXCEEDED past it. */
  max_keys_per_account: number
  /** A UTC day (YYYY-MM-DD) of platform-wide image pause; resumes at 00:00 UTC the next day. */
  images_paused_on?: string
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
  /** Lowest available balance a hold may leave, less the tier's overdraft (decimal string). */
  floor: string
  hold_ttl_ms: number
  job_hold_ttl_ms: number
  reaper_interval_ms: number
}

export interface JobWatcherConfig {
  enabled: boolean
  interval_ms: number
  batch: number
  claim_ms: number
  first_check_ms: number
  backoff_ms: number
  max_backoff_ms: number
}

export interface JobsConfig {
  max_age_ms: number
  watcher: JobWatcherConfig
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

export interface ConsoleConfig {
  /** Serve the console API and page. */
  enabled: boolean
  /** open: self-service sign-up; closed: AUTH_SIGNUP_NOT_ALLOWED. */
  signup: 'open' | 'closed'
  /** Shortest password accepted at sign-up and reset, characters. */
  password_min_length: number
  /** Longest password accepted anywhere, characters (REQUEST_INVALID before hashing). */
  password_max_length: number
  /** Session lifetime from sign-in, ms. */
  session_ttl_ms: number
  /** Reveal needs a sign-in at most this old, ms. */
  reveal_window_ms: number
  /** Email verification code lifetime, ms. */
  verification_code_ttl_ms: number
  /** Wrong codes before the pending code is void. */
  verification_max_attempts: number
  /** Guesses at email codes one address may receive per hour (all codes and resends). */
  code_guesses_per_email_per_hour: number
  /** Sign-ups, resends and reset requests (each may mail) for one address per hour. */
  mails_per_email_per_hour: number
  /** Resends and reset requests from one client address per hour. */
  mail_requests_per_address_per_hour: number
  /** Sign-up attempts from one client address per hour. */
  signups_per_address_per_hour: number
  /** Failed sign-ins (per client address, or per email) before a proof-of-work is required. */
  human_check_after_failures: number
  /** Leading zero bits of a proof-of-work solution's SHA-256. */
  human_check_difficulty: number
  /** Failed sign-ins from one client address per window before 429. */
  signin_max_failures: number
  /** Failed sign-ins for one email (from all addresses) per window before 429. */
  signin_max_failures_per_email: number
  /** Sign-in failure window, ms. */
  signin_failure_window_ms: number
  /** Password hashes run at once. */
  password_hash_concurrency: number
  /** Password hashes that may wait; beyond, 429. */
  password_hash_queue: number
  /** Extra domains refused as disposable. */
  blocked_email_domains: string[]
  /** SMTP server for verification mail; empty: the outbox only. */
  smtp_url: string
  /** From address of console mail (SMTP only). */
  mail_from: string
}

export interface MetricsConfig {
  /** Collect and serve metrics (false: no hook, no cost per request). */
  enabled: boolean
  /** `admin`: on the admin listener (loopback by default); `public`: on the tenants' listener. */
  listener: 'admin' | 'public'
  /** Path of the Prometheus text exposition. */
  path: string
  /** prom-client's process metrics as well. */
  default_metrics: boolean
}

export interface AccessLogConfig {
  /** One line per request (false: no hook, no cost per request). */
  enabled: boolean
  /** Pino level of the line. */
  level: 'trace' | 'debug' | 'info' | 'warn'
}

export interface ObservabilityConfig {
  metrics: MetricsConfig
  access_log: AccessLogConfig
}

export interface GatewayConfig {
  server: ServerConfig
  families: Record<FamilyName, FamilyConfig>
  auth: AuthConfig
  routes: RouteConfig[]
  /**
   * Operations by name. After loadConfig: the built-in entries merged with gateway.yaml's.
   * Optional for configs built by hand; compileOperations adds the built-in entries itself.
   */
  operations?: Record<string, OperationConfig>
  providers: Record<string, ProviderConfig>
  pools: Record<string, PoolMember[]>
  upstream: UpstreamConfig
  models: ModelConfig[]
  limits: LimitsConfig
  wallet: WalletConfig
  jobs: JobsConfig
  admin: AdminConfig
  console: ConsoleConfig
  /** Optional for configs built by hand: absent means the schema defaults (both on, metrics on the admin listener). */
  observability?: ObservabilityConfig
  errors: ErrorsConfig
}
