// UTF-8 sizes of generated text, as the output estimate counts it: every token a provider bills
// for text stands for at least one byte of that text, so its UTF-8 bytes bound the tokens from
// above (docs/money.md). A UTF-16 surrogate counts 2 bytes, so a pair counts the 4 bytes of its
// code point whether it arrives as raw UTF-8 or as two `\uXXXX` escapes.

/** UTF-8 bytes of a decoded string (a surrogate code unit counts 2). */
export function utf8Bytes (s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    n += c < 0x80 ? 1 : c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 2 : 3
  }
  return n
}

/** UTF-8 bytes of the code unit a `\uXXXX` escape stands for (as utf8Bytes counts it). */
export function escapedBytes (unit: number): number {
  return unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3
}

/** The value of a hexadecimal digit's byte (0 for anything else: a malformed escape counts as a small one). */
export function hexValue (c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30
  if (c >= 0x61 && c <= 0x66) return c - 0x57
  if (c >= 0x41 && c <= 0x46) return c - 0x37
  return 0
}
