// Config strings are one-byte strings (plugins/foundation/config/one-byte.ts): a YAML file with a
// character above U+00FF (an em dash in a comment) decodes to a two-byte string, and the parser's
// scalars would be two-byte too, to be flattened and converted on every request that writes them.
// V8's serializer tells the representation: a flat one-byte string is written with the tag '"',
// a two-byte one with 'c'.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { serialize } from 'node:v8'
import fc from 'fast-check'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { compilePlan } from '../plugins/apps/gateway/plan.js'
import { oneByteStrings } from '../plugins/foundation/config/one-byte.js'
import { mockEnv, REPO_CONFIG } from './helpers/gateway.js'

const env = mockEnv('http://127.0.0.1:9')

const representation = (s: string): 'one-byte' | 'two-byte' => {
  const tag = serialize(s)[2]
  if (tag === 0x22) return 'one-byte'
  if (tag === 0x63) return 'two-byte'
  throw new Error(`unexpected serializer tag ${String(tag)}`)
}

const ABOVE_LATIN1 = /[\u0100-\uffff]/

/** Strings of Latin-1 characters held in two-byte form anywhere in `value` (plain objects, arrays, Maps, Sets), by path. */
function twoByteLatin1 (value: unknown, path = '', seen = new Set<unknown>(), out: string[] = []): string[] {
  if (typeof value === 'string') {
    if (!ABOVE_LATIN1.test(value) && representation(value) === 'two-byte') out.push(`${path}: ${JSON.stringify(value).slice(0, 60)}`)
    return out
  }
  if (value === null || typeof value !== 'object' || seen.has(value)) return out
  seen.add(value)
  if (value instanceof Map) for (const [k, v] of value) { twoByteLatin1(k, `${path}<key>`, seen, out); twoByteLatin1(v, `${path}[${String(k)}]`, seen, out) }
  else if (value instanceof Set) for (const v of value) twoByteLatin1(v, `${path}{}`, seen, out)
  else if (Array.isArray(value)) value.forEach((v, i) => twoByteLatin1(v, `${path}[${i}]`, seen, out))
  else for (const [k, v] of Object.entries(value)) twoByteLatin1(v, `${path}.${k}`, seen, out)
  return out
}

t.test('the serializer tells the two forms apart (the checks below can fail)', async (t) => {
  t.equal(representation('gpt-4o-mini'), 'one-byte', 'a literal of Latin-1 characters is one-byte')
  const fromYaml = (parse('# price list — dated\nmodel: gpt-4o-mini\n') as { model: string }).model
  t.equal(fromYaml, 'gpt-4o-mini')
  t.equal(representation(fromYaml), 'two-byte', 'a scalar of a YAML text with an em dash in a comment is two-byte, whatever its own characters')
  t.equal(representation(oneByteStrings({ model: fromYaml }).model), 'one-byte', 'oneByteStrings copies it into a one-byte string')
  t.equal(representation(oneByteStrings('café — dated')), 'two-byte', 'a string with a character above U+00FF stays as it is (it cannot be one-byte)')
})

t.test('oneByteStrings keeps every value: equal, shared parts shared, non-plain objects untouched', async (t) => {
  t.doesNotThrow(() => {
    fc.assert(fc.property(fc.jsonValue(), fc.string({ unit: 'binary' }), (value, text) =>
      isDeepStrictEqual(oneByteStrings(value), value) && oneByteStrings(text) === text), { numRuns: 500 })
  }, '500 JSON values and strings of any code points come back equal')
  const keys = '~: a\n1: b\ntrue: c\n0x10: d\n"x": [{ e: f }]\n'
  t.same(oneByteStrings(parse(keys, { mapAsMap: true })), parse(keys), 'a mapping read with mapAsMap: the plain object yaml\'s own toJS makes (null, number and boolean keys)')
  t.same(oneByteStrings(parse('? [g]\n: h\n', { mapAsMap: true })), { '["g"]': 'h' }, 'a collection key is named by its JSON (yaml names it by its YAML text)')
  const proto = oneByteStrings(parse('__proto__: { polluted: true }\n', { mapAsMap: true })) as Record<string, unknown>
  t.equal(Object.getPrototypeOf(proto), Object.prototype, 'a __proto__ key does not set the prototype')
  t.ok(Object.hasOwn(proto, '__proto__'), 'it is an own property, as yaml\'s toJS makes it')
  t.equal(proto.polluted, undefined, 'nothing is inherited from it')
  t.same(Object.getOwnPropertyDescriptor(proto, '__proto__'), Object.getOwnPropertyDescriptor(parse('__proto__: { polluted: true }\n'), '__proto__'), 'the same property yaml\'s toJS makes')
  t.doesNotThrow(() => {
    fc.assert(fc.property(fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', '', '~')), fc.jsonValue()), (object) => {
      const text = stringify(object)
      return isDeepStrictEqual(oneByteStrings(parse(text, { mapAsMap: true })), parse(text))
    }), { numRuns: 1000 })
  }, '1000 mappings of any keys and values: the same object as yaml\'s own toJS (__proto__, constructor and empty keys among them)')
  const shared = { id: 'x' }
  const cyclic: Record<string, unknown> = { shared, again: shared }
  cyclic.self = cyclic
  const copied = oneByteStrings(cyclic)
  t.equal(copied.shared, copied.again, 'an object reached twice (a YAML alias) is copied once')
  t.equal(copied.self, copied, 'a cycle stays a cycle')
  const when = new Date(0)
  t.equal(oneByteStrings({ when }).when, when, 'a Date is not a plain object: kept as is')
})

t.test('the shipped gateway.yaml: its loaded config and its compiled plan hold no two-byte Latin-1 string', async (t) => {
  t.match(readFileSync(REPO_CONFIG, 'utf8'), ABOVE_LATIN1, 'the shipped file has a character above U+00FF (so this test covers the case)')
  const { config } = loadConfig(REPO_CONFIG, env)
  t.same(twoByteLatin1(config), [], 'every Latin-1 string of the config is one-byte')
  t.same(twoByteLatin1(compilePlan(config)), [], 'and of the plan compiled from it')
})

t.test('an operator file with an em dash in a comment loads one-byte strings too (includes and built-in operations as well)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-one-byte-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'gateway.yaml')
  // The includes named from the repository, so the copy reads the same files.
  const text = readFileSync(REPO_CONFIG, 'utf8').replace(/^(\s*- )config\//gm, `$1${join(dirname(REPO_CONFIG), 'config')}/`)
  t.not(text, readFileSync(REPO_CONFIG, 'utf8'), 'the include paths were rewritten')
  writeFileSync(file, `# prices as of 2026-11 — see the providers' lists\n${text}`)
  const { config } = loadConfig(file, env)
  t.ok(Object.keys(config.models).length > 0, 'the copy loads its models')
  t.same(twoByteLatin1(config), [], 'every Latin-1 string of the config is one-byte')
})
