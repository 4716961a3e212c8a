import { sniffFormat } from '../admission/magic.js'
import { gatewayError } from '../../foundation/errors/index.js'
import type { CompiledModel, MultipartFile } from '../../foundation/shapes/index.js'

export interface InputModalities { image: boolean, video: boolean, audio: boolean }

function mimeKind (mime: unknown): keyof InputModalities | null {
  if (typeof mime !== 'string') return null
  if (mime.startsWith('image/')) return 'image'
  if (mime.startsWith('video/')) return 'video'
  if (mime.startsWith('audio/')) return 'audio'
  return null
}

function dataUrlKind (url: unknown): keyof InputModalities | null {
  if (typeof url !== 'string' || !url.startsWith('data:')) return null
  return mimeKind(url.slice(5, url.indexOf(';') === -1 ? undefined : url.indexOf(';')))
}

const PART_TYPES: Readonly<Record<string, keyof InputModalities>> = {
  image_url: 'image',
  input_image: 'image',
  image: 'image',
  input_audio: 'audio',
  audio: 'audio',
  video_url: 'video',
  input_video: 'video',
  video: 'video'
}

function scanPart (part: unknown, found: InputModalities): void {
  if (typeof part !== 'object' || part === null) return
  const p = part as Record<string, unknown>
  const byType = typeof p.type === 'string' ? PART_TYPES[p.type] : undefined
  if (byType) found[byType] = true
  // OpenAI file parts and Responses input_file carry a data URL.
  const file = p.file as Record<string, unknown> | undefined
  const k1 = dataUrlKind(file?.file_data) ?? dataUrlKind(p.file_data)
  if (k1) found[k1] = true
  // generative-content parts: inline_data / file_data in either casing.
  for (const key of ['inline_data', 'inlineData', 'file_data', 'fileData']) {
    const d = p[key] as Record<string, unknown> | undefined
    const k = mimeKind(d?.mime_type ?? d?.mimeType)
    if (k) found[k] = true
  }
}

function scanContentList (list: unknown, found: InputModalities, partsKey: 'content' | 'parts'): void {
  if (!Array.isArray(list)) return
  for (const item of list) {
    if (typeof item !== 'object' || item === null) continue
    const parts = (item as Record<string, unknown>)[partsKey]
    if (Array.isArray(parts)) for (const part of parts) scanPart(part, found)
    else scanPart(item, found)
  }
}

/** Which input modalities a JSON body carries, read from the shapes of the three families. */
export function inputModalities (json: Record<string, unknown>): InputModalities {
  const found: InputModalities = { image: false, video: false, audio: false }
  scanContentList(json.messages, found, 'content')
  scanContentList(json.input, found, 'content')
  scanContentList(json.contents, found, 'parts')
  return found
}

/** The operation facts the check reads: whether its wire format has a video part at all. */
export interface CapabilityOperation { readonly videoParts: boolean }

export function checkCapabilities (model: CompiledModel, op: CapabilityOperation, json: Record<string, unknown>): void {
  const found = inputModalities(json)
  if (found.video) {
    // Without a video part in the wire format, video belongs on :generateContent.
    if (!op.videoParts) throw gatewayError('REQUEST_VIDEO_INPUT_ENDPOINT_UNSUPPORTED', { param: 'messages' })
    if (!model.capabilities.has('video_input')) throw gatewayError('MODEL_VIDEO_INPUT_UNSUPPORTED', { param: 'model' })
  }
  if (found.image && !model.capabilities.has('vision')) throw gatewayError('MODEL_VISION_UNSUPPORTED', { param: 'model' })
  if (found.audio && !model.capabilities.has('audio_input')) throw gatewayError('MODEL_AUDIO_INPUT_UNSUPPORTED', { param: 'model' })
}

/**
 * The same capabilities for uploaded files, by each part's declared type: a `video/*` file needs
 * `video_input`, an `audio/*` file `audio_input`. A model that takes audio also takes a video
 * container whose bytes can carry audio (MP4, WebM: a transcription of a recording). Image
 * files are not checked: editing models take images as their operand, not as vision input.
 */
export function checkFileCapabilities (model: CompiledModel, files: readonly MultipartFile[]): void {
  for (const file of files) {
    const declared = mimeKind(file.mimeType)
    if (declared === 'video' && !model.capabilities.has('video_input')) {
      const format = sniffFormat(file.head)
      const audioContainer = format !== null && format.kinds.includes('audio')
      if (!(audioContainer && model.capabilities.has('audio_input'))) throw gatewayError('MODEL_VIDEO_INPUT_UNSUPPORTED', { param: file.field })
    }
    if (declared === 'audio' && !model.capabilities.has('audio_input')) throw gatewayError('MODEL_AUDIO_INPUT_UNSUPPORTED', { param: file.field })
  }
}
