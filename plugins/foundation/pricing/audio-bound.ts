// The longest an uploaded audio file can play, for the worst-case hold of per-second
// transcription: the larger of what its header claims (audio-duration.ts) and a bound the bytes
// themselves give, so a forged header (a FLAC STREAMINFO of 1 sample, an IMA-ADPCM WAV with a
// huge byte rate, an Ogg granule position) can lower neither. The bound from the bytes, by format:
//
//   WAV, PCM family    data bytes / (sample rate × block align): the decoder's own arithmetic.
//   WAV, ADPCM (MS, IMA) two samples per data byte per channel at the header's rate (4 bits a
//                      sample; block headers only make it shorter).
//   FLAC               every frame header in the file (sync code, valid fields, CRC-8) adds its
//                      block size at its sample rate (the lower of the frame's and STREAMINFO's).
//                      Every frame a decoder plays is counted; a false match only adds.
//   MP3                every valid MPEG audio frame header in the file (free format included)
//                      adds its samples at its rate (same reasoning).
//   AAC in ADTS        every ADTS frame header adds 1,024 samples per raw data block at its rate.
//   Ogg Opus           every packet of every page adds the most its TOC byte lets it play
//                      (OggWalk below), whatever the granule positions say.
//   anything else      no true bound: WebM/Matroska, MP4/M4A, Ogg Vorbis/FLAC/Speex, a WAV
//                      codec other than PCM or ADPCM, unknown bytes. `refused` names the format,
//                      and the hold refuses a request priced per second of audio
//                      (REQUEST_MEDIA_TYPE_UNSUPPORTED, 415): Opus with DTX or AAC silence can be
//                      stored far below any bitrate a size bound would assume.
// The header claim keeps its own floor: a file shorter than it claims is held for the claim.
// The bound is rounded up to a whole second: providers report transcribed audio in whole
// seconds (`usage: { type: 'duration', seconds }`), so a 6,534.4 s file may be billed 6,535 s.
// Pure; one scan per format over the bytes, a plain byte loop (an indexOf call per candidate
// cost 2 s on 20 MiB of 0xFF bytes).
import { LOWEST_BYTES_PER_SECOND, mp3FrameAt, readAudioDuration, sizeBoundMillis, wavLayout, type DurationSource } from './audio-duration.js'

export interface AudioFile {
  /** Size of the file in bytes. */
  size: number
  /** Its first bytes (the multipart summary keeps 64 KiB). */
  head: Buffer
  /** All of its bytes, as pieces (views of the request body); absent: only `head` is known. */
  data?: readonly Buffer[]
}

export interface AudioBound {
  /** The bound: max(claim, bytes), rounded up to a whole second, in milliseconds. */
  millis: number
  /** What the header claims (or the size bound when it claims nothing readable). */
  claimMillis: number
  /** The bound from the bytes. */
  bytesMillis: number
  source: DurationSource
  /**
   * Set when the bytes give no true bound (WebM, MP4/M4A, Ogg other than Opus, a WAV codec other
   * than PCM or ADPCM, unknown bytes): the format's name. `millis` is then only size / 1000 s, and
   * a request priced per second of audio is refused (REQUEST_MEDIA_TYPE_UNSUPPORTED).
   */
  refused?: string
}

const ceilDiv = (a: bigint, b: bigint): number => Number((a + b - 1n) / b)
const tag = (b: Buffer, at: number, s: string): boolean => at + s.length <= b.length && b.toString('latin1', at, at + s.length) === s

/** The file's bytes in one buffer, or null when only part of it is known. */
function wholeFile (file: AudioFile): Buffer | null {
  const data = file.data
  if (data !== undefined) return data.length === 1 ? data[0] as Buffer : Buffer.concat(data as Buffer[])
  return file.head.length >= file.size ? file.head : null
}

/** Millis of `samples` at `rate` Hz, per rate, summed (each rounded up). */
class SampleSum {
  private readonly byRate = new Map<number, bigint>()
  add (samples: number, rate: number): void {
    const r = Math.max(1, rate)
    this.byRate.set(r, (this.byRate.get(r) ?? 0n) + BigInt(samples))
  }

  millis (): number {
    let total = 0
    for (const [rate, samples] of this.byRate) total += ceilDiv(samples * 1000n, BigInt(rate))
    return total
  }
}

