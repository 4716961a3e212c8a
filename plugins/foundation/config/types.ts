// Generated from schemas/*.json by `npm run types` (plugins/apps/docs/config-types.ts): do not edit.
// To add or change a gateway.yaml key, edit its schema (with a `description`), then run
// `npm run types` and `npm run docs`. test/config-types.test.ts fails when this file is stale.

/**
 * Error envelope of this family's answers.
 */
export type EnvelopeKind = 'chat' | 'messages' | 'genai'
/**
 * The answer's format: openai (`{object: list, data: [{id, object: model, created, owned_by}]}`), anthropic (`{data: [{type: model, id, display_name, created_at}], has_more, first_id, last_id}`) or genai (`{models: [{name: models/<id>, displayName, inputTokenLimit, outputTokenLimit, supportedGenerationMethods}]}`). The catalogue holds no release dates: `created` is 0, `created_at` the epoch.
 */
export type ListingFormat = 'openai' | 'anthropic' | 'genai'
export type BodyKind = 'json' | 'multipart' | 'none'
/**
 * A job role: create, poll or content.
 */
export type JobRole = 'create' | 'poll' | 'content'
/**
 * One entry per public endpoint; each becomes one Fastify route.
 *
 * @minItems 1
 */
export type RoutesConfig = RouteConfig[]
/**
 * tokens: token usage in a wire dialect; images: images returned (and their tokens when reported); transcription: seconds of input audio (or tokens); speech: input characters (or tokens); call: one call per answer; job: an asynchronous job created (billed when it completes); job_poll: a job status read (settles the job's hold); none: bills nothing.
 */
export type MeterKind = 'tokens' | 'images' | 'transcription' | 'speech' | 'call' | 'job' | 'job_poll' | 'none'
/**
 * For kind tokens: the wire format that reports the usage (chat completions, responses, messages, genai generateContent).
 */
export type TokenDialectName = 'chat' | 'responses' | 'messages' | 'genai'
/**
 * A JSON value a body field is compared with (a string, number or boolean).
 */
export type MatchValue = string | number | boolean
/**
 * How the provider charges it: per_call (once per request that uses it), per_use (once per use, bounded by `uses`), multiplier (a factor on every token price, e.g. a priority service tier), tokens (nothing of its own: what it costs is input tokens, see `input`).
 */
export type FeatureCharge = 'per_call' | 'per_use' | 'multiplier' | 'tokens'
/**
 * What the feature does to the input the provider bills: countable (nothing; the body bounds it), context_window (the provider reads input the gateway cannot count, bounded by the model's context window), context_window_per_use (the provider reads the context again after each use: the context window once more per use).
 */
export type FeatureInput = 'countable' | 'context_window' | 'context_window_per_use'
/**
 * Configured status: active serves; paused answers MODEL_TEMPORARILY_UNAVAILABLE; retired answers MODEL_RETIRED; draft is not in the published catalogue (MODEL_NOT_FOUND) and may have incomplete pricing, every other status needs complete pricing. The admin API can override it (POST /admin/v1/models/{id}/publish, pause, retire, unpublish); the override is stored in the shared database.
 */
export type ModelStatus = 'draft' | 'active' | 'paused' | 'retired'
/**
 * The model catalogue: pricing, operations, capabilities, status and fallbacks.
 */
export type ModelsConfig = ModelConfig[]
/**
 * Retry strategy.
 */
export type RetryStrategy = 'NONE' | 'BACKOFF' | 'TOP_UP' | 'WAIT' | 'CHANGE_REQUEST' | 'SWITCH_MODEL'

/**
 * The whole gateway.yaml after `include:` files are merged and `${ENV}` references are expanded.
 */
export interface GatewayConfig {
  server: ServerConfig
  families: FamiliesConfig
  auth: AuthConfig
  routes: RoutesConfig
  operations: OperationsConfig
  providers: ProvidersConfig
  pools: PoolsConfig
  upstream: UpstreamConfig
  models: ModelsConfig
  limits: LimitsConfig
  errors: ErrorsConfig
  wallet: WalletConfig
  jobs: JobsConfig
  admin: AdminConfig
  console: ConsoleConfig
  observability: ObservabilityConfig
}
/**
 * Listener, timeouts, body limits and public-message settings.
 */
export interface ServerConfig {
  /**
   * TCP port to listen on; 0 picks a free port.
   */
  port: number
  /**
   * Interface address to listen on.
   */
  host: string
  /**
   * Request body cap in bytes of upload (multipart) bodies, and of any body a route does not cap otherwise; larger bodies answer REQUEST_TOO_LARGE.
   */
  body_limit_bytes: number
  /**
   * Request body cap in bytes of JSON bodies (smaller than uploads; never above `body_limit_bytes`); a route's `body_limit_bytes` overrides it. Larger bodies answer REQUEST_TOO_LARGE as soon as their Content-Length or their bytes say so.
   */
  json_body_limit_bytes: number
  /**
   * Deepest nesting of objects and arrays a JSON body may have; a deeper body answers REQUEST_INVALID while it is still arriving, before it is parsed.
   */
  json_max_depth: number
  /**
   * Most parts (fields and files together) a multipart body may have; more answer REQUEST_TOO_LARGE while the body is still arriving.
   */
  multipart_max_parts: number
  /**
   * Most plain (non-file) fields a multipart body may have; more answer REQUEST_TOO_LARGE.
   */
  multipart_max_fields: number
  /**
   * Most file parts a multipart body may have; more answer REQUEST_TOO_LARGE.
   */
  multipart_max_files: number
  /**
   * Content-Language of public messages and documentation links (a BCP 47 tag).
   */
  content_language: string
  /**
   * Base URL of the error documentation; an entry's link is `<base>/<reference>`.
   */
  docs_base_url: string
  /**
   * How long a disconnected client's upstream may still be read for usage, in ms.
   */
  drain_timeout_ms: number
  /**
   * How long a client may read nothing of its answer (its socket full) before it is cut: its upstream is then read for usage (up to `drain_timeout_ms`) or cancelled and the request is billed for what was produced. 0 never cuts (not recommended: a client that stops reading would hold its upstream, hold and connection).
   */
  client_write_stall_ms: number
  /**
   * The whole request (headers and body) must arrive within this many ms; a slower upload answers REQUEST_TIMEOUT and its connection is closed.
   */
  request_timeout_ms: number
  /**
   * The request headers must arrive within this many ms of the connection's first byte; Node closes a slower one with a bare 408 (no route is known yet).
   */
  headers_timeout_ms: number
  /**
   * A connection on which no byte moves either way for this many ms is closed (Fastify `connectionTimeout`); keep it above the providers' `timeout_ms` and `body_timeout_ms`. A request waiting for a non-streamed answer gets its answer_timeout_ms plus 10 s on its own connection instead.
   */
  connection_idle_timeout_ms: number
  /**
   * How long an idle keep-alive connection stays open between two requests, in ms.
   */
  keep_alive_timeout_ms: number
  /**
   * Most connections one client address may hold open at once; a request on a connection beyond it answers LIMIT_RATE_EXCEEDED and the connection is closed. Behind a proxy every client shares the proxy's address: raise it or set 0 (no cap).
   */
  max_connections_per_address: number
  /**
   * On shutdown, how long in-flight answers may still run before every connection is closed, in ms.
   */
  shutdown_grace_ms: number
  /**
   * Addresses of the reverse proxies in front of the gateway (IPv4/IPv6 addresses, CIDR ranges, or loopback, linklocal, uniquelocal). A request from one of them is taken as coming from the client its X-Forwarded-For names and over the protocol its X-Forwarded-Proto names (the console's session cookie is Secure when that is https; console throttles count that client address). Empty: forwarded headers are ignored. Plugin mode: set Fastify's own trustProxy instead.
   *
   * Items: One proxy: an IPv4 or IPv6 address, a CIDR range (10.0.0.0/8, fd00::/8), or loopback, linklocal or uniquelocal.
   */
  trust_proxy: string[]
}
/**
 * Protocol families by name; a family picks the error envelope of its routes.
 */
