// `model-gateway accounts …` and `model-gateway keys …`: the admin API's operations from a
// shell. They call the same service functions as the HTTP API and print the same JSON.
import { readFileSync } from 'node:fs'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import {
  type CommandIo,
  EXIT_OK,
  UsageError,
  printUsageError,
  processIo,
  runOperation,
} from './cli-runtime.js'
import * as admin from '../../concerns/accounts/service.js'
import { getKeyUsage, resetKeyUsage } from './usage.js'
import { ACCOUNTS_USAGE, KEYS_USAGE, MODELS_USAGE, REQUESTS_USAGE, TIERS_USAGE, WALLET_USAGE } from './cli-usage.js'
export { ACCOUNTS_USAGE, KEYS_USAGE, MODELS_USAGE, REQUESTS_USAGE, TIERS_USAGE, WALLET_USAGE }
import { getModel, listModels, MODEL_ACTIONS, type ModelAction, resetModelStatus, setModelStatus } from './models.js'

const ENV_HELP =
  'environment: GATEWAY_CONFIG, DATABASE_URL (+ DATABASE_SCHEMA), GATEWAY_DATA_DIR, GATEWAY_SECRET, REDIS_URL'

type Options = NonNullable<ParseArgsConfig['options']>
type Values = Record<string, string | boolean | undefined>

const COMMON: Options = { json: { type: 'boolean' } }

const KEY_FLAGS: Options = {
  name: { type: 'string' },
  models: { type: 'string' },
  expires: { type: 'string' },
  timezone: { type: 'string' },
  quota: { type: 'string' },
  'daily-cap': { type: 'string' },
  'monthly-cap': { type: 'string' },
  'daily-image-cap': { type: 'string' },
  tags: { type: 'string' },
  policy: { type: 'string' },
  active: { type: 'string' },
}

interface Parsed {
  values: Values
  positionals: string[]
}

/** Strict parsing: an unknown flag or a missing value is a usage error, never ignored. */
function parse (args: string[], options: Options, positionals: readonly string[], required: readonly string[] = []): Parsed {
  let parsed
  try {
    parsed = parseArgs({ args, options: { ...COMMON, ...options }, allowPositionals: true, strict: true })
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err))
  }
  if (parsed.positionals.length !== positionals.length) {
    const expected = positionals.length === 0 ? 'no arguments' : positionals.join(' ')
    throw new UsageError(`expected ${expected}, got ${JSON.stringify(parsed.positionals)}`)
  }
  const values = parsed.values as Values
  for (const flag of required) {
    if (typeof values[flag] !== 'string') throw new UsageError(`--${flag} is required`)
  }
  return { values, positionals: parsed.positionals }
}

const str = (values: Values, flag: string): string => {
  const v = values[flag]
  if (typeof v !== 'string') throw new UsageError(`--${flag} is required`)
  return v
}

const list = (v: string): string[] => v.split(',').map((s) => s.trim()).filter((s) => s !== '')
const orNull = <T>(v: string, parse: (v: string) => T): T | null => (v === 'none' ? null : parse(v))

/**
 * Key flags to the API's JSON body. Values stay as given where they are not obviously a
 * number or boolean, so the service's validation (one place) names the bad field.
 */
function keyBody (values: Values): Record<string, unknown> {
  const body: Record<string, unknown> = {}
  const set = (flag: string, field: string, convert: (v: string) => unknown): void => {
    const v = values[flag]
    if (typeof v === 'string') body[field] = convert(v)
  }
  set('name', 'name', (v) => v)
  set('models', 'allowed_models', (v) => orNull(v, list))
  set('expires', 'expires_at', (v) => orNull(v, (s) => s))
  set('timezone', 'timezone', (v) => v)
  set('quota', 'quota', (v) => orNull(v, (s) => s))
  set('daily-cap', 'daily_spend_cap', (v) => orNull(v, (s) => s))
  set('monthly-cap', 'monthly_spend_cap', (v) => orNull(v, (s) => s))
  set('daily-image-cap', 'daily_image_cap', (v) => orNull(v, (s) => (/^\d{1,15}$/.test(s) ? Number(s) : s)))
  set('tags', 'tags', list)
  set('policy', 'rate_limit_policy', (v) => orNull(v, (s) => s))
  set('active', 'active', (v) => (v === 'true' ? true : v === 'false' ? false : v))
  return body
}

