// The config is compiled once: one plan per boot and one per hot reload that swaps the config
// (plugins/apps/gateway/plan.ts), counted on the diagnostics channel each compile publishes to; the
// plan is frozen and named by the config's hash; no concern compiles the raw config again.
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t from 'tap'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { openServices } from '../plugins/apps/gateway/index.js'
import { compilePlan, compileSlices, PLAN_COMPILED_CHANNEL, PLAN_STEPS, type GatewayPlan, type PlanCompiledMessage } from '../plugins/apps/gateway/plan.js'
import { buildServer } from '../plugins/apps/server/server.js'
import { mockEnv, REPO_CONFIG } from './helpers/gateway.js'
import { ROOT, tsSources } from './helpers/paths.js'
import { setPrice, startReloadGateway } from './helpers/reload.js'
import { TEST_SECRET } from './helpers/store.js'

const env = mockEnv('http://127.0.0.1:9')

/** Every plan compiled while `run` runs (the channel's messages, in order). */
function recordCompiles (t: { teardown: (fn: () => void) => void }): PlanCompiledMessage[] {
  const seen: PlanCompiledMessage[] = []
  const listener = (message: unknown): void => { seen.push(message as PlanCompiledMessage) }
  subscribe(PLAN_COMPILED_CHANNEL, listener)
  t.teardown(() => { unsubscribe(PLAN_COMPILED_CHANNEL, listener) })
  return seen
}

t.test('serve: one compile per boot, one per reload that swaps; an unchanged, invalid or restart-only file compiles nothing', async (t) => {
  const compiles = recordCompiles(t)
  const gw = await startReloadGateway({ backend: 'sqlite' })
  t.teardown(async () => { await gw.close() })
  t.equal(compiles.length, 1, 'booting the gateway compiled its config once')
  t.equal(compiles[0]?.hash, gw.host.hash, 'the compiled plan is the served config\'s (its hash)')
  t.equal(compiles[0]?.plan, gw.host.plan, 'and it is the plan the generation serves')

  gw.write((c) => { setPrice(c, 'openai/gpt-4o-mini', '1.00', '2.00') })
  const swapped = await gw.reload()
  t.equal(swapped.status, 200)
  t.equal(swapped.json.changed, true, 'the reload swapped the config')
  t.equal(compiles.length, 2, 'the reload compiled the new config once')
  t.equal(compiles[1]?.hash, swapped.json.hash, 'its plan has the new hash')
  t.equal(gw.host.plan, compiles[1]?.plan, 'the new generation serves the new plan, swapped whole')

  const unchanged = await gw.reload()
  t.same({ status: unchanged.status, changed: unchanged.json.changed }, { status: 200, changed: false }, 'reloading an unchanged file answers unchanged')
  t.equal(compiles.length, 2, 'an unchanged file is not compiled (the hashes are compared first)')

  gw.writeText('routes: [\n')
  const invalid = await gw.reload()
  t.equal(invalid.status, 422, 'an invalid file is refused')
  t.equal(compiles.length, 2, 'an invalid file is not compiled: the running plan keeps serving')

  gw.write((c) => { c.server.port = 9 })
  const restartOnly = await gw.reload()
  t.equal(restartOnly.status, 422, 'a restart-only change is refused')
  t.equal(compiles.length, 2, 'a file refused for a restart-only key is not compiled')
  t.equal(gw.host.plan, compiles[1]?.plan, 'the plan of the last swap still serves')
})