const PCM_FORMATS: ReadonlySet<number> = new Set([1, 3, 6, 7])
const ADPCM_FORMATS: ReadonlySet<number> = new Set([2, 0x11])

const FLAC_RATES = [0, 88200, 176400, 192000, 8000, 16000, 22050, 24000, 32000, 44100, 48000, 96000]

function crc8 (b: Buffer, from: number, to: number): number {
  let crc = 0
  for (let i = from; i < to; i++) {
    crc ^= b[i] as number
    for (let k = 0; k < 8; k++) crc = (crc & 0x80) !== 0 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff
  }
  return crc
}

/** The length of the UTF-8-like coded frame or sample number at `i`, or 0 when malformed. */
function codedNumberLength (b: Buffer, i: number): number {
  const first = b[i]
  if (first === undefined) return 0
  let n = 1
  if ((first & 0x80) !== 0) {
    if ((first & 0xc0) === 0x80 || first === 0xff) return 0
    n = first >= 0xfe ? 7 : first >= 0xfc ? 6 : first >= 0xf8 ? 5 : first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : 2
  }
  for (let k = 1; k < n; k++) if (((b[i + k] ?? 0) & 0xc0) !== 0x80) return 0
  return n
}

/** A FLAC frame header at `i`: its block size and sample rate (0: STREAMINFO's), or null. */
function flacFrameAt (b: Buffer, i: number): { block: number, rate: number } | null {
  const b1 = b[i + 1]; const b2 = b[i + 2]; const b3 = b[i + 3]
  if (b1 === undefined || b2 === undefined || b3 === undefined || (b1 & 0xfe) !== 0xf8) return null
  const bsCode = b2 >> 4
  const rateCode = b2 & 0x0f
  const channels = b3 >> 4
  const sampleSize = (b3 >> 1) & 7
  if (bsCode === 0 || rateCode === 15 || channels > 10 || sampleSize === 3 || (b3 & 1) !== 0) return null
  const coded = codedNumberLength(b, i + 4)
  if (coded === 0) return null
  let at = i + 4 + coded
  let block: number
  if (bsCode === 1) block = 192
  else if (bsCode <= 5) block = 576 << (bsCode - 2)
  else if (bsCode === 6) { block = (b[at] ?? 0) + 1; at += 1 } else if (bsCode === 7) { block = (((b[at] ?? 0) << 8) | (b[at + 1] ?? 0)) + 1; at += 2 } else block = 256 << (bsCode - 8)
  let rate: number
  if (rateCode <= 11) rate = FLAC_RATES[rateCode] as number
  else if (rateCode === 12) { rate = (b[at] ?? 0) * 1000; at += 1 } else if (rateCode === 13) { rate = ((b[at] ?? 0) << 8) | (b[at + 1] ?? 0); at += 2 } else { rate = (((b[at] ?? 0) << 8) | (b[at + 1] ?? 0)) * 10; at += 2 }
  if (at >= b.length || crc8(b, i, at) !== b[at]) return null
  return { block, rate }
}

/** STREAMINFO's sample rate, or 0. */
function streamInfoRate (b: Buffer): number {
  let at = 0
  if (tag(b, 0, 'ID3') && b.length >= 10) at = 10 + ((((b[6] ?? 0) & 0x7f) << 21) | (((b[7] ?? 0) & 0x7f) << 14) | (((b[8] ?? 0) & 0x7f) << 7) | ((b[9] ?? 0) & 0x7f))
  if (!tag(b, at, 'fLaC') || at + 26 > b.length) return 0
  return (b.readUInt16BE(at + 18) << 4) | ((b[at + 20] ?? 0) >> 4)
}

/** Adds every FLAC frame that starts in [from, to) to `sum` (a frame header may run past `to`). */
function flacFrames (b: Buffer, from: number, to: number, sum: SampleSum, info: number): void {
  const end = Math.min(to, b.length - 5)
  for (let i = from; i < end; i++) {
    if (b[i] !== 0xff) {
      // Sparse syncs: skip natively to the next; dense ones (a file of 0xFF) step without a call.
      i = b.indexOf(0xff, i)
      if (i === -1 || i >= end) break
    }
    const frame = flacFrameAt(b, i)
    if (frame === null) continue
    const rates = [frame.rate, info].filter((r) => r > 0)
    sum.add(frame.block, rates.length === 0 ? 1 : Math.min(...rates))
  }
}

