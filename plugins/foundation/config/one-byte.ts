// Config strings as V8's one-byte strings. A YAML file with one character above U+00FF anywhere
// (an em dash in a comment: the shipped gateway.yaml and config/operations.yaml each have one) is
// decoded into a two-byte string, and every scalar the parser takes from it is a two-byte string
// too, whatever its own characters. The plan keeps those strings for the life of the process and
// requests copy them into headers and bodies, where each socket write flattened them as two-byte
// and converted them again: flattening and copying strings took 8.8 k instructions per chat JSON
// request (callgrind, one connection), 7.2 k once they are one-byte (BENCHMARKS.md, 2026-11-27).
// A small gain, but one no operator's file should cost. The copy is made once per load.
//
// The keys matter as much as the values: a string used as a property name is interned, and V8's
// string table then hands that two-byte copy to every later use of the same name (code that
// rebuilds a list through an object's keys gets it back). So YAML is read with `mapAsMap`: its
// keys stay in Maps, never property names, until oneByteStrings makes the objects from one-byte
// copies of them.

/**
 * `value` with every string of Latin-1 characters copied into a one-byte string: plain objects
 * and arrays walked, Maps (a YAML mapping read with `mapAsMap`) made plain objects whose keys
 * are such copies too; shared parts stay shared.
 */
export function oneByteStrings<T> (value: T): T {
  return copy(value, new Map()) as T
}

/** A code unit above U+00FF (a surrogate included). */
const ABOVE_LATIN1 = /[\u0100-\uffff]/

/** A string of Latin-1 characters as a one-byte string; any other string as it is. */
export function oneByte (value: string): string {
  // Buffer's latin1 decoding always builds a one-byte string; above U+00FF it would lose characters.
  return ABOVE_LATIN1.test(value) ? value : Buffer.from(value, 'latin1').toString('latin1')
}

/**
 * A YAML key's name on a plain object: null '' and a scalar its String(), as yaml's own toJS
 * names them; a collection (`? [a]`, which yaml names by its YAML text) its JSON.
 */
function keyName (key: unknown): string {
  if (key === null) return ''
  return typeof key === 'object' ? JSON.stringify(key) : String(key)
}

/** `out[key] = value` as an own property: a `__proto__` key (as yaml's toJS and JSON.parse make it) must not set the prototype. */
function setOwn (out: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true })
  else out[key] = value
}

function copy (value: unknown, seen: Map<object, unknown>): unknown {
  if (typeof value === 'string') return oneByte(value)
  if (value === null || typeof value !== 'object') return value
  const done = seen.get(value)
  if (done !== undefined) return done
  if (value instanceof Map) {
    const out: Record<string, unknown> = {}
    seen.set(value, out)
    for (const [key, v] of value) setOwn(out, oneByte(keyName(key)), copy(v, seen))
    return out
  }
  if (Array.isArray(value)) {
    const out: unknown[] = []
    seen.set(value, out)
    for (let i = 0; i < value.length; i++) out.push(copy(value[i], seen))
    return out
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return value
  const out: Record<string, unknown> = {}
  seen.set(value, out)
  for (const key of Object.keys(value)) setOwn(out, key, copy((value as Record<string, unknown>)[key], seen))
  return out
}
