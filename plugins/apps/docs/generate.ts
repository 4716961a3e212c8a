// Documentation sections generated from the sources of truth: the configuration reference
// (docs/configuration.md) from the JSON Schemas' descriptions, the error table (docs/errors.md)
// from config/errors.yaml. `npm run docs` rewrites them between their markers;
// test/docs.test.ts fails when one is stale.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import type { ErrorsConfig } from '../../foundation/config/types.js'
import { readSchemas } from '../../foundation/config/validate.js'

type Schema = Record<string, unknown>

interface Row { path: string, type: string, def: string, description: string }

function resolveRef (file: string, ref: string, schemas: Map<string, Schema>): [string, Schema] {
  const [target = '', pointer = ''] = ref.split('#')
  const name = target === '' ? file : target
  let node: unknown = schemas.get(name)
  for (const part of pointer.split('/').filter(Boolean)) node = (node as Schema)[part]
  return [name, node as Schema]
}

function typeOf (s: Schema): string {
  if (Array.isArray(s.enum)) return (s.enum as unknown[]).map((v) => JSON.stringify(v)).join(' \\| ')
  if (typeof s.type === 'string') return s.type === 'array' ? 'list' : s.type === 'object' ? 'map' : s.type
  return ''
}

function walk (file: string, s: Schema, path: string, schemas: Map<string, Schema>, rows: Row[], depth: number): void {
  const description = typeof s.description === 'string' ? s.description : ''
  if (typeof s.$ref === 'string') {
    const [f, target] = resolveRef(file, s.$ref, schemas)
    walk(f, { ...target, description: description || target.description }, path, schemas, rows, depth)
    return
  }
  if (path !== '') rows.push({ path, type: typeOf(s), def: s.default === undefined ? '' : JSON.stringify(s.default), description })
  if (depth > 5) return
  const props = s.properties as Record<string, Schema> | undefined
  if (props) for (const [k, v] of Object.entries(props)) walk(file, v, path === '' ? k : `${path}.${k}`, schemas, rows, depth + 1)
  if (s.items && typeof s.items === 'object') walk(file, s.items as Schema, `${path}[]`, schemas, rows, depth + 1)
  const extra = s.additionalProperties
  if (extra && typeof extra === 'object') walk(file, extra as Schema, `${path}.<name>`, schemas, rows, depth + 1)
}

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ')

export function configReference (): string {
  const schemas = readSchemas() as Map<string, Schema>
  const root = schemas.get('gateway.schema.json')
  if (!root) throw new Error('schemas/gateway.schema.json is missing')
  const rows: Row[] = []
  walk('gateway.schema.json', root, '', schemas, rows, 0)
  return ['| key | type | default | meaning |', '|---|---|---|---|',
    ...rows.map((r) => `| \`${r.path}\` | ${r.type} | ${r.def === '' ? '' : `\`${cell(r.def)}\``} | ${cell(r.description)} |`)].join('\n')
}

/** config/errors.yaml, found above this module from its source, dist/ or a compiled test tree. */
function catalogueFile (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = join(dir, 'config', 'errors.yaml')
    if (existsSync(candidate)) return candidate
    const parent = dirname(dir)
    if (parent === dir) throw new Error('config/errors.yaml not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
}

export function errorTable (file: string | URL = catalogueFile()): string {
  const errors = (parse(readFileSync(file, 'utf8')) as { errors: ErrorsConfig }).errors
  return ['| code | reference | HTTP | retry | legacy alias | message |', '|---|---|---|---|---|---|',
    ...errors.catalogue.map((e) => {
      const retry = e.retry ? `${e.retry.strategy}${e.retry.after_seconds === undefined ? '' : ` (Retry-After ${e.retry.after_seconds})`}` : 'NONE'
      return `| \`${e.code}\` | ${e.reference} | ${e.status} | ${retry} | ${(e.aliases ?? []).join(', ')} | ${cell(e.message)}${e.external ? ' *(raised outside the request path)*' : ''} |`
    })].join('\n')
}

/** The generated sections of each documentation file (paths from the repository root). */
export const GENERATED_DOCS: Record<string, Record<string, () => string>> = {
  'docs/configuration.md': { 'config-reference': configReference },
  'docs/errors.md': { 'error-table': errorTable }
}

/**
 * `plugins/foundation/errors/codes.ts`: the catalogue's codes as a `const` array and a union type, so the
 * compiler refuses a `gatewayError` call with a code the catalogue lacks. The YAML stays the
 * data; this is its typed shadow, rewritten by `npm run docs`, checked by test/docs.test.ts.
 */
export function errorCodesModule (file: string | URL = catalogueFile()): string {
  const errors = (parse(readFileSync(file, 'utf8')) as { errors: ErrorsConfig }).errors
  const quote = (s: string): string => `'${s}'`
  const aliases = errors.catalogue.flatMap((e) => (e.aliases ?? []).map((a) => `  ${a}: ${quote(e.code)}`))
  return [
    '// Generated from config/errors.yaml by `npm run docs` (plugins/apps/docs/generate.ts): do not edit.',
    '// test/docs.test.ts fails when this file is stale.',
    '',
    '/** Every code of the error catalogue, in catalogue order. */',
    'export const ERROR_CODES = [',
    errors.catalogue.map((e) => `  ${quote(e.code)}`).join(',\n'),
    '] as const',
    '',
    '/** A catalogue code: what `gatewayError` takes and a client branches on. */',
    'export type ErrorCode = typeof ERROR_CODES[number]',
    '',
    '/** The short-form codes of the earlier table, each with the canonical code it stands for. */',
    `export const LEGACY_ALIASES = {${aliases.length === 0 ? '' : `\n${aliases.join(',\n')}\n`}} as const satisfies Readonly<Record<string, ErrorCode>>`,
    '',
    'export type LegacyErrorCode = keyof typeof LEGACY_ALIASES',
    ''
  ].join('\n')
}

/** Generated source files, by path from the repository root, with their generators. */
export const GENERATED_FILES: Record<string, () => string> = { 'plugins/foundation/errors/codes.ts': () => errorCodesModule() }

/** `text` (the file at `path`, a key of GENERATED_DOCS) with each of its generated sections replaced by its current text. */
export function renderDoc (path: string, text: string): string {
  const sections = GENERATED_DOCS[path]
  if (sections === undefined) throw new Error(`${path} has no generated sections`)
  let out = text
  for (const [name, gen] of Object.entries(sections)) {
    const begin = `<!-- generated:${name} -->`
    const end = `<!-- /generated:${name} -->`
    const a = out.indexOf(begin)
    const b = out.indexOf(end)
    if (a === -1 || b === -1) throw new Error(`${path} lacks the ${begin} … ${end} markers`)
    out = out.slice(0, a + begin.length) + '\n' + gen() + '\n' + out.slice(b)
  }
  return out
}
