// The pure parts of plugins/concerns/jobs: job id shape, provider status words, provider ids that may go
// into an upstream path, the id rewrite, the watcher's backoff and the compiled upstream paths.
import t from 'tap'
import { loadConfig } from '../plugins/apps/gateway/config.js'
import { isJobId, newJobId } from '../plugins/concerns/jobs/job-id.js'
import { observe, upstreamIdOf, withGatewayId } from '../plugins/concerns/jobs/job-kinds.js'
import { compileJobRoutes } from '../plugins/concerns/jobs/job-routes.js'
import { nextDelayMs } from '../plugins/concerns/jobs/watcher.js'
import { REPO_CONFIG, mockEnv } from './helpers/gateway.js'

t.test('gateway job ids: one exact shape', async (t) => {
  const id = newJobId()
  t.ok(isJobId(id), `${id} is one`)
  for (const bad of [undefined, '', '.', '..', 'job_', `${id}x`, id.slice(0, -1), `${id.slice(0, -1)}.`, `${id.slice(0, -1)}/`, 'job_..%2F..%2F..%2F..%2F..%2F..', 'video_abc']) {
    t.notOk(isJobId(bad), `${String(bad)} is not`)
  }
  t.not(newJobId(), newJobId(), 'ids differ')
})

t.test('status words: videos and music', async (t) => {
  t.same(observe('video', { status: 'queued' }), { end: 'running', status: 'queued' })
  t.same(observe('video', { status: 'in_progress' }), { end: 'running', status: 'in_progress' })
  t.same(observe('video', { status: 'completed' }), { end: 'completed', status: 'completed' })
  t.same(observe('video', { status: 'failed' }), { end: 'failed', status: 'failed' })
  t.same(observe('music', { status: 'cancelled' }), { end: 'failed', status: 'cancelled' })
  t.same(observe('music', {}), { end: 'running', status: null }, 'no status: still running, never billed')
  t.same(observe('music', { status: 'COMPLETED' }), { end: 'running', status: 'COMPLETED' }, 'only the exact word completes')
})

t.test('status words: operations', async (t) => {
  t.equal(observe('operation', { name: 'x', done: false }).end, 'running')
  t.equal(observe('operation', { name: 'x' }).end, 'running')
  t.equal(observe('operation', { name: 'x', done: true, response: {} }).end, 'completed')
  t.equal(observe('operation', { name: 'x', done: true, error: { code: 13 } }).end, 'failed')
  t.equal(observe('operation', { name: 'x', done: 'true' }).end, 'running', 'done must be the boolean')
})

t.test('provider ids: only safe path segments are recorded', async (t) => {
  t.equal(upstreamIdOf('video', { id: 'video_68d7512d07848190' }), 'video_68d7512d07848190')
  t.equal(upstreamIdOf('music', { id: 'job_abc-1.2' }), 'job_abc-1.2')
  t.equal(upstreamIdOf('operation', { name: 'models/veo-3.0-generate-001/operations/zlwy2s8p4srm' }), 'models/veo-3.0-generate-001/operations/zlwy2s8p4srm')
  for (const id of ['..', '.', '', 'a/b', 'a?b', 'a#b', 'a b', '%2e%2e', 42, null]) t.equal(upstreamIdOf('video', { id }), undefined, `video id ${JSON.stringify(id)}`)
  for (const name of ['operations/..', '../operations/x', 'operations//x', '/operations/x', 'operations/x?y']) t.equal(upstreamIdOf('operation', { name }), undefined, `operation ${name}`)
  t.equal(upstreamIdOf('operation', { id: 'x' }), undefined, 'operations are named, not id-ed')
})

t.test('the client sees the gateway id in the provider shape', async (t) => {
  const answer = { id: 'video_up', object: 'video', status: 'queued', error: null }
  t.same(withGatewayId('video', answer, 'job_1'), { ...answer, id: 'job_1' })
  t.equal(answer.id, 'video_up', 'the upstream answer is not changed in place')
  t.same(withGatewayId('operation', { name: 'operations/op_up', done: false }, 'job_2'), { name: 'operations/job_2', done: false })
})

t.test('watcher backoff doubles per check, capped', async (t) => {
  const w = { enabled: true, interval_ms: 1000, batch: 10, claim_ms: 1000, first_check_ms: 0, backoff_ms: 10_000, max_backoff_ms: 300_000 }
  t.same([0, 1, 2, 3, 4, 5, 6, 100].map((n) => nextDelayMs(w, n)), [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000])
})

t.test('upstream paths come from the job routes of gateway.yaml', async (t) => {
  const { config } = loadConfig(REPO_CONFIG, { ...process.env, ...mockEnv('http://127.0.0.1:9') })
  const routes = compileJobRoutes(config)
  t.equal(routes.upstreamPath('video', 'poll', 'video_1'), '/v1/videos/video_1')
  t.equal(routes.upstreamPath('video', 'content', 'video_1'), '/v1/videos/video_1/content')
  t.equal(routes.upstreamPath('music', 'poll', 'job_1'), '/v1/jobs/job_1')
  t.equal(routes.upstreamPath('operation', 'poll', 'models/veo/operations/a:b'), '/v1beta/models/veo/operations/a%3Ab', 'operation names keep their slashes, segments encoded')
  t.equal(routes.upstreamPath('music', 'content', 'job_1'), undefined, 'no music content route')
})
