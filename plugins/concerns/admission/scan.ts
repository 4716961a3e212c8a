// Walks of a request's JSON body for what the admission checks read: the text parts (content
// policy), inline base64 media (item caps) and the video-generation inputs. Iterative, with a
// node budget, so a hostile body cannot make a walk expensive; nothing is copied.
import { isRecord } from '../metering/body-reader.js'
import { visitRequestText } from '../metering/request-text.js'

/** Nodes visited at most by the inline-media walk (as the metering's text walk). */
const MAX_NODES = 1_000_000

/** Something that judges one text part; the first non-null answer ends the walk. */
export interface TextJudge { judge (text: string): string | null }

/**
 * The first verdict of `judge` over every string under a text key, at any depth (chat
 * messages, content blocks, responses input, genai parts, image and video prompts, system
 * prompts), then over the multipart text fields under such keys; null when none matched.
 */
export function judgeText (json: Record<string, unknown> | undefined, fields: Record<string, string> | undefined, judge: TextJudge): string | null {
  let verdict: string | null = null
  visitRequestText(json, fields, (text) => {
    verdict = judge.judge(text)
    return verdict !== null
  })
  return verdict
}

export type InlineKind = 'image' | 'video'

export interface InlineItem { kind: InlineKind, bytes: number, param: string }

/** Decoded size of a base64 text of `length` characters (padding and line breaks not subtracted: an upper bound within 3 bytes). */
function decodedBytes (length: number): number {
  return Math.floor(length * 3 / 4)
}

function kindOfMime (mime: unknown): InlineKind | null {
  if (typeof mime !== 'string') return null
  if (mime.startsWith('image/')) return 'image'
  if (mime.startsWith('video/')) return 'video'
  return null
}

/** `data:<mime>;base64,<data>` → its kind and decoded size; null for anything else. */
function dataUrl (s: string, key: string): InlineItem | null {
  if (!s.startsWith('data:')) return null
  const comma = s.indexOf(',')
  if (comma === -1) return null
  const semi = s.indexOf(';')
  const kind = kindOfMime(s.slice(5, semi === -1 || semi > comma ? comma : semi))
  return kind === null ? null : { kind, bytes: decodedBytes(s.length - comma - 1), param: key }
}

/**
 * The largest inline base64 image and video of a JSON body: data URLs (`image_url`,
 * `input_image`, `file_data`, `video_url`), genai `inline_data`/`inlineData` parts, base64
 * `source` blocks (`media_type`) and `bytesBase64Encoded` images (default image/*).
 */
export function largestInline (json: Record<string, unknown>): { image: InlineItem | null, video: InlineItem | null } {
  let image: InlineItem | null = null
  let video: InlineItem | null = null
  const keep = (item: InlineItem | null): void => {
    if (item === null) return
    if (item.kind === 'image') { if (image === null || item.bytes > image.bytes) image = item } else if (video === null || item.bytes > video.bytes) video = item
  }
  const values: unknown[] = [json]
  const keys: string[] = ['']
  let visited = 0
  while (values.length > 0 && visited < MAX_NODES) {
    const v = values.pop()
    const key = keys.pop() as string
    visited++
    if (typeof v === 'string') {
      if (v.length > 5 && v.charCodeAt(0) === 0x64 /* d */) keep(dataUrl(v, key))
    } else if (Array.isArray(v)) {
      for (const item of v) { values.push(item); keys.push(key) }
    } else if (isRecord(v)) {
      const mime = v.mime_type ?? v.mimeType ?? v.media_type
      if (typeof v.data === 'string') {
        const kind = kindOfMime(mime)
        if (kind !== null) keep({ kind, bytes: decodedBytes(v.data.length), param: key })
      }
      if (typeof v.bytesBase64Encoded === 'string') {
        keep({ kind: kindOfMime(mime) ?? 'image', bytes: decodedBytes(v.bytesBase64Encoded.length), param: key })
      }
      for (const k of Object.keys(v)) {
        if (k === 'data' || k === 'bytesBase64Encoded') continue
        values.push(v[k])
        keys.push(k)
      }
    }
  }
  return { image, video }
}

/** What a video-generation request asks for. */
export interface VideoInputs { firstFrame: boolean, lastFrame: boolean, referenceImages: boolean }

const present = (v: unknown): boolean => v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0)

function readVideoInputs (o: Record<string, unknown>, out: VideoInputs): void {
  if (present(o.image) || present(o.input_reference) || present(o.first_frame) || present(o.firstFrame)) out.firstFrame = true
  if (present(o.lastFrame) || present(o.last_frame)) out.lastFrame = true
  if (present(o.referenceImages) || present(o.reference_images)) out.referenceImages = true
}

/**
 * The inputs of a video-generation body: genai `instances[]` (and the SDK's `config`), the
 * top level (OpenAI JSON), and multipart file fields (`input_reference`, `first_frame`, ...).
 */
export function videoInputs (json: Record<string, unknown> | undefined, fileFields: readonly string[]): VideoInputs {
  const out: VideoInputs = { firstFrame: false, lastFrame: false, referenceImages: false }
  if (json !== undefined) {
    readVideoInputs(json, out)
    if (isRecord(json.config)) readVideoInputs(json.config, out)
    if (isRecord(json.parameters)) readVideoInputs(json.parameters, out)
    if (Array.isArray(json.instances)) for (const i of json.instances) if (isRecord(i)) readVideoInputs(i, out)
  }
  for (const field of fileFields) {
    if (field === 'input_reference' || field === 'image' || field === 'first_frame') out.firstFrame = true
    else if (field === 'last_frame') out.lastFrame = true
    else if (field === 'reference_images' || field === 'reference_image') out.referenceImages = true
  }
  return out
}
