// The Ogg Opus bound (plugins/foundation/pricing/audio-bound.ts): every packet at the most its TOC byte lets
// it play, whatever the granule positions say, held at ≥ what the packets decode to (computed
// from RFC 6716's tables in test/helpers/ogg-opus.ts); the formats with no true bound are refused.
import fc from 'fast-check'
import t from 'tap'
import { audioDurationBound, audioDurationBoundAsync, opusPacketSamples } from '../plugins/foundation/pricing/audio-bound.js'
import { oggOpus, opusPacket, tinyPackets, type OpusPacket } from './helpers/ogg-opus.js'

const fileOf = (b: Buffer, pieces = 1): { size: number, head: Buffer, data: Buffer[] } => {
  const cut = Math.ceil(b.length / pieces)
  return { size: b.length, head: b.subarray(0, 64 * 1024), data: Array.from({ length: pieces }, (_, i) => b.subarray(i * cut, (i + 1) * cut)).filter((p) => p.length > 0) }
}
const secondsUp = (ms: number): number => Math.ceil(ms / 1000) * 1000

t.test('one-byte packets of 60 ms, granules forged to 0: held at their decoded length, not 8 kbit/s', async (t) => {
  const { file, ms } = oggOpus(tinyPackets(20_000), { granule: () => 0n })
  t.equal(ms, 1_200_000, '20,000 packets × 60 ms = 1,200 s')
  t.ok(file.length < 60_000, `in ${file.length} bytes (a size bound at 8 kbit/s: ${Math.ceil(file.length / 1000)} s)`)
  const bound = audioDurationBound(fileOf(file))
  t.equal(bound.refused, undefined, 'Ogg Opus is bounded')
  t.equal(bound.bytesMillis, ms, 'the packets\' sum, exactly')
  t.equal(bound.millis, secondsUp(ms))
})

t.test('a granule position forged high raises the hold; one forged low does not lower it', async (t) => {
  const packets = tinyPackets(1000)
  const high = oggOpus(packets, { granule: () => 48_000n * 10_000n })
  t.equal(audioDurationBound(fileOf(high.file)).millis, 10_000_000, 'the claim of 10,000 s')
  const low = oggOpus(packets, { granule: (s) => s / 100n })
  t.equal(audioDurationBound(fileOf(low.file)).millis, secondsUp(low.ms), `${low.ms} ms, the packets' length`)
  const honest = oggOpus(packets)
  t.equal(audioDurationBound(fileOf(honest.file)).millis, secondsUp(honest.ms), 'an honest file: its length')
})

t.test('code 3 packets (120 ms in two bytes), empty packets and packets running across pages', async (t) => {
  const code3 = Array.from({ length: 3000 }, () => opusPacket(3, 3, 2, 2)) // 2 × 60 ms
  const a = oggOpus(code3, { granule: () => 0n })
  t.equal(a.ms, 360_000)
  t.ok(audioDurationBound(fileOf(a.file)).millis >= a.ms, 'code 3: held ≥ 360 s')
  // An invalid count (0 frames, or 5 × 60 ms > 120 ms) and an empty packet: 120 ms each, the most a decoder may conceal.
  const odd = oggOpus([opusPacket(3, 3, 0, 2), opusPacket(3, 3, 5, 2), { bytes: Buffer.alloc(0), ms: 120 }])
  t.equal(audioDurationBound(fileOf(odd.file)).bytesMillis, 360, 'three invalid or empty packets, 120 ms each')
  // 600-byte packets on pages of 3 lacing values: every packet crosses a page edge.
  const big = Array.from({ length: 200 }, (_, i) => opusPacket(16 + (i % 16), (i % 3) as 0 | 1 | 2, 1, 600))
  const b = oggOpus(big, { lacesPerPage: 3, granule: () => 0n })
  const bound = audioDurationBound(fileOf(b.file))
  t.ok(bound.bytesMillis >= b.ms, `held ${bound.bytesMillis} ≥ ${b.ms} ms`)
  // The continued parts count as packets too (never fewer): at most 120 ms more for each.
  t.ok(bound.bytesMillis <= b.ms + 200 * 120, 'and at most 120 ms per continued part more')
})

