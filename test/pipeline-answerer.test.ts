// A route a plugin answers itself (a listing): its forRoute returns a forward, which replaces the
// one forwarding plugin on that route only, after the same admit, resolve and charge and before
// the same settle and finish; two plugins answering one route are refused when the routes are
// registered. A path two families share is served to each by the header that tells them apart.
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { loadConfig } from '../plugins/config/index.js'
import { compilePlan } from '../plugins/gateway/plan.js'
import type { Outcome } from '../plugins/pipeline/context.js'
import { pipelineHost } from '../plugins/pipeline/host.js'
import type { GatewayPlugin } from '../plugins/pipeline/plugin.js'
import { requestPlugin } from '../plugins/request/index.js'
import type { RoutePlan } from '../plugins/routes/compile.js'
import { mockEnv, REPO_CONFIG } from './helpers/gateway.js'

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

async function host (plugins: GatewayPlugin[]): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  await app.register(pipelineHost, { plan, plugins: [requestPlugin(plan.bodies), ...plugins] })
  await app.ready()
  return app
}

async function finished (log: string[]): Promise<void> {
  for (let i = 0; i < 200 && !log.includes('finish'); i++) await new Promise((resolve) => setTimeout(resolve, 5))
}

const isListing = (route: RoutePlan): boolean => route.listing !== undefined

t.test('a plugin that answers a route replaces the forwarder there only, between the same phases', async (t) => {
  const log: string[] = []
  const app = await host([recorder(log), answerer('listings', log, isListing), forwarder(log)])
  t.teardown(() => app.close())

  const listed = await app.inject({ method: 'GET', url: '/v1/models' })
  t.same(listed.json(), { by: 'listings', route: 'GET /v1/models', envelope: 'chat' })
  await finished(log)
  t.same(log.splice(0), ['admit GET /v1/models', 'listings', 'settle', 'finish'], 'admit, the answerer, settle and finish')

  const anthropic = await app.inject({ method: 'GET', url: '/v1/models', headers: { 'anthropic-version': '2023-06-01' } })
  t.same(anthropic.json(), { by: 'listings', route: 'GET /v1/models (anthropic-version)', envelope: 'messages' }, 'the header picks the messages family\'s plan on the shared path')
  await finished(log)
  log.splice(0)

  const chat = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'openai/gpt-4o', messages: [] } })
  t.same(chat.json(), { by: 'forwarder' })
  await finished(log)
  t.same(log.splice(0), ['admit POST /v1/chat/completions', 'forwarder', 'settle', 'finish'], 'every other route: the forwarder')
})

t.test('two plugins answering one route are refused when the routes are registered', async (t) => {
  await t.rejects(host([answerer('one', [], isListing), answerer('two', [], isListing), forwarder([])]), /route GET \/v1\/models is answered by one and two; one plugin may answer a route/)
})
