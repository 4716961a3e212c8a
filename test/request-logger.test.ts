// A request's logger is pino's child with the request id, made only when the request logs:
// served requests make none, a request that logs makes one, and its line is the line it was.
import { Writable } from 'node:stream'
import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import { RequestLogger } from '../plugins/apps/server/request-logger.js'
import { startTestGateway } from './helpers/gateway.js'

interface Line { msg: string, level: number, requestId?: string, status?: number, provider?: string }

const chat = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], max_tokens: 16 }

t.test('served requests make no child logger; one that logs makes one, with its request id', async (t) => {
  let output = ''
  const stream = new Writable({ write (chunk: Buffer, _enc, done) { output += chunk.toString(); done() } })
  const gw = await startTestGateway({ server: { logger: { level: 'info', stream } } })
  t.teardown(() => gw.close())
  // Every request's logger comes from the server's logger: count the children it makes.
  const log = gw.app.log as FastifyBaseLogger & { child: FastifyBaseLogger['child'] }
  const made: unknown[] = []
  const child = log.child.bind(log)
  log.child = (bindings, options) => {
    made.push(bindings)
    return child(bindings, options)
  }
  const send = async (): Promise<Response> => await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers: { ...gw.auth, 'content-type': 'application/json' }, body: JSON.stringify(chat)
  })

  for (let i = 0; i < 20; i++) {
    const res = await send()
    await res.arrayBuffer()
    t.equal(res.status, 200, `request ${i + 1} served`)
  }
  t.same(made, [], '20 served requests: no child logger made')

  gw.mock.once({ status: 500 })
  const failed = await send()
  await failed.arrayBuffer()
  t.equal(failed.status, 502, 'an upstream 500 is UPSTREAM_ERROR')
  const requestId = failed.headers.get('x-request-id')
  t.match(requestId, /^req_[0-9a-f]{32}$/)
  t.same(made, [{ requestId }], 'one child, bound to that request id')
  const lines = output.split('\n').flatMap((l) => { try { return [JSON.parse(l) as Line] } catch { return [] } })
  const warned = lines.filter((l) => l.msg === 'upstream answered with an error')
  t.equal(warned.length, 1, 'the request logged its warning once')
  t.equal(warned[0]?.requestId, requestId, 'with the request id')
  t.equal(warned[0]?.status, 500, 'and its fields')
  t.equal(warned[0]?.level, 40, 'at warn')
})

t.test('RequestLogger: the child is made from the same arguments at the first line, and used from then on', async (t) => {
  const calls: Array<[string, unknown[]]> = []
  const childOf = (name: string, level: string): FastifyBaseLogger => {
    const logger: FastifyBaseLogger = {
      level,
      fatal: (...a: unknown[]) => { calls.push([`${name}.fatal`, a]) },
      error: (...a: unknown[]) => { calls.push([`${name}.error`, a]) },
      warn: (...a: unknown[]) => { calls.push([`${name}.warn`, a]) },
      info: (...a: unknown[]) => { calls.push([`${name}.info`, a]) },
      debug: (...a: unknown[]) => { calls.push([`${name}.debug`, a]) },
      trace: (...a: unknown[]) => { calls.push([`${name}.trace`, a]) },
      silent: () => {},
      child: (bindings, options) => {
        calls.push([`${name}.child`, [bindings, options]])
        return childOf(`${name}>child`, options?.level ?? level)
      }
    }
    return logger
  }
  const parent = childOf('server', 'info')
  const log = new RequestLogger(parent, { requestId: 'req_1' }, {})
  t.equal(log.level, 'info', 'the parent\'s level before any line')
  t.same(calls, [], 'nothing made yet')
  log.warn({ code: 'X' }, 'first line')
  t.same(calls, [['server.child', [{ requestId: 'req_1' }, {}]], ['server>child.warn', [{ code: 'X' }, 'first line']]], 'child made with the bindings and options, then the line')
  log.error('second', 1, 2)
  log.info({ a: 1 })
  log.debug('d')
  log.trace('t')
  log.fatal('f')
  t.same(calls.slice(2).map(([name]) => name), ['server>child.error', 'server>child.info', 'server>child.debug', 'server>child.trace', 'server>child.fatal'], 'every level goes to the one child')
  t.same(calls[2]?.[1], ['second', 1, 2], 'arguments passed as they came')
  log.child({ job: 'j' })
  t.same(calls.at(-1), ['server>child.child', [{ job: 'j' }, undefined]], 'a grandchild comes from the child')

  const quiet = new RequestLogger(parent, { requestId: 'req_2' }, { level: 'error' })
  t.equal(quiet.level, 'error', 'a route\'s own level before any line')
  quiet.level = 'debug'
  t.equal(quiet.level, 'debug', 'setting the level makes the child and sets it there')
})
