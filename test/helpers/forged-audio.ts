// Audio files whose header lies about their length, built byte by byte the way the formats are
// specified (RFC 9639 for FLAC, RIFF/WAVE for IMA ADPCM), so a test knows their true duration:
// what a decoder, and so a provider, measures.

/** CRC-8 of a FLAC frame header (polynomial x^8 + x^2 + x + 1). */
function crc8 (b: Buffer): number {
  let crc = 0
  for (const byte of b) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = (crc & 0x80) !== 0 ? ((crc << 1) ^ 0x07) & 0xff : (crc << 1) & 0xff
  }
  return crc
}

/** CRC-16 of a whole FLAC frame (polynomial x^16 + x^15 + x^2 + 1). */
function crc16 (b: Buffer): number {
  let crc = 0
  for (const byte of b) {
    crc ^= byte << 8
    for (let k = 0; k < 8; k++) crc = (crc & 0x8000) !== 0 ? ((crc << 1) ^ 0x8005) & 0xffff : (crc << 1) & 0xffff
  }
  return crc
}

/** The UTF-8-like coding of a FLAC frame number. */
function codedNumber (n: number): Buffer {
  if (n < 0x80) return Buffer.from([n])
  if (n < 0x800) return Buffer.from([0xc0 | (n >> 6), 0x80 | (n & 0x3f)])
  if (n < 0x10000) return Buffer.from([0xe0 | (n >> 12), 0x80 | ((n >> 6) & 0x3f), 0x80 | (n & 0x3f)])
  return Buffer.from([0xf0 | (n >> 18), 0x80 | ((n >> 12) & 0x3f), 0x80 | ((n >> 6) & 0x3f), 0x80 | (n & 0x3f)])
}

export interface ForgedFlac {
  file: Buffer
  /** Samples the frames really hold. */
  samples: number
  rate: number
  /** What a decoder plays, in seconds. */
  seconds: number
}

/**
 * A mono 8-bit FLAC of about `bytes` bytes: STREAMINFO claims `claimedSamples` (1: "one sample
 * long") at `rate` Hz, and VERBATIM frames of `block` samples each (sample rate "from
 * STREAMINFO") carry the real audio.
 */
export function forgedFlac (bytes: number, rate = 3200, block = 4096, claimedSamples = 1): ForgedFlac {
  const info = Buffer.alloc(4 + 34)
  info[0] = 0x80 // last metadata block, STREAMINFO
  info.writeUIntBE(34, 1, 3)
  info.writeUInt16BE(block, 4)
  info.writeUInt16BE(block, 6)
  info[14] = (rate >> 12) & 0xff
  info[15] = (rate >> 4) & 0xff
  info[16] = ((rate & 0x0f) << 4) | (0 << 1) | ((8 - 1) >> 4) // mono, 8 bits a sample
  info[17] = (((8 - 1) & 0x0f) << 4) | Math.floor(claimedSamples / 2 ** 32)
  info.writeUInt32BE(claimedSamples % 2 ** 32, 18)
  const parts: Buffer[] = [Buffer.from('fLaC', 'latin1'), info]
  let size = 4 + info.length
  let frames = 0
  const samples = Buffer.alloc(block)
  for (let i = 0; i < block; i++) samples[i] = (i * 37) & 0x7f // a quiet saw, never 0xFF
  while (size < bytes) {
    const header = Buffer.concat([Buffer.from([0xff, 0xf8, 0x70, 0x02]), codedNumber(frames), Buffer.from([(block - 1) >> 8, (block - 1) & 0xff])])
    const head = Buffer.concat([header, Buffer.from([crc8(header)])])
    const body = Buffer.concat([head, Buffer.from([0x02]), samples]) // VERBATIM subframe
    const crc = Buffer.alloc(2)
    crc.writeUInt16BE(crc16(body))
    const frame = Buffer.concat([body, crc])
    parts.push(frame)
    size += frame.length
    frames++
  }
  const total = frames * block
  return { file: Buffer.concat(parts), samples: total, rate, seconds: total / rate }
}

export interface ForgedWav {
  file: Buffer
  /** What a decoder plays, in seconds: blocks × samples per block / rate. */
  seconds: number
  /** What the header's byte rate claims, in seconds. */
  claimedSeconds: number
}

/**
 * A mono IMA-ADPCM WAV of about `bytes` bytes at `rate` Hz whose fmt chunk declares a byte rate of
 * `byteRate` (huge: "the file is a fraction of a second long").
 */
export function forgedAdpcmWav (bytes: number, rate = 6400, byteRate = 0x7fffffff): ForgedWav {
  const blockAlign = 256
  const samplesPerBlock = (blockAlign - 4) * 2 + 1 // 505
  const blocks = Math.floor((bytes - 60) / blockAlign)
  const dataBytes = blocks * blockAlign
  const fmt = Buffer.alloc(8 + 20)
  fmt.write('fmt ', 0, 'latin1')
  fmt.writeUInt32LE(20, 4)
  fmt.writeUInt16LE(0x11, 8) // WAVE_FORMAT_IMA_ADPCM
  fmt.writeUInt16LE(1, 10)
  fmt.writeUInt32LE(rate, 12)
  fmt.writeUInt32LE(byteRate, 16)
  fmt.writeUInt16LE(blockAlign, 20)
  fmt.writeUInt16LE(4, 22)
  fmt.writeUInt16LE(2, 24) // cbSize
  fmt.writeUInt16LE(samplesPerBlock, 26)
  const fact = Buffer.alloc(12)
  fact.write('fact', 0, 'latin1')
  fact.writeUInt32LE(4, 4)
  fact.writeUInt32LE(1, 8) // "one sample"
  const data = Buffer.alloc(8 + dataBytes, 0x11)
  data.write('data', 0, 'latin1')
  data.writeUInt32LE(dataBytes, 4)
  const riff = Buffer.alloc(12)
  riff.write('RIFF', 0, 'latin1')
  riff.writeUInt32LE(4 + fmt.length + fact.length + data.length, 4)
  riff.write('WAVE', 8, 'latin1')
  return { file: Buffer.concat([riff, fmt, fact, data]), seconds: blocks * samplesPerBlock / rate, claimedSeconds: dataBytes / byteRate }
}
