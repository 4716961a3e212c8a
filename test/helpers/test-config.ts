// Test configs: the repository's gateway.yaml, edited as data and written to a temporary
// directory next to a copy of config/errors.yaml, so a test changes only what it names.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse, stringify } from 'yaml'
import type { ModelConfig, ModelOperationConfig, ProviderConfig, RouteConfig, ServerConfig } from '../../plugins/foundation/config/types.js'
import { REPO_CONFIG } from './gateway.js'
import { repoPath } from './paths.js'

const REPO_ERRORS = repoPath('config', 'errors.yaml')

/**
 * gateway.yaml before `${ENV}` expansion: scalars may still be `${VAR:-default}` strings, and
 * optional keys may be absent. Only the sections tests edit are typed.
 */
export interface RawConfig {
  include: string[]
  server: Partial<Record<keyof ServerConfig, string | number>>
  routes: Array<Partial<RouteConfig> & Pick<RouteConfig, 'path' | 'method' | 'family' | 'operation'>>
  providers: Record<string, Partial<Omit<ProviderConfig, 'base_url'>> & { base_url: string }>
  pools: Record<string, Array<{ provider: string, weight?: number }>>
  models: Array<Partial<Omit<ModelConfig, 'operations'>> & Pick<ModelConfig, 'id' | 'status' | 'pool' | 'upstream_model'> & {
    operations: Record<string, Partial<ModelOperationConfig> & Pick<ModelOperationConfig, 'path'>>
  }>
  [section: string]: unknown
}

export interface TestConfig {
  /** Path of the written gateway.yaml. */
  file: string
  dir: string
  remove (): void
}

/** The last parse of gateway.yaml, with the text it was parsed from. */
let parsed: { text: string, config: RawConfig } | undefined

/**
 * gateway.yaml as data, a fresh copy for each caller to edit. The file is parsed once per text:
 * a process asked for it a dozen times (one test file's `priceOf` and `writeTestConfig` calls)
 * and parsing its 43 KB took a sixth of that file's CPU (2026-11-27: 1.0 s of 5.7).
 */
export function readRepoConfig (): RawConfig {
  const text = readFileSync(REPO_CONFIG, 'utf8')
  if (parsed?.text !== text) parsed = { text, config: parse(text) as RawConfig }
  return structuredClone(parsed.config)
}

/** Writes an edited copy of gateway.yaml (with config/errors.yaml beside it) to a fresh tmp dir. */
export function writeTestConfig (edit: (config: RawConfig) => void): TestConfig {
  const config = readRepoConfig()
  edit(config)
  const dir = mkdtempSync(join(tmpdir(), 'gateway-test-'))
  mkdirSync(join(dir, 'config'))
  copyFileSync(REPO_ERRORS, join(dir, 'config', 'errors.yaml'))
  const file = join(dir, 'gateway.yaml')
  writeFileSync(file, stringify(config))
  return { file, dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** The model entry `id` of a raw config; throws when it is missing. */
export function modelOf (config: RawConfig, id: string): RawConfig['models'][number] {
  const model = config.models.find((m) => m.id === id)
  if (model === undefined) throw new Error(`no model ${id} in the config`)
  return model
}

/** The provider entry `name` of a raw config; throws when it is missing. */
export function providerOf (config: RawConfig, name: string): RawConfig['providers'][string] {
  const provider = config.providers[name]
  if (provider === undefined) throw new Error(`no provider ${name} in the config`)
  return provider
}