const packetArb: fc.Arbitrary<OpusPacket> = fc.tuple(fc.integer({ min: 0, max: 31 }), fc.constantFrom<0 | 1 | 2 | 3>(0, 1, 2, 3), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 700 }))
  .map(([config, code, frames, size]) => {
    const p = opusPacket(config, code, frames, size)
    // Over 120 ms is an invalid packet: counted 120 ms (a decoder plays at most that).
    return p.ms > 120 ? { bytes: p.bytes, ms: 120 } : p
  })

t.test('any packets, any granules, any pages, cut into any pieces: the async bound is the sync one and ≥ what they play', async (t) => {
  await fc.assert(fc.asyncProperty(fc.array(packetArb, { minLength: 1, maxLength: 300 }), fc.bigInt({ min: 0n, max: 1n << 40n }), fc.integer({ min: 1, max: 255 }), fc.integer({ min: 1, max: 7 }),
    async (packets, granule, perPage, pieces) => {
      const { file, ms } = oggOpus(packets, { granule: () => granule, lacesPerPage: perPage })
      const sync = audioDurationBound(fileOf(file))
      const async = await audioDurationBoundAsync(fileOf(file, pieces))
      return sync.refused === undefined && sync.millis === async.millis && sync.bytesMillis >= ms
    }), { numRuns: 150 })
  t.pass('held')
})

t.test('the TOC table: each configuration\'s frame size, codes 0–3', async (t) => {
  const frameMs = [10, 20, 40, 60, 10, 20, 40, 60, 10, 20, 40, 60, 10, 20, 10, 20, 2.5, 5, 10, 20, 2.5, 5, 10, 20, 2.5, 5, 10, 20, 2.5, 5, 10, 20]
  for (let config = 0; config < 32; config++) {
    const b = Buffer.from([config << 3, 0])
    t.equal(opusPacketSamples(b, 0, 1), frameMs[config]! * 48, `config ${config}, code 0`)
    b[0] = config << 3 | 1
    t.equal(opusPacketSamples(b, 0, 2), frameMs[config]! * 96, `config ${config}, code 1`)
  }
})

t.test('formats with no true bound are refused, by name', async (t) => {
  const vorbis = oggOpus(tinyPackets(10), { head: Buffer.concat([Buffer.from('\x01vorbis', 'latin1'), Buffer.alloc(22)]) }).file
  const cases: Array<[string, Buffer, string]> = [
    ['Ogg Vorbis', vorbis, 'Ogg Vorbis'],
    ['Ogg of unknown bytes', Buffer.concat([Buffer.from('OggS'), Buffer.alloc(70_000, 0x5a)]), 'Ogg without an Opus stream'],
    ['WebM', Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.alloc(4000, 1)]), 'WebM/Matroska'],
    ['M4A', Buffer.concat([Buffer.from('\x00\x00\x00\x20ftypM4A ', 'latin1'), Buffer.alloc(4000, 1)]), 'MP4/M4A'],
    ['unknown bytes', Buffer.alloc(5000, 0x42), 'an unrecognised format'],
    ['WAV of GSM 6.10', wavOf(0x31), 'WAV with codec 0x0031']
  ]
  for (const [name, b, refused] of cases) {
    t.equal(audioDurationBound(fileOf(b)).refused, refused, name)
    t.equal((await audioDurationBoundAsync(fileOf(b, 3))).refused, refused, `${name} (async)`)
  }
  t.equal(audioDurationBound(fileOf(wavOf(1))).refused, undefined, 'a PCM WAV is bounded')
})

function wavOf (format: number): Buffer {
  const b = Buffer.alloc(44 + 1000)
  b.write('RIFF', 0, 'latin1'); b.writeUInt32LE(b.length - 8, 4); b.write('WAVEfmt ', 8, 'latin1')
  b.writeUInt32LE(16, 16); b.writeUInt16LE(format, 20); b.writeUInt16LE(1, 22); b.writeUInt32LE(8000, 24); b.writeUInt32LE(16000, 28); b.writeUInt16LE(2, 32); b.writeUInt16LE(16, 34)
  b.write('data', 36, 'latin1'); b.writeUInt32LE(1000, 40)
  return b
}