export interface FamiliesConfig {
  [k: string]: FamilyConfig
}
/**
 * One protocol family.
 */
export interface FamilyConfig {
  envelope: EnvelopeKind
  /**
   * Path prefixes that imply this family for unknown paths (REQUEST_ROUTE_NOT_FOUND envelope).
   */
  prefixes: string[]
  /**
   * Other names this family's requests may give a model by (the bare names SDKs and frameworks send, e.g. `gpt-4o-mini`, `claude-sonnet-4`, `gemini-2.5-flash`), each standing for a catalogue id. Resolved before anything else reads the model: the key's allowed models, the price, the limits, the request log and X-Gateway-Model all name the catalogue id; the provider still receives the model's `upstream_model`. `check` refuses an alias that is a catalogue id, that another alias of the family already claims, or that names a model the catalogue does not hold.
   */
  aliases?: ModelAliasConfig[]
  /**
   * Model listings of this family, answered by the gateway from the catalogue in the family's format (GET /v1/models and the like): the models the calling key may use (published ones its and its account's allowed models name, served by an operation of one of the family's routes), with their context window and output limit where the format has them. Authenticated and rate-limited like every call; nothing is sent upstream, held or billed. Each entry is one GET route.
   */
  listings?: ListingConfig[]
}
/**
 * One alias of a family.
 */
export interface ModelAliasConfig {
  /**
   * The name a request may use (`model` field or `{model}` path segment), matched exactly.
   */
  alias: string
  /**
   * The catalogue id it stands for.
   */
  model: string
}
/**
 * One listing endpoint (GET).
 */
export interface ListingConfig {
  /**
   * Public path; a path with `{id}` answers one model (a catalogue id, URL-encoded or not, or an alias of the family; refused as a call for it would be: MODEL_NOT_FOUND for an id the catalogue does not publish).
   */
  path: string
  format: ListingFormat
  /**
   * Serve this listing, instead of the listing or GET route of the same path without `when_header`, to requests that carry this header (lower case): how two families that share a path are told apart (`anthropic-version` on GET /v1/models, which the Anthropic SDK always sends and the OpenAI SDK never does).
   */
  when_header?: string
}
/**
 * Which request headers carry the API key and which headers never go upstream.
 */
export interface AuthConfig {
  /**
   * Headers that may carry the API key; different keys in more than one of them is AUTH_AMBIGUOUS_API_KEY.
   *
   * @minItems 1
   */
  headers: AuthHeaderConfig[]
  /**
   * Request headers never forwarded upstream (client credentials, cookies), lower-case.
   */
  strip_headers: string[]
  /**
   * How long an instance remembers that a well-formed key is unknown, in ms, so a flood of minted keys costs one store lookup each per TTL; creating a key clears these entries on every instance. 0 turns the negative cache off.
   */
  unknown_key_ttl_ms: number
  /**
   * Most unknown keys one instance remembers at once (least recently used go first).
   */
  unknown_key_cache_max: number
}
export interface AuthHeaderConfig {
  /**
   * Lower-case header name.
   */
  name: string
  /**
   * Authorization scheme, e.g. Bearer; absent means the whole value is the key.
   */
  scheme?: string
}
/**
 * One public endpoint.
 */
export interface RouteConfig {
  /**
   * Public path; `{model}` takes the model id from the path (URL-encoded or not, its slash included, up to the text that follows the placeholder), `{id}` a job id.
   */
  path: string
  /**
   * Other public paths served by the same route (e.g. `/genai/v1beta/{model}:generateContent` next to `/genai/v1beta/models/{model}:generateContent`, for clients that drop `models/` before an id with a slash).
   *
   * Items: An absolute URL path; may contain the {model} and {id} placeholders.
   */
  aliases: string[]
  /**
   * HTTP method.
   */
  method: 'GET' | 'POST' | 'DELETE'
  /**
   * Protocol family (a key of `families`); picks the error envelope.
   */
  family: string
  /**
   * Operation name; models declare which operations they serve.
   */
  operation: string
  /**
   * Accepted request body kinds, in order of preference.
   *
   * @minItems 1
   */
  body: BodyKind[]
  /**
   * Per-item size caps in bytes (multipart file fields, base64 inline data), by field name.
   */
  item_limits?: {
    [k: string]: number
  }
  content_limits?: ContentLimitsConfig
  /**
   * Formats each multipart file field accepts, by field name, read from the file's magic bytes (not its name or declared type): format names (mp3, wav, flac, ogg, webm, mp4, m4a, png, jpeg, gif, webp, pdf) or kinds (audio, image, video). A file recognised as anything else is refused with REQUEST_MEDIA_TYPE_UNSUPPORTED (415); an unrecognised one is left to the provider.
   */
  file_formats?: {
    /**
     * @minItems 1
     */
    [k: string]: (
      | 'audio'
      | 'image'
      | 'video'
      | 'mp3'
      | 'wav'
      | 'flac'
      | 'ogg'
      | 'webm'
      | 'mp4'
      | 'm4a'
      | 'png'
      | 'jpeg'
      | 'gif'
      | 'webp'
      | 'pdf'
    )[]
  }
  /**
   * Content-policy rules applied to the text parts of every request on this route (REQUEST_CONTENT_BLOCKED, 400).
   */
  content_policy: ContentRuleConfig[]
  /**
   * Longest time the client waits for the upstream's first byte (its response headers, all fallbacks included), ms: past it the upstream call is cancelled, nothing is billed and the client gets REQUEST_TIMEOUT (408). Unset: only the providers' own timeouts apply.
   */
  first_byte_timeout_ms?: number
  /**
   * This route's bound on the wait for a non-streamed answer's first byte (the whole generation), ms; overrides the providers' answer_timeout_ms (e.g. longer for image or video routes). PROVIDER_TIMEOUT when exceeded.
   */
  answer_timeout_ms?: number
  /**
   * This route's request body cap in bytes, for every body kind; overrides `server.json_body_limit_bytes` and `server.body_limit_bytes`.
   */
  body_limit_bytes?: number
  /**
   * Body parameters that ask the provider for deferred (background) work, e.g. `background`. A request that sets one to anything but false/null is refused with MODEL_PARAMETER_UNSUPPORTED (never forwarded, never billed), unless the route is a job route (`job: create`), which prices and settles deferred work.
   */
  deferred_params: string[]
  /**
   * Response kind, used by metering and error framing.
   */
  response: 'json' | 'sse' | 'binary' | 'auto'
  job?: JobRole
  /**
   * Where a job poll or download goes upstream: a pool (polls go to the provider that runs the job) and an upstream path.
   */
  upstream?: {
    /**
     * Upstream pool (a key of `pools`).
     */
    pool: string
    /**
     * Upstream path; `{id}` is replaced by the provider's id of the job (an operation name keeps its slashes).
     */
    path: string
  }
}
/**
 * Caps of items inside a body, each checked only when set (REQUEST_CONTENT_TOO_LARGE, 413, before anything is held or forwarded).
 */
