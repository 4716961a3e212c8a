import type { FastifyRequest } from 'fastify'
import type { RequestContext } from './context.js'

/**
 * One step of the request chain. Stages run in ascending priority before anything is sent
 * upstream; a stage refuses a request by throwing a GatewayError. Stages marked `perModel`
 * run again, in the same order, for every fallback model that is tried.
 */
export interface Stage {
  readonly name: string
  readonly priority: number
  readonly perModel?: boolean
  run (ctx: RequestContext, req: FastifyRequest): void | Promise<void>
}

export interface StageChain {
  readonly all: readonly Stage[]
  readonly perModel: readonly Stage[]
}

export function buildStageChain (stages: readonly Stage[]): StageChain {
  const seen = new Set<string>()
  const priorities = new Map<number, string>()
  for (const s of stages) {
    if (seen.has(s.name)) throw new Error(`stage ${s.name} registered twice`)
    const other = priorities.get(s.priority)
    if (other !== undefined) throw new Error(`stages ${other} and ${s.name} share priority ${s.priority}`)
    seen.add(s.name)
    priorities.set(s.priority, s.name)
  }
  const sorted = [...stages].sort((a, b) => a.priority - b.priority)
  return {
    all: Object.freeze(sorted),
    perModel: Object.freeze(sorted.filter((s) => s.perModel === true))
  }
}

export async function runStages (stages: readonly Stage[], ctx: RequestContext, req: FastifyRequest): Promise<void> {
  for (const s of stages) {
    const r = s.run(ctx, req)
    if (r !== undefined) await r
  }
}
