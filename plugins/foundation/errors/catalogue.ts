import type { EnvelopeKind, ErrorsConfig, RetryStrategy, ServerConfig } from '../config/types.js'
import type { ErrorCode } from './codes.js'

export interface CatalogueEntry {
  code: string
  reference: string
  status: number
  message: string
  strategy: RetryStrategy
  retryable: boolean
  retryAfterSeconds: number | undefined
  documentationUrl: string
  link: string
  type: Record<EnvelopeKind, string>
  aliases: readonly string[]
  external: boolean
}

export interface Catalogue {
  readonly domain: string
  readonly contentLanguage: string
  get (code: ErrorCode): CatalogueEntry
  entries (): readonly CatalogueEntry[]
}

const RETRYABLE: ReadonlySet<RetryStrategy> = new Set(['BACKOFF', 'WAIT'])

function fallbackType (status: number): string {
  if (status >= 500) return 'server_error'
  return 'invalid_request_error'
}

/** Compiles the YAML catalogue once at boot into ready-to-render entries. */
export function compileCatalogue (errors: ErrorsConfig, server: ServerConfig): Catalogue {
  const byCode = new Map<string, CatalogueEntry>()
  const base = server.docs_base_url.replace(/\/+$/, '')
  for (const e of errors.catalogue) {
    const strategy = e.retry?.strategy ?? 'NONE'
    const documentationUrl = `${base}/${e.reference}`
    const status = String(e.status)
    const typeFor = (kind: EnvelopeKind): string =>
      e.type?.[kind] ?? errors.type_by_status[kind]?.[status] ?? fallbackType(e.status)
    const entry: CatalogueEntry = Object.freeze({
      code: e.code,
      reference: e.reference,
      status: e.status,
      message: e.message,
      strategy,
      retryable: RETRYABLE.has(strategy),
      retryAfterSeconds: e.retry?.after_seconds,
      documentationUrl,
      link: `<${documentationUrl}>; rel="describedby"`,
      type: { chat: typeFor('chat'), messages: typeFor('messages'), genai: typeFor('genai') },
      aliases: Object.freeze([...(e.aliases ?? [])]),
      external: e.external === true
    })
    byCode.set(e.code, entry)
  }
  const internal = byCode.get('GATEWAY_INTERNAL_ERROR')
  if (!internal) throw new Error('error catalogue must define GATEWAY_INTERNAL_ERROR')
  const all = Object.freeze([...byCode.values()])
  return {
    domain: errors.domain,
    contentLanguage: server.content_language,
    // The type guarantees a code of config/errors.yaml; an operator's own catalogue may still
    // lack it, and that answers as an internal error rather than crash.
    get: (code) => byCode.get(code) ?? internal,
    entries: () => all
  }
}
