// The provider mocks speak what the official OpenAI SDK expects, each in its own provider's
// dialect: the SDK pointed straight at each mock (no gateway) gets a plain answer, a stream, the
// right error class with the provider's status and body, and the usage fields where that
// provider puts them. Peculiarities of single dialects: provider-mocks-dialects.test.ts.
import { AzureOpenAI, AuthenticationError, BadRequestError, InternalServerError, NotFoundError, OpenAI, RateLimitError, type APIError } from 'openai'
import type { ChatCompletionChunk } from 'openai/resources/chat/completions'
import t from 'tap'
import { PROVIDER_DIALECTS, startProviderMockByName, type ProviderMock, type ProviderName } from './fixtures/providers/index.js'
import { replyChunks, tokensFor } from './fixtures/mock-upstream.js'

const PROMPT = 'Hello mock provider world'
const INPUT = tokensFor(PROMPT.length)
const OUTPUT = 5
const CACHED = 3
const REASONING = 4
const STEER = { 'x-mock-cached-tokens': String(CACHED), 'x-mock-reasoning-tokens': String(REASONING) }

/**
 * Where a stream carries its usage, asked (`stream_options.include_usage`) and not: nowhere, on a
 * usage-only last chunk, on a finish chunk, on every chunk, on the finish chunk and a usage-only
 * chunk after it (Groq asked), or only under the finish chunk's `x_groq` (Groq not asked).
 */
type Place = 'none' | 'trailer' | 'finish' | 'every' | 'finish+trailer' | 'x_groq'

interface Case {
  model: string
  /** The usage fields this provider reports for INPUT, OUTPUT, CACHED, REASONING. */
  usage: Record<string, unknown>
  asked: Place
  unasked: Place
  /** The SDK error class and status of a wrong credential. */
  badKey: [typeof AuthenticationError | typeof BadRequestError, number]
  /** The provider's 429 body (matched loosely). */
  rateLimited: unknown
}

