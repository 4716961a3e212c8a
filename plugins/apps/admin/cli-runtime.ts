// What the `accounts` and `keys` CLI commands share: opening the config and the store the
// way the server does, JSON output, and errors as `{ error: { code, message } }` on stderr.
import { ConfigError, formatProblem } from '../../foundation/config/index.js'
import { type Catalogue, compileCatalogue, isGatewayError, toOccurrence } from '../../foundation/errors/index.js'
import type { CommandIo } from '../gateway/check-command.js'
import { loadConfig } from '../gateway/config.js'
import { KEY_INVALIDATION_CHANNEL, RedisInvalidationBus } from '../../foundation/keys/index.js'
import { openStore } from '../../foundation/store/index.js'
import { type AdminContext, adminContext } from '../../concerns/accounts/service.js'

export type { CommandIo } from '../gateway/check-command.js'

export const processIo = (): CommandIo => ({ env: process.env, stdout: process.stdout, stderr: process.stderr })

/** Exit codes: 0 done, 1 refused or failed (JSON error on stderr), 2 wrong usage. */
export const EXIT_OK = 0
export const EXIT_FAILED = 1
export const EXIT_USAGE = 2

/** Thrown by argument parsing; the command prints it with its usage and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

/** An error that is not a gateway catalogue code: config or database trouble. */
class CliError extends Error {
  constructor (
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {}
  ) {
    super(message)
  }
}

export function printJson (io: CommandIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

function printError (io: CommandIo, error: Record<string, unknown>): void {
  io.stderr.write(`${JSON.stringify({ error }, null, 2)}\n`)
}

export function printUsageError (io: CommandIo, err: UsageError, usage: string): number {
  printError(io, { code: 'USAGE', message: err.message, usage })
  return EXIT_USAGE
}

function warn (io: CommandIo, code: string): (err: Error) => void {
  let last = ''
  return (err) => {
    if (err.message === last) return
    last = err.message
    io.stderr.write(`${JSON.stringify({ warning: { code, message: err.message } })}\n`)
  }
}

const setting = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v)

/**
 * Runs one operation against the store named by the environment (DATABASE_URL and
 * DATABASE_SCHEMA, else GATEWAY_DATA_DIR; GATEWAY_SECRET; REDIS_URL for invalidations;
 * GATEWAY_CONFIG for tiers and models), prints its result, and closes everything.
 */
export async function runOperation (io: CommandIo, op: (ctx: AdminContext) => Promise<unknown> | unknown): Promise<number> {
  let catalogue: Catalogue | undefined
  const closers: Array<() => Promise<void>> = []
  try {
    const file = setting(io.env.GATEWAY_CONFIG) ?? './gateway.yaml'
    let config
    try {
      config = loadConfig(file, io.env).config
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      throw new CliError('CONFIG_INVALID', `${file}: ${err.problems.length} problem(s); run model-gateway check`, {
        problems: err.problems.map(formatProblem),
      })
    }
    catalogue = compileCatalogue(config.errors, config.server)
    const redisUrl = setting(io.env.REDIS_URL)
    // Running instances subscribe to this channel and drop what they cached of a changed key.
    const bus = redisUrl === undefined
      ? undefined
      : new RedisInvalidationBus(redisUrl, KEY_INVALIDATION_CHANNEL, { onError: warn(io, 'REDIS_UNAVAILABLE') })
    if (bus) closers.unshift(() => bus.close())
    let store
    try {
      store = await openStore({
        databaseUrl: setting(io.env.DATABASE_URL),
        schema: setting(io.env.DATABASE_SCHEMA),
        dataDir: setting(io.env.GATEWAY_DATA_DIR),
        secret: setting(io.env.GATEWAY_SECRET),
        defaultTier: config.limits.default_tier,
        onInvalidationError: warn(io, 'KEY_INVALIDATION_FAILED'),
        poolMax: 2,
        ...(bus ? { bus } : {}),
      })
    } catch (err) {
      throw new CliError('STORE_UNAVAILABLE', err instanceof Error ? err.message : String(err))
    }
    const opened = store
    closers.unshift(() => opened.close())
    printJson(io, await op(adminContext(store, config)))
    return EXIT_OK
  } catch (err) {
    if (isGatewayError(err) && catalogue) {
      const o = toOccurrence(err, '', catalogue)
      printError(io, {
        code: o.entry.code,
        message: o.message,
        reference: o.entry.reference,
        ...(o.param === null ? {} : { param: o.param }),
      })
    } else if (err instanceof CliError) {
      printError(io, { code: err.code, message: err.message, ...err.extra })
    } else {
      printError(io, { code: 'GATEWAY_INTERNAL_ERROR', message: err instanceof Error ? err.message : String(err) })
    }
    return EXIT_FAILED
  } finally {
    for (const close of closers) await close()
  }
}
