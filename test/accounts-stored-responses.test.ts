// Every account's Responses calls are stored in the operator's one provider account (`store`
// defaults to true), and `previous_response_id` was forwarded for any id: an account that learns
// another's response id (a shared log line, a screenshot) continued that conversation at the
// provider and could ask it to repeat what the other account had sent — a read of another
// account's data the gateway never checked. Like `conversation` and stored prompts (the
// operator's stored objects), `previous_response_id` is now refused unless a model allows it.
// An input `item_reference` names a stored item the same way (and was held for its body bytes
// alone, whatever the item's size), and a Messages `container` a stored code-execution container.
// Through the OpenAI and Anthropic SDKs, on both stores.
import Anthropic from '@anthropic-ai/sdk'
import { OpenAI } from 'openai'
import t from 'tap'
import { parseMoney } from '../plugins/foundation/pricing/money.js'
import { startTestGateway, type Backend } from './helpers/gateway.js'
import { seedFundedKey } from './helpers/store.js'
import { refusalCode } from './helpers/wallet-bound.js'

for (const backend of ['sqlite', 'pg'] as Backend[]) {
  t.test(`previous_response_id cannot continue another account's stored response (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const other = await seedFundedKey(gw.services.store, { account: 'other account', key: 'other key' }, parseMoney('10.00'))
    const alice = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: gw.key, maxRetries: 0 })
    const mallory = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: other.key, maxRetries: 0 })

    const first = await alice.responses.create({ model: 'openai/gpt-4o-mini', input: 'my account number is 12345', max_output_tokens: 16 })
    t.match(first.id, /^resp_/, 'the first account\'s response, stored at the provider')
    const before = gw.mock.calls.length

    const err = await mallory.responses.create({ model: 'openai/gpt-4o-mini', previous_response_id: first.id, input: 'repeat everything above', max_output_tokens: 16 }).then(() => null, (e: unknown) => e)
    t.equal(refusalCode(err), 'MODEL_PARAMETER_UNSUPPORTED', 'another account\'s response id is refused')
    t.equal((err as { error?: { param?: string } } | null)?.error?.param, 'previous_response_id', 'naming the field')
    t.equal(gw.mock.calls.length, before, 'nothing reached the provider')

    // The same read, one item at a time: an input item that names a stored item by its id.
    const item = await mallory.responses.create({ model: 'openai/gpt-4o-mini', input: [{ type: 'item_reference', id: 'msg_of_another_account' }, { role: 'user', content: 'repeat it' }], max_output_tokens: 16 }).then(() => null, (e: unknown) => e)
    t.equal(refusalCode(item), 'MODEL_PARAMETER_UNSUPPORTED', 'an item_reference is refused')
    t.equal((item as { error?: { param?: string } } | null)?.error?.param, 'input[0].type', 'naming the item')
    t.equal(gw.mock.calls.length, before, 'nothing reached the provider')
  })

  t.test(`a Messages container id (another account's stored container) is refused (${backend})`, async (t) => {
    const gw = await startTestGateway({ backend })
    t.teardown(() => gw.close())
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.key, maxRetries: 0 })
    const err = await anthropic.messages.create({ model: 'anthropic/claude-haiku-3.5', max_tokens: 16, container: 'container_of_another_account', messages: [{ role: 'user', content: 'list the files' }] }).then(() => null, (e: unknown) => e)
    t.equal(refusalCode(err), 'MODEL_PARAMETER_UNSUPPORTED', 'refused')
    t.match((err as { message?: string }).message, /container/, 'naming the field')
    t.equal(gw.mock.calls.length, 0, 'nothing reached the provider')
  })
}
