// The longest an uploaded audio file can play, for the worst-case hold of per-second
// transcription: the larger of what its header claims (audio-duration.ts) and a bound the bytes
// themselves give, so a forged header (a FLAC STREAMINFO of 1 sample, an IMA-ADPCM WAV with a
// huge byte rate) can lower neither. The bound from the bytes, by format:
//
//   WAV, PCM family    data bytes / (sample rate × block align): the decoder's own arithmetic.
//   WAV, ADPCM (MS, IMA) two samples per data byte per channel at the header's rate (4 bits a
//                      sample; block headers only make it shorter).
//   WAV, other codecs  two samples per data byte at the header's rate (no codec in a WAV is below
//                      4 bits... G.723.1 is near 0.7: half a bit a sample covers it), and at least
//                      size / LOWEST_BYTES_PER_SECOND.
//   FLAC               every frame header in the file (sync code, valid fields, CRC-8) adds its
//                      block size at its sample rate (the lower of the frame's and STREAMINFO's).
//                      Every frame a decoder plays is counted; a false match only adds.
//   MP3                every valid MPEG audio frame header in the file (free format included)
//                      adds its samples at its rate (same reasoning); without the file's bytes,
//                      size at 8 kbit/s, the lowest MPEG bitrate.
//   anything else      size / LOWEST_BYTES_PER_SECOND (8 kbit/s), and every raw FLAC, MPEG or
//                      ADTS AAC frame found, whichever is longest. The 8 kbit/s is an
//                      assumption, not a codec minimum: Ogg/WebM Opus with DTX silence or MP4
//                      audio can be stored below it (README, Limits).
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

/** The WAV bound from its fmt and data chunks in `head`; null when they are not there. */
function wavBytesMillis (head: Buffer, size: number): number | null {
  const layout = wavLayout(head, size)
  const fmt = layout?.fmt
  if (layout == null || fmt == null || fmt.rate === 0) return null
  const format = fmt.subFormat ?? fmt.format
  const bytes = BigInt(layout.dataBytes)
  const rate = BigInt(fmt.rate)
  if (PCM_FORMATS.has(format) && fmt.blockAlign > 0) return ceilDiv(bytes * 1000n, rate * BigInt(fmt.blockAlign))
  if (ADPCM_FORMATS.has(format)) return ceilDiv(bytes * 2n * 1000n, BigInt(Math.max(1, fmt.channels)) * rate)
  return Math.max(ceilDiv(bytes * 2n * 1000n, rate), sizeBoundMillis(size))
}

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

/** The format the bytes are, for the bound: the claim reader's, or FLAC by its marker (a FLAC of unknown length claims nothing). */
function formatOf (head: Buffer, claimed: DurationSource): DurationSource {
  if (claimed !== 'size-bound') return claimed
  return streamInfoRate(head) > 0 ? 'flac' : 'size-bound'
}

/** The frame walks a format needs, each adding the frames that start in [from, to) to its own sum. */
function walksFor (whole: Buffer, source: DurationSource): Array<{ sum: SampleSum, walk: (from: number, to: number, sum: SampleSum) => void }> {
  switch (source) {
    case 'wav': return []
    case 'flac': {
      const info = streamInfoRate(whole)
      return [{ sum: new SampleSum(), walk: (from, to, sum) => flacFrames(whole, from, to, sum, info) }]
    }
    case 'mp3': return [{ sum: new SampleSum(), walk: (from, to, sum) => mpegFrames(whole, from, to, sum) }]
    // A format the claim reader does not know: every frame of the formats a decoder might still
    // find in it (raw FLAC frames, free-format MPEG, ADTS AAC), which can be stored below 8 kbit/s.
    case 'size-bound': {
      const info = streamInfoRate(whole)
      return [
        { sum: new SampleSum(), walk: (from, to, sum) => flacFrames(whole, from, to, sum, info) },
        { sum: new SampleSum(), walk: (from, to, sum) => mpegFrames(whole, from, to, sum) },
        { sum: new SampleSum(), walk: (from, to, sum) => adtsFrames(whole, from, to, sum) }
      ]
    }
  }
}

/** The bound from the bytes, given the walks' results (the longest); `null` walks: only the head is known. */
function bytesMillisOf (file: AudioFile, source: DurationSource, walked: number[] | null): number {
  if (source === 'wav') return wavBytesMillis(file.head, file.size) ?? sizeBoundMillis(file.size)
  if (walked === null) return sizeBoundMillis(file.size)
  const frames = Math.max(0, ...walked)
  // An unknown format keeps the size floor beside its frames.
  return source === 'size-bound' ? Math.max(sizeBoundMillis(file.size), frames) : frames
}

function boundOf (file: AudioFile, claim: ReturnType<typeof readAudioDuration>, source: DurationSource, walked: number[] | null): AudioBound {
  // A header that claims nothing readable leaves the bound to the bytes (which keep the size floor where no frame is counted).
  const claimMillis = claim.source === 'size-bound' ? 0 : claim.millis
  const bytes = bytesMillisOf(file, source, walked)
  const millis = Math.ceil(Math.max(claimMillis, bytes) / 1000) * 1000
  return { millis, claimMillis, bytesMillis: bytes, source }
}

/** Bounds computed by audioDurationBoundAsync, so that the hold and the meter reuse them. */
const computed = new WeakMap<AudioFile, AudioBound>()

/** The longest `file` can play: never below what its header claims, nor below its bytes' bound. Synchronous: one walk of the whole file. */
export function audioDurationBound (file: AudioFile): AudioBound {
  const known = computed.get(file)
  if (known !== undefined) return known
  const claim = readAudioDuration(file.head, file.size)
  const source = formatOf(file.head, claim.source)
  const whole = source === 'wav' ? null : wholeFile(file)
  const walks = whole === null ? null : walksFor(whole, source)
  if (whole !== null && walks !== null) for (const w of walks) w.walk(0, whole.length, w.sum)
  return boundOf(file, claim, source, walks === null ? null : walks.map((w) => w.sum.millis()))
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
  const source = formatOf(file.head, claim.source)
  let whole: Buffer | null = null
  if (source !== 'wav') {
    // Joining the pieces copies the file: a yield before and after it too.
    await nextTurn()
    whole = wholeFile(file)
  }
  const walks = whole === null ? null : walksFor(whole, source)
  if (whole !== null && walks !== null) {
    for (let from = 0; from < whole.length; from += WALK_SLICE_BYTES) {
      await nextTurn()
      const to = Math.min(whole.length, from + WALK_SLICE_BYTES)
      for (const w of walks) w.walk(from, to, w.sum)
    }
  }
  const bound = boundOf(file, claim, source, walks === null ? null : walks.map((w) => w.sum.millis()))
  computed.set(file, bound)
  return bound
}

export { LOWEST_BYTES_PER_SECOND }
