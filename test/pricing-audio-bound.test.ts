// The audio bound (plugins/foundation/pricing/audio-bound.ts): never below the header's claim, never below
// what the bytes can play, whatever the header says. Forged cases of issue 25, and properties
// over any header claim and size.
import t from 'tap'
import fc from 'fast-check'
import { audioDurationBound, adtsFramesMillis, flacFramesMillis, mp3FramesMillis } from '../plugins/foundation/pricing/audio-bound.js'
import { readAudioDuration } from '../plugins/foundation/pricing/audio-duration.js'
import { forgedAdpcmWav, forgedFlac } from './helpers/forged-audio.js'

const HEAD = 64 * 1024
const whole = (file: Buffer): { size: number, head: Buffer, data: Buffer[] } => ({ size: file.length, head: file.subarray(0, HEAD), data: [file] })
/** Split into pieces as a multipart parser may give them. */
const pieces = (file: Buffer, n: number): Buffer[] => Array.from({ length: n }, (_, i) => file.subarray(Math.floor(i * file.length / n), Math.floor((i + 1) * file.length / n)))
const wholeSecondsMillis = (seconds: number): number => Math.ceil(seconds) * 1000

t.test('the forged FLAC of the issue: STREAMINFO says 1 sample, the frames play 6,534 s', async (t) => {
  const flac = forgedFlac(20 * 1024 * 1024)
  const claim = readAudioDuration(flac.file.subarray(0, HEAD), flac.file.length)
  t.same(claim, { millis: 1, source: 'flac' }, 'the header alone claims under a millisecond')
  const bound = audioDurationBound(whole(flac.file))
  t.equal(bound.bytesMillis, Math.ceil(flac.samples * 1000 / flac.rate), 'every frame counted at its rate')
  t.equal(bound.millis, wholeSecondsMillis(flac.seconds), 'held as the whole seconds it plays')
  t.equal(audioDurationBound({ ...whole(flac.file), data: pieces(flac.file, 7) }).millis, bound.millis, 'the same from pieces')
})

t.test('the forged WAV of the issue: IMA ADPCM with a byte rate of 2^31 − 1', async (t) => {
  const wav = forgedAdpcmWav(20 * 1024 * 1024)
  const claim = readAudioDuration(wav.file.subarray(0, HEAD), wav.file.length)
  t.ok(claim.millis <= 10, `the header claims ${claim.millis} ms`)
  const bound = audioDurationBound(whole(wav.file))
  t.ok(bound.millis >= wholeSecondsMillis(wav.seconds), 'at least what a decoder plays')
  t.ok(bound.millis >= 6_553_000, 'at least the 6,553 s of the issue')
  t.ok(bound.millis <= 6_554_000, 'and two samples a byte at the header\'s rate, not a size guess')
})

t.test('honest files keep their length', async (t) => {
  const flac = forgedFlac(200_000, 8000, 4096, 0)
  t.equal(audioDurationBound(whole(flac.file)).millis, wholeSecondsMillis(flac.seconds), 'a FLAC of unknown length (total 0): its frames')
  const honest = forgedFlac(200_000, 8000, 4096, 0)
  honest.file.writeUInt32BE(honest.samples, 4 + 18)
  t.equal(audioDurationBound(whole(honest.file)).millis, wholeSecondsMillis(honest.seconds), 'a FLAC whose STREAMINFO tells the truth')
})

t.test('FLAC frames with a bad header CRC are not frames', async (t) => {
  const flac = forgedFlac(50_000)
  const broken = Buffer.from(flac.file)
  // Flip the sample-rate code of every frame header (0 → 1, still a valid code): its CRC-8 no longer matches.
  for (let i = 42; i < broken.length - 12; i++) if (broken[i] === 0xff && broken[i + 1] === 0xf8 && broken[i + 2] === 0x70) broken[i + 2] = 0x71
  t.equal(flacFramesMillis(broken), 0, 'no frame survives a corrupted header')
  t.ok(flacFramesMillis(flac.file) > 0)
})

// --- properties ------------------------------------------------------------------------------

/** An MPEG-1 layer III frame header: bitrate index 1..14 (or 0, free format), 44.1/48/32 kHz. */
const mpegHeader = fc.record({ bitrate: fc.integer({ min: 0, max: 14 }), rate: fc.integer({ min: 0, max: 2 }) })
  .map(({ bitrate, rate }) => Buffer.from([0xff, 0xfb, (bitrate << 4) | (rate << 2), 0xc0]))
const RATES = [44100, 48000, 32000]

