// Media a request sends by URL. The upstream fetches it and bills it as input tokens, so the
// body's size (which bounds every other input token) says nothing about it: a 258-byte chat body
// with two image URLs was once held 0.000655 and billed for 200,000 input tokens. The worst
// case counts such items and holds each at the model's `url_media_item` price.
//
// Counted, per family:
//   chat        messages[].content[] `{ type: 'image_url', image_url: { url } }` (or a bare string url)
//   responses   input[] items' content[] (and a function_call_output's output[]):
//               `{ type: 'input_image', image_url }`, `{ type: 'input_file', file_url }`
//   messages    messages[].content[] (and a tool_result's content[]) with `source: { type: 'url' }`
//   genai       contents[].parts[] and systemInstruction.parts[]: `fileData.fileUri` /
//               `file_data.file_uri`
// A chat, responses or messages URL counts when it is http(s): a `data:` URL is bytes of the body,
// already bounded by its size. A genai file URI counts whatever its scheme (https, gs://,
// YouTube), except one naming the Files API, which is a file reference (isFilesApiUri). Media referenced by an uploaded file id (chat `file.file_id`, responses
// `input_file`/`input_image` `file_id`, messages `source: { type: 'file' }`) is counted apart by
// countFileReferences: like URL media, the provider reads it and the body does not bound it, so
// either makes the hold count the model's context window as input (plugins/concerns/wallet/hold.ts); only
// URL items also carry the `url_media_item` price.
//
// Inline media (base64 in the body) is counted too: its bytes do not bound what the provider
// bills for it either (a 70-byte PNG is 8,500 tokens on gpt-4o-mini at high detail; a PDF page
// 1,500–3,000 on Claude in a few bytes; a static video 258 tokens per sampled frame on Gemini).
// An inline image adds the model's `url_media_item` (one image's most); a document, video or
// audio (anything but an image or text) holds the context window, as media by reference does.
// OpenAI's `input_audio` (wav, mp3) stays bounded by its bytes: those codecs' least byte rate is
// far above any provider's audio tokens a second.
//
// The walk reads fixed paths only, at most two levels under a message, never recursing on what
// the client sent: its cost is linear in the body's size however deep the client nests it.

type Json = Record<string, unknown>

const isRecord = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v)
const listAt = (v: unknown): readonly unknown[] => Array.isArray(v) ? v : []
const fieldOf = (v: unknown, key: string): unknown => isRecord(v) ? v[key] : undefined

/** An http(s) URL the upstream would fetch (scheme case-insensitive, as URLs allow). */
function isRemote (v: unknown): boolean {
  return typeof v === 'string' && /^https?:\/\//i.test(v)
}

/**
 * Whether a GenAI file URI names a file of the Gemini Files API, stored in the operator's one
 * provider account (`files/abc`, `https://generativelanguage.googleapis.com/v1beta/files/abc`),
 * rather than media the provider fetches (https, gs://, YouTube). Anything that is not an absolute
 * URL is a name the provider resolves in its own store: a reference. The host is read as a
 * browser reads it (WHATWG: case, backslashes, user info, a trailing dot).
 */
import type { CompiledPrice } from '../shapes/index.js'

export function isFilesApiUri (uri: string): boolean {
  const trimmed = uri.trim()
  if (trimmed === '') return false
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    return true
  }
  const host = url.hostname.toLowerCase().replace(/\.+$/, '')
  return host === 'generativelanguage.googleapis.com' || host.endsWith('.generativelanguage.googleapis.com')
}

/** A GenAI part's file URIs (either spelling of either key). */
function genaiFileUris (part: Json): string[] {
  const out: string[] = []
  for (const file of [part.fileData, part.file_data]) {
    if (!isRecord(file)) continue
    for (const uri of [file.fileUri, file.file_uri]) if (typeof uri === 'string') out.push(uri)
  }
  return out
}

/** Whether one content part or block is a media item sent by URL. */
function isUrlMedia (part: unknown): boolean {
  if (!isRecord(part)) return false
  switch (part.type) {
    case 'image_url': {
      const image = part.image_url
      return isRemote(isRecord(image) ? image.url : image)
    }
    case 'input_image': return isRemote(part.image_url)
    case 'input_file': return isRemote(part.file_url)
  }
  const source = part.source
  if (isRecord(source)) return source.type === 'url' && isRemote(source.url)
  const uris = genaiFileUris(part)
  return uris.some((uri) => uri.trim() !== '') && !uris.some(isFilesApiUri)
}

/** Whether one content part or block references an uploaded file by its id. */
function isFileReference (part: unknown): boolean {
  if (!isRecord(part)) return false
  const id = (v: unknown): boolean => typeof v === 'string' && v !== ''
  switch (part.type) {
    case 'file': return id(fieldOf(part.file, 'file_id'))
    case 'input_file':
    case 'input_image': return id(part.file_id)
  }
  if (part.type === 'container_upload') return id(part.file_id)
  const source = part.source
  if (isRecord(source)) return source.type === 'file' && id(source.file_id)
  return genaiFileUris(part).some(isFilesApiUri)
}

