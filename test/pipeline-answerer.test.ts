// A route a plugin answers itself (a listing): its forRoute returns a forward, which replaces the
// one forwarding plugin on that route only, after the same admit, resolve and charge and before
// the same settle and finish; two plugins answering one route are refused when the routes are
// registered. A path two families share is served to each by the header that tells them apart.
import t from 'tap'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { compilePlan } from '../plugins/apps/gateway/plan.js'
import { routeChain, planPhases } from '../plugins/foundation/pipeline/plugin.js'
import type { Outcome } from '../plugins/foundation/pipeline/context.js'
import { PHASES, type GatewayPlugin } from '../plugins/foundation/pipeline/plugin.js'
import type { RoutePlan } from '../plugins/foundation/routes/compile.js'
import { mockEnv, REPO_CONFIG } from './helpers/gateway.js'
import { chainNames, hostOf, logged, rootPlugins } from './helpers/pipeline.js'

const { config } = loadConfig(REPO_CONFIG, mockEnv('http://127.0.0.1:9'))
const plan = compilePlan(config)
const done = (status: number): Outcome => ({ kind: 'completed', httpStatus: status, errorCode: null, answeredModel: null, upstreamMs: null, usage: null, overheadMs: null })

function recorder (log: string[]): GatewayPlugin {
  return {
    name: 'recorder',
    admit: (ctx) => { log.push(`admit ${ctx.plan.id}`) },
    settle: () => { log.push('settle') },
    finish: () => { log.push('finish') }
  }
}

function forwarder (log: string[]): GatewayPlugin {
  return {
    name: 'forwarder',
    async forward (_ctx, _req, reply, control) {
      log.push('forwarder')
      reply.send({ by: 'forwarder' })
      control.end(done(200))
    }
  }
}

/** Answers the routes `only` picks, by plan id and envelope. */
function answerer (name: string, log: string[], only: (route: RoutePlan) => boolean): GatewayPlugin {
  return {
    name,
    forRoute: (route) => only(route)
      ? {
          async forward (ctx, _req, reply, control) {
            log.push(name)
            reply.send({ by: name, route: ctx.plan.id, envelope: ctx.plan.envelope })
            control.end(done(200))
          }
        }
      : {}
  }
}

const isListing = (route: RoutePlan): boolean => route.listing !== undefined

t.test('a plugin that answers a route replaces the forwarder there only, between the same phases', async (t) => {
  const log: string[] = []
  const app = await hostOf(plan, [recorder(log), answerer('listings', log, isListing), forwarder(log)])
  t.teardown(() => app.close())

  const listed = await app.inject({ method: 'GET', url: '/v1/models' })
  t.same(listed.json(), { by: 'listings', route: 'GET /v1/models', envelope: 'chat' })
  await logged(log, 'finish')
  t.same(log.splice(0), ['admit GET /v1/models', 'listings', 'settle', 'finish'], 'admit, the answerer, settle and finish')

  const anthropic = await app.inject({ method: 'GET', url: '/v1/models', headers: { 'anthropic-version': '2023-06-01' } })
  t.same(anthropic.json(), { by: 'listings', route: 'GET /v1/models (anthropic-version)', envelope: 'messages' }, 'the header picks the messages family\'s plan on the shared path')
  await logged(log, 'finish')
  log.splice(0)

  const chat = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'openai/gpt-4o', messages: [] } })
  t.same(chat.json(), { by: 'forwarder' })
  await logged(log, 'finish')
  t.same(log.splice(0), ['admit POST /v1/chat/completions', 'forwarder', 'settle', 'finish'], 'every other route: the forwarder')
})

t.test('two plugins answering one route are refused when the routes are registered', async (t) => {
  await t.rejects(hostOf(plan, [answerer('one', [], isListing), answerer('two', [], isListing), forwarder([])]), /route GET \/v1\/models is answered by one and two; one plugin may answer a route/)
})

t.test('the composition root: a listing runs admit (key, rate limit), a read of the model statuses, settle and finish; the listings plugin answers it', async (t) => {
  const plugins = await rootPlugins(t, plan)
  const names = (route: RoutePlan, phase: typeof PHASES[number]): string[] => chainNames(plugins, route, phase)
  const listings = plan.routes.plans.filter((r) => r.listing !== undefined)
  t.same(listings.map((r) => r.id), ['GET /v1/models', 'GET /v1/models/{id}', 'GET /v1/models (anthropic-version)', 'GET /v1/models/{id} (anthropic-version)', 'GET /genai/v1beta/models'], 'the shipped listings')
  const chat = plan.routes.plans.find((r) => r.id === 'POST /v1/chat/completions')
  if (chat === undefined) throw new Error('no chat route')
  const phases = planPhases(plugins)
  for (const route of listings) {
    t.same(names(route, 'admit'), ['auth', 'limits'], `${route.id}: the key and the rate limit`)
    t.same(names(route, 'resolve'), ['request', 'models'], `${route.id}: no body; the stored statuses read`)
    t.same(names(route, 'charge'), [], `${route.id}: nothing held`)
    t.same(names(route, 'settle'), ['wallet'], `${route.id}: settles (nothing held, NOT_BILLED recorded)`)
    t.same(plugins.filter((p) => p.forward === undefined && typeof p.forRoute?.(route).forward === 'function').map((p) => p.name), ['listings'], `${route.id}: the listings plugin answers it`)
    t.same(names(route, 'finish'), names(chat, 'finish'), `${route.id}: finished like every request`)
    t.not(routeChain(phases, route).forward, phases.forward, `${route.id}: the upstream does not forward it`)
  }
  t.equal(routeChain(phases, chat).forward, phases.forward, 'a call is forwarded upstream')
})
