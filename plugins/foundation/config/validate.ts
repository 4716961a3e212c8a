// Schema validation of the merged config: ajv's validators of schemas/ (Fastify's
// initial-config-validation pattern: validate once at boot, fill defaults, then freeze). The
// build compiles them ahead of time (bin/schema-validators.mjs, schema-validators.cjs beside
// this file); a process compiles them itself, once, where that module is missing or was made
// from other schema files.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ErrorObject, ValidateFunction } from 'ajv'
import type formatsModule from 'ajv-formats'
import type { GatewayConfig } from './types.js'

export const ROOT_SCHEMA_ID = 'https://model-gateway.dev/schemas/gateway.schema.json'
const OPERATIONS_SCHEMA_ID = 'https://model-gateway.dev/schemas/operations.schema.json'

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

/** Every schema file's name, in order. */
function schemaFiles (dir: string): string[] {
  return readdirSync(dir).filter((f) => f.endsWith('.schema.json')).sort()
}

/** Every schema file, parsed, keyed by file name. */
export function readSchemas (dir = schemasDir()): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>()
  for (const name of schemaFiles(dir)) {
    out.set(name, JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record<string, unknown>)
  }
  return out
}

/** sha256 over each schema file's name and bytes, in name order: bin/schema-validators.mjs records the same. */
export function schemasDigest (dir = schemasDir()): string {
  const hash = createHash('sha256')
  for (const name of schemaFiles(dir)) hash.update(`${name}\0`).update(readFileSync(join(dir, name))).update('\0')
  return hash.digest('hex')
}

interface Validators {
  root: ValidateFunction<GatewayConfig>
  operations: ValidateFunction<unknown>
  /** Where they came from: the build's module, or compiled by this process. */
  source: 'precompiled' | 'compiled'
}

/** CommonJS modules from here: the build's precompiled validators, and ajv when they cannot be used. */
const requireHere = createRequire(import.meta.url)

/** The module the build writes beside this file (see bin/schema-validators.mjs). */
export const PRECOMPILED_FILE = fileURLToPath(new URL('./schema-validators.cjs', import.meta.url))

/**
 * The validators of the schemas in `dir`: the precompiled module when it exists and was made
 * from these very files (its digest), else compiled here with the options the build uses.
 */
export function loadValidators (dir = schemasDir(), precompiledFile = PRECOMPILED_FILE): Validators {
  if (existsSync(precompiledFile)) {
    const module = requireHere(precompiledFile) as Partial<Omit<Validators, 'source'>> & { digest?: unknown }
    if (module.digest === schemasDigest(dir) && module.root !== undefined && module.operations !== undefined) {
      return { root: module.root, operations: module.operations, source: 'precompiled' }
    }
  }
  // ajv is loaded only here (35 ms of CPU), through `require`: both packages are CommonJS, and
  // ajv-formats' `module.exports` has the plugin as its `default` property too.
  const { Ajv } = requireHere('ajv') as typeof import('ajv')
  const addFormats = (requireHere('ajv-formats') as typeof formatsModule).default
  // bin/schema-validators.mjs's AJV_OPTIONS and FORMATS.
  const ajv = new Ajv({ allErrors: true, strict: true, useDefaults: true, verbose: true })
  addFormats(ajv, ['hostname', 'ipv4', 'ipv6'])
  for (const schema of readSchemas(dir).values()) ajv.addSchema(schema)
  const get = <T>(id: string): ValidateFunction<T> => {
    const validate = ajv.getSchema<T>(id)
    if (validate === undefined) throw new Error(`schema ${id} is missing`)
    return validate
  }
  return { root: get<GatewayConfig>(ROOT_SCHEMA_ID), operations: get(OPERATIONS_SCHEMA_ID), source: 'compiled' }
}

let loaded: Validators | undefined

/** This process's validators, loaded on first use. */
function validators (): Validators {
  loaded ??= loadValidators()
  return loaded
}

/**
 * The validator of the built-in operations (`operations.schema.json`), for data that is not
 * read through gateway.yaml. It fills defaults in place.
 */
export function operationsValidator<T> (): ValidateFunction<T> {
  return validators().operations as ValidateFunction<T>
}

/**
 * The root validator; loaded on first use and reused. It fills defaults in place.
 * `verbose` keeps each error's parent schema, which names the keys a typo could have meant.
 */
export function configValidator (): ValidateFunction<GatewayConfig> {
  return validators().root
}

/** Validates `data` in place (defaults are filled); returns ajv's errors, empty when valid. */
export function validateConfig (data: unknown): ErrorObject[] {
  const validate = configValidator()
  return validate(data) ? [] : [...(validate.errors ?? [])]
}