/** A media type's kind: image, text, or other (documents, audio, video). */
function mimeKind (mime: unknown): 'image' | 'text' | 'other' {
  const m = typeof mime === 'string' ? mime.trim().toLowerCase() : ''
  return m.startsWith('image/') ? 'image' : m.startsWith('text/') ? 'text' : 'other'
}

/** A data URL's kind: undefined for anything but a `data:` URL. */
function dataUrlKind (v: unknown): 'image' | 'text' | 'other' | undefined {
  if (typeof v !== 'string' || !/^data:/i.test(v)) return undefined
  const end = v.search(/[;,]/)
  return mimeKind(v.slice(5, end === -1 ? undefined : end))
}

/** What an inline medium in one part costs to bound: an image's item price, the context window, or nothing (text). */
export type InlineMedia = 'image' | 'unbounded' | null

const inlineOf = (kind: 'image' | 'text' | 'other' | undefined): InlineMedia => kind === undefined || kind === 'text' ? null : kind === 'image' ? 'image' : 'unbounded'

/** The inline (base64) medium of one content part or block, if any. */
export function inlineMedia (part: unknown): InlineMedia {
  if (!isRecord(part)) return null
  switch (part.type) {
    case 'image_url': {
      const image = part.image_url
      return inlineOf(dataUrlKind(isRecord(image) ? image.url : image))
    }
    case 'input_image': return inlineOf(dataUrlKind(part.image_url))
    // A chat `file` part's file_data, a responses input_file's: a document in the body.
    case 'file': return typeof fieldOf(part.file, 'file_data') === 'string' ? 'unbounded' : null
    case 'input_file': return typeof part.file_data === 'string' ? 'unbounded' : null
  }
  const source = part.source
  if (isRecord(source)) return source.type === 'base64' ? inlineOf(mimeKind(source.media_type)) : null
  const inline = part.inlineData ?? part.inline_data
  if (!isRecord(inline)) return null
  return inlineOf(mimeKind(inline.mimeType ?? inline.mime_type))
}

/** Items in a list of parts, and in the content of the tool results and content documents among them (one level). */
function countParts (parts: unknown, counts: (part: unknown) => boolean): number {
  let n = 0
  for (const part of listAt(parts)) {
    if (counts(part)) n++
    else if (fieldOf(part, 'type') === 'tool_result') {
      for (const inner of listAt(fieldOf(part, 'content'))) if (counts(inner)) n++
    } else if (fieldOf(fieldOf(part, 'source'), 'type') === 'content') {
      for (const inner of listAt(fieldOf(fieldOf(part, 'source'), 'content'))) if (counts(inner)) n++
    }
  }
  return n
}

/** Parts `counts` accepts, over every family's shape (an unknown shape counts 0). */
function countAll (body: Json, counts: (part: unknown) => boolean): number {
  let n = 0
  for (const message of listAt(body.messages)) n += countParts(fieldOf(message, 'content'), counts)
  for (const item of listAt(body.input)) {
    if (counts(item)) n++
    n += countParts(fieldOf(item, 'content'), counts) + countParts(fieldOf(item, 'output'), counts)
  }
  for (const content of listAt(body.contents)) n += countParts(fieldOf(content, 'parts'), counts)
  n += countParts(fieldOf(body.systemInstruction ?? body.system_instruction, 'parts'), counts)
  return n
}

/** Media items the body sends by URL, over every family's shape (an unknown shape counts 0). */
export function countUrlMedia (body: Json): number {
  return countAll(body, isUrlMedia)
}

/** Parts that reference an uploaded file by its id, over every family's shape. */
export function countFileReferences (body: Json): number {
  return countAll(body, isFileReference)
}

/** Media a body references or carries inline, by what bounds it (hold.ts). */
export interface MediaCounts {
  /** Media by URL: the context window, and each its `url_media_item`. */
  readonly urls: number
  /** Media by uploaded file id: the context window. */
  readonly files: number
  /** Inline images: each its `url_media_item` (one image's most), besides its bytes. */
  readonly inlineImages: number
  /** Inline documents, video, audio: the context window. */
  readonly inlineUnbounded: number
}

/** Every count in one walk (the hold's: a request of plain text parts pays one pass over its parts). */
export function countReferencedMedia (body: Json): MediaCounts {
  let urls = 0
  let files = 0
  let inlineImages = 0
  let inlineUnbounded = 0
  countAll(body, (part) => {
    if (isUrlMedia(part)) urls++
    else if (isFileReference(part)) files++
    else {
      const inline = inlineMedia(part)
      if (inline === 'image') inlineImages++
      else if (inline === 'unbounded') inlineUnbounded++
    }
    return false
  })
  return { urls, files, inlineImages, inlineUnbounded }
}

/** What the hold adds for `items` media items sent by URL: 0 when the model declares no price. */
export function urlMediaHold (price: CompiledPrice, items: number): bigint {
  if (price.urlMediaItem === undefined || items <= 0) return 0n
  return price.urlMediaItem * BigInt(items)
}

