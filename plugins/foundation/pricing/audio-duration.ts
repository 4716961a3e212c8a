// Duration of an uploaded audio file from its first bytes (the multipart summary keeps 64 KiB)
// and its total size, for the worst-case hold of per-second transcription. Reads WAV (RIFF fmt +
// data chunks), MP3 (first frame header, CBR assumption; Xing/Info/VBRI frame counts when present)
// and FLAC (STREAMINFO). Anything else — or a header that cannot be read — is bounded from the
// size at the lowest plausible bitrate, 8 kbit/s (size / 1000 seconds). Durations are whole
// milliseconds, rounded up. Nothing here decodes audio.

/** 8 kbit/s: the size bound assumes no audio is stored more densely than this. */
export const LOWEST_BYTES_PER_SECOND = 1000

export type DurationSource = 'wav' | 'mp3' | 'flac' | 'size-bound'

export interface AudioDuration {
  millis: number
  source: DurationSource
}

const ceilDiv = (a: bigint, b: bigint): number => Number((a + b - 1n) / b)
const tag = (b: Buffer, at: number, s: string): boolean => at + s.length <= b.length && b.toString('latin1', at, at + s.length) === s

/** Offset of the first byte after an ID3v2 tag (0 when there is none). */
function skipId3 (head: Buffer): number {
  if (!tag(head, 0, 'ID3') || head.length < 10) return 0
  const b = (i: number): number => (head[i] ?? 0) & 0x7f
  const size = (b(6) << 21) | (b(7) << 14) | (b(8) << 7) | b(9)
  return 10 + size + (((head[5] ?? 0) & 0x10) !== 0 ? 10 : 0)
}

/** The fmt fields and the data chunk of a WAV, as far as `head` holds them. */
export interface WavLayout {
  /** The fmt chunk before the data chunk; null when there was none. */
  fmt: { format: number, subFormat: number | null, channels: number, rate: number, byteRate: number, blockAlign: number } | null
  /** Bytes of the data chunk present in the file (its declared length, at most what the file holds). */
  dataBytes: number
}

/** The layout of a RIFF/WAVE file whose data chunk starts within `head`; null otherwise. */
export function wavLayout (head: Buffer, size: number): WavLayout | null {
  if (!tag(head, 0, 'RIFF') || !tag(head, 8, 'WAVE')) return null
  let fmt: WavLayout['fmt'] = null
  let off = 12
  while (off + 8 <= head.length) {
    const id = head.toString('latin1', off, off + 4)
    const len = head.readUInt32LE(off + 4)
    const body = off + 8
    if (id === 'fmt ' && body + 16 <= head.length) {
      const format = head.readUInt16LE(body)
      // WAVE_FORMAT_EXTENSIBLE: the sub-format GUID starts with the real format tag.
      const subFormat = format === 0xfffe && body + 26 <= head.length ? head.readUInt16LE(body + 24) : null
      fmt = { format, subFormat, channels: head.readUInt16LE(body + 2), rate: head.readUInt32LE(body + 4), byteRate: head.readUInt32LE(body + 8), blockAlign: head.readUInt16LE(body + 12) }
    } else if (id === 'data') {
      const available = Math.max(0, size - body)
      return { fmt, dataBytes: len === 0 || len === 0xffffffff ? available : Math.min(len, available) }
    }
    off = body + len + (len & 1)
  }
  return null
}

function wav (head: Buffer, size: number): number | null {
  const layout = wavLayout(head, size)
  const fmt = layout?.fmt
  if (layout == null || fmt == null) return null
  const computed = fmt.rate * fmt.blockAlign
  // For PCM the decoder goes by sample rate and block size; take the slower of the two rates.
  const pcm = [1, 3, 6, 7, 0xfffe].includes(fmt.format)
  const byteRate = pcm && computed > 0 ? Math.min(fmt.byteRate || computed, computed) : fmt.byteRate
  if (byteRate <= 0) return null
  return ceilDiv(BigInt(layout.dataBytes) * 1000n, BigInt(byteRate))
}

