import { createHmac, hkdfSync } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { crc32 } from 'node:zlib'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import {
  KEY_LENGTH,
  KeySealError,
  ServerSecretError,
  displayPrefix,
  generateKey,
  hasValidChecksum,
  keyKind,
  lookupHash,
  openKey,
  resolveServerSecret,
  safeEqualHex,
  sealKey,
} from '../plugins/foundation/keys/index.js'

const SECRET = 'a-server-secret-that-is-long-enough-000'
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 })
const fixed = (fill: number) => (size: number) => new Uint8Array(size).fill(fill)

t.test('generated keys: sk- + 43 base62 + 6 checksum chars', async (t) => {
  const key = generateKey()
  t.match(key, /^sk-[0-9A-Za-z]{49}$/)
  t.equal(key.length, KEY_LENGTH)
  t.equal(KEY_LENGTH, 52)
  t.ok(hasValidChecksum(key))
  t.equal(keyKind(key), 'sk')
  t.equal(displayPrefix(key), key.slice(0, 8))
  t.not(generateKey(), key, 'two keys differ')
  t.equal(generateKey(fixed(0)), generateKey(fixed(0)), 'deterministic with injected randomness')
  t.match(generateKey(fixed(0)), /^sk-0{43}/)
  t.match(generateKey(fixed(255)), /^sk-[0-9A-Za-z]{49}$/, 'the largest secret still fits 43 chars')
  t.throws(() => generateKey(fixed(0).bind(null, 16)), RangeError, 'short random source refused')
})

t.test('the checksum is the CRC32 of the key before it, in 6 base62 digits: keys issued before still pass', async (t) => {
  // Made by the BigInt version of the checksum (before 2026-11-27), from secrets of 0, 1, 7, 128 and 255 bytes.
  const issued = [
    'sk-00000000000000000000000000000000000000000003P9rQy',
    'sk-0El6XFXwsUFD8J2vGxsaboW7rZYnQRBP5d9erwRwd292gjUVf',
    'sk-1fJjkkpe9PiTw9KSulA8Ghct30vZz4HpdQ5c5b9cPF11UolH5',
    'sk-UTFUe65YURP79K2F1cha4IKEbPq2a7XncpwNMfh2aQa0c3lww',
    'sk-yhjskwdA6OZ1AL1YmHWZWm8LLG7HjnuCA2j5rOw8Xp10KxnhU'
  ]
  t.same([0, 1, 7, 128, 255].map((f) => generateKey(fixed(f))), issued, 'the same keys from the same secrets')
  for (const key of issued) t.equal(keyKind(key), 'sk', `${key.slice(0, 8)}… still valid`)
  // Any 43-character body: its key is valid with exactly the digits of the CRC32 written in base62.
  const body = fc.array(fc.constantFrom(...BASE62), { minLength: 43, maxLength: 43 }).map((cs) => `sk-${cs.join('')}`)
  fc.assert(fc.property(body, (head) => {
    let crc = BigInt(crc32(head))
    let digits = ''
    for (let i = 0; i < 6; i++) { digits = BASE62.charAt(Number(crc % 62n)) + digits; crc /= 62n }
    const other = digits.slice(0, 5) + (digits[5] === '0' ? '1' : '0')
    return keyKind(head + digits) === 'sk' && keyKind(head + other) === null
  }), { numRuns: 2000 })
})

t.test('every generated key has a valid checksum', async () => {
  fc.assert(fc.property(bytes32, (b) => hasValidChecksum(generateKey(() => b))), { numRuns: 500 })
})

t.test('checksum detects every one-character typo', async (t) => {
  let checked = 0
  for (let n = 0; n < 10; n++) {
    const key = generateKey()
    for (let i = 0; i < key.length; i++) {
      for (const c of BASE62 + '-_') {
        if (c === key[i]) continue
        const typo = key.slice(0, i) + c + key.slice(i + 1)
        if (hasValidChecksum(typo)) t.fail(`typo at ${i} (${c}) not detected in ${key}`)
        checked++
      }
    }
  }
  t.ok(checked > 30_000, `${checked} substitutions checked`)
})

t.test('checksum detects swaps, drops and insertions', async () => {
  fc.assert(
    fc.property(bytes32, fc.nat({ max: 50 }), fc.constantFrom(...BASE62), (b, pos, c) => {
      const key = generateKey(() => b)
      const i = 3 + (pos % (key.length - 4))
      const swapped = key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2)
      const dropped = key.slice(0, i) + key.slice(i + 1)
      const inserted = key.slice(0, i) + c + key.slice(i)
      return (swapped === key || !hasValidChecksum(swapped)) && !hasValidChecksum(dropped) && !hasValidChecksum(inserted)
    }),
    { numRuns: 1000 }
  )
})

t.test('legacy gw_live_ keys are accepted without checksum; garbage is not', async (t) => {
  t.equal(keyKind('gw_live_4f9a8b7c6d5e4f3a2b1c'), 'legacy')
  t.ok(hasValidChecksum('gw_live_anything-goes_here'))
  for (const bad of ['', 'sk-', 'sk-short', 'gw_live_', 'gw_test_abc', 'Bearer sk-x', 'gw_live_has space']) {
    t.notOk(hasValidChecksum(bad), JSON.stringify(bad))
  }
})