export interface ContentLimitsConfig {
  /**
   * Decoded bytes of one inline base64 image in a JSON body (`image_url` data URL, `inline_data`/`inlineData`, a base64 `source`, `bytesBase64Encoded`).
   */
  inline_image_bytes?: number
  /**
   * Decoded bytes of one inline base64 video in a JSON body.
   */
  inline_video_bytes?: number
  /**
   * Characters (Unicode code points) of all prompt text in the request (messages, content blocks, input, parts, prompts, instructions).
   */
  prompt_chars?: number
}
/**
 * One named content-policy rule: blocked terms (case-insensitive substrings) and/or patterns (JavaScript regular expressions, flag i), compiled once at load. A text part that matches is refused with REQUEST_CONTENT_BLOCKED; the rule's name is logged, the content never is.
 */
export interface ContentRuleConfig {
  /**
   * Name logged when the rule refuses a request.
   */
  name: string
  /**
   * Blocked terms, matched case-insensitively anywhere in a text part.
   */
  terms?: string[]
  /**
   * Blocked JavaScript regular expressions (compiled with flag i at load; an invalid one fails the config check).
   */
  patterns?: string[]
}
/**
 * What the gateway knows about each operation, by name: how its answer is metered, its part in an asynchronous job, which body parameters bound its worst-case cost, and which body features and query values change what the provider charges. Built-in entries for every operation of the spec come from config/operations.yaml; an entry here replaces the built-in entry of the same name whole, or adds a new operation.
 */
export interface OperationsConfig {
  [k: string]: OperationConfig
}
/**
 * One operation.
 */
export interface OperationConfig {
  meter: MeterConfig
  job?: OperationJobConfig
  /**
   * A streamed answer may be asked for its usage chunk on the client's behalf (chat completions' stream_options.include_usage); the chunk is dropped again when the client did not ask for it.
   */
  usage_chunk: boolean
  /**
   * Whether the operation's wire format can carry video parts; when false, a body with video input is refused with REQUEST_VIDEO_INPUT_ENDPOINT_UNSUPPORTED.
   */
  video_parts: boolean
  bounds: OperationBoundsConfig
  /**
   * Body features and query values that change what the provider charges, by feature name. Each is priced, refused or allowed per model (`pricing.features`).
   */
  features?: {
    [k: string]: FeatureConfig
  }
  /**
   * Body lists whose entries must be plain or a declared feature (deny by default for tool types the gateway does not know).
   */
  tool_lists?: ToolListConfig[]
  /**
   * Query parameters forwarded for this operation (if the provider's allow_query_params also allows them), each with the only values that keep the answer meterable; another value is refused with MODEL_PARAMETER_UNSUPPORTED, and a parameter not listed here is not forwarded.
   */
  query?: {
    /**
     * @minItems 1
     */
    [k: string]: string[]
  }
}
/**
 * How an answer of this operation is metered.
 */
export interface MeterConfig {
  kind: MeterKind
  dialect?: TokenDialectName
  /**
   * For kind images: the answer also bills one call (per-call priced image edits).
   */
  per_call?: boolean
}
/**
 * The operation's part in an asynchronous job: it creates one (held until a poll sees it end), polls one (settles it), or downloads its content.
 */
export interface OperationJobConfig {
  role: JobRole
  /**
   * Which upstream id space the job ids live in; a create and its poll must name the same one.
   */
  namespace: string
}
/**
 * Body parameters that bound the worst-case cost held before forwarding; each must be a positive integer within the model's declared range, else the request is refused unbilled.
 */
export interface OperationBoundsConfig {
  /**
   * Parameters that cap the output tokens of one generation (the largest one present counts).
   *
   * Items: A body parameter: a top-level key (also read from a multipart form field of that name) or a dotted path into nested JSON objects.
   */
  max_tokens: string[]
  /**
   * Parameters that ask for several generations (choices, candidates or images); the largest one present counts.
   *
   * Items: A body parameter: a top-level key (also read from a multipart form field of that name) or a dotted path into nested JSON objects.
   */
  count: string[]
  /**
   * The count is a number of images: it is billed per image and capped by the model's max_images.
   */
  count_is_images: boolean
  /**
   * For a job-metered operation: the body parameters whose product is the job's billed units (a video's seconds, the videos asked for), each with the provider's default when absent. A job is held and charged units × the model's unit_price (then a price per second of video). A value must be a positive integer (a JSON number or a string of decimal digits, as Sora's `seconds` is), else REQUEST_INVALID.
   */
  job_units: {
    /**
     * The body parameter (also a multipart form field of that name).
     */
    param: string
    /**
     * The units when the request does not send the parameter: the provider's default.
     */
    default: number
  }[]
}
/**
 * One body feature or query value that changes what the provider charges. A request that uses it is refused with MODEL_PARAMETER_UNSUPPORTED (before anything is held) unless the target model's `pricing.features` prices it (or the operation's `default` allows it).
 */
