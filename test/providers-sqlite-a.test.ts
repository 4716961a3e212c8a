// The shipped Azure OpenAI, Groq, Mistral, DeepSeek and xAI entries through the OpenAI SDK in
// front of their mocks, on embedded SQLite: plain, stream, provider errors in the chat envelope,
// each bill the provider's reported usage × the YAML price (helpers/providers-cases.ts).
import t from 'tap'
import { providerCases } from './helpers/providers-cases.js'

providerCases(t, 'sqlite', ['azure', 'groq', 'mistral', 'deepseek', 'xai'])
