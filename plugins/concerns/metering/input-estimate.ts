// The input tokens of a request when its upstream reported none: every part the provider reads
// (system, messages and all their parts, tools and their JSON schemas, response formats, tool
// configuration), never fewer than the provider bills. The whole JSON body is walked: each key
// and each string, number or boolean counts (TokenCounter: the model's real tokenizer, else one
// token per UTF-8 byte) plus a framing allowance per object, array, key and value that is at
// least the provider's per-message and per-tool overhead (test/metering-estimate.test.ts holds
// it above OpenAI's documented count). Media are not counted as text (a base64 image is not
// thousands of tokens): an image costs the model's per-item bound (its `url_media_item` hold in
// tokens); OpenAI's input_audio (wav, mp3) one token per byte of its base64 (those codecs' least
// byte rate is far above 10–32 audio tokens a second); what the gateway cannot see or whose bytes
// do not bound its tokens (files by id or URL, documents, inline video and audio of any other
// codec — a static video is a few bytes a second and 258 tokens per sampled frame, a FLAC
// constant frame 65,535 samples in a dozen bytes —, previous responses, cached content, hosted
// tools that fetch or search) is unbounded: the estimate is then the model's context window, and the charge the hold.
import type { TokenDialectName } from '../../foundation/config/types.js'
import { isRecord } from './body-reader.js'
import type { TokenCounter } from './tokenizers.js'
import { MAX_TOKENS } from './usage.js'
import { utf8Bytes } from './utf8.js'

/** What the estimate needs to know of the model that answered (plugins/concerns/upstream fills it). */
export interface EstimateFacts {
  /** The model name the provider knows (it picks the tokenizer). */
  upstreamModel?: string
  /** Input tokens one image costs at most on this model (its url_media_item in tokens); absent: unbounded. */
  mediaItemTokens?: number
  /** The model's context window: no estimate of input goes beyond it, an unbounded one is it. */
  contextTokens?: number
  /** The output the request was held for (its max tokens, or the model's): what hidden reasoning may have produced. */
  outputCeiling?: () => number
}

/** Framing allowances, in tokens: at least what a provider adds around each piece (see the test). */
const PER_OBJECT = 3
const PER_ARRAY = 1
const PER_KEY = 1
const PER_VALUE = 1
/** Per request: the assistant reply's priming (OpenAI: 3 tokens). */
const PER_REQUEST = 3
/**
 * Anthropic's tool-use system prompt, added to a request with tools: at most 530 tokens (Claude 3
 * Opus, tool_choice auto; 346 on Claude 4 models), and up to 1,500 per typed client tool (computer
 * use: 735 per definition plus its 499-token system prompt; text editor 700; bash 245).
 */
const ANTHROPIC_TOOL_PROMPT = 530
const ANTHROPIC_TYPED_TOOL = 1500

/** Nodes visited at most: beyond them the rest of the body counts one token per byte of it. */
const MAX_NODES = 1_000_000

/** Keys whose value the provider fetches or looks up: what it reads there is not in the body. */
const UNBOUNDED_KEYS: ReadonlySet<string> = new Set([
  'file_id', 'file_url', 'fileUri', 'file_uri', 'previous_response_id', 'conversation', 'cachedContent', 'cached_content',
  'mcp_servers', 'container', 'web_search_options', 'fileData', 'file_data_uri'
])

/** Hosted tools (Responses `type`, Messages server-tool type prefixes, GenAI tool keys) that read what the body does not hold. */
const RESPONSES_CLIENT_TOOLS: ReadonlySet<string> = new Set(['function', 'custom'])
const ANTHROPIC_SERVER_TOOL = /^(?:web_search|web_fetch|code_execution|mcp|tool_search|memory)/
const GENAI_TOOL_KEYS_READ: ReadonlySet<string> = new Set(['functionDeclarations', 'function_declarations'])

interface Walk {
  counter: TokenCounter
  mediaItemTokens: number | undefined
  tokens: number
  unbounded: boolean
}

