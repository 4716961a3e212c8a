// plugins/foundation/config/types.ts, generated from schemas/ by json-schema-to-typescript: the schemas are
// the one source of truth of gateway.yaml's shape, the types their shadow. `npm run types` (and
// `npm run docs`) rewrites the file; test/config-types.test.ts fails when it is stale.
//
// Before the library sees them, the schemas are bundled into one tree (bundleSchemas) so that
// what the TypeScript says is decided here, by three rules, and not by the library's guesses:
//  - names: the root of `<name>.schema.json` is `<Name>Config` (gateway.schema.json is
//    GatewayConfig); below it, a node is a named type when it has a `title`, else inline;
//  - presence: a property is non-optional when its object lists it in `required` or when it has
//    a `default` (the validator fills it: plugins/foundation/config/validate.ts runs ajv with useDefaults);
//  - the TS type is the JSON type: patterns, formats and bounds stay in the schema.
import { compile, type JSONSchema } from 'json-schema-to-typescript'
import { readSchemas } from '../../foundation/config/validate.js'

type Schema = Record<string, unknown>

/** The generated file, from the repository root. */
export const CONFIG_TYPES_PATH = 'plugins/foundation/config/types.ts'

const HEADER = [
  '// Generated from schemas/*.json by `npm run types` (plugins/apps/docs/config-types.ts): do not edit.',
  '// To add or change a gateway.yaml key, edit its schema (with a `description`), then run',
  '// `npm run types` and `npm run docs`. test/config-types.test.ts fails when this file is stale.',
  ''
].join('\n')

const isRecord = (v: unknown): v is Schema => v !== null && typeof v === 'object' && !Array.isArray(v)

/** `routes.schema.json` → `RoutesConfig`; `gateway.schema.json` → `GatewayConfig`. */
export function sectionTypeName (file: string): string {
  const base = file.replace(/\.schema\.json$/, '')
  return base.split(/[^A-Za-z0-9]+/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('') + 'Config'
}

/**
 * One self-contained schema: every `$ref` (`file`, `#/pointer`, `file#/pointer`) replaced by its
 * target, `definitions` and ids dropped, the rules above applied. A titled target is shared (one
 * object however often it is referenced, so one declaration); an untitled one is copied with
 * the referring property's `description`, which then documents that property.
 */
export function bundleSchemas (schemas: ReadonlyMap<string, Schema>, rootFile = 'gateway.schema.json'): Schema {
  // Keyed by the source node, one cache per context (defaults inside anyOf/oneOf/not are not filled).
  const done = [new Map<Schema, Schema>(), new Map<Schema, Schema>()] as const
  const active = new Set<Schema>()
  const sections = new Map([...schemas].map(([file, root]) => [root, sectionTypeName(file)]))

  const target = (file: string, ref: string): [string, Schema] => {
    const [name = '', pointer = ''] = ref.split('#')
    const targetFile = name === '' ? file : name
    let node: unknown = schemas.get(targetFile)
    for (const part of pointer.split('/').filter(Boolean)) node = isRecord(node) ? node[part] : undefined
    if (!isRecord(node)) throw new Error(`${file}: $ref ${ref} resolves to nothing`)
    return [targetFile, node]
  }

  const visit = (file: string, node: Schema, inCombinator: boolean): Schema => {
    if (typeof node.$ref === 'string') {
      const [targetFile, resolved] = target(file, node.$ref)
      const out = visit(targetFile, resolved, inCombinator)
      if (typeof out.title === 'string' || typeof node.description !== 'string') return out
      return { ...out, description: node.description }
    }
    const cache = done[inCombinator ? 1 : 0]
    const cached = cache.get(node)
    if (cached !== undefined) return cached
    if (active.has(node)) throw new Error(`${file}: a schema that contains itself is not supported`)
    active.add(node)
    const out: Schema = {}
    for (const [key, value] of Object.entries(node)) {
      if (key === 'definitions' || key === '$id' || key === '$schema') continue
      out[key] = transform(file, key, value, inCombinator)
    }
    if (isRecord(node.properties) && !inCombinator) {
      // ajv fills a default only where a property is validated plainly (not inside anyOf/oneOf/not).
      const required = new Set(Array.isArray(node.required) ? node.required as string[] : [])
      for (const [name, prop] of Object.entries(node.properties)) if (isRecord(prop) && prop.default !== undefined) required.add(name)
      if (required.size > 0) out.required = Object.keys(node.properties).filter((name) => required.has(name))
    }
    if (isStringOnlyAnyOf(node)) delete out.anyOf
    const section = sections.get(node)
    if (section !== undefined) out.title = section
    active.delete(node)
    cache.set(node, out)
    return out
  }

  const transform = (file: string, key: string, value: unknown, inCombinator: boolean): unknown => {
    if (key === 'default' || key === 'enum' || key === 'required') return value
    const inner = inCombinator || key === 'anyOf' || key === 'oneOf' || key === 'not'
    if (Array.isArray(value)) return value.map((v) => (isRecord(v) ? visit(file, v, inner) : v))
    if (!isRecord(value)) return value
    if (key === 'properties') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isRecord(v) ? visit(file, v, inner) : v]))
    return visit(file, value, inner)
  }

  const root = schemas.get(rootFile)
  if (root === undefined) throw new Error(`schemas/${rootFile} is missing`)
  return visit(rootFile, root, false)
}

/**
 * `type: string` with an `anyOf` of string alternatives (an enum or a format, as trust_proxy's
 * entries): the alternatives only narrow the string, which the TS type does not follow.
 */
function isStringOnlyAnyOf (node: Schema): boolean {
  return node.type === 'string' && Array.isArray(node.anyOf) &&
    node.anyOf.every((b) => isRecord(b) && (b.type === 'string' || (b.type === undefined && Array.isArray(b.enum))))
}

/** The text of plugins/foundation/config/types.ts for the schemas in `dir` (default: the package's schemas/). */
export async function configTypesModule (dir?: string): Promise<string> {
  const schemas = readSchemas(dir)
  const bundled = bundleSchemas(schemas)
  const body = await compile(bundled as JSONSchema, 'GatewayConfig', {
    bannerComment: '',
    declareExternallyReferenced: true,
    // minItems/maxItems would turn lists into tuples; the bounds are the validator's.
    ignoreMinAndMaxItems: true,
    unknownAny: true,
    style: { semi: false, singleQuote: true, printWidth: 120, trailingComma: 'none' }
  })
  return HEADER + '\n' + body
}
