// Schema validation of the merged config: ajv compiled once from schemas/ (Fastify's
// initial-config-validation pattern: validate once at boot, fill defaults, then freeze).
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import formatsModule from 'ajv-formats'
import type { GatewayConfig } from './types.js'

export const ROOT_SCHEMA_ID = 'https://model-gateway.dev/schemas/gateway.schema.json'

/** `schemas/` next to the package root, found from this file in source (tsx) and in dist/. */
export function schemasDir (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = join(dir, 'schemas')
    if (existsSync(join(candidate, 'gateway.schema.json'))) return candidate
    const parent = dirname(dir)
    if (parent === dir) throw new Error('schemas/gateway.schema.json not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
}

/** Every schema file, parsed, keyed by file name. */
export function readSchemas (dir = schemasDir()): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>()
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.schema.json')).sort()) {
    out.set(name, JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record<string, unknown>)
  }
  return out
}

// ajv-formats is CommonJS: under NodeNext its default import is `module.exports`, whose
// `default` property is the plugin itself (in Node, tsx and tsc output alike).
const addFormats = formatsModule.default

let compiled: ValidateFunction<GatewayConfig> | undefined
let shared: Ajv | undefined

/** One ajv holding every schema of schemas/, built on first use. */
function schemaSet (): Ajv {
  if (shared !== undefined) return shared
  const ajv = new Ajv({ allErrors: true, strict: true, useDefaults: true, verbose: true })
  addFormats(ajv, ['hostname', 'ipv4', 'ipv6'])
  for (const schema of readSchemas().values()) ajv.addSchema(schema)
  shared = ajv
  return ajv
}

/**
 * The validator of one section's schema (`operations.schema.json`), for data that is not read
 * through gateway.yaml: the built-in operations. It fills defaults in place.
 */
export function sectionValidator<T> (file: string): ValidateFunction<T> {
  const validate = schemaSet().getSchema<T>(`https://model-gateway.dev/schemas/${file}`)
  if (validate === undefined) throw new Error(`schema ${file} is missing`)
  return validate
}

/**
 * The root validator; compiled on first use and reused. It fills defaults in place.
 * `verbose` keeps each error's parent schema, which names the keys a typo could have meant.
 */
export function configValidator (): ValidateFunction<GatewayConfig> {
  if (compiled !== undefined) return compiled
  const validate = schemaSet().getSchema<GatewayConfig>(ROOT_SCHEMA_ID)
  if (validate === undefined) throw new Error(`schema ${ROOT_SCHEMA_ID} is missing`)
  compiled = validate
  return validate
}

/** Validates `data` in place (defaults are filled); returns ajv's errors, empty when valid. */
export function validateConfig (data: unknown): ErrorObject[] {
  const validate = configValidator()
  return validate(data) ? [] : [...(validate.errors ?? [])]
}
