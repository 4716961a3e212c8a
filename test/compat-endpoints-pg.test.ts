// Claude and Gemini through the OpenAI SDK at /v1/chat/completions, forwarded to the providers'
// own OpenAI-compatible endpoints, on PostgreSQL: plain, streams, provider errors, billed exactly
// from the reported usage, refusals before the hold (test/helpers/compat-endpoints-cases.ts).
import t from 'tap'
import { compatEndpointCases } from './helpers/compat-endpoints-cases.js'

compatEndpointCases(t, 'pg')
