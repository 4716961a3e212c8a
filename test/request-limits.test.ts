// The body guards and the deferred-work check on their own: what read-body and the stage
// chain rely on. Property tests hold the streaming guards equal to a plain reading of the
// whole body, for any split into chunks.
import fc from 'fast-check'
import t from 'tap'
import { JsonDepthGuard, MultipartPartCounter } from '../plugins/foundation/request/body-guards.js'
import { deferredParamOf } from '../plugins/foundation/request/deferred-work.js'
import { BodyDeadlines } from '../plugins/foundation/request/read-body.js'

/** Deepest nesting of a JSON text, read whole (strings and escapes minded). */
function depthOf (text: string): number {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '[' || c === '{') max = Math.max(max, ++depth)
    else if (c === ']' || c === '}') depth--
  }
  return max
}

/** `buf` cut at the given offsets. */
function split (buf: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (buf.length + 1)))].sort((a, b) => a - b)
  const out: Buffer[] = []
  let from = 0
  for (const c of at) { out.push(buf.subarray(from, c)); from = c }
  out.push(buf.subarray(from))
  return out
}

const jsonValue = fc.jsonValue({ maxDepth: 8 }).map((v) => JSON.stringify(v))
const withBrackets = fc.tuple(jsonValue, fc.string({ maxLength: 20 })).map(([v, s]) => `{"a":${v},"s":${JSON.stringify(s + '[{"\\')}}`)

t.test('JsonDepthGuard refuses exactly the bodies deeper than its bound, for any split', async (t) => {
  fc.assert(fc.property(fc.oneof(jsonValue, withBrackets), fc.integer({ min: 1, max: 10 }), fc.array(fc.nat(), { maxLength: 6 }), (text, max, cuts) => {
    const guard = new JsonDepthGuard(max)
    const accepted = split(Buffer.from(text), cuts).every((c) => guard.push(c))
    return accepted === (depthOf(text) <= max)
  }), { numRuns: 2000 })
})

t.test('JsonDepthGuard refuses a bomb at its first byte past the bound', async (t) => {
  const guard = new JsonDepthGuard(64)
  t.ok(guard.push(Buffer.from('{"a":' + '['.repeat(63))), '64 levels pass')
  t.notOk(guard.push(Buffer.from('[')), 'the 65th opener is refused')
})

t.test('MultipartPartCounter counts the parts of any split body', async (t) => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 1, max: 40 }), fc.array(fc.nat(), { maxLength: 8 }), (parts, max, cuts) => {
    const boundary = 'XyZ'
    let body = ''
    for (let i = 0; i < parts; i++) body += `--${boundary}\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\nv-${boundary.slice(1)}\r\n`
    body += `--${boundary}--\r\n`
    const counter = new MultipartPartCounter(boundary, max)
    const results = split(Buffer.from(body), cuts).map((c) => counter.push(c))
    const accepted = results.every((ok) => ok)
    return counter.parts === parts && accepted === (parts <= max)
  }), { numRuns: 1000 })
})

t.test('deferred work: a declared parameter set to anything but false/null, unless a job route', async (t) => {
  const plan = { deferredParams: ['background'], job: undefined }
  t.equal(deferredParamOf(plan, { background: true }), 'background')
  t.equal(deferredParamOf(plan, { background: 'true' }), 'background')
  t.equal(deferredParamOf(plan, { background: 1 }), 'background')
  t.equal(deferredParamOf(plan, { background: false }), null)
  t.equal(deferredParamOf(plan, { background: null }), null)
  t.equal(deferredParamOf(plan, {}), null)
  t.equal(deferredParamOf({ deferredParams: [], job: undefined }, { background: true }), null, 'an undeclared parameter is forwarded')
  t.equal(deferredParamOf({ deferredParams: ['background'], job: 'create' }, { background: true }), null, 'a job route prices deferred work')
})

t.test('BodyDeadlines: any adds and deletes (twice included) leave exactly the undeleted bodies to expire, oldest first, once each', async (t) => {
  await fc.assert(fc.asyncProperty(
    fc.integer({ min: 1, max: 60 }),
    fc.array(fc.nat(59), { maxLength: 80 }),
    async (count, deletes) => {
      let now = 0
      const deadlines = new BodyDeadlines(40, () => now)
      const expired: number[] = []
      const entries = Array.from({ length: count }, (_, i) => deadlines.add(() => { expired.push(i) }))
      for (const d of deletes) if (d < entries.length) deadlines.delete(entries[d] as Parameters<BodyDeadlines['delete']>[0])
      const left = entries.map((_, i) => i).filter((i) => !deletes.includes(i))
      now = 1000
      // Sweeps run on a real 10 ms interval: wait for them (up to 2 s on a loaded machine), then
      // one more period and a half, so an entry expired twice would show.
      for (let i = 0; i < 400 && expired.length < left.length; i++) await new Promise((resolve) => setTimeout(resolve, 5))
      await new Promise((resolve) => setTimeout(resolve, 25))
      return JSON.stringify(expired) === JSON.stringify(left)
    }
  ), { numRuns: 25 })
  t.pass('25 generated runs')
})

t.test('BodyDeadlines expires a body at the first sweep after its deadline, and only once', async (t) => {
  let now = 0
  const deadlines = new BodyDeadlines(100, () => now)
  const expired: string[] = []
  const a = deadlines.add(() => { expired.push('a') })
  now = 50
  deadlines.add(() => { expired.push('b') })
  // The sweep's interval timer is real; the clock is the test's, so which bodies are due is
  // decided by the clock alone, however late the sweeps run.
  const sweeps = async (count: number): Promise<void> => {
    for (let i = 0; i < 200 && expired.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  now = 100
  await sweeps(1)
  await new Promise((resolve) => setTimeout(resolve, 60))
  t.same(expired, ['a'], 'only the body whose deadline passed')
  deadlines.delete(a)
  now = 150
  await sweeps(2)
  t.same(expired, ['a', 'b'])
})