const CASES: Record<ProviderName, Case> = {
  azure: {
    model: 'ignored-by-azure',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT + REASONING, total_tokens: INPUT + OUTPUT + REASONING, prompt_tokens_details: { cached_tokens: CACHED }, completion_tokens_details: { reasoning_tokens: REASONING } },
    asked: 'trailer',
    unasked: 'none',
    badKey: [AuthenticationError, 401],
    rateLimited: { error: { code: '429', message: /exceeded token rate limit/ } }
  },
  groq: {
    model: 'llama-3.3-70b-versatile',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT, queue_time: Number, prompt_time: Number, completion_time: Number, total_time: Number, prompt_tokens_details: { cached_tokens: CACHED } },
    asked: 'finish+trailer',
    unasked: 'x_groq',
    badKey: [AuthenticationError, 401],
    rateLimited: { error: { type: 'tokens', code: 'rate_limit_exceeded' } }
  },
  mistral: {
    model: 'mistral-small-latest',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT, total_tokens: INPUT + OUTPUT },
    asked: 'finish',
    unasked: 'finish',
    badKey: [AuthenticationError, 401],
    rateLimited: { object: 'error', type: 'rate_limited', message: 'Requests rate limit exceeded' }
  },
  deepseek: {
    model: 'deepseek-chat',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT + REASONING, prompt_cache_hit_tokens: CACHED, prompt_cache_miss_tokens: INPUT - CACHED, completion_tokens_details: { reasoning_tokens: REASONING } },
    asked: 'trailer',
    unasked: 'none',
    badKey: [AuthenticationError, 401],
    rateLimited: { error: { type: 'rate_limit_error', param: null } }
  },
  xai: {
    model: 'grok-4-fast',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT, total_tokens: INPUT + OUTPUT + REASONING, prompt_tokens_details: { cached_tokens: CACHED, text_tokens: INPUT }, completion_tokens_details: { reasoning_tokens: REASONING }, cost_in_usd_ticks: (INPUT - CACHED) * 2000 + CACHED * 500 + (OUTPUT + REASONING) * 5000 },
    asked: 'trailer',
    unasked: 'none',
    badKey: [BadRequestError, 400],
    rateLimited: { code: 'Some resource has been exhausted', error: String }
  },
  together: {
    model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT, total_tokens: INPUT + OUTPUT, cached_tokens: CACHED },
    asked: 'finish',
    unasked: 'finish',
    badKey: [AuthenticationError, 401],
    rateLimited: { error: { type: 'rate_limit_exceeded' } }
  },
  fireworks: {
    model: 'accounts/fireworks/models/llama-v3p3-70b-instruct',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT, prompt_tokens_details: { cached_tokens: CACHED } },
    asked: 'finish',
    unasked: 'finish',
    badKey: [AuthenticationError, 401],
    rateLimited: { error: { object: 'error', type: 'rate_limit_exceeded' } }
  },
  openrouter: {
    model: 'openai/gpt-4o-mini',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT + REASONING, cost: Number, prompt_tokens_details: { cached_tokens: CACHED }, completion_tokens_details: { reasoning_tokens: REASONING } },
    asked: 'finish',
    unasked: 'finish',
    badKey: [AuthenticationError, 401],
    rateLimited: { error: { code: 429, metadata: { headers: { 'X-RateLimit-Remaining': '0' } } } }
  },
  vllm: {
    model: 'Qwen/Qwen3-0.6B',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT, total_tokens: INPUT + OUTPUT, prompt_tokens_details: { cached_tokens: CACHED } },
    asked: 'trailer',
    unasked: 'none',
    badKey: [AuthenticationError, 401],
    rateLimited: { error: { code: 429, type: 'TooManyRequestsError' } }
  },
  ollama: {
    model: 'llama3.2',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT, total_tokens: INPUT + OUTPUT },
    asked: 'trailer',
    unasked: 'none',
    badKey: [AuthenticationError, 401], // unused: Ollama checks no key (the test shows a wrong one served)
    rateLimited: { error: { type: 'api_error' } }
  },
  'anthropic-openai': {
    model: 'claude-sonnet-4-20250514',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT + REASONING, total_tokens: INPUT + OUTPUT + REASONING },
    asked: 'trailer',
    unasked: 'none',
    badKey: [AuthenticationError, 401],
    rateLimited: { type: 'error', error: { type: 'rate_limit_error' } }
  },
  'gemini-openai': {
    model: 'gemini-2.5-flash',
    usage: { prompt_tokens: INPUT, completion_tokens: OUTPUT, total_tokens: INPUT + OUTPUT + REASONING, completion_tokens_details: { reasoning_tokens: REASONING } },
    asked: 'every',
    unasked: 'none',
    badKey: [BadRequestError, 400],
    rateLimited: [{ error: { code: 429, status: 'RESOURCE_EXHAUSTED' } }]
  }
}

function client (name: ProviderName, mock: ProviderMock, apiKey = mock.apiKey ?? 'unused'): OpenAI {
  if (name === 'azure') return new AzureOpenAI({ endpoint: mock.url, apiKey, apiVersion: '2024-10-21', deployment: 'gpt-4o-mini-prod', maxRetries: 0 })
  return new OpenAI({ baseURL: mock.baseURL, apiKey, maxRetries: 0 })
}

async function rejection (p: Promise<unknown>): Promise<APIError> {
  try {
    await p
  } catch (err) {
    return err as APIError
  }
  throw new Error('expected a rejection')
}

/** Indexes of the chunks that carry a (non-null) usage. */
function usageAt (chunks: ChatCompletionChunk[]): number[] {
  return chunks.flatMap((c, i) => (c.usage === null || c.usage === undefined ? [] : [i]))
}

