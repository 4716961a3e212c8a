// Where each token-billed wire format reports its usage and carries its generated text, as
// small pure functions. A dialect reads one whole JSON answer (its captured top-level values)
// or one SSE event at a time; it never decides what the numbers are worth (see usage.ts).

import type { TokenDialectName } from '../../foundation/config/types.js'
import { isRecord } from './body-reader.js'
import { utf8Bytes } from './utf8.js'
import { tokenSum, type RawUsage, type UsageField } from './usage.js'
import type { UsagePath, UsagePaths } from '../../foundation/shapes/index.js'

export type MutableRawUsage = { [K in UsageField]?: unknown }

/** What a stream has said so far. */
export interface StreamState {
  usage: MutableRawUsage | undefined
  /** UTF-8 bytes of generated text seen (the output estimate when no usage comes: utf8.ts). */
  textBytes: number
}

export interface TokenDialect {
  /** The dialect's name (config/operations.yaml), which also says how its request is read for an estimate. */
  readonly name: TokenDialectName
  /** Top-level keys of a JSON answer that hold its usage. */
  readonly capture: ReadonlySet<string>
  /** Keys whose string values in a JSON answer are generated text. */
  readonly textKeys: ReadonlySet<string>
  /** The usage of a whole JSON answer, from its captured top-level values. */
  json (captured: ReadonlyMap<string, unknown>): RawUsage | undefined
  /** Reads one SSE event whose data is a JSON object. */
  event (name: string | null, data: Record<string, unknown>, state: StreamState): void
  /**
   * How a stream of this dialect is read on the fast path (sse-tap.ts): the UTF-8 bytes of
   * string values under `textKeys`, anywhere in an event, are its generated text, and only the
   * events where one of `parseKeys` holds an object are parsed and given to `event` (which
   * then counts their text itself). Without it, every event is parsed.
   */
  readonly sse?: { readonly textKeys: readonly string[], readonly parseKeys: readonly string[] }
}

function field (v: unknown, key: string): unknown {
  return isRecord(v) ? v[key] : undefined
}

function strLen (v: unknown): number {
  return typeof v === 'string' ? utf8Bytes(v) : 0
}

/** `usage` of chat.completions: prompt_tokens include the cached ones. */
export function chatUsage (u: unknown): RawUsage | undefined {
  if (!isRecord(u)) return undefined
  return {
    inputTokens: u.prompt_tokens,
    outputTokens: u.completion_tokens,
    cachedInputTokens: field(u.prompt_tokens_details, 'cached_tokens')
  }
}

/** `usage` of responses (and of token-billed images and transcriptions). */
export function responsesUsage (u: unknown): RawUsage | undefined {
  if (!isRecord(u)) return undefined
  return {
    inputTokens: u.input_tokens,
    outputTokens: u.output_tokens,
    cachedInputTokens: field(u.input_tokens_details, 'cached_tokens')
  }
}

/**
 * `usage` of messages. Its input_tokens exclude cache reads and writes, which are input too.
 * Cache writes are billed apart (`cache_write`, `cache_write_1h`): `cache_creation` splits
 * `cache_creation_input_tokens` by lifetime; a part it does not account for (an answer without
 * the split) is a 5-minute write, the default lifetime.
 */
export function messagesInput (u: Record<string, unknown>): MutableRawUsage {
  const out: MutableRawUsage = {
    inputTokens: tokenSum(u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens),
    cachedInputTokens: u.cache_read_input_tokens
  }
  const written = u.cache_creation_input_tokens
  if (written === undefined || written === null || written === 0) return out
  const split = u.cache_creation
  const hour = isRecord(split) ? split.ephemeral_1h_input_tokens ?? 0 : 0
  out.cacheWrite1hTokens = hour
  // What the total leaves after the 1-hour part; NaN (refused by sanitize) when either is not a count or the part exceeds it.
  out.cacheWriteTokens = typeof written === 'number' && typeof hour === 'number' && hour <= written ? written - hour : Number.NaN
  return out
}

export function messagesUsage (u: unknown): RawUsage | undefined {
  if (!isRecord(u)) return undefined
  return { ...messagesInput(u), outputTokens: u.output_tokens }
}

/**
 * `usageMetadata` of generateContent. promptTokenCount includes cached content; thinking
 * tokens are billed as output. Zero counts are omitted on the wire, so only the prompt count
 * is required.
 */
export function genaiUsage (u: unknown): RawUsage | undefined {
  if (!isRecord(u)) return undefined
  const hasPrompt = u.promptTokenCount !== undefined && u.promptTokenCount !== null
  return {
    inputTokens: tokenSum(u.promptTokenCount, u.toolUsePromptTokenCount),
    outputTokens: hasPrompt ? tokenSum(u.candidatesTokenCount ?? 0, u.thoughtsTokenCount) : undefined,
    cachedInputTokens: u.cachedContentTokenCount
  }
}

const chat: TokenDialect = {
  name: 'chat',
  capture: new Set(['usage']),
  textKeys: new Set(['content', 'reasoning_content', 'refusal', 'arguments']),
  json: (c) => chatUsage(c.get('usage')),
  // Text sits only under these keys in a chunk's choices; the usage object comes in the last chunk.
  sse: { textKeys: ['content', 'reasoning_content', 'refusal', 'arguments'], parseKeys: ['usage'] },
  event (_name, data, state) {
    // Earlier chunks carry `usage: null`; the one with numbers is the final `choices: []` chunk.
    if (isRecord(data.usage)) state.usage = { ...chatUsage(data.usage) }
    const choices = data.choices
    if (!Array.isArray(choices)) return
    for (const choice of choices) {
      const delta = field(choice, 'delta')
      if (!isRecord(delta)) continue
      state.textBytes += strLen(delta.content) + strLen(delta.reasoning_content) + strLen(delta.refusal)
      const calls = delta.tool_calls
      if (Array.isArray(calls)) for (const call of calls) state.textBytes += strLen(field(field(call, 'function'), 'arguments'))
    }
  }
}