export interface FeatureConfig {
  match: FeatureMatchConfig
  charge: FeatureCharge
  uses?: FeatureUsesConfig
  input: FeatureInput
  report?: FeatureReportConfig
  /**
   * What a model that does not name the feature in `pricing.features` does with it: refused, or allowed (only for charge tokens). Absent: every model serving the operation must price or refuse it (`check` fails otherwise).
   */
  default?: 'refused' | 'allowed'
}
/**
 * How a request is seen to use the feature: `list` + `field` + `values` (an entry of a body list whose field has one of the values, e.g. tools[].type), `list` + `keys` (an entry of a body list that has one of the keys, e.g. genai tools[].googleSearch), `param` (+ optional `values`: a body parameter present and not null, or equal to one of the values), `file_references: true` (a stored file named by its id) or `query` (+ optional `values`: a query parameter present, or equal to one of the values).
 */
export interface FeatureMatchConfig {
  /**
   * Dotted path of a body list whose entries are examined.
   */
  list?: string
  /**
   * With `list`: the entry field compared with `values` (e.g. `type`; a dotted path reaches into the entry, e.g. `container.memory_limit`).
   */
  field?: string
  /**
   * With `list`: entry keys any one of which marks the feature (both spellings of a key, e.g. googleSearch and google_search).
   *
   * @minItems 1
   */
  keys?: string[]
  /**
   * Body parameters (dotted paths) any one of which, present and not null, marks the feature.
   *
   * @minItems 1
   *
   * Items: A body parameter: a top-level key (also read from a multipart form field of that name) or a dotted path into nested JSON objects.
   */
  param?: string[]
  /**
   * true: a file stored at the provider named by its id anywhere the wire formats take one (chat file.file_id, responses input_file / input_image file_id, messages source type file and container_upload, GenAI fileData.fileUri naming the Files API, a code interpreter container's file_ids, an image edit's file_id; plugins/foundation/pricing/url-media.ts, fileReferencePaths) marks the feature; `param` names the first such field.
   */
  file_references?: true
  /**
   * A query parameter name (lower-case) that marks the feature.
   */
  query?: string
  /**
   * The values that mark the feature: of the entry `field`, of the `param` or of the `query` parameter. Required with `field`; elsewhere absent means any value.
   *
   * @minItems 1
   */
  values?: MatchValue[]
}
/**
 * How many times one request may use it: the body parameter or the matched entry's field that caps the uses (a positive integer, else REQUEST_INVALID), or `default` when the request sets none. The hold counts the cap; settlement counts the uses the provider reports.
 */
export interface FeatureUsesConfig {
  /**
   * A body parameter capping the uses (e.g. max_tool_calls).
   */
  param?: string
  /**
   * A field of the matched list entry capping its uses (e.g. max_uses); each matched entry adds its own.
   */
  item_field?: string
  /**
   * Uses held for when the request caps none.
   */
  default: number
}
/**
 * Where the provider's answer says how much the feature was used; exactly one key. usage: a count at this path of the answer's usage object; output_items: answer `output[]` items of these types, counted; candidates_with: a candidate carrying this field (one use); answer_value: the answer's `field` equal to one of `values` (the feature applied). Without a report, or when the answer does not carry it, the worst case is charged.
 */
export interface FeatureReportConfig {
  /**
   * Dotted path inside the answer's usage object (`usage` or `usageMetadata`) of a use count.
   */
  usage?: string
  /**
   * Types of answer `output[]` items that are each one use.
   *
   * @minItems 1
   */
  output_items?: string[]
  /**
   * A field that, on any answer candidate, means the feature was used once.
   */
  candidates_with?: string
  /**
   * An answer field and the values that mean the feature applied (the last value the answer states counts).
   */
  answer_value?: {
    /**
     * Dotted path of the answer field.
     */
    field: string
    /**
     * Values meaning the feature applied.
     *
     * @minItems 1
     */
    values: MatchValue[]
  }
}
/**
 * A body list whose entries are closed: an entry whose `field` value (or, without `field`, any of whose keys) is neither plain nor marked by a feature of the operation is refused with MODEL_PARAMETER_UNSUPPORTED. An entry without the field is plain.
 */
export interface ToolListConfig {
  /**
   * Dotted path of the body list (e.g. tools).
   */
  list: string
  /**
   * The entry field whose value is checked (e.g. type; a dotted path reaches into the entry, e.g. container.memory_limit; an object or list there is not checked); absent: every key of the entry is checked.
   */
  field?: string
  /**
   * Values (or keys) the provider bills as tokens only, e.g. function, custom, functionDeclarations.
   */
  plain: string[]
}
/**
 * Upstream providers by name: origin, credentials and timeouts.
 */
export interface ProvidersConfig {
  [k: string]: ProviderConfig
}
/**
 * One upstream provider.
 */
export interface ProviderConfig {
  /**
   * Origin of the provider, without a version path (e.g. https://api.openai.com).
   */
  base_url: string
  /**
   * Headers injected on every upstream request (credentials); values are never logged.
   */
  headers: {
    [k: string]: string
  }
  /**
   * Time to the first response byte of a streamed request (the first event comes as soon as generation starts), in ms (PROVIDER_TIMEOUT when exceeded); a non-streamed answer waits answer_timeout_ms.
   */
  timeout_ms: number
  /**
   * Time to the first response byte of a request whose answer is not streamed, in ms (PROVIDER_TIMEOUT when exceeded). A provider sends a non-streamed answer's headers only once the whole answer is generated, so this bounds the generation itself: reasoning models, long outputs, image and video requests. A streamed request waits timeout_ms. A route's answer_timeout_ms overrides it. Such a timeout is not retried on another member or fallback: the provider may still be generating (and billing) the first.
   */
  answer_timeout_ms: number
  /**
   * Largest idle time between two response body chunks, in ms.
   */
  body_timeout_ms: number
  /**
   * Time to open a TCP (and TLS) connection to this provider, in ms; a member that cannot be reached in time is retried on another member of its pool.
   */
  connect_timeout_ms: number
  /**
   * When a client leaves (a stream mid-answer, or a non-streamed request before its answer came): false (default) cancels the upstream request at once and bills what was produced (the upstream's usage if it arrived, else an estimate from the relayed output and the input, marked estimated); true keeps reading (or awaiting) the upstream for up to server.drain_timeout_ms from the moment the client left, for its exact usage, while the provider goes on generating text nobody reads. A job create is always read (its job may exist).
   */
  drain_on_disconnect: boolean
  /**
   * Path (with the base URL's path prefix) an active health check GETs on this provider every upstream.health_check_interval_ms; a 2xx-4xx answer closes the member's circuit, a connection failure or 5xx opens it. Absent: no active check.
   */
  health_check_path?: string
  /**
   * Upstream connection pool size for this provider's origin.
   */
  connections: number
  /**
   * Client request headers forwarded to this provider, lower-case; every other one is dropped. Key headers (auth.headers) may not be listed. The gateway sets content-type, accept-encoding and the provider's own headers itself.
   */
  allow_request_headers: string[]
  /**
   * Provider response headers passed back to the client, lower-case; every other one is dropped. The provider's x-request-id (or request-id) always comes back as x-upstream-request-id.
   */
  allow_response_headers: string[]
  /**
   * Query parameter names forwarded to this provider, compared percent-decoded and lower-case; every other parameter is dropped. `key` may not be listed.
   */
  allow_query_params: string[]
}
/**
 * Upstream pools by name: weighted lists of providers a model is forwarded to.
 */