/** `--key -` reads the legacy key from standard input, keeping it out of shell history and `ps`. */
function legacyKey (values: Values): string {
  const given = str(values, 'key')
  return given === '-' ? readFileSync(0, 'utf8').trim() : given
}

type Run = (args: string[], io: CommandIo) => Promise<number>

const ACCOUNT_ACTIONS: Record<string, Run> = {
  create: async (args, io) => {
    const { values } = parse(args, { name: { type: 'string' }, tier: { type: 'string' } }, [], ['name'])
    const body = { name: values.name, ...(values.tier === undefined ? {} : { tier: values.tier }) }
    return await runOperation(io, (ctx) => admin.createAccount(ctx, body))
  },
  list: async (args, io) => {
    const { values } = parse(args, { limit: { type: 'string' }, after: { type: 'string' } }, [])
    const query = { ...(values.limit === undefined ? {} : { limit: values.limit }), ...(values.after === undefined ? {} : { after: values.after }) }
    return await runOperation(io, (ctx) => admin.listAccounts(ctx, query))
  },
  get: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => admin.getAccount(ctx, id))
  },
  suspend: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => admin.updateAccount(ctx, id, { status: 'suspended' }))
  },
  reactivate: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => admin.updateAccount(ctx, id, { status: 'active' }))
  },
  'set-models': async (args, io) => {
    const { values, positionals } = parse(args, { all: { type: 'boolean' }, models: { type: 'string' } }, ['ID'])
    const [id = ''] = positionals
    if ((values.all === true) === (typeof values.models === 'string')) throw new UsageError('give exactly one of --models M1,M2 and --all')
    const models = values.all === true ? null : list(str(values, 'models'))
    return await runOperation(io, (ctx) => admin.updateAccount(ctx, id, { allowed_models: models }))
  },
  'set-tier': async (args, io) => {
    const [id = '', tier = ''] = parse(args, {}, ['ID', 'TIER']).positionals
    return await runOperation(io, (ctx) => admin.updateAccount(ctx, id, { tier }))
  },
}

const TIER_ACTIONS: Record<string, Run> = {
  list: async (args, io) => {
    parse(args, {}, [])
    return await runOperation(io, (ctx) => admin.listTiers(ctx))
  }
}

const modelAction = (action: ModelAction): Run => async (args, io) => {
  const [id = ''] = parse(args, {}, ['ID']).positionals
  return await runOperation(io, (ctx) => setModelStatus(ctx, id, action))
}

const MODEL_CLI_ACTIONS: Record<string, Run> = {
  list: async (args, io) => {
    parse(args, {}, [])
    return await runOperation(io, (ctx) => listModels(ctx))
  },
  get: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => getModel(ctx, id))
  },
  ...Object.fromEntries((Object.keys(MODEL_ACTIONS) as ModelAction[]).map((a) => [a, modelAction(a)])),
  reset: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => resetModelStatus(ctx, id))
  },
}

const WALLET_ACTIONS: Record<string, Run> = {
  get: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ACCOUNT']).positionals
    return await runOperation(io, (ctx) => admin.getWallet(ctx, id))
  },
  credit: async (args, io) => {
    const options = { amount: { type: 'string' }, grant: { type: 'boolean' }, 'idempotency-key': { type: 'string' }, note: { type: 'string' } } satisfies Options
    const { values, positionals } = parse(args, options, ['ACCOUNT'], ['amount'])
    const body = {
      amount: values.amount,
      kind: values.grant === true ? 'grant' : 'topup',
      ...(values['idempotency-key'] === undefined ? {} : { idempotency_key: values['idempotency-key'] }),
      ...(values.note === undefined ? {} : { note: values.note }),
    }
    return await runOperation(io, (ctx) => admin.creditAccount(ctx, positionals[0] ?? '', body))
  },
}

const REQUEST_ACTIONS: Record<string, Run> = {
  list: async (args, io) => {
    const names = ['account', 'from', 'to', 'limit', 'before'] as const
    const { values } = parse(args, Object.fromEntries(names.map((n) => [n, { type: 'string' }])) as Options, [])
    const query: Record<string, string> = {}
    for (const n of names) {
      const v = values[n]
      if (typeof v === 'string') query[n === 'account' ? 'account_id' : n] = v
    }
    return await runOperation(io, (ctx) => admin.listRequests(ctx, query))
  },
}