function mediaTypeOf (o: Record<string, unknown>): string | undefined {
  const t = o.mimeType ?? o.mime_type ?? o.media_type
  return typeof t === 'string' ? t.toLowerCase() : undefined
}

function addImage (w: Walk): void {
  if (w.mediaItemTokens === undefined) w.unbounded = true
  else w.tokens += w.mediaItemTokens
}

/** An inline payload of this media type: an image's bound, text as text, anything else (PDF, video, audio) unbounded. */
function addInline (w: Walk, mediaType: string, payload: string): void {
  if (mediaType.startsWith('image/')) addImage(w)
  else if (mediaType.startsWith('text/')) w.tokens += w.counter.count(payload) + PER_VALUE
  else w.unbounded = true
}

const DATA_URL = /^data:([^;,]*)[;,]/i

/** Keys whose string value may be media (a data URL, or an image URL where an image part holds it). */
const MEDIA_STRING_KEYS: ReadonlySet<string> = new Set(['url', 'image_url', 'file_data'])
/** Keys whose object value may be an inline medium ({mimeType, data}, Anthropic's source, input_audio). */
const MEDIA_OBJECT_KEYS: ReadonlySet<string> = new Set(['inlineData', 'inline_data', 'source', 'input_audio'])
/**
 * Keys under which everything is text the provider renders as such (tool inputs and results,
 * JSON schemas): no media and no reference is recognised there, so a body cannot pass text off
 * as an image (counted at its bound) by giving it a media shape.
 */
const OPAQUE_KEYS: ReadonlySet<string> = new Set([
  'arguments', 'args', 'parameters', 'input_schema', 'properties', 'schema', 'json_schema', 'responseSchema',
  'response_schema', 'responseJsonSchema', 'parametersJsonSchema', 'response', 'output', 'metadata', 'text', 'content_text'
])

/** A string that is a media reference rather than text: counted as media; false for text. */
function mediaString (w: Walk, key: string, value: string, imageContext: boolean): boolean {
  if (!MEDIA_STRING_KEYS.has(key) || (key === 'url' && !imageContext)) return false
  const data = DATA_URL.exec(value.slice(0, 128))
  if (data !== null) {
    addInline(w, (data[1] ?? '').toLowerCase(), value)
    return true
  }
  if (imageContext && /^https?:/i.test(value)) {
    addImage(w)
    return true
  }
  return false
}

/** An inline medium or a hosted tool, at a position the wire format gives them. True when handled whole. */
function mediaObject (w: Walk, o: Record<string, unknown>, parentKey: string, dialect: TokenDialectName | 'generic'): boolean {
  if (MEDIA_OBJECT_KEYS.has(parentKey)) {
    const mediaType = mediaTypeOf(o)
    // {mimeType, data} (GenAI inlineData), {type: base64, media_type, data} (Anthropic source), {data, format} (input_audio)
    if (typeof o.data === 'string') {
      if (mediaType !== undefined) {
        addInline(w, mediaType, o.data)
        return true
      }
      if (parentKey === 'input_audio') {
        w.tokens += o.data.length
        return true
      }
    }
    if (parentKey === 'source' && typeof o.type === 'string' && o.type !== 'base64' && o.type !== 'text' && o.type !== 'content') {
      // Anthropic: a document fetched by URL or read from a file (an image by reference is taken before).
      w.unbounded = true
      return true
    }
  }
  if (parentKey === 'tools') {
    const type = o.type
    if (dialect === 'responses' && typeof type === 'string' && !RESPONSES_CLIENT_TOOLS.has(type)) {
      w.unbounded = true
      return true
    }
    if (dialect === 'messages' && typeof type === 'string' && type !== 'custom') {
      if (ANTHROPIC_SERVER_TOOL.test(type)) w.unbounded = true
      else w.tokens += ANTHROPIC_TYPED_TOOL
      return w.unbounded
    }
    if (dialect === 'genai' && Object.keys(o).some((k) => !GENAI_TOOL_KEYS_READ.has(k))) {
      w.unbounded = true
      return true
    }
  }
  return false
}