export interface PoolsConfig {
  /**
   * The members of one pool.
   *
   * @minItems 1
   */
  [k: string]: PoolMember[]
}
/**
 * One provider in a pool.
 */
export interface PoolMember {
  /**
   * Provider name (a key of `providers`).
   */
  provider: string
  /**
   * Relative share of requests; 0 drains the member.
   */
  weight: number
}
/**
 * Upstream resilience: how many members of a pool one request may try, which upstream statuses are retried on another member, the per-member circuit breaker and the optional active health checks.
 */
export interface UpstreamConfig {
  /**
   * Most members of one pool a request is sent to (the first try included), before the first response byte only; then the model's fallbacks are tried. 1: no retry on another member.
   */
  max_tries: number
  /**
   * Upstream HTTP statuses retried on another member of the pool (before any byte reached the client). Connection failures and first-byte timeouts are always retried.
   */
  retry_statuses: number[]
  /**
   * Consecutive failures of a member (connection error, first-byte timeout, or a 502/503/504/529 answer; not 500 or 429, which one request can provoke) after which its circuit opens and the member is skipped at once; 0 turns circuit breaking off.
   */
  breaker_failures: number
  /**
   * How long an open circuit skips its member; then one request probes it (half-open): success closes the circuit, failure opens it again for another cool-down.
   */
  breaker_cooldown_ms: number
  /**
   * Interval of the active health checks of every provider that names a health_check_path; 0 (default) runs none.
   */
  health_check_interval_ms: number
}
/**
 * One catalogue entry.
 */
export interface ModelConfig {
  /**
   * Public model id, `<provider>/<name>`; the provider part is free text.
   */
  id: string
  status: ModelStatus
  /**
   * Upstream pool the model is forwarded to (a key of `pools`).
   */
  pool: string
  /**
   * Model name sent to the provider.
   */
  upstream_model: string
  /**
   * Operations the model serves, by operation name, each with its upstream path.
   */
  operations: {
    [k: string]: ModelOperationConfig
  }
  /**
   * Input kinds the model accepts beyond text (vision, audio_input, video_input, image_input).
   */
  capabilities: string[]
  pricing: PriceConfig
  /**
   * Models tried in order when the upstream fails before the first byte.
   *
   * Items: A public model id: `<provider>/<name>`.
   */
  fallbacks: string[]
  /**
   * Largest output a request can ask for (the provider's published limit); the worst-case hold counts it when the request sets no smaller limit, and a larger max-tokens parameter is refused with MODEL_PARAMETER_UNSUPPORTED. Unset: 4096 is held and `check` warns for a model serving a token-metered operation.
   */
  max_output_tokens?: number
  /**
   * Most images one request may ask for (n, parameters.sampleCount); a larger count is refused with MODEL_PARAMETER_UNSUPPORTED. Default 10.
   */
  max_images?: number
  /**
   * Only accounts that topped up their wallet at least once may use the model.
   */
  requires_topup?: boolean
  /**
   * Context window in tokens (the provider refuses a longer input). A request whose estimated input tokens (prompt characters / 4, as the metering estimates) plus its requested output (the max-token parameter) exceed it is refused with MODEL_CONTEXT_EXCEEDED. It also bounds the worst-case hold: input tokens are at most the body size and at most the context window, and input the gateway cannot count (media by URL or file id, URL-fetching tools, previous_response_id, cached content) is held at the context window. Unset: not checked, and such input is refused (MODEL_PARAMETER_UNSUPPORTED); `check` warns.
   */
  context_window?: number
  /**
   * Service tiers the model serves; a body `service_tier` outside the list is refused with MODEL_SERVICE_TIER_UNAVAILABLE. A tier the provider prices apart (priority, flex) must also be a priced feature of the operation (e.g. `priority_tier: { multiplier: "1.7" }`). Unset: not checked, and `check` warns for a model serving a token-metered operation.
   *
   * @minItems 1
   */
  service_tiers?: string[]
  /**
   * Accepted ranges or values of body parameters, by dotted path (`temperature`, `generationConfig.temperature`, `size`); a value outside them is refused with MODEL_PARAMETER_UNSUPPORTED. Unset: not checked.
   */
  parameters?: {
    [k: string]: ParameterRuleConfig
  }
  video_generation?: VideoGenerationConfig
  /**
   * Content-policy rules applied to the text parts of every request for this model (REQUEST_CONTENT_BLOCKED, 400).
   */
  content_policy: ContentRuleConfig[]
}
/**
 * How one operation reaches the upstream.
 */
export interface ModelOperationConfig {
  /**
   * Upstream path; `{model}` is replaced by the URL-encoded upstream model name, `{id}` by the job id.
   */
  path: string
  /**
   * Top-level JSON body fields the provider refuses for this model, removed before forwarding (a framework that does not know the gateway's model id may send them).
   */
  drop_fields: string[]
  /**
   * Lower an output-token limit in the JSON body (`max_tokens`, `max_completion_tokens`, `max_output_tokens`, `generationConfig.maxOutputTokens`) that is above the model's `max_output_tokens` to it before forwarding, instead of letting the provider refuse it.
   */
  cap_output_tokens: boolean
  meter?: ModelOperationMeterConfig
}
/**
 * What this model's provider reports differently from the operation's dialect (an operation metered in tokens with the `chat` dialect only; docs/providers.md). Unset: the dialect's own fields and stream rule.
 */
export interface ModelOperationMeterConfig {
  /**
   * `when_asked` (default): a stream carries its usage only when `stream_options.include_usage` asks, so the gateway asks on the client's behalf and drops the extra chunk from a client that did not. `always`: the provider puts the usage in every stream (on its finish chunk) whether asked or not; nothing is added to the body.
   */
  stream_usage: 'when_asked' | 'always'
  usage?: UsageFieldsConfig
}
/**
 * Where the provider's usage object holds each count, as dotted paths inside it (`prompt_cache_hit_tokens`, `completion_tokens_details.reasoning_tokens`). A list is summed: the first path must be present, the others count 0 when absent. A count not named here is read where the dialect reads it.
 */
