// The promise end to end for the features of issue 25's last gaps: random mixes, sent all at
// once, of image generations (gpt-image-1, dall-e-3; any quality, size and n, unpriced ones
// included; the mock rendering `auto` as any entry of the provider's table), Claude messages
// with `cache_control` (none, 5-minute, 1-hour; the mock writing any part of the prompt to the
// cache at the lifetimes the request allows) and transcriptions of audio with forged headers
// (FLAC claiming one sample, IMA-ADPCM WAV claiming a huge byte rate, MP3, unknown bytes; the
// mock reporting any duration up to what a decoder plays). On both stores, after every run:
//   - the wallet is at or above its bound, nothing is held, the entries sum to the balance;
//   - every 2xx has exactly one charge entry (its hold's `post:` entry, the row's cost), every
//     other row none, and no charge is above its hold;
//   - every charge is reproduced from its receipt (the row's usage: images × the table entry it
//     names, cache writes at their rates, seconds) with this file's own arithmetic over gateway.yaml.
// Seeded: GATEWAY_PROMISE_SEED replays a run.
import Anthropic from '@anthropic-ai/sdk'
import fc from 'fast-check'
import { OpenAI, toFile } from 'openai'
import t from 'tap'
import type { RequestLogRow } from '../plugins/foundation/store/request-log/types.js'
import { fundedAccount, nanos, waitForRows } from './helpers/billing.js'
import { forgedAdpcmWav, forgedFlac } from './helpers/forged-audio.js'
import { oggOpus, tinyPackets } from './helpers/ogg-opus.js'
import { startTestGateway, UNREACHED_LIMIT, type Backend, type TestGateway } from './helpers/gateway.js'
import { allEntries, showValues } from './helpers/ledger.js'
import { modelOf, readRepoConfig } from './helpers/test-config.js'
import { GPT_IMAGE_TOKENS } from './fixtures/mock-upstream/openai-media.js'

const SEED = Number(process.env.GATEWAY_PROMISE_SEED ?? 2512)
const CONFIG = readRepoConfig()
const pricing = (id: string): Record<string, unknown> => modelOf(CONFIG, id).pricing as unknown as Record<string, unknown>

/** The audio files, small enough to send many: what each plays, as a decoder measures it. */
const FLAC = forgedFlac(96 * 1024)
const WAV = forgedAdpcmWav(96 * 1024)
function mp3 (frames: number): Buffer {
  const frame = Buffer.alloc(144, 0x11)
  frame.set([0xff, 0xfb, 0x18, 0xc4]) // MPEG-1 layer III, 32 kbit/s, 32 kHz: 1,152 samples
  return Buffer.concat(Array.from({ length: frames }, () => frame))
}
const MP3 = mp3(600)
/** Ogg Opus of one-byte 60 ms packets, its granule positions forged to 0: 600 s in ~26 KiB. */
const OPUS = oggOpus(tinyPackets(10_000), { granule: () => 0n })
const AUDIO = {
  flac: { file: FLAC.file, name: 'a.flac', type: 'audio/flac', seconds: FLAC.seconds },
  wav: { file: WAV.file, name: 'a.wav', type: 'audio/wav', seconds: WAV.seconds },
  mp3: { file: MP3, name: 'a.mp3', type: 'audio/mpeg', seconds: 600 * 1152 / 32000 },
  ogg: { file: OPUS.file, name: 'a.ogg', type: 'audio/ogg', seconds: OPUS.ms / 1000 }
} as const
type AudioName = keyof typeof AUDIO

type Call =
  | { kind: 'image', model: 'openai/gpt-image-1' | 'openai/dall-e-3', quality: string | null, size: string | null, n: number, rendered: string }
  | { kind: 'cache', ttl: '5m' | '1h' | null, share5m: number, share1h: number, maxTokens: number }
  | { kind: 'audio', file: AudioName, share: number }