t.test('lookup hash: stable HMAC-SHA256 hex under an HKDF-derived key', async (t) => {
  const key = generateKey()
  const hash = lookupHash(SECRET, key)
  t.match(hash, /^[0-9a-f]{64}$/)
  t.equal(lookupHash(SECRET, key), hash, 'stable')
  t.not(lookupHash(SECRET + 'x', key), hash, 'depends on the secret')
  t.not(lookupHash(SECRET, generateKey()), hash, 'depends on the key')
  const derived = Buffer.from(hkdfSync('sha256', SECRET, 'model-gateway/v1', 'model-gateway/api-key-lookup/v1', 32))
  t.equal(hash, createHmac('sha256', derived).update(key).digest('hex'), 'known answer')
  t.not(hash, createHmac('sha256', SECRET).update(key).digest('hex'), 'not keyed by the raw secret')
  t.throws(() => lookupHash('too-short', key), RangeError)
})

t.test('safeEqualHex compares digests in constant time', async (t) => {
  const a = lookupHash(SECRET, 'sk-a')
  t.ok(safeEqualHex(a, a))
  t.ok(safeEqualHex(a, a.toUpperCase()), 'hex case does not matter')
  t.notOk(safeEqualHex(a, lookupHash(SECRET, 'sk-b')))
  t.notOk(safeEqualHex(a, a.slice(0, 62)), 'length mismatch')
  t.notOk(safeEqualHex(a, 'zz' + a.slice(2)), 'not hex')
  t.notOk(safeEqualHex('abc', 'abc'), 'odd length is not a digest')
})

t.test('seal/open round trip with the row id as associated data', async (t) => {
  const key = generateKey()
  const sealed = sealKey(SECRET, 'key_1', key)
  t.match(sealed, /^v1\.[A-Za-z0-9_-]+$/)
  t.notOk(sealed.includes(key.slice(3)), 'ciphertext does not contain the key')
  t.equal(openKey(SECRET, 'key_1', sealed), key)
  t.not(sealKey(SECRET, 'key_1', key), sealed, 'random IV: sealing twice differs')
  t.throws(() => openKey(SECRET, 'key_2', sealed), KeySealError, 'wrong row id')
  t.throws(() => openKey(SECRET + 'x', 'key_1', sealed), KeySealError, 'wrong secret')
  t.throws(() => openKey(SECRET, 'key_1', 'v2.' + sealed.slice(3)), KeySealError, 'unknown version')
  t.throws(() => openKey(SECRET, 'key_1', 'v1.AAAA'), KeySealError, 'truncated')
})

t.test('open fails on any tampered byte', async (t) => {
  const sealed = sealKey(SECRET, 'key_1', generateKey())
  const raw = Buffer.from(sealed.slice(3), 'base64url')
  for (let i = 0; i < raw.length; i++) {
    const copy = Buffer.from(raw)
    copy[i] = (copy[i] ?? 0) ^ 0x01
    t.throws(() => openKey(SECRET, 'key_1', `v1.${copy.toString('base64url')}`), KeySealError, `byte ${i}`)
  }
})

t.test('server secret from GATEWAY_SECRET', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-secret-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  t.same(resolveServerSecret({ gatewaySecret: SECRET, dataDir }), { secret: SECRET, generated: false })
  t.same(resolveServerSecret({ gatewaySecret: SECRET, dataDir, databaseUrl: 'postgres://x' }).generated, false)
  t.throws(() => resolveServerSecret({ gatewaySecret: 'short', dataDir }), {
    name: 'ServerSecretError',
    message: /GATEWAY_SECRET must be at least 32 characters \(got 5\)/,
  })
  t.throws(() => resolveServerSecret({ dataDir, databaseUrl: 'postgres://x' }), ServerSecretError)
  t.throws(() => resolveServerSecret({ gatewaySecret: '', dataDir, databaseUrl: 'postgres://x' }), {
    message: /GATEWAY_SECRET is required when DATABASE_URL is set/,
  })
})

t.test('embedded mode generates gateway.secret (0600) once and reuses it', async (t) => {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'gw-secret-')), 'nested', 'data')
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const first = resolveServerSecret({ dataDir })
  t.equal(first.generated, true)
  t.equal(first.created, true)
  t.equal(first.path, join(dataDir, 'gateway.secret'))
  t.match(first.secret, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url')
  t.equal(statSync(join(dataDir, 'gateway.secret')).mode & 0o777, 0o600)
  const second = resolveServerSecret({ dataDir })
  t.same(second, { secret: first.secret, generated: true, path: first.path, created: false })
  t.equal(readFileSync(join(dataDir, 'gateway.secret'), 'utf8').trim(), first.secret)
  writeFileSync(join(dataDir, 'gateway.secret'), 'short\n')
  t.throws(() => resolveServerSecret({ dataDir }), { name: 'ServerSecretError', message: /shorter than 32/ })
})