t.test('property: an MP3 made of any frames, with any bytes between them, is held at least what its frames play', async () => {
  fc.assert(fc.property(
    fc.array(fc.tuple(mpegHeader, fc.uint8Array({ maxLength: 300 })), { minLength: 1, maxLength: 60 }),
    (frames) => {
      const file = Buffer.concat(frames.flatMap(([header, gap]) => [header, Buffer.from(gap)]))
      const plays = frames.reduce((sum, [header]) => sum + 1152 / (RATES[((header[2] ?? 0) >> 2) & 3] ?? 1), 0)
      const bound = audioDurationBound(whole(file))
      return bound.millis >= Math.ceil(plays * 1000) - 1 && bound.millis >= readAudioDuration(file.subarray(0, HEAD), file.length).millis &&
        mp3FramesMillis(file) >= Math.floor(plays * 1000) - frames.length
    }), { numRuns: 300 })
})

t.test('property: for any header claim and size, the bound ≥ the claim and ≥ the size-based bound of the codec', async () => {
  // IMA/MS ADPCM WAV: any byte rate, channel count, sample rate and data size. The codec's size
  // bound is two samples per data byte per channel at the header's rate.
  fc.assert(fc.property(
    fc.record({
      format: fc.constantFrom(0x02, 0x11),
      channels: fc.integer({ min: 1, max: 8 }),
      rate: fc.integer({ min: 1, max: 192_000 }),
      byteRate: fc.integer({ min: 1, max: 0xffffffff }),
      dataBytes: fc.integer({ min: 0, max: 2_000_000 }),
      declared: fc.option(fc.integer({ min: 0, max: 0xffffffff }), { nil: undefined })
    }),
    ({ format, channels, rate, byteRate, dataBytes, declared }) => {
      const header = Buffer.alloc(44)
      header.write('RIFF', 0, 'latin1'); header.writeUInt32LE(36 + dataBytes, 4); header.write('WAVEfmt ', 8, 'latin1')
      header.writeUInt32LE(16, 16); header.writeUInt16LE(format, 20); header.writeUInt16LE(channels, 22); header.writeUInt32LE(rate, 24)
      header.writeUInt32LE(byteRate, 28); header.writeUInt16LE(256, 32); header.writeUInt16LE(4, 34)
      header.write('data', 36, 'latin1'); header.writeUInt32LE(declared ?? dataBytes, 40)
      const size = 44 + dataBytes
      const bound = audioDurationBound({ size, head: header })
      const codec = Math.ceil(Number(BigInt(Math.min(declared === undefined || declared === 0 || declared === 0xffffffff ? dataBytes : declared, dataBytes)) * 2000n) / (channels * rate))
      return bound.millis >= bound.claimMillis && bound.millis >= codec - 1
    }), { numRuns: 500 })

  // Any first bytes (also behind a RIFF, fLaC or ID3 marker), any size: never below a header's
  // claim, and a format the bound cannot read is held at the size floor (8 kbit/s) at least.
  const prefix = fc.constantFrom('', 'RIFF\x00\x00\x00\x00WAVE', 'fLaC', 'ID3', 'OggS')
  fc.assert(fc.property(prefix, fc.uint8Array({ maxLength: 2048 }), fc.integer({ min: 0, max: 30_000_000 }), (p, bytes, extra) => {
    const head = Buffer.concat([Buffer.from(p, 'latin1'), Buffer.from(bytes)])
    const size = head.length + extra
    const bound = audioDurationBound({ size, head })
    const claim = readAudioDuration(head, size)
    return (claim.source === 'size-bound' || bound.millis >= claim.millis) && (bound.source !== 'size-bound' || bound.millis >= size)
  }), { numRuns: 1000 })

  // FLAC: any STREAMINFO claim, any number of real frames: the bound covers the frames.
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 36 - 1 }), fc.integer({ min: 1, max: 40 }), fc.constantFrom(8000, 16000, 44100), (claimed, frames, rate) => {
    const flac = forgedFlac(frames * 4108, rate, 4096, claimed)
    const bound = audioDurationBound(whole(flac.file))
    return bound.millis >= Math.ceil(flac.seconds * 1000) && bound.millis >= bound.claimMillis
  }), { numRuns: 200 })
})

t.test('raw AAC (ADTS) frames in an unknown container are counted', async (t) => {
  // 100 ADTS frames of 1,024 samples at 8 kHz, 9 bytes each: 12.8 s in 900 bytes (well below 8 kbit/s).
  const frame = Buffer.from([0xff, 0xf1, (1 << 6) | (11 << 2), 0x40, 0x01, 0x20, 0xfc, 0x00, 0x00])
  const file = Buffer.concat(Array.from({ length: 100 }, () => frame))
  t.equal(adtsFramesMillis(file), 12_800)
  t.ok(audioDurationBound(whole(file)).millis >= 12_800, `held ${audioDurationBound(whole(file)).millis} ms, not the size floor of 900 ms`)
})
