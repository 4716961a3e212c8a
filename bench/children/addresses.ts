import type { AddressInfo } from 'node:net'

/** Listen backlog of every bench server: 2000 streams connect at once in the memory test. */
export const BACKLOG = 4096

export function requiredEnv (name: string): string {
  const v = process.env[name]
  if (v === undefined || v === '') throw new Error(`bench child: ${name} is not set`)
  return v
}

export function urlOf (address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') throw new Error('bench child: server did not bind a TCP port')
  return `http://127.0.0.1:${address.port}`
}
