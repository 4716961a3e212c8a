// The worst-case bounds of an operation as compiled from gateway.yaml (plugins/foundation/operations/compile.ts
// makes them; plugins/foundation/pricing/worst-case.ts reads them to size a hold): plain data.

/** A body parameter: `name` as the operator wrote it (`generationConfig.maxOutputTokens`), `keys` its steps. */
export interface ParamPath {
  readonly name: string
  readonly keys: readonly string[]
}

export interface OperationBounds {
  /** Parameters capping the output tokens of one generation. */
  readonly maxTokens: readonly ParamPath[]
  /** Parameters asking for several generations. */
  readonly count: readonly ParamPath[]
  /** The count is images: billed per image and capped by the model's max images. */
  readonly countIsImages: boolean
  /** A job's billed units: the product of these parameters, each its default when absent. */
  readonly jobUnits: readonly JobUnit[]
}

/** One factor of a job's units (a video's seconds, the videos asked for). */
export interface JobUnit {
  readonly path: ParamPath
  readonly default: number
}
