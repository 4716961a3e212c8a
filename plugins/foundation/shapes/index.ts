// Plain data types of the foundation: a compiled model, its prices, a parsed body and a usage.
// The host (plugins/foundation/pipeline) and the concerns import them from here; this folder imports only
// the config's types.
export type { CompiledModel, ModelMeter, UsagePath, UsagePaths } from './model.js'
export type { JobUnit, OperationBounds, ParamPath } from './operation.js'
export type { CompiledFeaturePrice, CompiledPrice, ImagePrices, PriceUnit, Rate } from './price.js'
export type { BodyRules, MultipartFile, MultipartSummary, ParsedBody } from './body.js'
export type { FeatureUsage, ImageTier, Usage } from './usage.js'
