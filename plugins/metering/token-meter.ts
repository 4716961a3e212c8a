import { createBodyReader, eventJson, parseCaptured } from './body-reader.js'
import type { Meter, MeterInput } from './meter-types.js'
import { requestChars } from './request-text.js'
import type { StreamState, TokenDialect } from './token-dialects.js'
import { tokensFromChars, tokenUsage, type Usage } from './usage.js'

/**
 * Meters a token-billed text answer, JSON or SSE, in the given dialect. Missing or rejected
 * counts fall back to the request's text (input) and the generated text seen (output).
 */
export function createTokenMeter (dialect: TokenDialect, input: MeterInput): Meter {
  const state: StreamState = { usage: undefined, textChars: 0 }
  const reader = createBodyReader({
    sse: true,
    onEvent: (e) => {
      const quick = dialect.quickText?.(e.data)
      if (quick !== undefined) {
        state.textChars += quick
        return
      }
      const data = eventJson(e.data)
      if (data) dialect.event(e.event, data, state)
    },
    scan: { capture: dialect.capture, textKeys: dialect.textKeys }
  })
  return {
    onChunk: (chunk) => reader.push(chunk),
    finish: (): Usage => {
      reader.end()
      const inputTokens = tokensFromChars(requestChars(input.request))
      const scan = reader.scan()
      if (scan) {
        return tokenUsage(dialect.json(parseCaptured(scan.captured)), { inputTokens, outputTokens: tokensFromChars(scan.textChars) })
      }
      return tokenUsage(state.usage, { inputTokens, outputTokens: tokensFromChars(state.textChars) })
    }
  }
}
