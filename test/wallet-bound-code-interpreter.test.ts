// Responses `code_interpreter` was priced per container at the 1 GB price ($0.03) whatever
// container the request asked for: `container.memory_limit` "4g", "16g", "64g" are billed at
// higher rates (OpenAI bills each memory tier at its own price), and `container` given as a
// string names a container already stored in the operator's one provider account — another
// account's, with its files, as like as not (every code interpreter answer shows its
// `container_id`). Now a memory tier above 1 GB is a feature the model must price (the shipped
// models refuse it), and a stored container id is refused; `{ type: "auto" }` and "1g" pass at
// the priced container. Through the OpenAI SDK, on both stores.
import { OpenAI } from 'openai'
import t from 'tap'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { checkBounded, refusalCode } from './helpers/wallet-bound.js'

type Tool = OpenAI.Responses.Tool

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`code_interpreter: a stored container or a larger one is refused, the priced one passes (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend, credit: '10.00' })
    t.teardown(() => gw.close())
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const run = async (tool: Tool): Promise<unknown> => await openai.responses.create({ model: 'openai/gpt-4o', input: 'Compute', tools: [{ type: 'function', name: 'f', parameters: {}, strict: false }, tool], max_output_tokens: 16 }).then(() => null, (e: unknown) => e)

    const stored = await run({ type: 'code_interpreter', container: 'cntr_of_another_account' })
    t.equal(refusalCode(stored), 'MODEL_PARAMETER_UNSUPPORTED', 'a container named by id is refused')
    t.equal((stored as { error?: { param?: string } }).error?.param, 'tools[1].container', 'naming the field')
    for (const limit of ['4g', '16g', '64g'] as const) {
      const big = await run({ type: 'code_interpreter', container: { type: 'auto', memory_limit: limit } })
      t.equal(refusalCode(big), 'MODEL_PARAMETER_UNSUPPORTED', `memory_limit ${limit} is refused (unpriced)`)
      t.equal((big as { error?: { param?: string } }).error?.param, 'tools[1].container.memory_limit')
    }
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')

    t.equal(await run({ type: 'code_interpreter', container: { type: 'auto' } }), null, 'an automatic 1 GB container is served')
    t.equal(await run({ type: 'code_interpreter', container: { type: 'auto', memory_limit: '1g' } }), null, 'so is one that says 1g')
    await checkBounded(t, [gw], 6)
  })
}
