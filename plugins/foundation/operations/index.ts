export {
  billsSomething, compileOperation, compileOperations, operationEntries, operationsTable,
  type CompiledOperation, type CompiledOperations, type MeterSpec, type OperationJob
} from './compile.js'
export type { OperationBounds, ParamPath } from '../shapes/index.js'
export { builtinOperations, builtinOperationsFile, builtinOperationsRaw } from '../config/index.js'
export { checkBillableParameters, jobUnits, paramValue, type ParameterRange } from './billable-parameters.js'
export { operationsPlugin } from './plugin.js'
export { compileOperationFeatures, type CompiledFeature, type FeatureReport, type OperationFeatures } from './feature-compile.js'
export { detectFeatures, modelFeatureRefusal, queryPairs, type FeatureStance, type FeatureUse, type ModelFeatures } from './features.js'
export { featuresPlugin, inputPasses, modelFeatures, referencedMedia, worstFeatures, type ReferencedMedia } from './features-plugin.js'