const GPT_TIERS = Object.entries(GPT_IMAGE_TOKENS).flatMap(([q, sizes]) => Object.keys(sizes).map((s) => `${q}/${s}`))
const callArb: fc.Arbitrary<Call> = fc.oneof(
  fc.record({
    kind: fc.constant('image' as const),
    model: fc.constantFrom('openai/gpt-image-1' as const, 'openai/dall-e-3' as const),
    // Mostly values one of the two models prices; now and then one neither does.
    quality: fc.oneof({ arbitrary: fc.constantFrom(null, 'auto', 'low', 'medium', 'high', 'standard', 'hd'), weight: 6 }, { arbitrary: fc.constant('ultra'), weight: 1 }),
    size: fc.oneof({ arbitrary: fc.constantFrom(null, 'auto', '1024x1024', '1024x1536', '1536x1024', '1792x1024'), weight: 6 }, { arbitrary: fc.constant('256x256'), weight: 1 }),
    n: fc.integer({ min: 1, max: 4 }),
    rendered: fc.constantFrom(...GPT_TIERS)
  }),
  fc.record({
    kind: fc.constant('cache' as const),
    ttl: fc.constantFrom(null, '5m' as const, '1h' as const),
    share5m: fc.integer({ min: 0, max: 100 }).map((p) => p / 100),
    share1h: fc.integer({ min: 0, max: 100 }).map((p) => p / 100),
    maxTokens: fc.integer({ min: 1, max: 64 })
  }),
  fc.record({ kind: fc.constant('audio' as const), file: fc.constantFrom<AudioName>('flac', 'wav', 'mp3', 'ogg'), share: fc.integer({ min: 0, max: 100 }).map((p) => p / 100) })
)
const runArb = fc.record({
  credit: fc.constantFrom('0.05', '0.3', '1.00', '3.00'),
  calls: fc.array(callArb, { minLength: 1, maxLength: 8, size: 'max' })
})

const SYSTEM = 'Read the following with care and answer briefly. '.repeat(40)
/** The mock's prompt count for the messages above: one token per 4 characters. */
const PROMPT_TOKENS = Math.ceil((SYSTEM.length + 'summarise'.length) / 4)

async function send (gw: TestGateway, key: string, call: Call): Promise<number> {
  const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 })
  try {
    if (call.kind === 'image') {
      const body: Record<string, unknown> = { model: call.model, prompt: 'a lighthouse at dusk', n: call.n }
      if (call.quality !== null) body.quality = call.quality
      if (call.size !== null) body.size = call.size
      await openai.images.generate(body as unknown as OpenAI.ImageGenerateParams, { headers: { 'x-mock-image-rendered': call.rendered } })
    } else if (call.kind === 'cache') {
      const anthropic = new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 })
      // Writes only at the lifetimes the request marks: that is all a provider writes.
      const w1h = call.ttl === '1h' ? Math.floor(PROMPT_TOKENS * call.share1h) : 0
      const w5m = call.ttl === null ? 0 : Math.floor((PROMPT_TOKENS - w1h) * call.share5m)
      const cache = call.ttl === null ? {} : { cache_control: call.ttl === '1h' ? { type: 'ephemeral' as const, ttl: '1h' as const } : { type: 'ephemeral' as const } }
      await anthropic.messages.create({ model: 'anthropic/claude-haiku-3.5', max_tokens: call.maxTokens, system: [{ type: 'text', text: SYSTEM, ...cache }], messages: [{ role: 'user', content: 'summarise' }] }, { headers: { 'x-mock-cache-write': `${w5m},${w1h}` } })
    } else {
      const a = AUDIO[call.file]
      const seconds = Math.floor(a.seconds * call.share)
      await openai.audio.transcriptions.create({ model: 'openai/whisper-1', file: await toFile(a.file, a.name, { type: a.type }) }, { headers: { 'x-mock-audio-seconds': String(seconds) } })
    }
    return 200
  } catch (err) {
    const status: unknown = err !== null && typeof err === 'object' ? Reflect.get(err, 'status') : undefined
    if (typeof status === 'number') return status
    throw err
  }
}

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b

/** The charge a receipt says, by this file's arithmetic over gateway.yaml (nano-units, rounded up once). */
function receiptCost (row: RequestLogRow): bigint {
  const model = row.answeredModel ?? ''
  const p = pricing(model)
  const u = row.usage
  if (u === null) throw new Error('a billed row without usage')
  if (model === 'openai/whisper-1') return ceilDiv(BigInt(Math.ceil(u.audioSeconds * 1000)) * nanos(String(p.unit_price)), 1000n)
  const per = BigInt(Number(p.per ?? 1))
  if (p.image_prices !== undefined) {
    const table = (p.image_prices as { prices: Record<string, Record<string, string>> }).prices
    const entry = u.imageTier === undefined ? undefined : table[u.imageTier.quality]?.[u.imageTier.size]
    const dearest = Object.values(table).flatMap((row) => Object.values(row)).map(nanos).reduce((a, b) => (a > b ? a : b))
    const image = entry === undefined ? dearest : nanos(entry)
    const input = p.input === undefined ? 0n : BigInt(u.inputTokens) * nanos(String(p.input))
    return BigInt(u.images) * image + ceilDiv(input, per)
  }
  const w5 = BigInt(u.cacheWriteTokens ?? 0)
  const w1 = BigInt(u.cacheWrite1hTokens ?? 0)
  const cached = BigInt(u.cachedInputTokens)
  const plain = BigInt(u.inputTokens) - cached - w5 - w1
  const total = plain * nanos(String(p.input)) + cached * nanos(String(p.cached_input)) + w5 * nanos(String(p.cache_write)) + w1 * nanos(String(p.cache_write_1h)) + BigInt(u.outputTokens) * nanos(String(p.output))
  return ceilDiv(total, per)
}

