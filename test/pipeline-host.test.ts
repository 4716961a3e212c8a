// The host runs the phases of the plugins it is given, in phase order and, within a phase, in
// the composition root's order; it imports no concern. The plugins here are recorders; the
// host under test is the real one, on the repository's gateway.yaml.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { compilePlan } from '../plugins/apps/gateway/plan.js'
import { gatewayError } from '../plugins/foundation/errors/index.js'
import { compileModels } from '../plugins/concerns/models/index.js'
import type { Outcome } from '../plugins/foundation/pipeline/context.js'
import { pipelineHost } from '../plugins/foundation/pipeline/host.js'
import { requestPlugin } from '../plugins/foundation/request/index.js'
import { PHASES, planPhases, type GatewayPlugin } from '../plugins/foundation/pipeline/plugin.js'
import { REPO_CONFIG } from './helpers/gateway.js'
import { repoPath } from './helpers/paths.js'

const { config } = loadConfig(REPO_CONFIG, { ...process.env, OPENAI_BASE_URL: 'http://127.0.0.1:9' })
const plan = compilePlan(config)
const models = compileModels(config)
const done = (status: number): Outcome => ({ kind: 'completed', httpStatus: status, errorCode: null, answeredModel: null, upstreamMs: null, usage: null, overheadMs: null })

function recorder (name: string, log: string[], refuse?: { phase: 'admit' | 'resolve' | 'charge', when: () => boolean }): GatewayPlugin {
  const step = (phase: 'admit' | 'resolve' | 'charge') => (ctx: { body: unknown, model: { id: string } | null }) => {
    log.push(`${name}:${phase}${phase === 'admit' ? (ctx.body === undefined ? '(no body)' : '(body!)') : `(${ctx.model?.id ?? '-'})`}`)
    if (refuse?.phase === phase && refuse.when()) throw gatewayError('MODEL_ACCESS_DENIED')
  }
  return {
    name,
    admit: step('admit'),
    resolve: step('resolve'),
    charge: step('charge'),
    settle: (_ctx, outcome) => { log.push(`${name}:settle(${outcome.kind})`) },
    finish: (_ctx, outcome) => { log.push(`${name}:finish(${outcome.httpStatus})`) }
  }
}

/** Resolves the body's model, then forwards nowhere: tries the fallback, answers 200, ends. */
function forwarder (log: string[]): GatewayPlugin {
  return {
    name: 'fake-forward',
    resolve (ctx) { ctx.model ??= models.resolve(String((ctx.body?.kind === 'json' && ctx.body.json.model) ?? ''), ctx.plan.operation) },
    async forward (ctx, _req, reply, control) {
      log.push('forward')
      const fallback = models.get('openai/gpt-4o-mini')
      if (fallback) log.push(`retarget:${String(await control.retarget(fallback))}`)
      reply.send({ ok: true })
      control.end(done(200))
    }
  }
}

async function host (plugins: GatewayPlugin[]): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  // The request plugin (the real one) registers the body parsers the gateway reads bodies with.
  await app.register(pipelineHost, { plan, plugins: [requestPlugin(plan.bodies), ...plugins] })
  return app
}

async function settled (log: string[], entry: string): Promise<void> {
  for (let i = 0; i < 200 && !log.includes(entry); i++) await new Promise((resolve) => setTimeout(resolve, 5))
}

const chat = { model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] }

t.test('phases run in order; within a phase, plugins in list order; fallbacks re-run resolve and charge', async (t) => {
  const log: string[] = []
  const app = await host([recorder('a', log), recorder('b', log), forwarder(log)])
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })
  t.equal(res.statusCode, 200)
  await settled(log, 'b:finish(200)')
  t.same(log, [
    'a:admit(no body)', 'b:admit(no body)',
    'a:resolve(-)', 'b:resolve(-)',
    'a:charge(openai/gpt-4o)', 'b:charge(openai/gpt-4o)',
    'forward',
    'a:resolve(openai/gpt-4o-mini)', 'b:resolve(openai/gpt-4o-mini)',
    'a:charge(openai/gpt-4o-mini)', 'b:charge(openai/gpt-4o-mini)',
    'retarget:true',
    'a:settle(completed)', 'b:settle(completed)',
    'a:finish(200)', 'b:finish(200)'
  ], 'admit sees no body; the per-model phases see each target')
})

t.test('a refusal at admission skips the body and every later phase but settle and finish', async (t) => {
  const log: string[] = []
  const app = await host([recorder('a', log, { phase: 'admit', when: () => true }), recorder('b', log), forwarder(log)])
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })
  t.equal(res.statusCode, 403)
  t.equal(res.json().error.code, 'MODEL_ACCESS_DENIED', 'in the family envelope')
  await settled(log, 'b:finish(403)')
  t.same(log, ['a:admit(no body)', 'a:settle(refused)', 'b:settle(refused)', 'a:finish(403)', 'b:finish(403)'])
})

t.test('a fallback refused by a per-model phase is reported to the forwarder, not to the client', async (t) => {
  const log: string[] = []
  let n = 0
  const app = await host([recorder('a', log, { phase: 'charge', when: () => ++n === 2 }), forwarder(log)])
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })
  t.equal(res.statusCode, 200)
  t.ok(log.includes('retarget:false'), 'retarget said the fallback cannot serve')
})

t.test('a body Fastify cannot parse ends the admitted request in its refusal', async (t) => {
  const log: string[] = []
  const app = await host([recorder('a', log), forwarder(log)])
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, payload: '{"model":' })
  t.equal(res.statusCode, 400)
  await settled(log, 'a:finish(400)')
  t.same(log, ['a:admit(no body)', 'a:settle(refused)', 'a:finish(400)'], 'settled and finished once, never forwarded')
})

t.test('a failing settle hook is logged and the next still run', async (t) => {
  const log: string[] = []
  const failing: GatewayPlugin = { name: 'failing', settle: () => { throw new Error('ledger down') } }
  const app = await host([failing, recorder('a', log), forwarder(log)])
  t.teardown(() => app.close())
  await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })
  await settled(log, 'a:finish(200)')
  t.ok(log.includes('a:settle(completed)') && log.includes('a:finish(200)'))
})

t.test('the plugin list: unique names, exactly one forwarder', async (t) => {
  const f = forwarder([])
  t.throws(() => planPhases([{ name: 'x' }, { name: 'x' }, f]), /listed twice/)
  t.throws(() => planPhases([{ name: 'x' }]), /exactly one gateway plugin must forward; found none/)
  t.throws(() => planPhases([f, { ...f, name: 'other' }]), /found fake-forward, other/)
  t.same(PHASES, ['admit', 'resolve', 'charge', 'forward', 'settle', 'finish'])
})

t.test('the host imports no concern: only the foundation (config, errors, routes), and the plain shapes of a model, body and usage as types', async (t) => {
  const dir = repoPath('plugins', 'foundation', 'pipeline')
  const runtime = /^(\.\/|\.\.\/(config|errors|routes)\/)/
  const typeOnly = /^(\.\/|\.\.\/(config|errors|routes|shapes)\/)/
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const source = readFileSync(join(dir, file), 'utf8')
    for (const m of source.matchAll(/^import (type )?[^'"]*from '([^']+)'/gm)) {
      const from = m[2] ?? ''
      if (!from.startsWith('.')) continue
      t.match(from, m[1] === undefined ? runtime : typeOnly, `${file} imports ${from}${m[1] === undefined ? '' : ' (types only)'}`)
    }
  }
})