export interface UsageFieldsConfig {
  /**
   * Every input token (cached ones included).
   *
   * @minItems 1
   */
  input_tokens?: string[]
  /**
   * Every billed output token (reasoning included). The first path is the count the request's max-tokens limit bounds; the hold counts each further one (e.g. reasoning reported outside completion_tokens) at the model's max_output_tokens.
   *
   * @minItems 1
   */
  output_tokens?: string[]
  /**
   * Input tokens served from the provider's prompt cache (part of input_tokens), billed at cached_input.
   *
   * @minItems 1
   */
  cached_input_tokens?: string[]
}
/**
 * Price list of one model.
 */
export interface PriceConfig {
  /**
   * Billing unit of this price list.
   */
  unit: 'token' | 'image' | 'audio_second' | 'character' | 'call' | 'job'
  /**
   * Price of `per` input tokens.
   */
  input?: string
  /**
   * Price of `per` output tokens.
   */
  output?: string
  /**
   * Price of `per` cached input tokens.
   */
  cached_input?: string
  /**
   * Price of `per` input tokens written to the provider's prompt cache with the default 5-minute lifetime (Anthropic: 1.25 × input; usage `cache_creation.ephemeral_5m_input_tokens`). Unset: the input price. A request that marks `cache_control` is held with its input at the dearest of input, cache_write and cache_write_1h.
   */
  cache_write?: string
  /**
   * Price of `per` input tokens written to the prompt cache with a 1-hour lifetime (Anthropic: 2 × input; usage `cache_creation.ephemeral_1h_input_tokens`). Unset: cache_write, else the input price.
   */
  cache_write_1h?: string
  image_prices?: ImagePricesConfig
  /**
   * Price of one unit for image, audio_second, character, call and job pricing.
   */
  unit_price?: string
  /**
   * How many tokens the token prices refer to (e.g. 1000000).
   */
  per?: number
  /**
   * Added to the hold per media item the request references by URL or file id (image_url, input_image/input_file URLs and file ids, url and file sources, fileData), on top of the input bound such a request gets: the model's context window. A decimal string per single item (not per `per`); only with an input token price. Not billed itself: the charge is the usage the upstream reports.
   */
  url_media_item?: string
  /**
   * The operation features (operations.<name>.features) this model serves, by feature name: a price (`per_call`, `per_use`: a decimal string per call or use; `multiplier`: a decimal factor on every token price) matching the feature's charge, `allowed` (charge tokens only: billed as the input tokens the provider reports) or `refused`. A feature the model does not name follows its operation's `default`; without one, `check` fails. A request using a refused feature is refused with MODEL_PARAMETER_UNSUPPORTED before anything is held.
   */
  features?: {
    [k: string]: 'refused' | 'allowed' | FeaturePriceConfig
  }
}
/**
 * Per-image prices by quality and size (unit image; replaces unit_price). The hold counts each image of `n` at the entry the request names, `auto` or an absent value (when the default is `auto`) at the dearest entry; the charge is the entry the answer reports (`quality`, `size`), else the request's. A quality or size the table does not price is refused with MODEL_PARAMETER_UNSUPPORTED naming the parameter.
 */
export interface ImagePricesConfig {
  /**
   * Body parameter naming the quality.
   */
  quality_param: string
  /**
   * Body parameter naming the size.
   */
  size_param: string
  /**
   * What the provider renders when the body names no quality (`auto`: its choice).
   */
  default_quality: string
  /**
   * What the provider renders when the body names no size (`auto`: its choice).
   */
  default_size: string
  /**
   * Price of one image, a decimal string, by quality then size (`standard: { 1024x1024: "0.04" }`).
   */
  prices: {
    [k: string]: {
      /**
       * A decimal string in the account currency.
       */
      [k: string]: string
    }
  }
}
/**
 * The price of one feature: exactly one of per_call, per_use, multiplier.
 */
export interface FeaturePriceConfig {
  /**
   * Price of one request that uses the feature, a decimal string.
   */
  per_call?: string
  /**
   * Price of one use of the feature (one search, one image), a decimal string.
   */
  per_use?: string
  /**
   * Factor on every token price of a request that uses the feature (e.g. "1.7" for a priority tier), a decimal string above 0.
   */
  multiplier?: string
}
/**
 * Range or allowed values of one body parameter.
 */
export interface ParameterRuleConfig {
  /**
   * Smallest accepted number.
   */
  min?: number
  /**
   * Largest accepted number.
   */
  max?: number
  /**
   * The only accepted values.
   *
   * @minItems 1
   */
  values?: (string | number | boolean)[]
}
/**
 * The video-generation input matrix; an absent key is accepted, and a last frame always needs a first frame (MODEL_FIRST_FRAME_REQUIRED). Unset: not checked.
 */
export interface VideoGenerationConfig {
  /**
   * Accepts a prompt without a start image (false: MODEL_TEXT_TO_VIDEO_UNSUPPORTED).
   */
  text_to_video?: boolean
  /**
   * Accepts a start (first-frame) image (false: MODEL_IMAGE_TO_VIDEO_UNSUPPORTED).
   */
  image_to_video?: boolean
  /**
   * Accepts a last-frame image (false: MODEL_LAST_FRAME_UNSUPPORTED).
   */
  last_frame?: boolean
  /**
   * Accepts reference images (false: MODEL_REFERENCE_IMAGE_UNSUPPORTED).
   */
  reference_images?: boolean
}
/**
 * Rate-limit tiers, the tier of new accounts, and how requests per minute and concurrent streams are enforced (docs/limits.md).
 */
export interface LimitsConfig {
  /**
   * Tier of accounts created without one (a key of `tiers`); also the policy of an account whose tier is no longer defined.
   */
  default_tier: string
  /**
   * Rate-limit tiers by name. A key's policy names one; else its account's tier applies; else default_tier.
   */
  tiers: {
    [k: string]: TierConfig
  }
  /**
   * Enforce requests per minute and concurrent streams (false: nothing is counted and the limits cost nothing per request).
   */
  enabled: boolean
  /**
   * Lifetime of a concurrent-stream lease unless renewed; the leases of a crashed instance are free again within this time.
   */
  stream_lease_ttl_ms: number
  /**
   * How often an instance renews the leases of its live streams; below stream_lease_ttl_ms.
   */
  stream_lease_renew_ms: number
  /**
   * Longest wait for Redis per limit check; past it, or with Redis unreachable, the instance enforces the limits alone, in process.
   */
  redis_timeout_ms: number
  /**
   * A UTC day (YYYY-MM-DD) on which every image generation is refused with LIMIT_IMAGE_PLATFORM_PAUSED; it resumes at 00:00 UTC the next day by itself. Other features are unaffected.
   */
  images_paused_on?: string
  /**
   * Most API keys an account may hold that are not revoked (expired and inactive keys count until revoked). Creating one more, from the admin API, the CLI or the console, is refused with LIMIT_API_KEY_COUNT_EXCEEDED (409); revoking a key makes room.
   */
  max_keys_per_account: number
  /**
   * Most keys and accounts the in-process limiter tracks (least recently used dropped first).
   */
  local_max_entries: number
}
/**
 * One rate-limit tier.
 */