const RESPONSE_DONE: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete', 'response.failed'])

const responses: TokenDialect = {
  name: 'responses',
  capture: new Set(['usage']),
  textKeys: new Set(['text', 'refusal', 'arguments']),
  json: (c) => responsesUsage(c.get('usage')),
  event (name, data, state) {
    const type = typeof data.type === 'string' ? data.type : name ?? ''
    if (RESPONSE_DONE.has(type)) {
      const usage = field(data.response, 'usage')
      if (isRecord(usage)) state.usage = { ...responsesUsage(usage) }
      return
    }
    // output_text, refusal, reasoning text and function-call argument deltas; not audio.
    if (type.endsWith('text.delta') || type.endsWith('refusal.delta') || type.endsWith('arguments.delta')) {
      state.textBytes += strLen(data.delta)
    }
  }
}

const messages: TokenDialect = {
  name: 'messages',
  capture: new Set(['usage']),
  textKeys: new Set(['text', 'thinking']),
  json: (c) => messagesUsage(c.get('usage')),
  // Text sits only under these keys in content_block_delta events (content_block_start's
  // `text` is empty); usage comes in message_start and message_delta, which are parsed.
  sse: { textKeys: ['text', 'partial_json', 'thinking'], parseKeys: ['usage'] },
  event (name, data, state) {
    const type = typeof data.type === 'string' ? data.type : name ?? ''
    if (type === 'message_start') {
      const usage = field(data.message, 'usage')
      // Output is left to message_delta: message_start's output_tokens is a placeholder.
      if (isRecord(usage)) state.usage = { ...state.usage, ...messagesInput(usage) }
    } else if (type === 'message_delta') {
      const usage = data.usage
      if (!isRecord(usage)) return
      // Counts here are cumulative: the last one stands. Newer streams repeat the input here.
      const next: MutableRawUsage = { ...state.usage, outputTokens: usage.output_tokens }
      if (usage.input_tokens !== undefined && usage.input_tokens !== null) Object.assign(next, messagesInput(usage))
      state.usage = next
    } else if (type === 'content_block_delta') {
      const delta = data.delta
      if (isRecord(delta)) state.textBytes += strLen(delta.text) + strLen(delta.partial_json) + strLen(delta.thinking)
    }
  }
}

const genai: TokenDialect = {
  name: 'genai',
  capture: new Set(['usageMetadata']),
  textKeys: new Set(['text']),
  json: (c) => genaiUsage(c.get('usageMetadata')),
  event (_name, data, state) {
    // Every chunk may carry the running usage; the last one stands.
    if (isRecord(data.usageMetadata)) state.usage = { ...genaiUsage(data.usageMetadata) }
    const candidates = data.candidates
    if (!Array.isArray(candidates)) return
    for (const candidate of candidates) {
      const parts = field(field(candidate, 'content'), 'parts')
      if (Array.isArray(parts)) for (const part of parts) state.textBytes += strLen(field(part, 'text'))
    }
  }
}

const DIALECTS: Readonly<Record<TokenDialectName, TokenDialect>> = { chat, responses, messages, genai }

/** The value at a dotted path inside `v`. */
function at (v: unknown, keys: readonly string[]): unknown {
  let here = v
  for (const key of keys) here = field(here, key)
  return here
}

/** One count of a provider's usage object: its paths summed (the first required). */
function countAt (u: Record<string, unknown>, paths: UsagePath): number | undefined {
  const [first, ...rest] = paths
  if (first === undefined) return undefined
  return tokenSum(at(u, first), ...rest.map((p) => at(u, p)))
}

/** A chat-completions usage object read where a provider says it holds each count (`meter.usage`). */
function providerChatUsage (paths: UsagePaths): (u: unknown) => RawUsage | undefined {
  return (u) => {
    const base = chatUsage(u)
    if (base === undefined || !isRecord(u)) return base
    const out: MutableRawUsage = { ...base }
    if (paths.inputTokens !== undefined) out.inputTokens = countAt(u, paths.inputTokens)
    if (paths.outputTokens !== undefined) out.outputTokens = countAt(u, paths.outputTokens)
    if (paths.cachedInputTokens !== undefined) out.cachedInputTokens = countAt(u, paths.cachedInputTokens)
    return out
  }
}

/** The chat dialect with a provider's usage fields: same text, same stream reading, the counts where `paths` says. */
function chatWithPaths (paths: UsagePaths): TokenDialect {
  const read = providerChatUsage(paths)
  return {
    ...chat,
    json: (c) => read(c.get('usage')),
    event (name, data, state) {
      chat.event(name, data, state)
      if (isRecord(data.usage)) state.usage = { ...read(data.usage) }
    }
  }
}

/** Built once per model operation (the paths object is the plan's), not per request. */
const WITH_PATHS = new WeakMap<UsagePaths, TokenDialect>()

/**
 * A token dialect by the name an operation's meter gives (config/operations.yaml); with a model
 * operation's usage fields (`meter.usage`, chat only: the config check refuses them elsewhere),
 * the dialect reading the counts there.
 */
export function tokenDialect (name: TokenDialectName, paths?: UsagePaths | null): TokenDialect {
  const base = DIALECTS[name]
  if (paths === undefined || paths === null || base !== chat) return base
  let dialect = WITH_PATHS.get(paths)
  if (dialect === undefined) {
    dialect = chatWithPaths(paths)
    WITH_PATHS.set(paths, dialect)
  }
  return dialect
}