for (const name of Object.keys(CASES) as ProviderName[]) {
  const spec = CASES[name]
  t.test(name, async (t) => {
    // Ollama and vLLM check no key by default; here they check one, to show the 401 path.
    const mock = await startProviderMockByName(name, name === 'ollama' ? {} : { apiKey: PROVIDER_DIALECTS[name].defaultApiKey ?? 'vllm-key' })
    t.teardown(() => mock.close())
    t.beforeEach(() => mock.reset())
    const openai = client(name, mock)
    const messages = [{ role: 'user' as const, content: PROMPT }]
    const expectedText = replyChunks(PROMPT, OUTPUT).join('')

    t.test('plain: the answer, and the usage where the provider reports it', async (t) => {
      const r = await openai.chat.completions.create({ model: spec.model, messages }, { headers: STEER })
      t.equal(r.choices[0]?.message.content, expectedText)
      t.equal(r.choices[0]?.finish_reason, 'stop')
      t.match(r.usage, spec.usage)
      const call = mock.calls[0]
      t.equal(mock.calls.length, 1, 'one request reached the mock')
      t.strictSame(r.usage, call?.usage, 'the SDK saw the usage the mock recorded')
      t.equal(call?.stream, false)
    })

    for (const asked of [false, true]) {
      t.test(`stream, include_usage ${asked ? 'asked' : 'not asked'}: usage ${asked ? spec.asked : spec.unasked}`, async (t) => {
        const stream = await openai.chat.completions.create({
          model: spec.model,
          messages,
          stream: true,
          ...(asked ? { stream_options: { include_usage: true } } : {})
        }, { headers: STEER })
        const chunks: ChatCompletionChunk[] = []
        for await (const chunk of stream) chunks.push(chunk)
        t.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), expectedText)
        t.ok(chunks.some((c) => c.choices[0]?.finish_reason === 'stop'), 'a chunk finishes')
        const at = usageAt(chunks)
        const place = asked ? spec.asked : spec.unasked
        const call = mock.calls[0]
        if (place === 'none') {
          t.strictSame(at, [], 'no chunk carries usage')
          t.equal(call?.usage, null)
          return
        }
        if (place === 'x_groq') {
          t.strictSame(at, [], 'no chunk carries `usage`')
          const finish = chunks.find((c) => c.choices[0]?.finish_reason === 'stop') as (ChatCompletionChunk & { x_groq?: { usage?: unknown } }) | undefined
          t.match(finish?.x_groq?.usage, spec.usage, 'the finish chunk carries x_groq.usage')
          t.strictSame(finish?.x_groq?.usage, call?.usage)
          return
        }
        const last = chunks[at.at(-1) ?? -1]
        t.match(last?.usage, spec.usage, 'the last usage is the final count')
        t.strictSame(last?.usage, call?.usage)
        if (place === 'trailer' || place === 'finish+trailer') {
          const before = place === 'trailer' ? [] : [chunks.length - 2]
          t.strictSame(at, [...before, chunks.length - 1], 'the usage on the last chunk (and the finish chunk before it)')
          t.strictSame(last?.choices, [], 'a usage-only chunk')
        } else if (place === 'finish') {
          t.equal(last?.choices[0]?.finish_reason, 'stop', 'the usage rides on a finish chunk')
        } else {
          t.ok(at.length > 1, 'several chunks carry usage (a meter must take the last, not sum)')
        }
      })
    }

    t.test('a wrong credential: the provider\'s answer, the SDK\'s class, and no generation', async (t) => {
      if (name === 'ollama') {
        const r = await client(name, mock, 'wrong-key').chat.completions.create({ model: spec.model, messages })
        t.equal(r.choices[0]?.message.content, expectedText, 'Ollama checks no credential: any key is served')
        return
      }
      const err = await rejection(client(name, mock, 'wrong-key').chat.completions.create({ model: spec.model, messages }))
      t.type(err, spec.badKey[0])
      t.equal(err.status, spec.badKey[1])
      t.equal(mock.calls.length, 1)
      t.equal(mock.calls[0]?.produced, undefined, 'nothing generated')
    })

    t.test('429 with retry-after: RateLimitError and the provider\'s body', async (t) => {
      const err = await rejection(openai.chat.completions.create({ model: spec.model, messages }, { headers: { 'x-mock-status': '429', 'x-mock-retry-after': '7' } }))
      t.type(err, RateLimitError)
      t.equal(err.status, 429)
      t.equal(err.headers?.get('retry-after'), '7')
      t.match(JSON.parse(mock.calls[0]?.response?.toString('utf8') ?? 'null'), spec.rateLimited)
    })

    t.test('400, 404, 500, 503: the SDK\'s class for the status, nothing generated', async (t) => {
      const classes = [[400, BadRequestError], [404, NotFoundError], [500, InternalServerError], [503, InternalServerError]] as const
      for (const [status, cls] of classes) {
        const err = await rejection(openai.chat.completions.create({ model: spec.model, messages }, { headers: { 'x-mock-status': String(status) } }))
        t.type(err, cls)
        t.equal(err.status, status)
      }
      t.equal(mock.calls.length, classes.length)
      t.ok(mock.calls.every((c) => c.produced === undefined && c.status !== undefined && c.status >= 400))
    })
  })
}
