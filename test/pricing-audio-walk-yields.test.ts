// F4 of issue 25: walking a 20 MiB upload's frames for its audio bound took 0.3–0.8 s in one go,
// and every other request on the instance waited. audioDurationBoundAsync walks a slice at a time
// and yields between slices. Shown by event order, not time: a timer and an I/O round trip set up
// before the walk must run before the walk ends (the synchronous walk, the control, lets neither
// run), and the async bound equals the synchronous one for every format the walk reads.
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { oggOpus, tinyPackets } from './helpers/ogg-opus.js'
import fc from 'fast-check'
import { audioDurationBound, audioDurationBoundAsync, WALK_SLICE_BYTES } from '../plugins/foundation/pricing/audio-bound.js'
import { forgedAdpcmWav, forgedFlac } from './helpers/forged-audio.js'

const HEAD = 64 * 1024
const fileOf = (b: Buffer, pieces = 1): { size: number, head: Buffer, data: Buffer[] } => ({
  size: b.length,
  head: b.subarray(0, HEAD),
  data: Array.from({ length: pieces }, (_, i) => b.subarray(Math.floor(i * b.length / pieces), Math.floor((i + 1) * b.length / pieces)))
})
const SIZE = 20 * 1024 * 1024
const flac = forgedFlac(SIZE).file

/** MPEG-1 layer III frames at 32 kbit/s, 32 kHz (144 bytes each), `n` of them. */
function mp3Frames (n: number): Buffer {
  const frame = Buffer.alloc(144, 0x11)
  frame.set([0xff, 0xfb, 0x18, 0xc4])
  return Buffer.concat(Array.from({ length: n }, () => frame))
}

t.test('the async walk gives the synchronous bound, for every format it reads', async (t) => {
  const files: Array<[string, Buffer]> = [
    ['forged FLAC', flac],
    ['forged IMA-ADPCM WAV', forgedAdpcmWav(2 * 1024 * 1024).file],
    ['MP3', mp3Frames(20_000)],
    ['Ogg Opus of one-byte packets, granules forged to 0, pages across slice edges', oggOpus(tinyPackets(300_000), { granule: () => 0n }).file],
    ['unknown bytes with stray frame syncs', Buffer.concat([Buffer.from('OggS'), Buffer.alloc(3 * WALK_SLICE_BYTES + 17, 0xff)])]
  ]
  for (const [name, b] of files) {
    const sync = audioDurationBound(fileOf(b))
    const async = await audioDurationBoundAsync(fileOf(b, 5))
    t.same(async, sync, `${name}: ${sync.millis} ms either way`)
  }
  // Frames straddling slice edges are counted once: any cut of MP3 frames into any pieces.
  await fc.assert(fc.asyncProperty(fc.integer({ min: 1, max: 6000 }), fc.integer({ min: 1, max: 9 }), async (n, p) => {
    const b = mp3Frames(n)
    t.equal((await audioDurationBoundAsync(fileOf(b, p))).millis, audioDurationBound(fileOf(b)).millis)
  }), { numRuns: 25 })
})

t.test('a timer and an HTTP round trip set up before a 20 MiB walk run before it ends', async (t) => {
  const server = createServer((_req, res) => res.end('ok'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const port = (server.address() as AddressInfo).port
  const events: string[] = []
  setTimeout(() => events.push('timer'), 0)
  const served = new Promise<void>((resolve) => {
    request({ port, host: '127.0.0.1', path: '/' }, (res) => { res.resume(); res.on('end', () => { events.push('request served'); resolve() }) }).end()
  })
  const bound = await audioDurationBoundAsync(fileOf(flac, 3))
  events.push('walk done')
  await served
  t.ok(bound.millis > 6_000_000, `the whole file was walked (${bound.millis} ms of audio)`)
  t.ok(events.indexOf('timer') < events.indexOf('walk done'), `the timer ran during the walk: ${events.join(', ')}`)
  t.ok(events.indexOf('request served') < events.indexOf('walk done'), 'so did a whole HTTP request and answer')
})

t.test('control: the synchronous walk lets neither run (the order above is the yield\'s doing)', async (t) => {
  const events: string[] = []
  setTimeout(() => events.push('timer'), 0)
  // Microtask first, like an async caller that never yields.
  await Promise.resolve()
  audioDurationBound(fileOf(flac, 3))
  events.push('walk done')
  await new Promise((resolve) => setTimeout(resolve, 1))
  t.same(events, ['walk done', 'timer'])
})