/**
 * Where a body names a file stored at the provider by its id, as request paths
 * (`messages[0].content[1].file.file_id`), at most `limit`. Every place the wire formats take
 * one: content parts (chat `file.file_id`, responses `input_file` / `input_image` `file_id` also
 * in a function call's output, messages `source: { type: 'file' }` also in a tool result or a
 * content document, and `container_upload`, GenAI `fileData.fileUri` naming the Files API in
 * either spelling, also in a function response's parts), a responses `computer_call_output`
 * screenshot, responses tools (a code interpreter container's `file_ids`, an image generation
 * tool's `input_image_mask.file_id`), image edits (`images[].file_id`, `mask.file_id`) and Veo
 * instances (a `video`, `image` or `lastFrame` whose URI names the Files API). Fixed paths
 * only, like the counts above.
 */
export function fileReferencePaths (body: Json, limit = 1): string[] {
  const out: string[] = []
  const add = (path: string): boolean => { out.push(path); return out.length >= limit }
  const fileField = (part: unknown): string | null => {
    if (!isFileReference(part)) return null
    const p = part as Json
    if (p.type === 'file') return 'file.file_id'
    if (p.type === 'input_file' || p.type === 'input_image' || p.type === 'container_upload') return 'file_id'
    if (isRecord(p.source)) return 'source.file_id'
    for (const key of ['fileData', 'file_data']) {
      const file = p[key]
      if (!isRecord(file)) continue
      for (const uriKey of ['fileUri', 'file_uri']) {
        const uri = file[uriKey]
        if (typeof uri === 'string' && isFilesApiUri(uri)) return `${key}.${uriKey}`
      }
    }
    return null
  }
  const parts = (list: unknown, at: string): boolean => {
    const items = listAt(list)
    for (let i = 0; i < items.length; i++) {
      const part = items[i]
      const here = `${at}[${i}]`
      const field = fileField(part)
      if (field !== null && add(`${here}.${field}`)) return true
      if (!isRecord(part)) continue
      if (part.type === 'tool_result' && parts(part.content, `${here}.content`)) return true
      if (isRecord(part.source) && part.source.type === 'content' && parts(part.source.content, `${here}.source.content`)) return true
      for (const key of ['functionResponse', 'function_response']) {
        if (isRecord(part[key]) && parts((part[key] as Json).parts, `${here}.${key}.parts`)) return true
      }
    }
    return false
  }
  const messages = listAt(body.messages)
  for (let i = 0; i < messages.length; i++) if (parts(fieldOf(messages[i], 'content'), `messages[${i}].content`)) return out
  const input = listAt(body.input)
  for (let i = 0; i < input.length; i++) {
    const item = input[i]
    const field = fileField(item)
    if (field !== null && add(`input[${i}].${field}`)) return out
    if (parts(fieldOf(item, 'content'), `input[${i}].content`)) return out
    const output = fieldOf(item, 'output')
    if (parts(output, `input[${i}].output`)) return out
    if (isRecord(output) && typeof output.file_id === 'string' && output.file_id !== '' && add(`input[${i}].output.file_id`)) return out
  }
  const contents = listAt(body.contents)
  for (let i = 0; i < contents.length; i++) if (parts(fieldOf(contents[i], 'parts'), `contents[${i}].parts`)) return out
  for (const key of ['systemInstruction', 'system_instruction']) {
    if (parts(fieldOf(body[key], 'parts'), `${key}.parts`)) return out
  }
  const tools = listAt(body.tools)
  for (let i = 0; i < tools.length; i++) {
    const ids = fieldOf(fieldOf(tools[i], 'container'), 'file_ids')
    if (Array.isArray(ids) && ids.length > 0 && add(`tools[${i}].container.file_ids`)) return out
    const mask = fieldOf(fieldOf(tools[i], 'input_image_mask'), 'file_id')
    if (typeof mask === 'string' && mask !== '' && add(`tools[${i}].input_image_mask.file_id`)) return out
  }
  const images = listAt(body.images)
  for (let i = 0; i < images.length; i++) {
    const id = fieldOf(images[i], 'file_id')
    if (typeof id === 'string' && id !== '' && add(`images[${i}].file_id`)) return out
  }
  const mask = fieldOf(body.mask, 'file_id')
  if (typeof mask === 'string' && mask !== '' && add('mask.file_id')) return out
  const instances = listAt(body.instances)
  for (let i = 0; i < instances.length; i++) {
    const media: Array<[unknown, string]> = [['video', 'video'], ['image', 'image'], ['lastFrame', 'lastFrame'], ['last_frame', 'last_frame']]
      .map(([k, name]) => [fieldOf(instances[i], k as string), `instances[${i}].${name as string}`])
    const refs = listAt(fieldOf(instances[i], 'referenceImages') ?? fieldOf(instances[i], 'reference_images'))
    for (let j = 0; j < refs.length; j++) media.push([fieldOf(refs[j], 'image'), `instances[${i}].referenceImages[${j}].image`])
    for (const [m, at] of media) {
      if (!isRecord(m)) continue
      for (const key of ['uri', 'gcsUri', 'gcs_uri', 'fileUri', 'file_uri']) {
        const v = m[key]
        if (typeof v === 'string' && isFilesApiUri(v) && add(`${at}.${key}`)) return out
      }
    }
  }
  return out
}
