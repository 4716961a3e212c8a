// The estimate of a token-billed answer whose usage did not come (client gone and upstream
// cancelled, a cut stream, usage missing or not believable): input from the request
// (input-estimate.ts), output from the generated text seen, one token per UTF-8 byte (utf8.ts),
// or the output the request was held for when the model may have reasoned unseen.
import type { TokenDialectName } from '../../foundation/config/types.js'
import { isRecord } from './body-reader.js'
import { estimateInputTokens, type EstimateFacts } from './input-estimate.js'
import type { RequestFacts } from './meter-types.js'
import { tokenCounter } from './tokenizers.js'
import { MAX_TOKENS, type TokenEstimate } from './usage.js'

// Models that reason before they answer and bill that reasoning as output without streaming it
// (OpenAI's o-series and gpt-5; Gemini 2.5 and 3 think by default).
const REASONS_UNSEEN = /^(?:o\d|gpt-5|gemini-(?:2\.5|3))/

function field (v: unknown, key: string): unknown {
  return isRecord(v) ? v[key] : undefined
}

/**
 * Whether the provider may have billed output the stream never showed: hidden reasoning. A
 * request that turns reasoning off says so; Anthropic's extended thinking is billed in full
 * while Claude 4 streams only its summary.
 */
export function mayReasonUnseen (dialect: TokenDialectName | 'generic', json: Record<string, unknown> | undefined, upstreamModel: string | undefined): boolean {
  if (json === undefined) return false
  const thinking = field(json.thinking, 'type')
  const thinks = thinking !== undefined && thinking !== 'disabled'
  if (dialect === 'messages') return thinks
  // Anthropic's OpenAI-compatible endpoint takes the same `thinking` and returns none of its text.
  if (dialect === 'chat' && thinks) return true
  const name = (upstreamModel ?? '').toLowerCase().slice((upstreamModel ?? '').lastIndexOf('/') + 1)
  if (!REASONS_UNSEEN.test(name)) return false
  const effort = json.reasoning_effort ?? field(json.reasoning, 'effort')
  if (effort === 'none') return false
  const budget = field(field(json.generationConfig, 'thinkingConfig'), 'thinkingBudget')
  return budget !== 0
}

/** Input and output of an answer whose usage the upstream did not give; never throws. */
export function estimateUsage (dialect: TokenDialectName | 'generic', request: RequestFacts, facts: EstimateFacts | undefined, outputBytes: number): TokenEstimate {
  const f = facts ?? {}
  let inputTokens: number
  try {
    inputTokens = estimateInputTokens(request.json, request.multipartFields, dialect, tokenCounter(f.upstreamModel), f)
  } catch {
    // The tokenizer could not load: nothing is counted low, the input is the model's whole context (the charge, the hold).
    inputTokens = f.contextTokens ?? MAX_TOKENS
  }
  let outputTokens = Math.min(MAX_TOKENS, Math.max(0, Math.ceil(outputBytes)))
  if (f.outputCeiling !== undefined && mayReasonUnseen(dialect, request.json, f.upstreamModel)) {
    outputTokens = Math.max(outputTokens, f.outputCeiling())
  }
  return { inputTokens, outputTokens }
}