export interface TierConfig {
  /**
   * Order of tiers; a key may not bind a policy ranked above its account's tier, and one that ends up above it is clamped to the tier.
   */
  rank: number
  /**
   * Requests allowed in any 60-second window (sliding): for an account of this tier, all its keys together; for a key bound to this policy, that key alone (and its account's tier still bounds the sum).
   */
  requests_per_minute: number
  /**
   * Streaming requests open at once: for an account of this tier, all its keys together; for a key bound to this policy, that key alone.
   */
  concurrent_streams: number
  /**
   * How far below wallet.floor the balance of an account of this tier may go, a decimal string in account currency: its bound is wallet.floor − overdraft. Holds are admitted and reported costs posted down to the bound, never below; a reported cost beyond it is recorded as unrecovered, the operator's loss (docs/money.md#overage). At most 999999999.999999999.
   */
  overdraft: string
}
/**
 * The error catalogue: codes, references, statuses and public messages.
 */
export interface ErrorsConfig {
  /**
   * Domain of the error documentation and error `type` URIs.
   */
  domain: string
  type_by_status: TypeByStatus
  /**
   * Every error the gateway can answer with.
   *
   * @minItems 1
   */
  catalogue: ErrorEntryConfig[]
}
/**
 * Default envelope `type` per family envelope and HTTP status.
 */
export interface TypeByStatus {
  /**
   * Chat-completions envelope `error.type` by HTTP status.
   */
  chat: {
    [k: string]: string
  }
  /**
   * Messages envelope `error.type` by HTTP status.
   */
  messages: {
    [k: string]: string
  }
  /**
   * GenAI envelope `error.status` by HTTP status.
   */
  genai: {
    [k: string]: string
  }
}
/**
 * One catalogue entry.
 */
export interface ErrorEntryConfig {
  /**
   * Canonical code; clients branch on it.
   */
  code: string
  /**
   * Stable reference `GW-<AREA>-<number>`; the documentation link ends with it.
   */
  reference: string
  /**
   * HTTP status of the answer.
   */
  status: number
  /**
   * Public message, safe to show to the end user.
   */
  message: string
  type?: ErrorTypeOverrides
  /**
   * What a client should do before trying again.
   */
  retry?: {
    strategy: RetryStrategy
    /**
     * Smallest wait before a retry, in seconds (Retry-After).
     */
    after_seconds?: number
  }
  /**
   * Short-form codes of the earlier table that mean this entry.
   *
   * Items: An error code: upper-case words joined by underscores.
   */
  aliases?: string[]
  /**
   * Raised outside this gateway (console, jobs) and so not reachable from gateway code yet.
   */
  external?: boolean
}
/**
 * Family-specific `type` values; defaults come from `type_by_status`.
 */
export interface ErrorTypeOverrides {
  /**
   * Chat-completions envelope `error.type`.
   */
  chat?: string
  /**
   * Messages envelope `error.type`.
   */
  messages?: string
  /**
   * GenAI envelope `error.status`.
   */
  genai?: string
}
/**
 * Prepaid wallet rules: the floor no balance may cross and how long holds live.
 */
export interface WalletConfig {
  /**
   * Lowest balance an account may reach, a decimal string in account currency (may be 0), less the overdraft of its tier (limits.tiers.<name>.overdraft): holds are admitted and reported costs posted down to floor − overdraft, never below (docs/money.md#overage).
   */
  floor: string
  /**
   * Lifetime of a hold; a hold still open after it (its instance crashed) is released by the reaper.
   */
  hold_ttl_ms: number
  /**
   * Lifetime of the hold of an asynchronous job (video, music), settled when the job ends.
   */
  job_hold_ttl_ms: number
  /**
   * How often each instance releases expired holds.
   */
  reaper_interval_ms: number
}
/**
 * Asynchronous jobs (video, music, generative-content operations): the background watcher that finishes jobs nobody polls.
 */
export interface JobsConfig {
  /**
   * A job still running this long after it was submitted is expired and its hold released (keep it below wallet.job_hold_ttl_ms).
   */
  max_age_ms: number
  watcher: JobWatcherConfig
}
/**
 * The background watcher: every instance runs one; a row claim in the database keeps two from checking the same job.
 */
export interface JobWatcherConfig {
  /**
   * Run the watcher on this instance.
   */
  enabled: boolean
  /**
   * How often the watcher looks for due jobs.
   */
  interval_ms: number
  /**
   * Most jobs one round claims and checks.
   */
  batch: number
  /**
   * How long a claimed job stays out of other instances' rounds (longer than one upstream check).
   */
  claim_ms: number
  /**
   * Delay between a job's submission and its first check.
   */
  first_check_ms: number
  /**
   * Delay after the first check that found the job running; doubled after each further one.
   */
  backoff_ms: number
  /**
   * Longest delay between two checks of one job.
   */
  max_backoff_ms: number
}
/**
 * The operators' admin API (enabled by GATEWAY_ADMIN_TOKEN): its own listener, token rules and failure throttling.
 */
export interface AdminConfig {
  /**
   * Interface the admin listener binds (GATEWAY_ADMIN_HOST overrides it); loopback by default, so the admin API is not on the public listener.
   */
  host: string
  /**
   * TCP port of the admin listener (GATEWAY_ADMIN_PORT overrides it); 0 picks a free port.
   */
  port: number
  /**
   * Shortest GATEWAY_ADMIN_TOKEN the gateway starts with; a shorter one stops it at boot.
   */
  token_min_length: number
  /**
   * Failed admin authentications (missing or wrong token) one client address may make per failure window; past it every admin call from that address answers 429 LIMIT_RATE_EXCEEDED with Retry-After until the window ends.
   */
  max_failures: number
  /**
   * Length of the admin failure window, in ms, counted from an address's first failure.
   */
  failure_window_ms: number
}
/**
 * The account console: sign-up, sign-in, sessions and key management for account holders, as an API under /console/v1 and a web page at /console.
 */
