import { Busboy } from '@fastify/busboy'
import type { MultipartFile, MultipartSummary } from '../shapes/index.js'

const HEAD_BYTES = 64 * 1024

/** Most parts, plain fields and files a multipart body may have (server.multipart_max_*). */
export interface MultipartLimits { parts: number, fields: number, files: number }

/** The body has more parts, fields or files than the limits allow. */
export class MultipartLimitError extends Error {
  constructor (readonly what: 'parts' | 'fields' | 'files') {
    super(`multipart body over its ${what} limit`)
    this.name = 'MultipartLimitError'
  }
}

export function boundaryOf (contentType: string): string | null {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType)
  return m ? (m[1] ?? m[2] ?? null) : null
}

/** Reads field values and file sizes of a buffered multipart body; the bytes themselves are forwarded as they are. */
export function summariseMultipart (raw: Buffer, contentType: string, limits?: MultipartLimits): Promise<MultipartSummary> {
  const boundary = boundaryOf(contentType)
  if (!boundary) return Promise.reject(new Error('multipart body without boundary'))
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {}
    const files: MultipartFile[] = []
    let bb
    try {
      bb = new Busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: 1024 * 1024, ...(limits ?? {}) } })
    } catch (err) {
      reject(err)
      return
    }
    bb.on('field', (name: string, value: string) => { fields[name] = value })
    bb.on('file', (field: string, stream: NodeJS.ReadableStream, filename: string, _enc: string, mimeType: string) => {
      const data: Buffer[] = []
      const file: MultipartFile = { field, filename, mimeType, size: 0, head: Buffer.alloc(0), data }
      const head: Buffer[] = []
      let headLen = 0
      stream.on('data', (chunk: Buffer) => {
        file.size += chunk.length
        data.push(chunk)
        if (headLen < HEAD_BYTES) { head.push(chunk); headLen += chunk.length }
      })
      stream.on('end', () => { file.head = Buffer.concat(head).subarray(0, HEAD_BYTES) })
      files.push(file)
    })
    // Busboy ignores what is over a limit; the gateway refuses the body instead.
    bb.on('partsLimit', () => { reject(new MultipartLimitError('parts')) })
    bb.on('fieldsLimit', () => { reject(new MultipartLimitError('fields')) })
    bb.on('filesLimit', () => { reject(new MultipartLimitError('files')) })
    bb.on('finish', () => resolve({ boundary, fields, files }))
    bb.on('error', reject)
    bb.end(raw)
  })
}