const show = showValues

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`no mix of images, cache writes and forged audio takes a wallet below its bound; every 2xx is charged once, as its receipt says (${backend})`, async (t) => {
    const tiers = { free: { rank: 0, overdraft: '0', requests_per_minute: UNREACHED_LIMIT, concurrent_streams: UNREACHED_LIMIT } }
    const gw = await startTestGateway({ backend, credit: '0', limits: { default_tier: 'free', tiers } })
    t.teardown(() => gw.close())
    const store = gw.services.store
    let n = 0
    const numRuns = 12
    const seen = { requests: 0, ok: 0, insufficient: 0, unsupported: 0, tiers: new Set<string>(), cacheWrites: 0, audio: 0 }
    t.comment(`seed ${SEED} (GATEWAY_PROMISE_SEED replays a run)`)
    await fc.assert(fc.asyncProperty(runArb, async (run) => {
      const { accountId, key } = await fundedAccount(store, run.credit, `features ${++n}`)
      const fail = (msg: string): never => { throw new Error(`${show(run)}: ${msg}`) }
      const statuses = await Promise.all(run.calls.map(async (call) => await send(gw, key, call)))
      seen.requests += statuses.length
      seen.ok += statuses.filter((s) => s === 200).length
      seen.insufficient += statuses.filter((s) => s === 402).length
      seen.unsupported += statuses.filter((s) => s === 400).length
      if (statuses.some((s) => s !== 200 && s !== 402 && s !== 400)) fail(`unexpected statuses ${show(statuses)}`)

      const rows = await waitForRows([gw], run.calls.length, 20_000, accountId)
      const wallet = await store.ledger.wallet(accountId)
      if (wallet.balance < 0n) fail(`balance ${wallet.balance} below the bound 0`)
      if (wallet.held !== 0n || (await store.ledger.openHolds(accountId)).length !== 0) fail('a hold is still open')
      const entries = await allEntries(store, accountId)
      if (entries.reduce((sum, e) => sum + e.amount, 0n) !== wallet.balance) fail('the entries do not sum to the balance')
      const charges = entries.filter((e) => e.kind === 'charge')
      if (rows.filter((r) => r.status === 200).length !== statuses.filter((s) => s === 200).length) fail('rows and clients disagree on the 2xx')
      for (const row of rows) {
        const mine = charges.filter((e) => e.requestId === row.requestId)
        if (row.billingStatus !== 'BILLED') {
          if (mine.length !== 0) fail(`unbilled row ${row.requestId} has ${mine.length} charges`)
          // A 2xx left unbilled is one whose receipt prices at 0 (a provider reporting 0 s of audio).
          if (row.status === 200 && receiptCost(row) !== 0n) fail(`2xx row ${show(row)} unbilled, its receipt says ${receiptCost(row)}`)
          continue
        }
        if (row.status !== 200) fail(`row ${row.requestId} billed with status ${row.status}`)
        const [charge, ...more] = mine
        if (charge === undefined || more.length > 0) return fail(`2xx row ${row.requestId} has ${mine.length} charges`)
        if (charge.postingId !== `post:${row.holdId ?? ''}` || charge.amount !== -(row.cost ?? 0n)) fail(`row ${show(row)} and its charge ${show(charge)} disagree`)
        if (row.overage !== null || row.unrecovered !== null || (row.cost ?? 0n) > (row.held ?? 0n)) fail(`row ${show(row)} charged above its hold`)
        const expected = receiptCost(row)
        if (row.cost !== expected) fail(`row ${show(row)}: cost ${String(row.cost)}, its receipt says ${expected}`)
        if (row.usage?.imageTier !== undefined) seen.tiers.add(`${row.answeredModel ?? ''} ${row.usage.imageTier.quality}/${row.usage.imageTier.size}`)
        if ((row.usage?.cacheWriteTokens ?? 0) + (row.usage?.cacheWrite1hTokens ?? 0) > 0) seen.cacheWrites++
        if ((row.usage?.audioSeconds ?? 0) > 0) seen.audio++
      }
    }), { numRuns, seed: SEED })
    t.comment(show({ ...seen, tiers: [...seen.tiers].sort() }))
    t.ok(seen.ok > 0 && seen.insufficient > 0 && seen.unsupported > 0, 'the runs reached charges, refusals for funds and unpriced parameters')
    t.ok(seen.tiers.size >= 4 && seen.cacheWrites > 0 && seen.audio > 0, 'several image entries, cache writes and audio were charged')
  })
}
