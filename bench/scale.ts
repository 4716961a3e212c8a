// The scale scenario (npm run bench -- --scale; not in the default run): the full gateway on
// PostgreSQL + Redis with all load on one account ("hot") against load spread over 100 accounts,
// and two instances on the same PostgreSQL and Redis behind a round-robin balancer. Same method
// as the main bench: targets alternate with the bare proxy, each measured run is checked
// against the ledger (every 2xx answer charged exactly once, over both instances for a pair).
import type { BenchChild } from './child-process.js'
import { CORES, forkChild } from './child-process.js'
import type { ChildReport } from './ipc.js'
import { BENCH_KEY, benchKey } from './children/seed.js'
import { WORKLOADS, type Comparison, type Workload } from './scenarios.js'
import { BASELINE, BENCH_PG_URL, BENCH_REDIS_URL, bareProxyTarget, childTarget, type RunningTarget, type Target, type TargetEnv } from './targets.js'
import { randomSchemaName } from '../test/helpers/store.js'

/** Accounts the load is spread over in the "100 accounts" rows. */
export const SCALE_ACCOUNTS = 100

/** One hot account within 20% of 100 accounts (issue 18 item 6). */
export const HOT_GOAL = 0.8

export const SCALE = {
  connections: 50,
  full: { durationS: 8, warmupS: 2, repetitions: 2 },
  quick: { durationS: 3, warmupS: 1, repetitions: 1 }
} as const

const pgEnv = (accounts: number): TargetEnv => ({ BENCH_DATABASE_URL: BENCH_PG_URL, BENCH_REDIS_URL, BENCH_ACCOUNTS: String(accounts) })
const keysOf = (accounts: number): string[] => Array.from({ length: accounts }, (_, i) => benchKey(i))
const gatewayEntry = new URL('./children/gateway.ts', import.meta.url)

/** The gateway on PostgreSQL + Redis with `accounts` funded accounts, each request on a random one's key. */
function pgAccounts (name: string, accounts: number): Target {
  const target = childTarget(
    name,
    `the full gateway on PostgreSQL + Redis (as gateway-pg), ${accounts === 1 ? 'one account: all load on one wallet' : `${accounts} accounts, each request on a random one's key`}`,
    gatewayEntry,
    pgEnv(accounts),
    true
  )
  return { ...target, prepare: async () => ({ headers: {}, keys: keysOf(accounts) }) }
}

/**
 * Reports of several instances on one database as one: served counts summed; the ledger's
 * figures taken from the first (they cover every instance's charges: same schema, same
 * accounts) after the others are quiet, so no instance is still settling when it counts.
 */
function combinedReport (children: readonly BenchChild[]): () => Promise<ChildReport | null> {
  return async () => {
    const [owner, ...others] = children
    if (owner === undefined) return null
    const rest: ChildReport[] = []
    for (const c of others) {
      const r = await c.report()
      if (r === null) return null
      rest.push(r)
    }
    const first = await owner.report()
    if (first === null) return null
    const all = [first, ...rest]
    const sum = (f: (r: ChildReport) => number): number => all.reduce((n, r) => n + f(r), 0)
    return {
      received: sum((r) => r.received),
      finished: sum((r) => r.finished),
      finished2xx: sum((r) => r.finished2xx),
      completed2xx: sum((r) => r.completed2xx),
      quiet: all.every((r) => r.quiet),
      billing: first.billing
    }
  }
}

/**
 * Two gateway instances on one PostgreSQL schema and one Redis prefix (the first seeds, the
 * second joins), behind the round-robin balancer (bench/children/round-robin.ts). Both
 * instances run on the target core (the machine has two); the balancer runs on the load core.
 */
function pgPair (name: string, accounts: number): Target {
  return {
    name,
    description: `two gateway-pg instances, both on core ${CORES.target}, one PostgreSQL schema and one Redis prefix, ${accounts === 1 ? 'one account' : `${accounts} accounts`}, behind a connection round-robin TCP balancer (core ${CORES.load})`,
    bills: true,
    async start (env) {
      const schema = randomSchemaName()
      const shared = { ...env, ...pgEnv(accounts), BENCH_PG_SCHEMA: schema, BENCH_REDIS_PREFIX: `gw-bench:${schema}:` }
      const fork = async (label: string, extra: TargetEnv): Promise<BenchChild> =>
        await forkChild({ name: `${name} ${label}`, entry: gatewayEntry, env: { ...shared, ...extra }, core: CORES.target })
      const a = await fork('a', {})
      let b: BenchChild | undefined
      let lb: BenchChild | undefined
      try {
        b = await fork('b', { BENCH_SEED: 'join' })
        lb = await forkChild({ name: `${name} balancer`, entry: new URL('./children/round-robin.ts', import.meta.url), env: { BENCH_BACKENDS: `${a.url},${b.url}` }, core: CORES.load })
      } catch (err) {
        await b?.stop()
        await a.stop()
        throw err
      }
      const balancer = lb
      const second = b
      // The joining instance first: the first drops the schema when it stops.
      const stop = async (): Promise<void> => {
        await balancer.stop()
        await second.stop()
        await a.stop()
      }
      const child: BenchChild = {
        name,
        pid: a.pid,
        url: balancer.url,
        exited: Promise.race([a.exited, second.exited, balancer.exited]),
        isAlive: () => a.isAlive() && second.isAlive() && balancer.isAlive(),
        startSampling () { throw new Error(`${name}: no memory samples for a pair`) },
        stopSampling () {},
        snapshot: async () => { throw new Error(`${name}: no memory samples for a pair`) },
        report: combinedReport([a, second]),
        stop
      }
      const running: RunningTarget = { url: balancer.url, pid: a.pid, pids: [a.pid, second.pid], stop, child }
      return running
    },
    prepare: async () => ({ headers: {}, keys: keysOf(accounts) })
  }
}

const bare: Target = { ...bareProxyTarget, prepare: async () => ({ headers: {}, keys: [BENCH_KEY] }) }

export const HOT = 'pg-hot'
export const SPREAD = 'pg-100'
export const PAIR_HOT = 'pg-x2-hot'
export const PAIR_SPREAD = 'pg-x2-100'

export const SCALE_TARGETS: ReadonlyMap<string, Target> = new Map([
  bare,
  pgAccounts(HOT, 1),
  pgAccounts(SPREAD, SCALE_ACCOUNTS),
  pgPair(PAIR_HOT, 1),
  pgPair(PAIR_SPREAD, SCALE_ACCOUNTS)
].map((t) => [t.name, t]))

export function scaleTarget (name: string): Target {
  const t = SCALE_TARGETS.get(name)
  if (!t) throw new Error(`unknown scale target ${name}`)
  return t
}

/** Per workload, in measuring order (the bare proxy first); no goal over the bare proxy here. */
export function scalePlan (): Array<{ workload: Workload, targets: string[], goals: Map<string, number> }> {
  return [WORKLOADS.chat, WORKLOADS.chatStream].map((workload) => ({
    workload,
    targets: [BASELINE, HOT, SPREAD, PAIR_HOT, PAIR_SPREAD],
    goals: new Map()
  }))
}

export const SCALE_COMPARISONS: readonly Comparison[] = [
  { label: 'one hot account over 100 accounts', target: HOT, over: SPREAD, goal: HOT_GOAL },
  { label: 'two instances over one, one account', target: PAIR_HOT, over: HOT },
  { label: 'two instances over one, 100 accounts', target: PAIR_SPREAD, over: SPREAD }
]