/** Millis of every FLAC frame in the bytes. */
export function flacFramesMillis (b: Buffer): number {
  const sum = new SampleSum()
  flacFrames(b, 0, b.length, sum, streamInfoRate(b))
  return sum.millis()
}

const MPEG_RATES: Readonly<Record<number, readonly number[]>> = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] }

/**
 * Samples and rate of an MPEG audio frame header at `i`, free format (bitrate index 0: any
 * bitrate, so any frame length) included, since a decoder plays those too; null otherwise.
 */
function mpegHeaderAt (b: Buffer, i: number): { samples: number, rate: number } | null {
  // What no MPEG audio header can be, rejected without a call or an allocation (a file of 0xFF
  // bytes is 20 million candidates): a reserved version or layer, bitrate index 15, rate index 3.
  const c1 = b[i + 1]; const c2 = b[i + 2]
  if (c1 === undefined || c2 === undefined || (c1 & 0xe0) !== 0xe0 || (c1 & 0x18) === 0x08 || (c1 & 0x06) === 0 || (c2 & 0xf0) === 0xf0 || (c2 & 0x0c) === 0x0c) return null
  const frame = mp3FrameAt(b, i)
  if (frame !== null) return { samples: frame.samples, rate: frame.sampleRate }
  const b1 = b[i + 1]; const b2 = b[i + 2]
  if (b1 === undefined || b2 === undefined || (b1 & 0xe0) !== 0xe0 || (b2 >> 4) !== 0) return null
  const version = (b1 >> 3) & 3
  const layer = 4 - ((b1 >> 1) & 3)
  const rate = MPEG_RATES[version]?.[(b2 >> 2) & 3]
  if (rate === undefined || layer === 4) return null
  return { samples: layer === 1 ? 384 : layer === 3 && version !== 3 ? 576 : 1152, rate }
}

function mpegFrames (b: Buffer, from: number, to: number, sum: SampleSum): void {
  const end = Math.min(to, b.length - 4 + 1)
  for (let i = from; i < end; i++) {
    if (b[i] !== 0xff) {
      // Sparse syncs: skip natively to the next; dense ones (a file of 0xFF) step without a call.
      i = b.indexOf(0xff, i)
      if (i === -1 || i >= end) break
    }
    const frame = mpegHeaderAt(b, i)
    if (frame !== null) sum.add(frame.samples, frame.rate)
  }
}

/** Millis of every MPEG audio frame header in the bytes. */
export function mp3FramesMillis (b: Buffer): number {
  const sum = new SampleSum()
  mpegFrames(b, 0, b.length, sum)
  return sum.millis()
}

const ADTS_RATES = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

function adtsFrames (b: Buffer, from: number, to: number, sum: SampleSum): void {
  const end = Math.min(to, b.length - 7 + 1)
  for (let i = from; i < end; i++) {
    if (b[i] !== 0xff) {
      // Sparse syncs: skip natively to the next; dense ones (a file of 0xFF) step without a call.
      i = b.indexOf(0xff, i)
      if (i === -1 || i >= end) break
    }
    const b1 = b[i + 1] as number; const b2 = b[i + 2] as number; const b6 = b[i + 6] as number
    // Sync, layer 00; a sampling index the table has.
    if ((b1 & 0xf6) !== 0xf0) continue
    const rate = ADTS_RATES[(b2 >> 2) & 0x0f]
    if (rate !== undefined) sum.add(1024 * ((b6 & 3) + 1), rate)
  }
}

/** Millis of every ADTS (raw AAC) frame header in the bytes: 1,024 samples per raw data block. */
export function adtsFramesMillis (b: Buffer): number {
  const sum = new SampleSum()
  adtsFrames(b, 0, b.length, sum)
  return sum.millis()
}

