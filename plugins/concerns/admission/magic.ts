// The real format of an uploaded file from its first bytes (magic numbers), never from its name
// or declared Content-Type: an MP3 named `.wav` is an MP3, a PNG sent as audio is a PNG.
// A small hand table of the formats the routed operations take.

export type MediaKind = 'audio' | 'image' | 'video' | 'document'

export interface MediaFormat {
  readonly name: string
  /** Kinds the format may carry (an MP4 or WebM container holds audio or video). */
  readonly kinds: readonly MediaKind[]
}

const fmt = (name: string, ...kinds: MediaKind[]): MediaFormat => Object.freeze({ name, kinds: Object.freeze(kinds) })

const PNG = fmt('png', 'image')
const JPEG = fmt('jpeg', 'image')
const GIF = fmt('gif', 'image')
const WEBP = fmt('webp', 'image')
const WAV = fmt('wav', 'audio')
const MP3 = fmt('mp3', 'audio')
const FLAC = fmt('flac', 'audio')
const OGG = fmt('ogg', 'audio')
const WEBM = fmt('webm', 'audio', 'video')
const MP4 = fmt('mp4', 'audio', 'video')
const M4A = fmt('m4a', 'audio')
const PDF = fmt('pdf', 'document')

/** Every format name the table knows (the schema's enum lists the same). */
export const FORMAT_NAMES: readonly string[] = [PNG, JPEG, GIF, WEBP, WAV, MP3, FLAC, OGG, WEBM, MP4, M4A, PDF].map((f) => f.name)

function ascii (b: Buffer, at: number, text: string): boolean {
  if (b.length < at + text.length) return false
  for (let i = 0; i < text.length; i++) if (b[at + i] !== text.charCodeAt(i)) return false
  return true
}

/** The format the bytes begin with, or null when the table does not know it. */
export function sniffFormat (b: Buffer): MediaFormat | null {
  if (b.length < 3) return null
  const b0 = b[0] as number
  const b1 = b[1] as number
  if (b0 === 0x89 && ascii(b, 1, 'PNG')) return PNG
  if (b0 === 0xff && b1 === 0xd8 && b[2] === 0xff) return JPEG
  if (ascii(b, 0, 'GIF8')) return GIF
  if (ascii(b, 0, 'RIFF')) {
    if (ascii(b, 8, 'WEBP')) return WEBP
    if (ascii(b, 8, 'WAVE')) return WAV
    return null
  }
  if (ascii(b, 0, 'ID3')) return MP3
  // An MPEG audio frame header: 11 sync bits, then a layer other than the reserved 00.
  if (b0 === 0xff && (b1 & 0xe0) === 0xe0 && (b1 & 0x06) !== 0) return MP3
  if (ascii(b, 0, 'fLaC')) return FLAC
  if (ascii(b, 0, 'OggS')) return OGG
  if (b0 === 0x1a && b1 === 0x45 && b[2] === 0xdf && b[3] === 0xa3) return WEBM
  if (ascii(b, 4, 'ftyp')) return ascii(b, 8, 'M4A ') ? M4A : MP4
  if (ascii(b, 0, '%PDF')) return PDF
  return null
}

/** Whether an accepted list (format names and kinds) admits the format. */
export function formatAccepted (format: MediaFormat, accepted: ReadonlySet<string>): boolean {
  if (accepted.has(format.name)) return true
  for (const kind of format.kinds) if (accepted.has(kind)) return true
  return false
}