/** An Anthropic image block whose image is fetched (URL) or stored (file): the image's bound. */
function anthropicImageByReference (o: Record<string, unknown>): boolean {
  const source = o.source
  return o.type === 'image' && isRecord(source) && (source.type === 'url' || source.type === 'file')
}

/**
 * Input tokens of a JSON request body (and multipart text fields), for the dialect that reads
 * it ('generic' for image and audio operations: every string but media). Never throws.
 */
export function estimateInputTokens (
  json: Record<string, unknown> | undefined,
  fields: Readonly<Record<string, string>> | undefined,
  dialect: TokenDialectName | 'generic',
  counter: TokenCounter,
  facts: EstimateFacts
): number {
  const w: Walk = { counter, mediaItemTokens: facts.mediaItemTokens, tokens: PER_REQUEST, unbounded: false }
  if (json !== undefined) walk(w, json, dialect)
  if (fields !== undefined) {
    for (const [key, value] of Object.entries(fields)) {
      if (key === 'model') continue
      w.tokens += counter.count(value) + PER_VALUE
    }
  }
  if (dialect === 'messages' && Array.isArray(json?.tools) && json.tools.length > 0) w.tokens += ANTHROPIC_TOOL_PROMPT
  const ceiling = facts.contextTokens ?? MAX_TOKENS
  if (w.unbounded) return ceiling
  return Math.min(ceiling, MAX_TOKENS, Math.ceil(w.tokens))
}

function walk (w: Walk, root: Record<string, unknown>, dialect: TokenDialectName | 'generic'): void {
  const values: unknown[] = [root]
  const keys: string[] = ['']
  // Per entry: bit 1 under an image part, bit 2 under an opaque key (text whatever its shape).
  const flags: number[] = [0]
  let visited = 0
  while (values.length > 0 && !w.unbounded) {
    const v = values.pop()
    const key = keys.pop() as string
    const flag = flags.pop() as number
    if (++visited > MAX_NODES) {
      // A body this large is counted by its bytes from here: nothing is left out.
      w.tokens += utf8Bytes(JSON.stringify(v) ?? '')
      for (const rest of values) w.tokens += utf8Bytes(JSON.stringify(rest) ?? '')
      return
    }
    const opaque = (flag & 2) !== 0
    if (typeof v === 'string') {
      if (opaque || !mediaString(w, key, v, (flag & 1) !== 0)) w.tokens += w.counter.count(v) + PER_VALUE
    } else if (typeof v === 'number' || typeof v === 'boolean') {
      w.tokens += w.counter.count(String(v)) + PER_VALUE
    } else if (Array.isArray(v)) {
      w.tokens += PER_ARRAY
      for (const item of v) { values.push(item); keys.push(key); flags.push(flag) }
    } else if (isRecord(v)) {
      w.tokens += PER_OBJECT
      if (!opaque) {
        if (anthropicImageByReference(v)) {
          addImage(w)
          continue
        }
        if (mediaObject(w, v, key, dialect)) continue
      }
      // An object typed as an image (chat image_url part, Responses input_image) holds its URL.
      const image = !opaque && ((flag & 1) !== 0 || key === 'image_url' || v.type === 'image_url' || v.type === 'input_image')
      // A tool call's input (Anthropic tool_use blocks) is rendered as JSON text.
      const toolInput = typeof v.type === 'string' && v.type.endsWith('tool_use')
      for (const k of Object.keys(v)) {
        const x = v[k]
        if (!opaque && UNBOUNDED_KEYS.has(k) && x !== null && x !== undefined && x !== '') {
          w.unbounded = true
          return
        }
        w.tokens += w.counter.count(k) + PER_KEY
        values.push(x)
        keys.push(k)
        flags.push((image ? 1 : 0) | (opaque || OPAQUE_KEYS.has(k) || (toolInput && k === 'input') ? 2 : 0))
      }
    }
  }
}
