// Loading gateway.yaml with every concern's part: config/ loads, validates and runs the
// config's own cross-checks, and imports no concern; the composition root's list (CONCERNS,
// concerns.ts) hands it each concern's checks of its own sections and its warnings. Every
// caller that loads a config (serve, hot reload, the CLI, `check`, the package entry) loads it
// through here. A declaration imports its checks and its compile (its plugin's module is loaded
// when a gateway is built), so loading a config does not load the pools, the HTTP client or the hooks.
import { configLoader, type ConfigConcerns } from '../../foundation/config/index.js'
import type { Concern } from '../../foundation/pipeline/concern.js'
import { CONCERNS } from './concerns.js'

const listed: readonly Concern[] = CONCERNS

/** Each concern's checks, in the list's order, run after the config's own; then the warnings. */
export const CONFIG_CONCERNS: ConfigConcerns = Object.freeze({
  checks: Object.freeze(listed.flatMap((c) => c.checks ?? [])),
  warnings: Object.freeze(listed.flatMap((c) => c.warnings ?? []))
})

export const { loadConfig, checkConfig } = configLoader(CONFIG_CONCERNS)
