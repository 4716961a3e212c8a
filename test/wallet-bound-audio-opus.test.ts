// Ogg Opus through /v1/audio/transcriptions (issue 25, item 2): one-byte packets of 60 ms with
// granule positions forged to 0 play 1,500 s in ~66 KiB, which a size bound at 8 kbit/s held as
// 66 s. The hold now sums every packet's TOC duration. Formats with no true bound (WebM, M4A,
// Ogg Vorbis) are refused 415 before anything is held or sent. On both stores, the OpenAI SDK as
// the client, the mock reporting the decoded duration.
import { OpenAI, toFile } from 'openai'
import t from 'tap'
import { expectedCost, ledgerState, nanos, priceOf, settledRow } from './helpers/billing.js'
import { capturingFetch } from './helpers/capture-fetch.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { oggOpus, tinyPackets } from './helpers/ogg-opus.js'
import { checkBounded, refusalCode } from './helpers/wallet-bound.js'

const MODEL = 'openai/whisper-1'
const price = priceOf(MODEL)
const opus = oggOpus(tinyPackets(25_000), { granule: () => 0n })
const seconds = opus.ms / 1000
const vorbis = oggOpus(tinyPackets(100), { head: Buffer.concat([Buffer.from('\x01vorbis', 'latin1'), Buffer.alloc(22)]) }).file
const REFUSED = [
  { name: 'WebM', file: Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.alloc(4000, 1)]), filename: 'a.webm', type: 'audio/webm', format: 'WebM/Matroska' },
  { name: 'M4A', file: Buffer.concat([Buffer.from('\x00\x00\x00\x20ftypM4A ', 'latin1'), Buffer.alloc(4000, 1)]), filename: 'a.m4a', type: 'audio/mp4', format: 'MP4/M4A' },
  { name: 'Ogg Vorbis', file: vorbis, filename: 'a.ogg', type: 'audio/ogg', format: 'Ogg Vorbis' }
]

t.test('the file', async (t) => {
  t.equal(seconds, 1500, '25,000 packets of 60 ms')
  t.ok(opus.file.length < 70_000, `in ${opus.file.length} bytes: ${Math.ceil(opus.file.length / 1000)} s at 8 kbit/s`)
  t.ok(expectedCost(price, { audioMillis: opus.file.length }) < nanos('0.10'), 'the old size bound fits a 0.10 wallet')
  t.ok(expectedCost(price, { audioMillis: opus.ms }) > nanos('0.10'), 'the decoded length does not')
})

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`tiny-packet Opus, 0.10 wallet: refused before anything is sent (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '0.10' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const err = await openai.audio.transcriptions.create({ model: MODEL, file: await toFile(opus.file, 'a.ogg', { type: 'audio/ogg' }) }, { headers: { 'x-mock-audio-seconds': String(seconds) } })
      .then(() => null, (e: unknown) => e)
    t.equal(refusalCode(err), 'BILLING_INSUFFICIENT_CREDITS', 'the hold of the decoded length does not fit 0.10')
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
    t.equal((await ledgerState(gw)).balance, nanos('0.10'), 'the wallet keeps its 0.10')
  })

  t.test(`tiny-packet Opus, 5.00 wallet: held at least the decoded length, charged it (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '5.00' })
    t.teardown(() => gw.close())
    const cap = capturingFetch()
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
    await openai.audio.transcriptions.create({ model: MODEL, file: await toFile(opus.file, 'a.ogg', { type: 'audio/ogg' }) }, { headers: { 'x-mock-audio-seconds': String(seconds) } })
    t.equal(gw.mock.calls.length, 1)
    const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
    const charge = expectedCost(price, { audioMillis: opus.ms })
    t.ok(row.held !== null && row.held >= charge, `held ${String(row.held)} ≥ the ${seconds} s decoded (${charge})`)
    t.ok(row.held !== null && row.held <= expectedCost(price, { audioMillis: opus.ms + 1000 }), 'and no more than a second over')
    t.equal(row.cost, charge, 'charged the reported seconds')
    await checkBounded(t, [gw], 1)
    t.equal((await ledgerState(gw)).balance, nanos('5.00') - charge)
  })

  for (const f of REFUSED) {
    t.test(`${f.name}: 415 REQUEST_MEDIA_TYPE_UNSUPPORTED naming the format, nothing held or sent (${backend})`, async (t) => {
      const gw = await startTestGateway({ backend, credit: '5.00' })
      t.teardown(() => gw.close())
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
      const err = await openai.audio.transcriptions.create({ model: MODEL, file: await toFile(f.file, f.filename, { type: f.type }) }, { headers: { 'x-mock-audio-seconds': '1' } })
        .then(() => null, (e: unknown) => e)
      t.equal((err as { status?: number } | null)?.status, 415)
      t.equal(refusalCode(err), 'REQUEST_MEDIA_TYPE_UNSUPPORTED')
      const message = (err as { error?: { message?: string } } | null)?.error?.message ?? ''
      t.match(message, f.format, 'the message names the format')
      t.match(message, /Ogg Opus/, 'and the formats accepted')
      t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
      t.equal((await ledgerState(gw)).balance, nanos('5.00'), 'the wallet is unchanged')
    })
  }
}
