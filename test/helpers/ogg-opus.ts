// Ogg Opus files built packet by packet (RFC 7845 pages, RFC 6716 TOC bytes), with what each
// packet decodes to computed here from the RFC's tables, not from the gateway's code.

/** Frame size in ms of each of the 32 TOC configurations (RFC 6716, Table 2). */
const FRAME_MS = [
  10, 20, 40, 60, 10, 20, 40, 60, 10, 20, 40, 60, // SILK NB, MB, WB
  10, 20, 10, 20, // Hybrid SWB, FB
  2.5, 5, 10, 20, 2.5, 5, 10, 20, 2.5, 5, 10, 20, 2.5, 5, 10, 20 // CELT NB, WB, SWB, FB
]

export interface OpusPacket { bytes: Buffer, ms: number }

/** A packet of configuration `config` and code `code` (3: `frames` frames), `size` bytes at least, and what it plays. */
export function opusPacket (config: number, code: 0 | 1 | 2 | 3, frames = 1, size = 1): OpusPacket {
  const head = code === 3 ? [config << 3 | 3, frames & 0x3f] : [config << 3 | code]
  const bytes = Buffer.alloc(Math.max(size, head.length), 0)
  bytes.set(head)
  const n = code === 0 ? 1 : code === 3 ? frames : 2
  return { bytes, ms: n * (FRAME_MS[config] as number) }
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256)
  for (let i = 0; i < 256; i++) {
    let r = i << 24
    for (let k = 0; k < 8; k++) r = (r & 0x80000000) !== 0 ? ((r << 1) ^ 0x04c11db7) : (r << 1)
    t[i] = r >>> 0
  }
  return t
})()

function oggCrc (b: Buffer): number {
  let crc = 0
  for (const byte of b) crc = ((crc << 8) ^ (CRC_TABLE[((crc >>> 24) ^ byte) & 0xff] as number)) >>> 0
  return crc
}

/** One Ogg page: `laces` lacing values for `data`, its flags and granule position. */
function page (serial: number, seq: number, flags: number, granule: bigint, laces: number[], data: Buffer): Buffer {
  const header = Buffer.alloc(27 + laces.length)
  header.write('OggS', 0, 'latin1')
  header[5] = flags
  header.writeBigUInt64LE(granule, 6)
  header.writeUInt32LE(serial, 14)
  header.writeUInt32LE(seq, 18)
  header[26] = laces.length
  header.set(laces, 27)
  const out = Buffer.concat([header, data])
  out.writeUInt32LE(oggCrc(out), 22)
  return out
}

function laceOf (length: number): number[] {
  return [...Array.from({ length: Math.floor(length / 255) }, () => 255), length % 255]
}

export const OPUS_HEAD = Buffer.from([...Buffer.from('OpusHead'), 1, 1, 0x38, 0x01, 0x80, 0xbb, 0, 0, 0, 0, 0])
const OPUS_TAGS = Buffer.concat([Buffer.from('OpusTags'), Buffer.from([4, 0, 0, 0]), Buffer.from('test'), Buffer.alloc(4)])

export interface OggOptions {
  /** The granule position written on every audio page (default: the true one, in 48 kHz samples). */
  granule?: (trueSamples: bigint) => bigint
  /** The first packet's bytes (default OpusHead). */
  head?: Buffer
  /** At most this many lacing values per page (default 255); a packet may run across pages. */
  lacesPerPage?: number
}

/** An Ogg file of one stream: the header packets, then `packets`, and the milliseconds they play. */
export function oggOpus (packets: readonly OpusPacket[], options: OggOptions = {}): { file: Buffer, ms: number } {
  const serial = 0x5eed
  const pages: Buffer[] = [page(serial, 0, 2, 0n, laceOf((options.head ?? OPUS_HEAD).length), options.head ?? OPUS_HEAD), page(serial, 1, 0, 0n, laceOf(OPUS_TAGS.length), OPUS_TAGS)]
  const perPage = options.lacesPerPage ?? 255
  // The lacing values of every packet in a row, then cut into pages.
  const laces: number[] = []
  const data = Buffer.concat(packets.map((p) => p.bytes))
  for (const p of packets) laces.push(...laceOf(p.bytes.length))
  let ms = 0
  for (const p of packets) ms += p.ms
  let at = 0
  let pos = 0
  let continued = false
  let samples = 0n
  let packetIndex = 0
  while (at < laces.length) {
    const mine = laces.slice(at, at + perPage)
    const bytes = mine.reduce((a, b) => a + b, 0)
    // Granule: the samples of the packets that end on this page.
    for (const l of mine) if (l < 255) { samples += BigInt((packets[packetIndex] as OpusPacket).ms * 48); packetIndex++ }
    const last = at + mine.length >= laces.length
    const granule = options.granule?.(samples) ?? samples
    pages.push(page(serial, pages.length, (continued ? 1 : 0) | (last ? 4 : 0), granule, mine, data.subarray(pos, pos + bytes)))
    continued = mine[mine.length - 1] === 255
    at += mine.length
    pos += bytes
  }
  return { file: Buffer.concat(pages), ms }
}

/** `n` packets of one byte that each play 60 ms (SILK NB, 60 ms frame, code 0): 60 ms a byte. */
export function tinyPackets (n: number): OpusPacket[] {
  return Array.from({ length: n }, () => opusPacket(3, 0))
}
