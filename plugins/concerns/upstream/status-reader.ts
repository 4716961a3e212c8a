// A GET of a small JSON document at a named provider, on the gateway's upstreams (the forward
// phase's pools): what the job watcher asks a job's provider (plugins/concerns/jobs/job-checker.ts takes
// it as a port; the composition root wires this one in, so jobs import nothing of upstream).
import type { Readable } from 'node:stream'
import { callUpstream } from './forward.js'
import type { Upstreams } from './providers.js'

export interface StatusReader {
  /**
   * GETs `path` (no query) at the provider's base path, with the operator's credential headers
   * and nothing of any client's request. Throws when the provider is no longer configured or the
   * call fails before its headers.
   */
  get (provider: string, path: string): Promise<{ statusCode: number, body: Readable }>
  /** Ends the reader: the upstreams are the caller's, and stay open. */
  close (): Promise<void>
}

/** A reader over `upstreams` (no circuit counted: a status read is not a request's call). */
export function createStatusReader (upstreams: Upstreams): StatusReader {
  return {
    async get (name, path) {
      let provider
      try {
        provider = upstreams.provider(name)
      } catch {
        throw new Error(`provider ${name} is no longer configured`)
      }
      return await callUpstream(upstreams.dispatcher, {
        provider,
        method: 'GET',
        path: provider.basePath + path,
        headers: { accept: 'application/json', 'accept-encoding': 'identity', ...provider.headers },
        headersTimeoutMs: provider.timeoutMs,
        body: undefined
      })
    },
    close: async () => {}
  }
}
