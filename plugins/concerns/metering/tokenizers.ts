// How many tokens a piece of prompt text is at most, for the provider that reads it. OpenAI's
// models get their real tokenizer (gpt-tokenizer: o200k_base or cl100k_base, by model); every
// other model one token per UTF-8 byte, which no byte-level tokenizer can exceed (each token
// stands for at least one byte of the text; docs/money.md). The tokenizer runs only when an
// estimate is needed (settle after a cut or missing usage), never on a normal request's path.
//
// Its cost is bounded: strings are tokenized in pieces of PIECE_CHARS code units (BPE is
// quadratic in the length of one pre-token: 100 KB of one letter took 10 s whole, 33 ms in
// pieces; a split can only add tokens), and at most TOKENIZE_BUDGET_BYTES of text per estimate;
// the rest is counted one token per byte, the same bound as the other models (measured on this
// machine: 32 KiB of English in ~5 ms, of random CJK text, the slowest case, in 50 to 180 ms).
import { createRequire } from 'node:module'
import { utf8Bytes } from './utf8.js'

export const TOKENIZE_BUDGET_BYTES = 32 * 1024
export const PIECE_CHARS = 256

type Encoding = 'o200k_base' | 'cl100k_base'
type CountFn = (text: string) => number

/** Counts tokens of `text`, up to TOKENIZE_BUDGET_BYTES per counter, bytes beyond. */
export interface TokenCounter {
  /** Which count this is: the encodings used, or `bytes`. */
  readonly kind: 'bytes' | Encoding | 'o200k_base+cl100k_base'
  count (text: string): number
}

// gpt-4o and later (o-series, gpt-4.1/4.5/5, image and realtime models) use o200k_base; gpt-4,
// gpt-4-turbo and gpt-3.5 use cl100k_base (tiktoken's model table).
const O200K = /^(?:gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o\d|chatgpt-|gpt-image|gpt-oss|gpt-realtime|gpt-audio|codex|computer-use)/
const CL100K = /^(?:gpt-4|gpt-3\.5|text-embedding-)/
// Other OpenAI-looking names (a fine-tune's base unknown): both encodings, the larger count.
const OPENAI_OTHER = /^(?:gpt-|text-|davinci|babbage)/

/** The model name as its provider knows it: a fine-tune's base (`ft:gpt-4o-mini:org::id`), without a path prefix. */
function baseName (model: string): string {
  const name = model.toLowerCase().slice(model.lastIndexOf('/') + 1)
  return name.startsWith('ft:') ? name.slice(3) : name
}

export function encodingsFor (model: string | undefined): Encoding[] {
  if (model === undefined) return []
  const name = baseName(model)
  if (O200K.test(name)) return ['o200k_base']
  if (CL100K.test(name)) return ['cl100k_base']
  if (OPENAI_OTHER.test(name)) return ['o200k_base', 'cl100k_base']
  return []
}

const loaded = new Map<Encoding, CountFn>()
const require = createRequire(import.meta.url)
// Text that looks like a special token (`<|endoftext|>`) is the client's text: counted as text.
const AS_TEXT = { disallowedSpecial: new Set<string>() }

/** The encoding's count, loaded on first use (~200 ms and ~35 MB for o200k_base, once per process). */
function encoding (name: Encoding): CountFn {
  let fn = loaded.get(name)
  if (fn === undefined) {
    const mod = require(`gpt-tokenizer/encoding/${name}`) as { countTokens: (text: string, options: typeof AS_TEXT) => number }
    fn = (text) => mod.countTokens(text, AS_TEXT)
    loaded.set(name, fn)
  }
  return fn
}

/** Loads the encodings of these models ahead of their first estimate (at boot); answers their names. */
export function preloadTokenizers (models: Iterable<string>): string[] {
  const names = new Set<Encoding>()
  for (const model of models) for (const e of encodingsFor(model)) names.add(e)
  for (const e of names) encoding(e)
  return [...names]
}

/** Tokens of `text` in pieces of PIECE_CHARS code units (never splitting a surrogate pair). */
function countInPieces (fn: CountFn, text: string): number {
  if (text.length <= PIECE_CHARS) return fn(text)
  let n = 0
  for (let i = 0; i < text.length;) {
    let end = Math.min(text.length, i + PIECE_CHARS)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--
    n += fn(text.slice(i, end))
    i = end
  }
  return n
}

/** A counter for one estimate: its tokenizer budget is its own. */
export function tokenCounter (model: string | undefined): TokenCounter {
  const names = encodingsFor(model)
  if (names.length === 0) return { kind: 'bytes', count: utf8Bytes }
  const fns = names.map(encoding)
  let budget = TOKENIZE_BUDGET_BYTES
  const tokens = (text: string): number => {
    let most = 0
    for (const fn of fns) most = Math.max(most, countInPieces(fn, text))
    return most
  }
  return {
    kind: names.length === 1 ? names[0] as Encoding : 'o200k_base+cl100k_base',
    count (text) {
      if (text.length === 0) return 0
      if (budget <= 0) return utf8Bytes(text)
      const bytes = utf8Bytes(text)
      if (bytes <= budget) {
        budget -= bytes
        return tokens(text)
      }
      // The budget ends inside this string: its head is tokenized, its tail counted in bytes.
      // A code unit is at most 3 bytes, so budget / 3 units fit; a split only adds tokens.
      let cut = Math.max(1, Math.floor(budget / 3))
      const unit = text.charCodeAt(cut - 1)
      if (unit >= 0xd800 && unit <= 0xdbff) cut--
      budget = 0
      const head = text.slice(0, cut)
      return tokens(head) + utf8Bytes(text.slice(cut))
    }
  }
}
