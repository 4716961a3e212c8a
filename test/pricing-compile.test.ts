import t from 'tap'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import type { PriceConfig } from '../plugins/foundation/config/types.js'
import { compilePrice } from '../plugins/foundation/pricing/compile.js'
import { repoPath } from './helpers/paths.js'

t.test('compiles token prices to exact rates per `per` tokens', async (t) => {
  t.same(compilePrice({ unit: 'token', input: '2.50', cached_input: '1.25', output: '10.00', per: 1000000 }), {
    unit: 'token',
    input: { numerator: 2_500_000_000n, per: 1_000_000n },
    output: { numerator: 10_000_000_000n, per: 1_000_000n },
    cachedInput: { numerator: 1_250_000_000n, per: 1_000_000n }
  })
})

t.test('per-unit prices default per to 1', async (t) => {
  t.same(compilePrice({ unit: 'image', unit_price: '0.04' }), { unit: 'image', unitPrice: { numerator: 40_000_000n, per: 1n } })
  t.same(compilePrice({ unit: 'character', unit_price: '15.00', per: 1000000 }), { unit: 'character', unitPrice: { numerator: 15_000_000_000n, per: 1_000_000n } })
  t.same(compilePrice({ unit: 'job', unit_price: '0' }), { unit: 'job', unitPrice: { numerator: 0n, per: 1n } })
})

t.test('an image list may also price tokens (sharing per)', async (t) => {
  t.same(compilePrice({ unit: 'image', unit_price: '40000', input: '5.00', per: 1000000 }), {
    unit: 'image',
    input: { numerator: 5_000_000_000n, per: 1_000_000n },
    unitPrice: { numerator: 40_000_000_000_000n, per: 1_000_000n }
  })
})

t.test('every price list of the default gateway.yaml compiles', async (t) => {
  const doc = parse(readFileSync(repoPath('gateway.yaml'), 'utf8')) as { models: Array<{ id: string; pricing: PriceConfig }> }
  t.ok(doc.models.length > 10)
  for (const [i, m] of doc.models.entries()) t.doesNotThrow(() => compilePrice(m.pricing, `models[${i}].pricing`), m.id)
})

t.test('url_media_item compiles to exact nano-units per single item, not per `per`', async (t) => {
  t.same(compilePrice({ unit: 'token', input: '2.50', output: '10.00', per: 1000000, url_media_item: '0.0037' }), {
    unit: 'token',
    input: { numerator: 2_500_000_000n, per: 1_000_000n },
    output: { numerator: 10_000_000_000n, per: 1_000_000n },
    urlMediaItem: 3_700_000n
  })
  t.equal(compilePrice({ unit: 'image', unit_price: '0.04', input: '5.00', per: 1000000, url_media_item: '0.000000001' }).urlMediaItem, 1n)
  t.notOk('urlMediaItem' in compilePrice({ unit: 'token', input: '1', output: '1', per: 1 }), 'absent unless declared')
})

t.test('validation errors name the place and the field', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{ unit: 'token', input: '1', output: '1' }, /^m\.pricing\.per: is required with token prices/],
    [{ unit: 'token', output: '1', per: 1000 }, /^m\.pricing\.input: is required for unit token/],
    [{ unit: 'token', input: '1', per: 1000 }, /^m\.pricing\.output: is required for unit token/],
    [{ unit: 'token', input: '1', output: '1', unit_price: '1', per: 1000 }, /unit_price: is not used by unit token/],
    [{ unit: 'image' }, /unit_price: is required for unit image/],
    [{ unit: 'call', unit_price: '0.05', input: '1', per: 1 }, /input: token prices are only billed for units token and image, not call/],
    [{ unit: 'audio_second', unit_price: '0.05', output: '1', per: 1 }, /output: token prices are only billed/],
    [{ unit: 'token', input: '1', output: '1', cached_input: '2', per: 1000 }, /cached_input: must not exceed input/],
    [{ unit: 'image', unit_price: '1', cached_input: '0.5', per: 1000 }, /cached_input: needs an input price/],
    [{ unit: 'job', unit_price: '1', per: 0 }, /per: must be a positive integer/],
    [{ unit: 'job', unit_price: '1', per: 1.5 }, /per: must be a positive integer/],
    [{ unit: 'job', unit_price: '1', per: '1000' }, /per: must be a positive integer/],
    [{ unit: 'job', unit_price: '1e3' }, /unit_price: invalid money amount "1e3"/],
    [{ unit: 'job', unit_price: '0.0000000001' }, /unit_price: invalid money amount .*more than 9 decimal places/],
    [{ unit: 'job', unit_price: 1 }, /unit_price: must be a decimal string/],
    [{ unit: 'token', input: '-1', output: '1', per: 1 }, /input: invalid money amount/],
    [{ unit: 'second', unit_price: '1' }, /unit: must be one of token, image, audio_second, character, call, job/],
    [{ unit: 'job', unit_price: '1', url_media_item: '0.01' }, /url_media_item: holds for input tokens of media sent by URL, so it needs an input price/],
    [{ unit: 'image', unit_price: '0.04', url_media_item: '0.01' }, /url_media_item: .*needs an input price/],
    [{ unit: 'token', input: '1', output: '1', per: 1, url_media_item: '1e-3' }, /url_media_item: invalid money amount/],
    [{ unit: 'token', input: '1', output: '1', per: 1, url_media_item: 0.01 }, /url_media_item: must be a decimal string/],
    [null, /^m\.pricing: expected an object/]
  ]
  for (const [p, re] of cases) {
    t.throws(() => compilePrice(p as PriceConfig, 'm.pricing'), re, JSON.stringify(p))
  }
  t.throws(() => compilePrice({ unit: 'job' } as PriceConfig), /^pricing\.unit_price/)
})
