// The built-in operations, shipped as data in config/operations.yaml beside schemas/: read and
// parsed once per process. The loader merges them under gateway.yaml's `operations:` before the
// schema runs, so they are validated, cross-checked and hashed like the operator's entries.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import type { OperationConfig } from './types.js'
import { oneByteStrings } from './one-byte.js'
import { operationsValidator } from './validate.js'

/** config/operations.yaml of the package, found from this file in source (tsx) and in dist/. */
export function builtinOperationsFile (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = join(dir, 'config', 'operations.yaml')
    if (existsSync(candidate) && existsSync(join(dir, 'schemas'))) return candidate
    const parent = dirname(dir)
    if (parent === dir) throw new Error('config/operations.yaml not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
}

let cached: Readonly<Record<string, unknown>> | undefined

/**
 * The built-in entries as written (before schema defaults are filled): a fresh deep copy each
 * call, since the loader's validation fills defaults in place.
 */
export function builtinOperationsRaw (): Record<string, unknown> {
  if (cached === undefined) {
    // mapAsMap: its keys become property names only as one-byte strings (one-byte.ts).
    const parsed: unknown = oneByteStrings(parse(readFileSync(builtinOperationsFile(), 'utf8'), { mapAsMap: true }))
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('config/operations.yaml must be a mapping of operation names')
    cached = parsed as Record<string, unknown>
  }
  return structuredClone(cached) as Record<string, unknown>
}

/**
 * The built-in entries, checked against schemas/operations.schema.json (defaults filled). A
 * failure is a packaging bug, not an operator's: the file ships with the code.
 */
export function builtinOperations (): Record<string, OperationConfig> {
  const data = builtinOperationsRaw()
  const validate = operationsValidator<Record<string, OperationConfig>>()
  if (!validate(data)) {
    const first = validate.errors?.[0]
    throw new Error(`config/operations.yaml is invalid: ${first?.instancePath ?? ''} ${first?.message ?? ''}`)
  }
  return data
}
