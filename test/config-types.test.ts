// Staleness check: every property in schemas/ has a counterpart in plugins/config/types.ts,
// a description (docs/configuration.md's reference is generated from them), and every
// object rejects unknown keys.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readSchemas } from '../plugins/config/index.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const typesSource = readFileSync(join(root, 'plugins', 'config', 'types.ts'), 'utf8')
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

t.test('every schema property appears in types.ts', async (t) => {
  t.ok(properties.length > 50, `found ${properties.length} properties`)
  for (const { file, pointer, name } of properties) {
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    t.match(typesSource, new RegExp(`(^|[\\s{;])${escaped}\\??:`, 'm'), `${file}${pointer}: "${name}:" in types.ts`)
  }
})

t.test('every schema property has a description', async (t) => {
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