const KBPS: Record<string, readonly number[]> = {
  '1-1': [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
  '1-2': [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
  '1-3': [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  '2-1': [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
  '2-2': [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
}
const SAMPLE_RATES: Record<number, readonly number[]> = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] }

interface Mp3Frame { kbps: number; sampleRate: number; length: number; samples: number; sideInfo: number }

/** Parses an MPEG audio frame header at `i`; null unless every field is valid (free format is not). */
export function mp3FrameAt (head: Buffer, i: number): Mp3Frame | null {
  const b1 = head[i + 1]; const b2 = head[i + 2]; const b3 = head[i + 3]
  if (head[i] !== 0xff || b1 === undefined || b2 === undefined || b3 === undefined || (b1 & 0xe0) !== 0xe0) return null
  const version = (b1 >> 3) & 3 // 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5
  const layer = 4 - ((b1 >> 1) & 3) // 1, 2, 3 (4 is reserved)
  const rates = SAMPLE_RATES[version]
  if (!rates || layer === 4) return null
  const table = KBPS[version === 3 ? `1-${layer}` : layer === 1 ? '2-1' : '2-2']
  const kbps = table?.[(b2 >> 4) - 1]
  const sampleRate = rates[(b2 >> 2) & 3]
  if (kbps === undefined || sampleRate === undefined) return null
  const padding = (b2 >> 1) & 1
  const samples = layer === 1 ? 384 : layer === 3 && version !== 3 ? 576 : 1152
  const length = layer === 1 ? (Math.floor(12000 * kbps / sampleRate) + padding) * 4 : Math.floor(samples / 8 * 1000 * kbps / sampleRate) + padding
  const mono = b3 >> 6 === 3
  const sideInfo = version === 3 ? (mono ? 17 : 32) : (mono ? 9 : 17)
  return { kbps, sampleRate, length, samples, sideInfo }
}

/** Containers whose bytes could hold a stray frame sync: [offset, magic]. */
const OTHER_CONTAINERS: ReadonlyArray<[number, string]> = [[0, 'OggS'], [0, 'fLaC'], [0, 'RIFF'], [4, 'ftyp'], [0, '\x1aE\xdf\xa3'], [0, '#!AMR'], [0, 'caff'], [0, 'FORM']]
/** How far after an ID3 tag the first frame may start (encoders put it right there). */
const MP3_SYNC_WINDOW = 8192

function mp3 (head: Buffer, size: number): number | null {
  const start = skipId3(head)
  if (OTHER_CONTAINERS.some(([at, magic]) => tag(head, start + at, magic))) return null
  for (let i = start; i + 4 <= head.length && i < start + MP3_SYNC_WINDOW; i++) {
    const frame = mp3FrameAt(head, i)
    if (!frame) continue
    // Two consecutive matching frames, so that a stray 0xFFE sync in other data is not taken for MP3.
    const next = mp3FrameAt(head, i + frame.length)
    if (!next || next.sampleRate !== frame.sampleRate || next.samples !== frame.samples) continue
    let millis = ceilDiv(BigInt(Math.max(0, size - i)) * 8n, BigInt(frame.kbps))
    const xing = i + 4 + frame.sideInfo
    let frames = 0
    if ((tag(head, xing, 'Xing') || tag(head, xing, 'Info')) && xing + 12 <= head.length && (head.readUInt32BE(xing + 4) & 1) !== 0) {
      frames = head.readUInt32BE(xing + 8)
    } else if (tag(head, i + 36, 'VBRI') && i + 54 <= head.length) {
      frames = head.readUInt32BE(i + 50)
    }
    // VBR: trust the larger of the frame count and the first frame's bitrate.
    if (frames > 0) millis = Math.max(millis, ceilDiv(BigInt(frames) * BigInt(frame.samples) * 1000n, BigInt(frame.sampleRate)))
    return millis
  }
  return null
}

function flac (head: Buffer): number | null {
  const at = skipId3(head)
  if (!tag(head, at, 'fLaC') || ((head[at + 4] ?? 0x7f) & 0x7f) !== 0 || at + 26 > head.length) return null
  const s = at + 8 // STREAMINFO body
  const sampleRate = (head.readUInt16BE(s + 10) << 4) | ((head[s + 12] ?? 0) >> 4)
  const total = BigInt((head[s + 13] ?? 0) & 0x0f) * 2n ** 32n + BigInt(head.readUInt32BE(s + 14))
  if (sampleRate === 0 || total === 0n) return null
  return ceilDiv(total * 1000n, BigInt(sampleRate))
}

/** Duration of an upload of `size` bytes whose first bytes are `head`. */
export function readAudioDuration (head: Buffer, size: number): AudioDuration {
  const readers: Array<[DurationSource, () => number | null]> = [['wav', () => wav(head, size)], ['flac', () => flac(head)], ['mp3', () => mp3(head, size)]]
  for (const [source, read] of readers) {
    const millis = read()
    if (millis !== null) return { millis, source }
  }
  return { millis: sizeBoundMillis(size), source: 'size-bound' }
}

/** Longest plausible duration of `size` bytes of audio: size / 1000 seconds. */
export function sizeBoundMillis (size: number): number {
  return ceilDiv(BigInt(Math.max(0, Math.ceil(size))) * 1000n, BigInt(LOWEST_BYTES_PER_SECOND))
}
