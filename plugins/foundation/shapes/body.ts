// A request body as the request plugin parsed it, and the edits a model declares for the JSON
// sent upstream: plain data the host and every concern read (plugins/foundation/request makes them).

/** A JSON body (its bytes and its parse) or a multipart one (its bytes and what the parts say). */
export type ParsedBody =
  | { kind: 'json', raw: Buffer, json: Record<string, unknown> }
  | { kind: 'multipart', raw: Buffer, contentType: string, summary: MultipartSummary }

export interface MultipartSummary {
  boundary: string
  fields: Record<string, string>
  files: MultipartFile[]
}

export interface MultipartFile {
  field: string
  filename: string
  mimeType: string
  size: number
  /** First bytes of the file, enough to read an audio header. */
  head: Buffer
  /**
   * All of the file's bytes, as the pieces the parser gave: views of the buffered request body,
   * not copies (what an audio bound reads to check a header against the stream).
   */
  data?: Buffer[]
}

export interface BodyRules {
  /** Top-level members removed before forwarding. */
  readonly dropFields: ReadonlySet<string>
  /** Output-token limits above this are lowered to it; undefined: left as sent. */
  readonly maxOutputTokens: number | undefined
}
