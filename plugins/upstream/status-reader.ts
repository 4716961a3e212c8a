// A GET of a small JSON document at a named provider, on connections of its own: what the job
// watcher asks a job's provider (plugins/jobs/job-checker.ts takes it as a port; the composition
// root wires this one in, so jobs import nothing of upstream).
import type { Readable } from 'node:stream'
import type { GatewayConfig } from '../config/types.js'
import { callUpstream } from './forward.js'
import { compileUpstreams } from './providers.js'

export interface StatusReader {
  /**
   * GETs `path` (no query) at the provider's base path, with the operator's credential headers
   * and nothing of any client's request. Throws when the provider is no longer configured or the
   * call fails before its headers.
   */
  get (provider: string, path: string): Promise<{ statusCode: number, body: Readable }>
  /** Closes the reader's connections. */
  close (): Promise<void>
}

/** A reader on its own pools, compiled from the config (no health checks, no circuit counted). */
export function createStatusReader (config: GatewayConfig): StatusReader {
  const upstreams = compileUpstreams(config)
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
    close: async () => { await upstreams.close() }
  }
}