// Ogg Opus. Every "OggS" capture pattern in the file with version 0 and a segment table that fits
// is taken for a page (a decoder plays no page this walk does not see; a false match only adds),
// and every packet starting in it (a segment run, lacing values of 255 joining segments) adds the
// most its TOC byte lets it play (RFC 6716, 3.1–3.2): the configuration's frame size (2.5 to 60 ms)
// times its frames (code 0: one; 1 and 2: two; 3: the count byte's), at most 120 ms a packet; a
// packet a decoder must reject (no count byte, zero frames, over 120 ms) or an empty one (packet
// loss: a decoder may conceal up to 120 ms) counts 120 ms. The part of a packet continued from the
// page before counts as one more packet (over-counting a packet never lowers the bound). The
// OpusHead and OpusTags packets (their TOC bytes would mean 960 ms, which no decoder plays) add
// nothing. Granule positions only ever raise the bound (the claim), never lower it.

const OPUS_MAX_SAMPLES = 5760 // 120 ms at 48 kHz, the longest a packet can play
const SILK_SAMPLES = [480, 960, 1920, 2880]
const HYBRID_SAMPLES = [480, 960]
const CELT_SAMPLES = [120, 240, 480, 960]

/** Samples at 48 kHz the Opus packet at `start`, `length` bytes long, can decode to. */
export function opusPacketSamples (b: Buffer, start: number, length: number): number {
  if (length === 0) return OPUS_MAX_SAMPLES
  const toc = b[start] as number
  const config = toc >> 3
  const frame = config < 12 ? SILK_SAMPLES[config & 3] as number : config < 16 ? HYBRID_SAMPLES[config & 1] as number : CELT_SAMPLES[config & 3] as number
  const code = toc & 3
  let frames: number
  if (code === 0) frames = 1
  else if (code !== 3) frames = 2
  else if (length < 2 || start + 1 >= b.length) return OPUS_MAX_SAMPLES
  else frames = (b[start + 1] as number) & 0x3f
  const samples = frames * frame
  return frames === 0 || samples > OPUS_MAX_SAMPLES ? OPUS_MAX_SAMPLES : samples
}

/** What the first packet of a stream (its BOS page) says the codec is. */
function oggCodec (b: Buffer, at: number): string {
  if (tag(b, at, 'OpusHead')) return 'opus'
  if (tag(b, at, '\x01vorbis')) return 'Ogg Vorbis'
  if (tag(b, at, '\x7fFLAC')) return 'Ogg FLAC'
  if (tag(b, at, 'Speex   ')) return 'Ogg Speex'
  if (tag(b, at, '\x80theora')) return 'Ogg Theora'
  return 'Ogg with an unknown codec'
}

const NO_GRANULE = 0xffffffffffffffffn

/** The walk of an Ogg file's pages: the Opus bound, the granule claim, and any stream that is not Opus. */
class OggWalk {
  private samples = 0n
  private readonly granules = new Map<number, bigint>()
  opus = 0
  other: string | null = null

  walk (b: Buffer, from: number, to: number): void {
    const end = Math.min(to, b.length - 27)
    for (let i = from; i < end; i++) {
      if (b[i] !== 0x4f) {
        i = b.indexOf(0x4f, i)
        if (i === -1 || i >= end) break
      }
      if (b[i + 1] !== 0x67 || b[i + 2] !== 0x67 || b[i + 3] !== 0x53 || b[i + 4] !== 0) continue
      this.page(b, i)
    }
  }

  private page (b: Buffer, i: number): void {
    const flags = b[i + 5] as number
    const segments = b[i + 26] as number
    const table = i + 27
    if ((flags & 0xf8) !== 0 || table + segments > b.length) return
    const granule = b.readBigUInt64LE(i + 6)
    const serial = b.readUInt32LE(i + 14)
    if (granule !== NO_GRANULE && granule > (this.granules.get(serial) ?? 0n)) this.granules.set(serial, granule)
    let pos = table + segments
    let start = pos
    let length = 0
    let open = false
    let first = true
    for (let k = 0; k < segments; k++) {
      const lace = b[table + k] as number
      if (!open) { start = pos; length = 0; open = true }
      length += lace
      pos += lace
      if (lace < 255) { this.packet(b, start, length, first && (flags & 2) !== 0); first = false; open = false }
    }
    if (open) this.packet(b, start, length, first && (flags & 2) !== 0)
  }

