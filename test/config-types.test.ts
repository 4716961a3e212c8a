// plugins/foundation/config/types.ts is generated from schemas/ (plugins/apps/docs/config-types.ts): the committed
// file is what the generator writes today, the generator follows its rules, the types' promise
// (a key with a default is present) holds for loaded configs, and the schemas stay documentable:
// every property described, every object closed.
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readSchemas } from '../plugins/foundation/config/index.js'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { bundleSchemas, CONFIG_TYPES_PATH, configTypesModule, sectionTypeName } from '../plugins/apps/docs/config-types.js'
import { REPO_CONFIG } from './helpers/gateway.js'
import { ROOT } from './helpers/paths.js'

const root = ROOT
const schemas = readSchemas(join(root, 'schemas'))

interface Property { file: string; pointer: string; name: string; schema: unknown }
interface ObjectSchema { file: string; pointer: string; schema: Record<string, unknown> }

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

const properties: Property[] = []
const objects: ObjectSchema[] = []
function walk (file: string, node: unknown, pointer: string): void {
  if (Array.isArray(node)) { node.forEach((n, i) => { walk(file, n, `${pointer}/${i}`) }); return }
  if (!isRecord(node)) return
  if (node.type === 'object') objects.push({ file, pointer, schema: node })
  for (const [key, value] of Object.entries(node)) {
    if (key === 'properties' && isRecord(value)) {
      for (const [name, schema] of Object.entries(value)) {
        properties.push({ file, pointer: `${pointer}/properties/${name}`, name, schema })
        walk(file, schema, `${pointer}/properties/${name}`)
      }
    } else if (key !== 'default' && key !== 'enum') {
      walk(file, value, `${pointer}/${key}`)
    }
  }
}
for (const [file, schema] of schemas) walk(file, schema, '#')

t.test('one schema file per section', async (t) => {
  t.same([...schemas.keys()].sort(), [
    'admin', 'auth', 'console', 'errors', 'families', 'gateway', 'jobs', 'limits', 'models', 'observability', 'operations', 'pools', 'providers', 'routes', 'server', 'upstream', 'wallet'
  ].map((s) => `${s}.schema.json`))
})

t.test('plugins/foundation/config/types.ts is what `npm run types` writes from schemas/ today', async (t) => {
  const onDisk = readFileSync(join(root, CONFIG_TYPES_PATH), 'utf8')
  t.equal(onDisk, await configTypesModule(), `${CONFIG_TYPES_PATH} is stale: run \`npm run types\``)
  t.match(onDisk, /^\/\/ Generated from schemas\/\*\.json by `npm run types`/, 'its header says it is generated and how')
})

t.test('every section and every titled schema node is one exported type, under its own name', async (t) => {
  const source = readFileSync(join(root, CONFIG_TYPES_PATH), 'utf8')
  const exported = [...source.matchAll(/^export (?:type|interface) (\w+)/gm)].map((m) => m[1])
  const titles = new Set<string>()
  const collect = (node: unknown): void => {
    if (Array.isArray(node)) { node.forEach(collect); return }
    if (!isRecord(node)) return
    if (typeof node.title === 'string') titles.add(node.title)
    for (const [key, value] of Object.entries(node)) if (key !== 'default' && key !== 'enum') collect(value)
  }
  for (const [file, schema] of schemas) {
    collect({ ...schema, title: undefined })
    titles.add(sectionTypeName(file))
  }
  t.strictSame(exported.slice().sort(), [...titles].sort(), 'one export per title, nothing else (a title used twice would come out as Name1)')
  for (const name of ['GatewayConfig', 'ServerConfig', 'RouteConfig', 'OperationConfig', 'ModelConfig', 'PriceConfig', 'LimitsConfig', 'TierConfig',
    'WalletConfig', 'AccessLogConfig', 'BodyKind', 'EnvelopeKind', 'JobRole', 'TokenDialectName', 'ModelStatus', 'MatchValue']) {
    t.ok(exported.includes(name), `${name} is exported`)
  }
})

