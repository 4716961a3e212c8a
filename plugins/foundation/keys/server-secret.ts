// Where the server secret (HMAC + sealing root) comes from.
//
// Instances sharing a database must share the secret, otherwise keys created on one
// instance would not authenticate on another; so with DATABASE_URL we insist on
// GATEWAY_SECRET. Single-node embedded mode may auto-create one for convenience.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, restrictFile } from './private-files.js'
import { randomBytes as nodeRandomBytes } from 'node:crypto'
import { MIN_SECRET_LENGTH } from './key-crypto.js'
import type { RandomBytes } from './key-format.js'

export const SECRET_FILE_NAME = 'gateway.secret'

export interface ResolveServerSecretOptions {
  /** Value of GATEWAY_SECRET; undefined or empty means "not set". */
  gatewaySecret?: string | undefined
  /** Embedded data directory (GATEWAY_DATA_DIR). */
  dataDir: string
  /** Value of DATABASE_URL; when set, an operator-provided secret is mandatory. */
  databaseUrl?: string | undefined
  random?: RandomBytes
}

export interface ResolvedServerSecret {
  secret: string
  /** True when the secret is auto-managed in a file rather than given by the operator: log a warning. */
  generated: boolean
  /** The secret file, when one was used. */
  path?: string
  /** True when this call created the file. */
  created?: boolean
}

export class ServerSecretError extends Error {
  override readonly name = 'ServerSecretError'
}

export function resolveServerSecret (opts: ResolveServerSecretOptions): ResolvedServerSecret {
  const given = opts.gatewaySecret
  if (given !== undefined && given !== '') {
    if (given.length < MIN_SECRET_LENGTH) {
      throw new ServerSecretError(
        `GATEWAY_SECRET must be at least ${MIN_SECRET_LENGTH} characters (got ${given.length}); ` +
          'generate one with: openssl rand -base64 32'
      )
    }
    return { secret: given, generated: false }
  }
  if (opts.databaseUrl !== undefined && opts.databaseUrl !== '') {
    throw new ServerSecretError(
      'GATEWAY_SECRET is required when DATABASE_URL is set: every instance must use the same ' +
        'secret to find and reveal API keys'
    )
  }
  mkdirSync(opts.dataDir, { recursive: true, mode: PRIVATE_DIR_MODE })
  const path = join(opts.dataDir, SECRET_FILE_NAME)
  const fresh = Buffer.from((opts.random ?? nodeRandomBytes)(32)).toString('base64url')
  try {
    // 'wx' fails when the file exists, so two processes starting together cannot
    // both write and end up with different secrets.
    writeFileSync(path, `${fresh}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' })
    return { secret: fresh, generated: true, path, created: true }
  } catch (err) {
    if (!isErrno(err, 'EEXIST')) throw err
  }
  // A file written by an older version (or copied in) may be readable by others.
  restrictFile(path)
  const stored = readFileSync(path, 'utf8').trim()
  if (stored.length < MIN_SECRET_LENGTH) {
    throw new ServerSecretError(
      `${path} holds a secret shorter than ${MIN_SECRET_LENGTH} characters; ` +
        'restore it from backup (deleting it makes every existing API key unusable)'
    )
  }
  return { secret: stored, generated: true, path, created: false }
}

function isErrno (err: unknown, code: string): boolean {
  return err instanceof Error && 'code' in err && err.code === code
}
