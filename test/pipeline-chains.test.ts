// One chain per route: the host asks each plugin's forRoute once per route plan which of its
// hooks apply there, and a request runs only those, still in phase order and plugin order. The
// composition root's plugins leave out of a route what its configuration says cannot apply.
import t from 'tap'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { gatewayError } from '../plugins/foundation/errors/index.js'
import { GatewayMetrics } from '../plugins/concerns/metrics/index.js'
import { compilePlan } from '../plugins/apps/gateway/plan.js'
import type { Outcome } from '../plugins/foundation/pipeline/context.js'
import type { GatewayPlugin, PluginHooks } from '../plugins/foundation/pipeline/plugin.js'
import type { RoutePlan } from '../plugins/foundation/routes/compile.js'
import { mockEnv, REPO_CONFIG } from './helpers/gateway.js'
import { chainNames, hostOf, logged, rootPlugins } from './helpers/pipeline.js'

const { config } = loadConfig(REPO_CONFIG, mockEnv('http://127.0.0.1:9'))
const plan = compilePlan(config)
const done = (status: number): Outcome => ({ kind: 'completed', httpStatus: status, errorCode: null, answeredModel: null, upstreamMs: null, usage: null, overheadMs: null })

/** Records its hooks; on `only` routes (by operation) it runs them, on the others none. */
function routed (name: string, log: string[], only: (route: RoutePlan) => boolean, asked: RoutePlan[], refuseAt?: 'admit' | 'resolve'): GatewayPlugin {
  const step = (phase: string) => () => {
    log.push(`${name}:${phase}`)
    if (phase === refuseAt) throw gatewayError('MODEL_ACCESS_DENIED')
  }
  const hooks: PluginHooks = {
    admit: step('admit'),
    resolve: step('resolve'),
    charge: step('charge'),
    settle: () => { log.push(`${name}:settle`) },
    finish: () => { log.push(`${name}:finish`) }
  }
  return {
    name,
    ...hooks,
    forRoute (route) {
      asked.push(route)
      return only(route) ? hooks : {}
    }
  }
}

function recorder (name: string, log: string[]): GatewayPlugin {
  return {
    name,
    admit: () => { log.push(`${name}:admit`) },
    resolve: () => { log.push(`${name}:resolve`) },
    charge: () => { log.push(`${name}:charge`) },
    settle: () => { log.push(`${name}:settle`) },
    finish: () => { log.push(`${name}:finish`) }
  }
}

function answering (log: string[]): GatewayPlugin {
  return {
    name: 'answer',
    async forward (_ctx, _req, reply, control) {
      log.push('forward')
      reply.send({ ok: true })
      control.end(done(200))
    }
  }
}

const chat = { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }
const isChat = (r: RoutePlan): boolean => r.operation === 'chat.completions'

t.test('a plugin runs its hooks only on the routes its forRoute chose, in phase and list order among the others', async (t) => {
  const log: string[] = []
  const asked: RoutePlan[] = []
  const app = await hostOf(plan, [recorder('a', log), routed('chat-only', log, isChat, asked), recorder('b', log), answering(log)])
  t.teardown(() => app.close())

  t.equal(new Set(asked).size, asked.length, 'forRoute was asked once per route plan')
  t.equal(asked.length, plan.routes.plans.length, 'for every route plan, when the routes were registered')

  const chatAnswer = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })
  t.equal(chatAnswer.statusCode, 200)
  await logged(log, 'b:finish')
  t.same(log.splice(0), [
    'a:admit', 'chat-only:admit', 'b:admit',
    'a:resolve', 'chat-only:resolve', 'b:resolve',
    'a:charge', 'chat-only:charge', 'b:charge',
    'forward',
    'a:settle', 'chat-only:settle', 'b:settle',
    'a:finish', 'chat-only:finish', 'b:finish'
  ], 'on its route: every phase, between a and b')

  const messages = await app.inject({ method: 'POST', url: '/v1/messages', payload: { ...chat, max_tokens: 10 } })
  t.equal(messages.statusCode, 200)
  await logged(log, 'b:finish')
  t.same(log.splice(0), [
    'a:admit', 'b:admit', 'a:resolve', 'b:resolve', 'a:charge', 'b:charge', 'forward', 'a:settle', 'b:settle', 'a:finish', 'b:finish'
  ], 'on another route: none of its hooks')
  t.equal(asked.length, plan.routes.plans.length, 'requests asked forRoute nothing more')
})

t.test('a refusal by a routed hook skips the later phases but settle and finish, of that route\'s chain', async (t) => {
  const log: string[] = []
  const app = await hostOf(plan, [recorder('a', log), routed('chat-only', log, isChat, [], 'resolve'), recorder('b', log), answering(log)])
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })
  t.equal(res.statusCode, 403)
  await logged(log, 'b:finish')
  t.same(log, [
    'a:admit', 'chat-only:admit', 'b:admit',
    'a:resolve', 'chat-only:resolve',
    'a:settle', 'chat-only:settle', 'b:settle',
    'a:finish', 'chat-only:finish', 'b:finish'
  ])
})

t.test('the composition root: each route\'s chain leaves out what its configuration rules out', async (t) => {
  const plugins = await rootPlugins(t, plan, { metrics: new GatewayMetrics({ defaultMetrics: false }) })
  const route = (id: string): RoutePlan => {
    const found = plan.routes.plans.find((r) => r.id === id)
    if (found === undefined) throw new Error(`no route ${id}`)
    return found
  }

  const chatRoute = route('POST /v1/chat/completions')
  t.same(chainNames(plugins, chatRoute, 'admit'), ['auth', 'limits', 'idempotency'], 'chat, admit: no image pause, no job to find')
  t.same(chainNames(plugins, chatRoute, 'resolve'), ['request', 'models', 'auth', 'operations', 'admission', 'features', 'metrics'], 'chat, resolve: every model check; a stream may open')
  t.same(chainNames(plugins, chatRoute, 'charge'), ['limits', 'idempotency', 'wallet'])

  const images = route('POST /v1/images/generations')
  t.same(chainNames(plugins, images, 'admit'), ['auth', 'limits', 'caps', 'idempotency'], 'an image route: the platform image pause is checked')

  const poll = route('GET /v1/videos/{id}')
  t.same(chainNames(plugins, poll, 'admit'), ['auth', 'limits', 'jobs'], 'a job poll, admit: the job is the caller\'s; a GET reads no idempotency key')
  t.same(chainNames(plugins, poll, 'resolve'), ['request'], 'a job poll names no model: no model phase runs; it never streams')
  t.same(chainNames(plugins, poll, 'charge'), [], 'nothing is held for it')
  t.same(chainNames(plugins, poll, 'settle'), ['wallet'], 'it still settles (a refused poll releases nothing, records its billing)')
  t.same(chainNames(plugins, poll, 'finish'), chainNames(plugins, chatRoute, 'finish'), 'and finishes like every request')
})
