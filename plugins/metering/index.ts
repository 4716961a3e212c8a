export { createMeter, type Meter, type MeterInput, type RequestFacts } from './meter.js'
export { emptyUsage, sanitize, sanitizeCount, type RawUsage, type SanitizedUsage, type Usage, type UsageCounts, type UsageField } from './usage.js'
export { createSseParser, type SseEvent, type SseParser, type SseParserOptions } from './sse.js'
export { injectIncludeUsage, createUsageChunkFilter, createUsageEventFilter, type ChunkFilter } from './include-usage.js'