t.test('the generator: titles name types, required or defaulted keys are present, $refs across files resolve', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'config-types-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const write = (name: string, schema: unknown): void => { writeFileSync(join(dir, name), JSON.stringify(schema)) }
  write('gateway.schema.json', {
    $id: 'https://model-gateway.dev/schemas/gateway.schema.json',
    type: 'object',
    additionalProperties: false,
    required: ['shop'],
    properties: {
      shop: { description: 'The shop.', $ref: 'shop.schema.json' },
      extra: { description: 'Optional section with a default.', $ref: 'shop.schema.json', default: {} }
    }
  })
  write('shop.schema.json', {
    $id: 'https://model-gateway.dev/schemas/shop.schema.json',
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: {
      name: { description: 'Required, no default.', type: 'string', pattern: '^[a-z]+$' },
      port: { description: 'Defaulted.', type: 'integer', default: 8080 },
      note: { description: 'Neither.', type: 'string' },
      kind: { description: 'A named enum.', $ref: '#/definitions/kind' },
      items: { description: 'Untitled objects stay inline.', type: 'array', items: { type: 'object', additionalProperties: false, properties: { sku: { description: 'SKU.', type: 'string' } } } },
      prices: { description: 'A map.', type: 'object', additionalProperties: { $ref: '#/definitions/price' } },
      where: { description: 'Narrowed strings stay strings.', type: 'string', anyOf: [{ enum: ['here'] }, { type: 'string', format: 'ipv4' }] }
    },
    definitions: {
      kind: { title: 'ShopKind', description: 'Kinds of shop.', type: 'string', enum: ['big', 'small'] },
      price: { title: 'PriceEntry', description: 'One price.', type: 'object', additionalProperties: false, required: ['amount'], properties: { amount: { description: 'Amount.', type: 'string' } } }
    }
  })
  const source = await configTypesModule(dir)
  t.match(source, /export interface GatewayConfig \{\n {2}shop: ShopConfig\n {2}extra: ShopConfig\n\}/, 'sections are <File>Config; a defaulted section is present')
  t.match(source, /export type ShopKind = 'big' \| 'small'/, 'a titled enum is a named union')
  t.match(source, /\n {2}name: string\n/, 'a required key is present')
  t.match(source, /\n {2}port: number\n/, 'a key with a default is present (the validator fills it)')
  t.match(source, /\n {2}note\?: string\n/, 'a key neither required nor defaulted is optional')
  t.match(source, /\n {2}kind\?: ShopKind\n/, 'a $ref to a titled definition uses its name')
  t.match(source, /items\?: \{\n(?: {4}\/\*\*\n {5}\* SKU\.\n {5}\*\/\n)? {4}sku\?: string\n {2}\}\[\]/, 'an untitled object is inline')
  t.match(source, /prices\?: \{\n {4}\[k: string\]: PriceEntry\n {2}\}/, 'additionalProperties is an index signature')
  t.match(source, /\n {2}where\?: string\n/, 'an anyOf of string forms is a string')
  t.notMatch(source, /ShopConfig1|PriceEntry1/, 'a type referenced twice is declared once')
})

/** The keys the bundled schema says are present (required or defaulted), checked against loaded data. */
function missingKeys (schema: unknown, data: unknown, path: string, out: string[]): void {
  if (!isRecord(schema)) return
  if (Array.isArray(data) && isRecord(schema.items)) { data.forEach((d, i) => { missingKeys(schema.items, d, `${path}[${i}]`, out) }); return }
  if (!isRecord(data)) return
  const props = isRecord(schema.properties) ? schema.properties : {}
  for (const key of Array.isArray(schema.required) ? schema.required as string[] : []) if (!(key in data)) out.push(`${path}.${key}`)
  for (const [key, value] of Object.entries(data)) {
    const sub = props[key] ?? (isRecord(schema.additionalProperties) ? schema.additionalProperties : undefined)
    missingKeys(sub, value, `${path}.${key}`, out)
  }
}

t.test('a loaded config has every key the types call present: the repository\'s and one with every default left out', async (t) => {
  const bundled = bundleSchemas(schemas)
  for (const file of [REPO_CONFIG, join(root, 'test', 'fixtures', 'config', 'valid', 'minimal.yaml')]) {
    const { config } = loadConfig(file, {})
    const missing: string[] = []
    missingKeys(bundled, config, '', missing)
    t.strictSame(missing, [], `${file.slice(root.length + 1)}: nothing the types promise is absent`)
  }
  const partial: string[] = []
  missingKeys(bundled, { server: {} }, '', partial)
  t.ok(partial.includes('.server.port') && partial.includes('.wallet'), 'the check sees a key left out')
})

t.test('every schema property has a description', async (t) => {
  t.ok(properties.length > 50, `found ${properties.length} properties`)
  for (const { file, pointer, schema } of properties) {
    t.ok(isRecord(schema) && typeof schema.description === 'string' && schema.description !== '', `${file}${pointer}`)
  }
})

t.test('every object rejects unknown keys', async (t) => {
  for (const { file, pointer, schema } of objects) {
    if (isRecord(schema.properties)) t.equal(schema.additionalProperties, false, `${file}${pointer} has additionalProperties: false`)
    else t.ok(isRecord(schema.additionalProperties), `${file}${pointer} is a map with a value schema`)
  }
})