const KEY_ACTIONS: Record<string, Run> = {
  create: async (args, io) => {
    const { values } = parse(args, { account: { type: 'string' }, ...KEY_FLAGS }, [], ['account', 'name'])
    const accountId = str(values, 'account')
    return await runOperation(io, (ctx) => admin.createKey(ctx, accountId, keyBody(values)))
  },
  list: async (args, io) => {
    const { values } = parse(args, { account: { type: 'string' } }, [], ['account'])
    const accountId = str(values, 'account')
    return await runOperation(io, (ctx) => admin.listKeys(ctx, accountId))
  },
  get: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => admin.getKey(ctx, id))
  },
  update: async (args, io) => {
    const { values, positionals } = parse(args, KEY_FLAGS, ['ID'])
    const body = keyBody(values)
    if (Object.keys(body).length === 0) throw new UsageError('give at least one setting to change')
    return await runOperation(io, (ctx) => admin.updateKey(ctx, positionals[0] ?? '', body))
  },
  revoke: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => admin.revokeKey(ctx, id))
  },
  usage: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => getKeyUsage(ctx, id))
  },
  'reset-usage': async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => resetKeyUsage(ctx, id))
  },
  reveal: async (args, io) => {
    const [id = ''] = parse(args, {}, ['ID']).positionals
    return await runOperation(io, (ctx) => admin.revealKey(ctx, id))
  },
  'import-legacy': async (args, io) => {
    const options = { account: { type: 'string' }, key: { type: 'string' }, ...KEY_FLAGS } satisfies Options
    const { values } = parse(args, options, [], ['account', 'key', 'name'])
    const accountId = str(values, 'account')
    const body = { key: legacyKey(values), ...keyBody(values) }
    return await runOperation(io, (ctx) => admin.importLegacyKey(ctx, accountId, body))
  },
}

async function dispatch (group: string, usage: string, actions: Record<string, Run>, args: string[], io: CommandIo): Promise<number> {
  const [action, ...rest] = args
  const fullUsage = `usage: model-gateway ${usage}\n${ENV_HELP}\n`
  if (action === 'help' || action === '--help' || action === '-h') {
    io.stdout.write(fullUsage)
    return EXIT_OK
  }
  const run = action !== undefined && Object.hasOwn(actions, action) ? actions[action] : undefined
  try {
    if (run === undefined) throw new UsageError(action === undefined ? `${group}: missing action` : `${group}: unknown action ${JSON.stringify(action)}`)
    return await run(rest, io)
  } catch (err) {
    if (err instanceof UsageError) return printUsageError(io, err, fullUsage)
    throw err
  }
}

/** `model-gateway accounts <create|list|get|suspend|reactivate|set-tier> …` */
export async function accountsCommand (args: string[], io: CommandIo = processIo()): Promise<number> {
  return await dispatch('accounts', ACCOUNTS_USAGE, ACCOUNT_ACTIONS, args, io)
}

/** `model-gateway keys <create|list|get|update|revoke|reveal|import-legacy> …` */
export async function keysCommand (args: string[], io: CommandIo = processIo()): Promise<number> {
  return await dispatch('keys', KEYS_USAGE, KEY_ACTIONS, args, io)
}

/** `model-gateway wallet <get|credit> …` */
export async function walletCommand (args: string[], io: CommandIo = processIo()): Promise<number> {
  return await dispatch('wallet', WALLET_USAGE, WALLET_ACTIONS, args, io)
}

/** `model-gateway tiers list` */
export async function tiersCommand (args: string[], io: CommandIo = processIo()): Promise<number> {
  return await dispatch('tiers', TIERS_USAGE, TIER_ACTIONS, args, io)
}

/** `model-gateway requests list …` */
export async function requestsCommand (args: string[], io: CommandIo = processIo()): Promise<number> {
  return await dispatch('requests', REQUESTS_USAGE, REQUEST_ACTIONS, args, io)
}

/** `model-gateway models <list|get|publish|pause|retire|unpublish|reset> …` */
export async function modelsCommand (args: string[], io: CommandIo = processIo()): Promise<number> {
  return await dispatch('models', MODELS_USAGE, MODEL_CLI_ACTIONS, args, io)
}