  private packet (b: Buffer, start: number, length: number, bos: boolean): void {
    if (length > 0 && start >= b.length) return
    if (bos) {
      const codec = oggCodec(b, start)
      if (codec === 'opus') this.opus++
      else this.other ??= codec
    }
    if (length >= 8 && (tag(b, start, 'OpusHead') || tag(b, start, 'OpusTags'))) return
    this.samples += BigInt(opusPacketSamples(b, start, length))
  }

  millis (): number {
    return ceilDiv(this.samples * 1000n, 48000n)
  }

  /** The granule positions' claim: each stream's highest, at 48 kHz (the pre-skip ignored: it only lowers it). */
  claimMillis (): number {
    let total = 0n
    for (const g of this.granules.values()) total += g
    return ceilDiv(total * 1000n, 48000n)
  }
}

/** The formats the bound is true for, as the refusal names them. */
export const BOUNDED_FORMATS = 'WAV (PCM or MS/IMA ADPCM), FLAC, MP3, AAC in ADTS, or Ogg Opus'

/** Where an ADTS stream starts (after an ID3 tag), or -1. */
function adtsStart (head: Buffer): number {
  const at = tag(head, 0, 'ID3') && head.length >= 10 ? 10 + ((((head[6] ?? 0) & 0x7f) << 21) | (((head[7] ?? 0) & 0x7f) << 14) | (((head[8] ?? 0) & 0x7f) << 7) | ((head[9] ?? 0) & 0x7f)) : 0
  return head[at] === 0xff && ((head[at + 1] ?? 0) & 0xf6) === 0xf0 ? at : -1
}

/** The name of a format the bytes give no true bound for. */
function unboundedName (head: Buffer): string {
  if (tag(head, 0, '\x1aE\xdf\xa3')) return 'WebM/Matroska'
  if (tag(head, 4, 'ftyp')) return 'MP4/M4A'
  if (tag(head, 0, 'FORM')) return 'AIFF'
  if (tag(head, 0, 'caff')) return 'CAF'
  if (tag(head, 0, '#!AMR')) return 'AMR'
  if (tag(head, 0, 'RIFF')) return 'RIFF without a WAVE data chunk'
  return 'an unrecognised format'
}

type Format = 'wav' | 'flac' | 'mp3' | 'ogg' | 'adts' | 'unbounded'

/** The format the bytes are, for the bound: the claim reader's, FLAC by its marker (a FLAC of unknown length claims nothing), Ogg, ADTS. */
function formatOf (head: Buffer, claimed: DurationSource): Format {
  if (claimed !== 'size-bound') return claimed
  if (streamInfoRate(head) > 0) return 'flac'
  if (tag(head, 0, 'OggS')) return 'ogg'
  if (adtsStart(head) >= 0) return 'adts'
  return 'unbounded'
}

interface Walk { step: (from: number, to: number) => void, millis: () => number }

function sampleWalk (walk: (from: number, to: number, sum: SampleSum) => void): Walk {
  const sum = new SampleSum()
  return { step: (from, to) => walk(from, to, sum), millis: () => sum.millis() }
}

/** The frame walks a format needs, each adding what starts in [from, to). */
function walksFor (whole: Buffer, format: Format, ogg: OggWalk): Walk[] {
  switch (format) {
    case 'wav': case 'unbounded': return []
    case 'flac': {
      const info = streamInfoRate(whole)
      return [sampleWalk((from, to, sum) => flacFrames(whole, from, to, sum, info))]
    }
    case 'mp3': return [sampleWalk((from, to, sum) => mpegFrames(whole, from, to, sum))]
    case 'adts': return [sampleWalk((from, to, sum) => adtsFrames(whole, from, to, sum))]
    case 'ogg': return [{ step: (from, to) => ogg.walk(whole, from, to), millis: () => ogg.millis() }]
  }
}