t.test('buildServer compiles the config it is given once, and not at all with its plan', async (t) => {
  const compiles = recordCompiles(t)
  const { config } = loadConfig(REPO_CONFIG, env)
  const dir = mkdtempSync(join(tmpdir(), 'gw-plan-'))
  const services = await openServices({ dataDir: dir, secret: TEST_SECRET, defaultTier: config.limits.default_tier })
  t.teardown(async () => {
    await services.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const fromConfig = await buildServer({ config, services, logger: false, metrics: null })
  await fromConfig.ready()
  await fromConfig.close()
  t.equal(compiles.length, 1, 'a server built from a config: one compile (framework errors, client errors, routes, plugins, admin all read it)')
  const plan = compilePlan(config)
  compiles.length = 0
  const fromPlan = await buildServer({ config, plan, services, logger: false, metrics: null, adminToken: 'plan-admin-token-0123456789-abcdefghijk' })
  await fromPlan.ready()
  await fromPlan.close()
  t.equal(compiles.length, 0, 'given its plan: none')
  const other = compilePlan(loadConfig(REPO_CONFIG, { ...env, OPENAI_BASE_URL: 'http://127.0.0.1:10' }).config)
  await t.rejects(buildServer({ config, plan: other, services, logger: false, metrics: null }), /not the plan of `config`/, 'a plan of another config is refused')
})

t.test('the plan is frozen, and two compiles of one file have the same hash', async (t) => {
  const compiles = recordCompiles(t)
  const first = loadConfig(REPO_CONFIG, env)
  const second = loadConfig(REPO_CONFIG, env)
  const a = compilePlan(first.config)
  const b = compilePlan(second.config, second.hash)
  t.equal(compiles.length, 2, 'each compile publishes once')
  t.equal(a.hash, b.hash, 'two compiles of the same YAML: the same hash')
  t.equal(a.hash, first.hash, 'the hash is the config\'s (what check and /readyz show)')
  t.not(a, b, 'two compiles are two plans')
  const other = compilePlan(loadConfig(REPO_CONFIG, { ...env, OPENAI_BASE_URL: 'http://127.0.0.1:10' }).config)
  t.not(other.hash, a.hash, 'another config: another hash')

  const plan: GatewayPlan = a
  t.ok(Object.isFrozen(plan), 'the plan is frozen')
  const slices: Record<string, unknown> = plan
  for (const step of PLAN_STEPS) t.ok(Object.isFrozen(slices[step.slice]), `its ${step.slice} slice is frozen`)
  t.ok(Object.isFrozen(plan.routes.plans) && plan.routes.plans.every((r) => Object.isFrozen(r)), 'every route plan is frozen')
  t.ok(plan.models.list().every((m) => Object.isFrozen(m)), 'every compiled model is frozen')
  t.throws(() => { (plan as { hash: string }).hash = 'x' }, TypeError, 'a field cannot be replaced')
  t.throws(() => { (plan.upstream as { healthCheckIntervalMs: number }).healthCheckIntervalMs = 1 }, TypeError, 'nor a slice\'s')
  t.same(PLAN_STEPS.map((s) => s.slice), ['catalogue', 'routes', 'bodies', 'models', 'keyHeaders', 'limits', 'jobs', 'operations', 'admission', 'upstream'], 'the steps: the host\'s, then each concern\'s in the composition root\'s order')
  t.same(Object.keys(plan).sort(), ['admission', 'bodies', 'catalogue', 'config', 'hash', 'jobs', 'keyHeaders', 'limits', 'models', 'operations', 'routes', 'upstream'], 'the plan holds each step\'s slice, the config and its hash')
})

t.test('each slice is compiled once, on its first read, whatever the steps\' order; a step that reads itself fails naming the chain', async (t) => {
  const config = loadConfig(REPO_CONFIG, env).config
  // The real plan takes the lazy path on every compile: the routes (a host step, listed first) read the operations table (a concern's, later).
  const order = PLAN_STEPS.map((s) => s.slice)
  t.ok(order.indexOf('routes') < order.indexOf('operations'), 'the routes step is listed before the operations it reads')
  const calls: string[] = []
  const step = (slice: string, compile: (plan: Record<string, unknown>) => unknown): (typeof PLAN_STEPS)[number] =>
    ({ slice, compile: (_config, plan) => { calls.push(slice); return compile(plan as unknown as Record<string, unknown>) } })
  const slices = compileSlices(config, 'h1', [
    step('a', (plan) => ({ fromB: plan.b, hash: plan.hash, server: (plan.config as typeof config).server === config.server })),
    step('b', (plan) => ({ n: 2, fromC: plan.c })),
    step('c', () => ['c'])
  ])
  t.same(calls, ['a', 'b', 'c'], 'each step ran once: a, which read b, which read c')
  t.same(slices.a, { fromB: { n: 2, fromC: ['c'] }, hash: 'h1', server: true }, 'a step reads later slices, the hash and the config')
  t.equal((slices.a as { fromB: unknown }).fromB, slices.b, 'a slice read by another is the same object as the plan\'s')
  t.ok(Object.isFrozen(slices.b) && Object.isFrozen(slices.c), 'every slice is frozen')
  t.throws(() => compileSlices(config, 'h', [step('a', (plan) => plan.b), step('b', (plan) => plan.c), step('c', (plan) => plan.a)]),
    { message: 'plan: the a slice reads itself (a → b → c → a)' }, 'a cycle of reads fails, naming it')
  t.throws(() => compileSlices(config, 'h', [step('a', () => 1), step('a', () => 2)]), { message: 'plan: two steps compile the a slice' }, 'two steps of one slice fail')
  t.throws(() => compileSlices(config, 'h', [step('config', () => 1)]), { message: /may not compile a slice named config/ }, 'a slice may not take the plan\'s own field')
})

t.test('no concern compiles the raw config itself: the plan\'s compile steps are called from the plan and the concerns\' declarations only', async (t) => {
  // Each step's compile and where else it may be called: the plan's own list, and the helpers
  // for callers that hold a bare config and no plan (documented beside each).
  const allowed: Record<string, string[]> = {
    compileRoutes: ['plugins/apps/gateway/plan.ts', 'plugins/foundation/pipeline/host.ts'],
    compileCatalogue: ['plugins/apps/gateway/plan.ts', 'plugins/foundation/pipeline/host.ts', 'plugins/apps/server/admin-server.ts', 'plugins/apps/admin/routes.ts', 'plugins/apps/admin/cli-runtime.ts'],
    compileOperations: ['plugins/foundation/operations/concern.ts', 'plugins/foundation/routes/compile.ts', 'plugins/concerns/jobs/job-routes.ts'],
    compileModelTable: ['plugins/concerns/models/concern.ts', 'plugins/concerns/models/catalogue.ts'],
    compileUpstreamPlan: ['plugins/concerns/upstream/concern.ts', 'plugins/concerns/upstream/providers.ts'],
    compileJobRoutes: ['plugins/concerns/jobs/concern.ts'],
    compilePolicies: ['plugins/concerns/limits/concern.ts'],
    compileKeyHeaders: ['plugins/concerns/auth/concern.ts'],
    compileAdmission: ['plugins/concerns/admission/concern.ts'],
    bodyOptionsOf: ['plugins/foundation/request/concern.ts'],
    // The table and a catalogue over it in one call: for tools and tests only.
    compileModels: [],
    compilePlan: ['plugins/apps/gateway/plan.ts', 'plugins/apps/gateway/index.ts', 'plugins/apps/server/server.ts', 'plugins/apps/server/reload.ts']
  }
  const calls = new Map<string, Set<string>>()
  for (const file of tsSources(join(ROOT, 'plugins'))) {
    const text = readFileSync(file, 'utf8')
    for (const name of Object.keys(allowed)) {
      // A call, not the declaration (`function name (`) nor a mention in a comment.
      const called = text.split('\n').some((line) => !/^\s*(\/\/|\*|\/\*)/.test(line) && new RegExp(`(?<!function )\\b${name}\\s*\\(`).test(line))
      if (called) calls.set(name, (calls.get(name) ?? new Set()).add(relative(ROOT, file)))
    }
  }
  for (const [name, files] of Object.entries(allowed)) {
    const found = [...(calls.get(name) ?? [])].sort()
    t.ok(found.every((f) => files.includes(f)), `${name} is called only from ${files.join(', ')} (found: ${found.join(', ') || 'none'})`)
  }
  t.ok(calls.get('compileRoutes')?.has('plugins/apps/gateway/plan.ts'), 'the plan compiles the routes')
})
