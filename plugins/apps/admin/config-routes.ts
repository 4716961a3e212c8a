// The admin API's config routes (served by `serve`'s admin listener, which owns the reload):
// POST /admin/v1/config/reload reads gateway.yaml again and swaps to it, or refuses it with the
// `check` report while the running config keeps serving; GET /admin/v1/instances lists every
// live instance on the shared database with the config hash it serves.
import type { FastifyInstance } from 'fastify'
import { NO_BODY } from './routes.js'

/** What the reload answers: the problems are `check`'s lines (file:line:col  path  message). */
export type ReloadAnswer =
  | { ok: true, hash: string, previousHash: string, changed: boolean }
  | { ok: false, hash: string, problems: string[] }

export interface InstanceView {
  id: string
  host: string
  pid: number
  config_hash: string
  reloaded_at: string | null
  started_at: string
  seen_at: string
  /** The instance that answers. */
  self: boolean
}

export interface InstanceListing {
  data: InstanceView[]
  /** The answering instance's id. */
  self: string
  /** Rows not written for this long are left out (the instance is gone). */
  ttl_ms: number
}

export interface ConfigControl {
  reload (): Promise<ReloadAnswer>
  instances (): Promise<InstanceListing>
}

/** The admin API's code for a refused reload: an operator's answer, not a catalogue error to tenants. */
export const CONFIG_INVALID = 'CONFIG_INVALID'

/** An instance's readiness as the public listener computes it (plugins/apps/server/readiness.ts). */
export interface ReadinessSource {
  report (): Promise<{ status: string }>
}

/**
 * GET /admin/v1/readyz: the whole readiness report (each check, the served config's hash, the
 * last refused reload's problems), with the public /readyz's status code. The public one says
 * only the status: its listener is the tenants'.
 */
export function readinessAdminRoute (app: FastifyInstance, probe: () => ReadinessSource): void {
  app.get('/readyz', async (_req, reply) => {
    const report = await probe().report()
    return await reply.code(report.status === 'ready' ? 200 : 503).send(report)
  })
}

export function configAdminRoutes (app: FastifyInstance, control: ConfigControl): void {
  app.post('/config/reload', NO_BODY, async (req, reply) => {
    const answer = await control.reload()
    if (answer.ok) return { hash: answer.hash, previous_hash: answer.previousHash, changed: answer.changed }
    // The admin API's error envelope (the chat family's fields), with the check report added.
    return await reply.code(422).send({
      error: {
        code: CONFIG_INVALID,
        message: `The config file has ${answer.problems.length} problem(s); it was not loaded and the running config keeps serving.`,
        reference: null,
        documentation_url: null,
        request_id: req.id,
        retry: null,
        billing: { status: 'NOT_BILLED' },
        type: 'invalid_request_error',
        param: null,
        problems: answer.problems
      },
      hash: answer.hash
    })
  })
  app.get('/instances', async () => await control.instances())
}