/** The WAV bound, or why there is none. */
function wavBound (file: AudioFile, whole: Buffer | null): { millis: number } | { refused: string } {
  // The data chunk may start past the 64 KiB head (a large LIST chunk before it): the whole file then.
  const layout = wavLayout(file.head, file.size) ?? (whole === null ? null : wavLayout(whole, file.size))
  const fmt = layout?.fmt
  if (layout == null || fmt == null || fmt.rate === 0) return { refused: 'WAV without a readable fmt and data chunk' }
  const format = fmt.subFormat ?? fmt.format
  const bytes = BigInt(layout.dataBytes)
  const rate = BigInt(fmt.rate)
  if (PCM_FORMATS.has(format) && fmt.blockAlign > 0) return { millis: ceilDiv(bytes * 1000n, rate * BigInt(fmt.blockAlign)) }
  if (ADPCM_FORMATS.has(format)) return { millis: ceilDiv(bytes * 2n * 1000n, BigInt(Math.max(1, fmt.channels)) * rate) }
  return { refused: `WAV with codec 0x${format.toString(16).padStart(4, '0')}` }
}

function boundOf (file: AudioFile, claim: ReturnType<typeof readAudioDuration>, format: Format, whole: Buffer | null, walks: Walk[] | null, ogg: OggWalk): AudioBound {
  const size = sizeBoundMillis(file.size)
  const refuse = (name: string): AudioBound => ({ millis: Math.ceil(size / 1000) * 1000, claimMillis: 0, bytesMillis: size, source: claim.source, refused: name })
  let claimMillis = claim.source === 'size-bound' ? 0 : claim.millis
  let bytes: number
  if (format === 'unbounded') return refuse(unboundedName(file.head))
  if (format === 'wav') {
    const wav = wavBound(file, whole)
    if ('refused' in wav) return refuse(wav.refused)
    bytes = wav.millis
  } else {
    if (walks === null) return refuse('a file whose bytes are not all known')
    if (format === 'ogg') {
      if (ogg.other !== null) return refuse(ogg.other)
      if (ogg.opus === 0) return refuse('Ogg without an Opus stream')
      claimMillis = ogg.claimMillis()
    }
    bytes = Math.max(0, ...walks.map((w) => w.millis()))
  }
  const millis = Math.ceil(Math.max(claimMillis, bytes) / 1000) * 1000
  return { millis, claimMillis, bytesMillis: bytes, source: claim.source }
}

/** Bounds computed by audioDurationBoundAsync, so that the hold and the meter reuse them. */
const computed = new WeakMap<AudioFile, AudioBound>()

/** The longest `file` can play: never below what its header claims, nor below its bytes' bound. Synchronous: one walk of the whole file. */
export function audioDurationBound (file: AudioFile): AudioBound {
  const known = computed.get(file)
  if (known !== undefined) return known
  const claim = readAudioDuration(file.head, file.size)
  const format = formatOf(file.head, claim.source)
  const whole = format === 'unbounded' ? null : wholeFile(file)
  const ogg = new OggWalk()
  const walks = whole === null ? null : walksFor(whole, format, ogg)
  if (whole !== null && walks !== null) for (const w of walks) w.step(0, whole.length)
  return boundOf(file, claim, format, whole, walks, ogg)
}

/** Bytes walked between two turns of the event loop: a few milliseconds of work. */
export const WALK_SLICE_BYTES = 64 * 1024

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * audioDurationBound without holding the event loop: the walk goes WALK_SLICE_BYTES at a time and
 * yields between slices (a 20 MiB upload walked at once held every other request for 0.3–0.8 s).
 * The same bound, remembered for the file so the synchronous calls after it (hold, meter) reuse it.
 */
export async function audioDurationBoundAsync (file: AudioFile): Promise<AudioBound> {
  const known = computed.get(file)
  if (known !== undefined) return known
  const claim = readAudioDuration(file.head, file.size)
  const format = formatOf(file.head, claim.source)
  let whole: Buffer | null = null
  if (format !== 'unbounded') {
    // Joining the pieces copies the file: a yield before and after it too.
    await nextTurn()
    whole = wholeFile(file)
  }
  const ogg = new OggWalk()
  const walks = whole === null ? null : walksFor(whole, format, ogg)
  if (whole !== null && walks !== null) {
    for (let from = 0; from < whole.length; from += WALK_SLICE_BYTES) {
      await nextTurn()
      const to = Math.min(whole.length, from + WALK_SLICE_BYTES)
      for (const w of walks) w.step(from, to)
    }
  }
  const bound = boundOf(file, claim, format, whole, walks, ogg)
  computed.set(file, bound)
  return bound
}

export { LOWEST_BYTES_PER_SECOND }
