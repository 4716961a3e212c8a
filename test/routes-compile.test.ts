import t from 'tap'
import { compileRoutes } from '../plugins/foundation/routes/compile.js'
import type { GatewayConfig } from '../plugins/foundation/config/types.js'

type RouteInput = Omit<GatewayConfig['routes'][number], 'content_policy' | 'deferred_params'>

/** A config of these routes, their `content_policy` and `deferred_params` at the schema's default as loadConfig fills them. */
function config (input: RouteInput[]): GatewayConfig {
  const routes = input.map((r) => ({ content_policy: [], deferred_params: [], ...r }))
  return {
    families: {
      chat: { envelope: 'chat', prefixes: ['/v1/', '/responses'] },
      messages: { envelope: 'messages', prefixes: ['/msgs/', '/v1/messages'] },
      genai: { envelope: 'genai', prefixes: ['/genai/'] }
    },
    routes
  } as unknown as GatewayConfig
}

t.test('plain paths, aliases and {id} parameters become Fastify routes sharing one plan', async (t) => {
  const c = compileRoutes(config([
    { path: '/v1/messages', aliases: ['/msgs/v1/messages'], method: 'POST', family: 'messages', operation: 'messages', body: ['json'], response: 'auto' },
    { path: '/v1/videos/{id}/content', aliases: [], method: 'GET', family: 'chat', operation: 'videos.content', body: ['none'], response: 'binary' }
  ]))
  t.same(c.fastifyRoutes.map((r) => `${r.method} ${r.url}`), ['POST /v1/messages', 'POST /msgs/v1/messages', 'GET /v1/videos/:id/content'])
  const [a, b] = c.fastifyRoutes
  t.ok(a?.kind === 'plain' && b?.kind === 'plain' && a.plan === b.plan, 'alias shares the plan')
  t.equal(c.plans[0]?.envelope, 'messages')
})

t.test('{model} paths share one wildcard per prefix and dispatch on the action', async (t) => {
  const c = compileRoutes(config([
    { path: '/genai/v1beta/models/{model}:generateContent', aliases: [], method: 'POST', family: 'genai', operation: 'genai.generateContent', body: ['json'], response: 'json' },
    { path: '/genai/v1beta/models/{model}:streamGenerateContent', aliases: [], method: 'POST', family: 'genai', operation: 'genai.streamGenerateContent', body: ['json'], response: 'sse' }
  ]))
  t.equal(c.fastifyRoutes.length, 1)
  const w = c.fastifyRoutes[0]
  if (w?.kind !== 'model-wildcard') throw new Error('expected a wildcard')
  t.equal(w.url, '/genai/v1beta/models/*')
  const hit = (rest: string): [string | undefined, string | undefined] => {
    for (const m of w.matchers) {
      const found = m.pattern.exec(rest)
      if (found) return [m.plan.operation, found[1]]
    }
    return [undefined, undefined]
  }
  t.same(hit('openai%2Fgpt-4o:generateContent'), ['genai.generateContent', 'openai%2Fgpt-4o'])
  t.same(hit('google/gemini-2.5-flash:streamGenerateContent'), ['genai.streamGenerateContent', 'google/gemini-2.5-flash'])
  t.same(hit('a/b:c:generateContent'), ['genai.generateContent', 'a/b:c'], 'a colon inside the id stays in the id')
  t.same(hit('a/b:countTokens'), [undefined, undefined])
  t.same(hit(':generateContent'), ['genai.generateContent', ''], 'an empty model segment still names the action (REQUEST_MODEL_REQUIRED, not a 404)')
})

t.test('a {model} alias one segment up gets a wildcard of its own, dispatching to the same plan', async (t) => {
  const c = compileRoutes(config([
    { path: '/genai/v1beta/models/{model}:generateContent', aliases: ['/genai/v1beta/{model}:generateContent'], method: 'POST', family: 'genai', operation: 'genai.generateContent', body: ['json'], response: 'json' }
  ]))
  t.same(c.fastifyRoutes.map((r) => `${r.method} ${r.url}`), ['POST /genai/v1beta/models/*', 'POST /genai/v1beta/*'])
  const [models, bare] = c.fastifyRoutes
  if (models?.kind !== 'model-wildcard' || bare?.kind !== 'model-wildcard') throw new Error('expected two wildcards')
  t.equal(models.matchers[0]?.plan, bare.matchers[0]?.plan, 'one plan for both shapes')
  t.equal(bare.prefix, '/genai/v1beta/')
  t.same(bare.matchers[0]?.pattern.exec('genai/gemini-2.5-flash:generateContent')?.[1], 'genai/gemini-2.5-flash', 'the id keeps its slash')
  t.same(bare.matchers[0]?.pattern.exec('genai%2Fgemini-2.5-flash:generateContent')?.[1], 'genai%2Fgemini-2.5-flash', 'or arrives encoded')
  t.equal(c.plans.length, 1)
})

t.test('unknown paths take the envelope of their longest family prefix', async (t) => {
  const c = compileRoutes(config([]))
  t.equal(c.envelopeForPath('/v1/messages/batches'), 'messages')
  t.equal(c.envelopeForPath('/v1/anything'), 'chat')
  t.equal(c.envelopeForPath('/msgs/v2/x'), 'messages')
  t.equal(c.envelopeForPath('/genai/v1/x'), 'genai')
  t.equal(c.envelopeForPath('/elsewhere'), 'chat')
})
