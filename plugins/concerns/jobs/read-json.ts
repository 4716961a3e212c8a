import type { Readable } from 'node:stream'
import { isJsonObject, type JsonObject } from './job-kinds.js'

/** A job object is small; anything larger is not one, and is not held in memory. */
export const MAX_JOB_ANSWER_BYTES = 1024 * 1024

/** The whole (small) body, or null when it is larger than the bound or breaks off. */
export async function readBounded (body: Readable, max = MAX_JOB_ANSWER_BYTES): Promise<Buffer | null> {
  const parts: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of body) {
      const b = chunk as Buffer
      size += b.length
      if (size > max) {
        body.destroy()
        return null
      }
      parts.push(b)
    }
  } catch {
    return null
  }
  return Buffer.concat(parts)
}

/** The JSON object of a body, or null when it is not one. */
export function parseObject (bytes: Buffer | null): JsonObject | null {
  if (bytes === null) return null
  try {
    const v: unknown = JSON.parse(bytes.toString('utf8'))
    return isJsonObject(v) ? v : null
  } catch {
    return null
  }
}
