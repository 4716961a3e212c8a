export type { CompiledFeaturePrice, CompiledPrice, FeatureUsage, PriceUnit, Rate, Usage } from '../shapes/index.js'
export { MONEY_SCALE, MoneyFormatError, NANOS_PER_UNIT, formatMoney, isMoneyFormatError, parseMoney } from './money.js'
export { compilePrice, PriceConfigError } from './compile.js'
export { pricingProblems } from './completeness.js'
export { billableMillis, costOf } from './cost.js'
export { type AudioDuration, type DurationSource, LOWEST_BYTES_PER_SECOND, readAudioDuration, sizeBoundMillis } from './audio-duration.js'
export { type AudioBound, type AudioFile, audioDurationBound, flacFramesMillis, mp3FramesMillis } from './audio-bound.js'
export {
  BYTES_PER_TOKEN, DEFAULT_MAX_OUTPUT_TOKENS, MAX_IMAGES, type WorstCaseFile, type WorstCaseInput,
  featuresAtWorst, outputTokensPerGeneration, worstCaseUsage
} from './worst-case.js'
