import { createBodyReader, eventJson, isRecord, parseCaptured } from './body-reader.js'
import type { Meter, MeterInput, RequestFacts } from './meter-types.js'
import { codePoints, requestChars } from './request-text.js'
import { responsesUsage } from './token-dialects.js'
import { emptyUsage, MAX_TOKENS, sanitizeCount, tokensFromChars, tokenUsage, type Usage } from './usage.js'

/**
 * Input tokens per second of audio for token-billed transcription when the upstream reports
 * none: OpenAI prices gpt-4o(-mini)-transcribe so that a minute of audio is about 1,000 tokens.
 */
export const TRANSCRIPTION_TOKENS_PER_SECOND = 1000 / 60

/**
 * Output tokens per second of speech for token-billed speech, which never reports usage in
 * its binary answer: gpt-4o-mini-tts is priced at about 1,250 audio tokens a minute.
 */
export const SPEECH_TOKENS_PER_SECOND = 1250 / 60

/**
 * Bytes per second of speech by `response_format`, to turn an answer's size into seconds.
 * An assumption, not a measurement of any provider: PCM and WAV are 24 kHz 16-bit mono,
 * FLAC about 60% of that, and the lossy formats at typical speech bitrates (mp3 128 kbit/s,
 * aac 96 kbit/s, opus 32 kbit/s). The result is marked estimated.
 */
export const SPEECH_BYTES_PER_SECOND: Readonly<Record<string, number>> = {
  pcm: 48_000, wav: 48_000, flac: 28_800, mp3: 16_000, aac: 12_000, opus: 4_000
}

function str (v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}

function tokensFromSeconds (seconds: number, perSecond: number): number {
  return Math.min(MAX_TOKENS, Math.ceil(seconds * perSecond))
}

/**
 * Usage of a transcription (pure). Sources in order: `usage` of type duration (seconds) or
 * tokens; verbose_json's `duration`; else an estimate from the upload's length and the text.
 */
export function transcriptionUsage (usageRaw: unknown, duration: unknown, textChars: number, request: RequestFacts): Usage {
  const uploaded = sanitizeCount('audioSeconds', request.audioSeconds)
  const estimate = {
    inputTokens: tokensFromSeconds(uploaded ?? 0, TRANSCRIPTION_TOKENS_PER_SECOND) + tokensFromChars(requestChars(request)),
    outputTokens: tokensFromChars(textChars)
  }
  let rejected = usageRaw !== undefined && usageRaw !== null && !isRecord(usageRaw)
  if (isRecord(usageRaw)) {
    if (usageRaw.type === 'duration') {
      const seconds = sanitizeCount('audioSeconds', usageRaw.seconds)
      if (seconds !== undefined) return { ...emptyUsage(), audioSeconds: seconds }
      rejected = true
    } else {
      const tokens = tokenUsage(responsesUsage(usageRaw), estimate)
      if (!tokens.reported) tokens.audioSeconds = uploaded ?? 0
      return tokens
    }
  }
  const reportedDuration = sanitizeCount('audioSeconds', duration)
  if (reportedDuration !== undefined) return { ...emptyUsage(), audioSeconds: reportedDuration, reported: !rejected }
  // Nothing reported: fill both units, whichever the model bills in.
  return { ...tokenUsage(undefined, estimate), audioSeconds: uploaded ?? 0, reported: false }
}

/** Transcriptions: JSON (json, verbose_json), SSE (`stream=true`), or plain text (text, srt, vtt). */
export function createTranscriptionMeter (input: MeterInput): Meter {
  const streaming = input.sse || input.request.multipartFields?.stream === 'true'
  let sseUsage: unknown
  let deltaChars = 0
  let doneChars: number | undefined
  const reader = createBodyReader({
    sse: streaming,
    onEvent: (e) => {
      const data = eventJson(e.data)
      if (!data) return
      const type = str(data.type) ?? e.event
      if (type === 'transcript.text.delta') deltaChars += codePoints(str(data.delta) ?? '')
      if (type === 'transcript.text.done') {
        if (data.usage !== undefined) sseUsage = data.usage
        const text = str(data.text)
        if (text !== undefined) doneChars = codePoints(text)
      }
    },
    scan: { capture: new Set(['usage', 'duration', 'text']) },
    rawChars: true
  })
  return {
    onChunk: (chunk) => reader.push(chunk),
    finish: (): Usage => {
      reader.end()
      const scan = reader.scan()
      if (scan) {
        const captured = parseCaptured(scan.captured)
        return transcriptionUsage(captured.get('usage'), captured.get('duration'), codePoints(str(captured.get('text')) ?? ''), input.request)
      }
      if (reader.mode() === 'sse') return transcriptionUsage(sseUsage, undefined, doneChars ?? deltaChars, input.request)
      return transcriptionUsage(undefined, undefined, reader.rawChars(), input.request)
    }
  }
}

/** Audio bytes of a base64 string, without decoding it. */
export function base64Bytes (b64: string): number {
  let len = b64.length
  while (len > 0 && b64.charCodeAt(len - 1) === 0x3d /* = */) len--
  return Math.floor((len * 3) / 4)
}

/**
 * Usage of speech (pure). Characters are our own count of the request's `input`, so they are
 * reported; tokens come from a streamed `speech.audio.done` usage when there is one, else they
 * are estimated (input from the text, output from the audio's size), which only matters, and
 * only marks the usage estimated, when the model bills tokens or its unit is unknown.
 */
export function speechUsage (json: Record<string, unknown>, audioBytes: number, usageRaw: unknown, unit: MeterInput['unit']): Usage {
  const text = str(json.input) ?? ''
  const characters = sanitizeCount('characters', codePoints(text)) ?? 0
  const format = str(json.response_format) ?? 'mp3'
  const seconds = audioBytes / (SPEECH_BYTES_PER_SECOND[format] ?? 16_000)
  const estimate = {
    inputTokens: tokensFromChars(characters + codePoints(str(json.instructions) ?? '')),
    outputTokens: tokensFromSeconds(seconds, SPEECH_TOKENS_PER_SECOND)
  }
  if (usageRaw !== undefined && usageRaw !== null) {
    return { ...tokenUsage(responsesUsage(usageRaw), estimate), characters }
  }
  return { ...emptyUsage(), ...estimate, characters, reported: unit === 'character' }
}

/** Speech: binary audio, or SSE (`stream_format: "sse"`) with base64 audio deltas. */
export function createSpeechMeter (input: MeterInput): Meter {
  const json = input.request.json ?? {}
  let audioBytes = 0
  let sseUsage: unknown
  const reader = createBodyReader({
    sse: input.sse || json.stream_format === 'sse',
    onEvent: (e) => {
      const data = eventJson(e.data)
      if (!data) return
      const type = str(data.type) ?? e.event
      if (type === 'speech.audio.delta') audioBytes += base64Bytes(str(data.audio) ?? '')
      if (type === 'speech.audio.done' && data.usage !== undefined) sseUsage = data.usage
    }
  })
  return {
    onChunk: (chunk) => reader.push(chunk),
    finish: (): Usage => {
      reader.end()
      const bytes = reader.mode() === 'sse' ? audioBytes : reader.bytes()
      return speechUsage(json, bytes, sseUsage, input.unit)
    }
  }
}
