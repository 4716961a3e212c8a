// validateKeyInput / validateKeyPatch: the key settings matrix (pure, no backend).
import t from 'tap'
import { validateKeyInput, validateKeyPatch } from '../plugins/foundation/store/index.js'
import type { KeyInputContext } from '../plugins/foundation/store/index.js'

const ctx: KeyInputContext = {
  tiers: { free: { rank: 0 }, standard: { rank: 1 }, enterprise: { rank: 2 } },
  accountTier: 'standard',
  knownModels: new Set(['openai/gpt-4o', 'anthropic/claude', 'genai/veo']),
  now: new Date('2030-01-01T00:00:00Z'),
}
const CONFIG = 'AUTH_API_KEY_CONFIGURATION_INVALID'

t.test('a full valid input is normalised', async (t) => {
  const r = validateKeyInput(
    {
      name: '  CI key  ',
      expires_at: '2030-06-01T00:00:00+02:00',
      allowed_models: ['openai/gpt-4o', 'genai/veo'],
      active: false,
      timezone: 'America/New_York',
      quota: '25.00',
      daily_spend_cap: '0.000001',
      monthly_spend_cap: '100',
      daily_image_cap: 0,
      tags: ['team:ml', 'env.prod', 'a_b-c'],
      rate_limit_policy: 'standard',
    },
    ctx
  )
  t.same(r, {
    ok: true,
    value: {
      name: 'CI key',
      expiresAt: new Date('2030-05-31T22:00:00Z'),
      allowedModels: ['openai/gpt-4o', 'genai/veo'],
      active: false,
      timezone: 'America/New_York',
      quota: 25_000_000_000n,
      dailySpendCap: 1_000n,
      monthlySpendCap: 100_000_000_000n,
      dailyImageCap: 0,
      tags: ['team:ml', 'env.prod', 'a_b-c'],
      rateLimitPolicy: 'standard',
    },
  })
})

t.test('only a name is required; nulls mean "not set"', async (t) => {
  t.same(validateKeyInput({ name: 'k' }, ctx), { ok: true, value: { name: 'k' } })
  t.same(validateKeyInput({ name: 'k', quota: null, expires_at: null, rate_limit_policy: null }, ctx), {
    ok: true,
    value: { name: 'k', quota: null, expiresAt: null, rateLimitPolicy: null },
  })
  t.same(validateKeyInput({ name: 'k', expires_at: '2030-01-02' }, ctx), {
    ok: true,
    value: { name: 'k', expiresAt: new Date('2030-01-02T00:00:00Z') },
  })
  t.same(validateKeyInput({ name: 'x'.repeat(100) }, ctx).ok, true, '100 chars')
  t.same(validateKeyInput({ name: 'k', tags: Array.from({ length: 20 }, (_, i) => `t${i}`) }, ctx).ok, true, '20 tags')
  t.same(validateKeyInput({ name: 'k', tags: ['x'.repeat(64)] }, ctx).ok, true, '64-char tag')
  t.same(validateKeyInput({ name: 'k', rate_limit_policy: 'free' }, ctx).ok, true, 'lower tier')
})

