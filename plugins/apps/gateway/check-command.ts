// `model-gateway check [file]`: validate a config without starting anything (our
// `kong config parse`). Problems go to stderr, one per line; exit 1 when there are any.
// Warnings go to stderr too, and leave the exit code 0.
import { ConfigError, formatProblem, type Env, type LoadedConfig } from '../../foundation/config/index.js'
import { loadConfig } from './config.js'

export interface CommandIo {
  env: Env
  stdout: { write: (text: string) => unknown }
  stderr: { write: (text: string) => unknown }
}

const processIo = (): CommandIo => ({ env: process.env, stdout: process.stdout, stderr: process.stderr })

import { CHECK_USAGE } from './check-usage.js'
export { CHECK_USAGE }

export async function checkCommand (args: readonly string[], io: CommandIo = processIo()): Promise<number> {
  if (args.length > 1) {
    io.stderr.write(`usage: model-gateway ${CHECK_USAGE}\n`)
    return 2
  }
  const file = args[0] ?? io.env.GATEWAY_CONFIG ?? './gateway.yaml'
  let loaded: LoadedConfig
  try {
    loaded = loadConfig(file, io.env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    const { problems } = err
    for (const p of problems) io.stderr.write(formatProblem(p) + '\n')
    io.stderr.write(`${problems.length} ${problems.length === 1 ? 'problem' : 'problems'}\n`)
    return 1
  }
  const { config, warnings = [] } = loaded
  // Warnings do not fail the check: the config loads, but says less than it should.
  for (const w of warnings) io.stderr.write(formatProblem(w) + '\n')
  if (warnings.length > 0) io.stderr.write(`${warnings.length} ${warnings.length === 1 ? 'warning' : 'warnings'}\n`)
  io.stdout.write(`${file}: ok (${config.routes.length} routes, ${config.models.length} models, ${config.errors.catalogue.length} error codes)\n`)
  return 0
}