export interface ConsoleConfig {
  /**
   * Serve the console API (/console/v1) and page (/console). Off: neither route exists (404 REQUEST_ROUTE_NOT_FOUND).
   */
  enabled: boolean
  /**
   * open: anyone with a valid, non-disposable email address may create an account; closed: sign-up answers 403 AUTH_SIGNUP_NOT_ALLOWED (operators create accounts through the admin API).
   */
  signup: 'open' | 'closed'
  /**
   * Shortest password accepted at sign-up and password reset, in characters (Unicode code points).
   */
  password_min_length: number
  /**
   * Longest password accepted at sign-up, password reset and sign-in, in characters (Unicode code points); a longer one is refused with REQUEST_INVALID (param password) before any hashing.
   */
  password_max_length: number
  /**
   * Lifetime of a console session from its sign-in, in ms.
   */
  session_ttl_ms: number
  /**
   * A key's plaintext can be revealed, and a key created (the answer holds its plaintext), only by a session signed in at most this long ago, in ms (else 403 AUTH_FORBIDDEN: sign in again).
   */
  reveal_window_ms: number
  /**
   * Lifetime of an email code (sign-up verification or password reset), in ms. A pending sign-up older than this may be restarted by a new sign-up for the same address (new password, new code).
   */
  verification_code_ttl_ms: number
  /**
   * Wrong guesses at one email code after which the code is void (a new one must be sent).
   */
  verification_max_attempts: number
  /**
   * Guesses at email codes (verification and reset, every code and resend together) one email address may receive per hour, counted whether or not the address exists; beyond it 429 LIMIT_RATE_EXCEEDED until the hour window ends. Plus-addressed variants (a+x@d) count as their base address.
   */
  code_guesses_per_email_per_hour: number
  /**
   * Sign-ups, code resends and password-reset requests for one email address per hour (each may mail a code to it), counted whether or not the address exists; beyond it 429 LIMIT_RATE_EXCEEDED. Plus-addressed variants count as their base address.
   */
  mails_per_email_per_hour: number
  /**
   * Code resends and password-reset requests from one client address per hour (IPv6: per /64); beyond it 429 LIMIT_RATE_EXCEEDED.
   */
  mail_requests_per_address_per_hour: number
  /**
   * Sign-up attempts from one client address per hour (IPv6: per /64), counted before the body is checked; beyond it 429 LIMIT_RATE_EXCEEDED.
   */
  signups_per_address_per_hour: number
  /**
   * Failed sign-ins in the failure window, from one client address (whatever the emails) or for one email (from any address), after which sign-in requires a solved proof-of-work challenge (AUTH_HUMAN_CHECK_REQUIRED).
   */
  human_check_after_failures: number
  /**
   * Leading zero bits the SHA-256 of a proof-of-work solution must have (each bit doubles the client's work; 16 takes well under a second in a browser).
   */
  human_check_difficulty: number
  /**
   * Failed sign-ins from one client address (IPv6: per /64) in the failure window, whatever the emails, after which sign-in from that address answers 429 LIMIT_RATE_EXCEEDED until the window ends.
   */
  signin_max_failures: number
  /**
   * Failed sign-ins for one email (plus-addressed variants count as their base address) in the failure window, from all client addresses together, after which sign-in for that email answers 429 LIMIT_RATE_EXCEEDED until the window ends.
   */
  signin_max_failures_per_email: number
  /**
   * Length of the sign-in failure windows (per client address, per email), in ms, each counted from its first failure.
   */
  signin_failure_window_ms: number
  /**
   * Password hashes (scrypt, ~100 ms of a core and 32 MiB each) the console runs at once; more wait in the queue. Keeps sign-in floods from taking the CPU model traffic needs.
   */
  password_hash_concurrency: number
  /**
   * Password hashes that may wait for a free slot; a sign-up, sign-in or reset beyond it answers 429 LIMIT_RATE_EXCEEDED (Retry-After: 1) before any work.
   */
  password_hash_queue: number
  /**
   * scrypt's CPU and memory cost N for new password hashes (a power of two). The default with r 8 and p 3 is one of OWASP's equivalent minimum settings (2^17/8/1, 2^16/8/2, 2^15/8/3); each hash then takes 128·N·r bytes (32 MiB) and about a fifth of a second of a core. A hash keeps the parameters it was made with, so raising them later leaves existing passwords valid. Below the default only for tests.
   */
  password_scrypt_n: 1024 | 2048 | 4096 | 8192 | 16384 | 32768 | 65536 | 131072
  /**
   * scrypt's block size r for new password hashes.
   */
  password_scrypt_r: number
  /**
   * scrypt's parallelisation p for new password hashes (its rounds run one after another on one thread).
   */
  password_scrypt_p: number
  /**
   * Email domains refused at sign-up (AUTH_DISPOSABLE_EMAIL) on top of the maintained disposable-domain list.
   */
  blocked_email_domains: string[]
  /**
   * SMTP server the console's email codes (sign-up verification, password reset) are mailed through (smtp://user:password@host:587, smtps://… for implicit TLS; STARTTLS is used when the server offers it). Empty: no mail is sent and codes go to the outbox the operator reads (GET /admin/v1/console/outbox). Read it from the environment (${SMTP_URL:-}): it holds a credential.
   */
  smtp_url: string
  /**
   * From address of the console's mail (SMTP only).
   */
  mail_from: string
}
/**
 * Prometheus metrics and the per-request access log.
 */
export interface ObservabilityConfig {
  metrics: MetricsConfig
  access_log: AccessLogConfig
}
/**
 * Prometheus exposition of the gateway's counters, histograms and gauges (prom-client).
 */
export interface MetricsConfig {
  /**
   * Collect and serve metrics; false costs nothing per request (no hook is registered).
   */
  enabled: boolean
  /**
   * Where GET <path> is served: `admin` (the admin listener, loopback by default; started for metrics even without GATEWAY_ADMIN_TOKEN) or `public` (the tenants' listener: anyone who reaches it reads the metrics).
   */
  listener: 'admin' | 'public'
  /**
   * Path of the Prometheus text exposition.
   */
  path: string
  /**
   * Also export prom-client's process metrics (CPU, memory, event loop lag, GC), collected at scrape time.
   */
  default_metrics: boolean
}
/**
 * One structured log line per request (id, route, model, status, code, overhead, billed amount); never a key, a credential or a prompt.
 */
export interface AccessLogConfig {
  /**
   * Write the access log line; false costs nothing per request (no hook is registered).
   */
  enabled: boolean
  /**
   * Pino level of the line; below LOG_LEVEL it is not written.
   */
  level: 'trace' | 'debug' | 'info' | 'warn'
}