const invalid: Array<[string, unknown, string]> = [
  ['body not an object', [], 'body'],
  ['body null', null, 'body'],
  ['name missing', {}, 'name'],
  ['name blank', { name: '   ' }, 'name'],
  ['name too long', { name: 'x'.repeat(101) }, 'name'],
  ['name not a string', { name: 5 }, 'name'],
  ['name control chars', { name: 'a\nb' }, 'name'],
  ['unknown field', { name: 'k', allowed_model: ['openai/gpt-4o'] }, 'allowed_model'],
  ['expiry not ISO', { name: 'k', expires_at: 'next tuesday' }, 'expires_at'],
  ['expiry no zone', { name: 'k', expires_at: '2031-01-01T00:00:00' }, 'expires_at'],
  ['expiry impossible day', { name: 'k', expires_at: '2031-02-30T00:00:00Z' }, 'expires_at'],
  ['expiry in the past', { name: 'k', expires_at: '2029-12-31T23:59:59Z' }, 'expires_at'],
  ['expiry now', { name: 'k', expires_at: '2030-01-01T00:00:00Z' }, 'expires_at'],
  ['expiry a number', { name: 'k', expires_at: 1924992000000 }, 'expires_at'],
  ['models not an array', { name: 'k', allowed_models: 'openai/gpt-4o' }, 'allowed_models'],
  ['models empty', { name: 'k', allowed_models: [] }, 'allowed_models'],
  ['model unknown', { name: 'k', allowed_models: ['openai/gpt-9'] }, 'allowed_models'],
  ['model duplicate', { name: 'k', allowed_models: ['genai/veo', 'genai/veo'] }, 'allowed_models'],
  ['model not a string', { name: 'k', allowed_models: [1] }, 'allowed_models'],
  ['active not boolean', { name: 'k', active: 'yes' }, 'active'],
  ['active null', { name: 'k', active: null }, 'active'],
  ['timezone unknown', { name: 'k', timezone: 'Mars/Olympus' }, 'timezone'],
  ['timezone offset', { name: 'k', timezone: '+05:00' }, 'timezone'],
  ['timezone null', { name: 'k', timezone: null }, 'timezone'],
  ['quota a number', { name: 'k', quota: 25 }, 'quota'],
  ['quota negative', { name: 'k', quota: '-1' }, 'quota'],
  ['quota exponent', { name: 'k', quota: '1e3' }, 'quota'],
  ['quota too precise', { name: 'k', quota: '0.0000000001' }, 'quota'],
  ['quota empty', { name: 'k', quota: '' }, 'quota'],
  ['quota over int64', { name: 'k', quota: '9223372036855' }, 'quota'],
  ['daily cap junk', { name: 'k', daily_spend_cap: '1,00' }, 'daily_spend_cap'],
  ['monthly cap junk', { name: 'k', monthly_spend_cap: ' 1' }, 'monthly_spend_cap'],
  ['image cap negative', { name: 'k', daily_image_cap: -1 }, 'daily_image_cap'],
  ['image cap fraction', { name: 'k', daily_image_cap: 1.5 }, 'daily_image_cap'],
  ['image cap string', { name: 'k', daily_image_cap: '5' }, 'daily_image_cap'],
  ['tags not an array', { name: 'k', tags: 'a' }, 'tags'],
  ['too many tags', { name: 'k', tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, 'tags'],
  ['tag empty', { name: 'k', tags: [''] }, 'tags'],
  ['tag too long', { name: 'k', tags: ['x'.repeat(65)] }, 'tags'],
  ['tag bad chars', { name: 'k', tags: ['a b'] }, 'tags'],
  ['tag duplicate', { name: 'k', tags: ['a', 'a'] }, 'tags'],
  ['tags null', { name: 'k', tags: null }, 'tags'],
  ['policy unknown', { name: 'k', rate_limit_policy: 'platinum' }, 'rate_limit_policy'],
  ['policy prototype key', { name: 'k', rate_limit_policy: 'constructor' }, 'rate_limit_policy'],
  ['policy not a string', { name: 'k', rate_limit_policy: 1 }, 'rate_limit_policy'],
]

t.test('invalid settings: AUTH_API_KEY_CONFIGURATION_INVALID naming the field', async (t) => {
  for (const [what, input, field] of invalid) {
    const r = validateKeyInput(input, ctx)
    t.match(r, { ok: false, code: CONFIG, field, reason: String }, what)
  }
})

t.test('policy above the account tier: LIMIT_API_KEY_POLICY_NOT_ALLOWED', async (t) => {
  const r = validateKeyInput({ name: 'k', rate_limit_policy: 'enterprise' }, ctx)
  t.match(r, { ok: false, code: 'LIMIT_API_KEY_POLICY_NOT_ALLOWED', field: 'rate_limit_policy' })
  t.match(validateKeyPatch({ rate_limit_policy: 'enterprise' }, ctx), { code: 'LIMIT_API_KEY_POLICY_NOT_ALLOWED' })
  t.same(validateKeyInput({ name: 'k', rate_limit_policy: 'enterprise' }, { ...ctx, accountTier: 'enterprise' }).ok, true)
  t.match(validateKeyInput({ name: 'k', rate_limit_policy: 'free' }, { ...ctx, accountTier: 'retired-tier' }), {
    code: 'LIMIT_API_KEY_POLICY_NOT_ALLOWED',
  }, 'an account on an unknown tier binds nothing (fail closed)')
  t.match(validateKeyInput({ name: '', rate_limit_policy: 'enterprise' }, ctx), { code: CONFIG, field: 'name' },
    'configuration errors come first')
})

t.test('patches: every field optional, null clears', async (t) => {
  t.same(validateKeyPatch({}, ctx), { ok: true, value: {} })
  t.same(validateKeyPatch({ quota: null, allowed_models: null, daily_image_cap: null }, ctx), {
    ok: true,
    value: { quota: null, allowedModels: null, dailyImageCap: null },
  })
  t.same(validateKeyPatch({ active: true, tags: [] }, ctx), { ok: true, value: { active: true, tags: [] } })
  t.match(validateKeyPatch({ name: null }, ctx), { code: CONFIG, field: 'name' })
  t.match(validateKeyPatch({ revoked: false }, ctx), { code: CONFIG, field: 'revoked' }, 'cannot un-revoke')
})

t.test('minor unit digits come from the context', async (t) => {
  t.same(validateKeyInput({ name: 'k', quota: '25.5' }, { ...ctx, minorUnitDigits: 2 }), {
    ok: true,
    value: { name: 'k', quota: 2550n },
  })
  t.match(validateKeyInput({ name: 'k', quota: '0.001' }, { ...ctx, minorUnitDigits: 2 }), { field: 'quota' })
})
