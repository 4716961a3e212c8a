// Forged audio headers of issue 25: a ~20 MiB upload to /v1/audio/transcriptions whose FLAC
// STREAMINFO claims one sample, or whose IMA-ADPCM WAV header claims a huge byte rate, was held
// 0.0000001 and charged 0.6553 for the 6,553 s the provider measured. Now the hold of per-second
// audio is the larger of the header's claim and a bound the bytes give (every FLAC frame in the
// file; two ADPCM samples per data byte), so it covers what a decoder plays. On both stores, the
// OpenAI SDK as the client, the mock reporting the true duration.
import { OpenAI, toFile } from 'openai'
import t from 'tap'
import { expectedCost, ledgerState, nanos, priceOf, settledRow } from './helpers/billing.js'
import { capturingFetch } from './helpers/capture-fetch.js'
import { forgedAdpcmWav, forgedFlac } from './helpers/forged-audio.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { checkBounded, refusalCode } from './helpers/wallet-bound.js'

const MODEL = 'openai/whisper-1'
const SIZE = 20 * 1024 * 1024
const price = priceOf(MODEL)
const flac = forgedFlac(SIZE)
const wav = forgedAdpcmWav(SIZE)
/** What the provider reports: the seconds a decoder plays (the 6,553 s for the WAV). */
const FILES = [
  { name: 'forged FLAC (STREAMINFO total_samples = 1)', file: flac.file, filename: 'a.flac', type: 'audio/flac', seconds: Math.ceil(flac.seconds) },
  { name: 'forged WAV (IMA ADPCM, huge byte rate)', file: wav.file, filename: 'a.wav', type: 'audio/wav', seconds: 6553 }
]

t.test('the files', async (t) => {
  t.ok(flac.file.length >= SIZE && flac.file.length < SIZE + 8192, `the FLAC is ~20 MiB (${flac.file.length})`)
  t.ok(flac.seconds > 6500 && flac.seconds < 6600, `its frames play ${flac.seconds.toFixed(1)} s`)
  t.ok(wav.file.length <= SIZE && wav.file.length > SIZE - 512, `the WAV is ~20 MiB (${wav.file.length})`)
  t.ok(wav.claimedSeconds < 0.01, `its header claims ${wav.claimedSeconds} s`)
  t.ok(wav.seconds <= 6553, `a decoder plays ${wav.seconds.toFixed(1)} s, the provider reports 6,553 s at most`)
})

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  for (const f of FILES) {
    t.test(`${f.name}, 0.10 wallet: refused before anything is sent (${backend})`, async (t) => {
      const gw = await startTestGateway({ backend, credit: '0.10' })
      t.teardown(() => gw.close())
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
      const err = await openai.audio.transcriptions.create({ model: MODEL, file: await toFile(f.file, f.filename, { type: f.type }) }, { headers: { 'x-mock-audio-seconds': String(f.seconds) } })
        .then(() => null, (e: unknown) => e)
      t.equal(refusalCode(err), 'BILLING_INSUFFICIENT_CREDITS', 'the hold of the true length does not fit 0.10')
      t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
      await checkBounded(t, [gw], 1)
      t.equal((await ledgerState(gw)).balance, nanos('0.10'), 'the wallet keeps its 0.10')
    })

    t.test(`${f.name}, 5.00 wallet: held at least the true length, charged it (${backend})`, async (t) => {
      const gw = await startTestGateway({ backend, credit: '5.00' })
      t.teardown(() => gw.close())
      const cap = capturingFetch()
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0, fetch: cap.fetch })
      await openai.audio.transcriptions.create({ model: MODEL, file: await toFile(f.file, f.filename, { type: f.type }) }, { headers: { 'x-mock-audio-seconds': String(f.seconds) } })
      t.equal(gw.mock.calls.length, 1)
      const row = await settledRow(gw, cap.last().response?.headers.get('x-request-id') ?? '')
      const charge = expectedCost(price, { audioMillis: f.seconds * 1000 })
      t.ok(row.held !== null && row.held >= charge, `held ${String(row.held)} ≥ the ${f.seconds} s the provider measured (${charge})`)
      t.ok(row.held !== null && row.held <= expectedCost(price, { audioMillis: Math.ceil(SIZE * 2 / 6400 * 1000) + 1000 }), 'and not wildly more: the bound is the stream\'s, not a size guess')
      t.equal(row.cost, charge, 'charged the reported seconds')
      t.equal(row.usage?.audioSeconds, f.seconds)
      t.equal(row.overage, null)
      await checkBounded(t, [gw], 1)
      t.equal((await ledgerState(gw)).balance, nanos('5.00') - charge)
    })
  }
}
