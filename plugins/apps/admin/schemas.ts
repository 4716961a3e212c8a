// JSON Schemas of the admin API's bodies and query strings, checked by Fastify before a handler
// runs: a body of the wrong shape, an unknown field or a value out of range is refused as a 400
// naming the field, never a 500. The service functions (shared with the CLI) still check what a
// schema cannot: that a tier or model exists, that a date is in the future, money bounds.
import { Ajv } from 'ajv'
import type { FastifySchema } from 'fastify'
import type { ErrorCode } from '../../foundation/errors/index.js'
import { gatewayError } from '../../foundation/errors/index.js'
import { MAX_CREDIT_UNITS } from '../../concerns/accounts/service.js'

/** Money as the admin API writes it: a decimal string, at most 9 decimals (nano-units inside). */
const MONEY = { type: 'string', pattern: '^[0-9]{1,19}(\\.[0-9]{1,9})?$', maxLength: 40 } as const
const NULLABLE_MONEY = { anyOf: [MONEY, { type: 'null' }] } as const
const NAME = { type: 'string', maxLength: 400 } as const
// No control characters: PostgreSQL refuses a NUL in text (a 500 before this), and no id has one.
const ID = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f\\u007f]+$' } as const
/** A page size in a query string: 1 to 1000 (MAX_PAGE_LIMIT), digits only. */
const PAGE_LIMIT = { type: 'string', pattern: '^(?:[1-9][0-9]{0,2}|1000)$' } as const

const KEY_FIELDS = {
  name: NAME,
  expires_at: { anyOf: [{ type: 'string', maxLength: 64 }, { type: 'null' }] },
  allowed_models: { anyOf: [{ type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', maxLength: 200 } }, { type: 'null' }] },
  active: { type: 'boolean' },
  timezone: { type: 'string', minLength: 1, maxLength: 64 },
  quota: NULLABLE_MONEY,
  daily_spend_cap: NULLABLE_MONEY,
  monthly_spend_cap: NULLABLE_MONEY,
  daily_image_cap: { anyOf: [{ type: 'integer', minimum: 0, maximum: 2 ** 31 - 1 }, { type: 'null' }] },
  tags: { type: 'array', maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 64 } },
  rate_limit_policy: { anyOf: [{ type: 'string', minLength: 1, maxLength: 100 }, { type: 'null' }] }
} as const

const object = (properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> =>
  ({ type: 'object', properties, required, additionalProperties: false })

const idParams = object({ id: ID }, ['id'])

/** Route schemas by route; `invalid` is the catalogue code a schema refusal answers with. */
export const ADMIN_SCHEMAS = {
  createAccount: { body: object({ name: NAME, tier: ID }, ['name']) },
  listAccounts: { querystring: object({ limit: PAGE_LIMIT, after: ID }) },
  accountId: { params: idParams },
  /** `/models/{id}`, the id URL-encoded (`openai%2Fgpt-4o`). */
  modelId: { params: idParams },
  /** `/models/{provider}/{name}`: the id's two parts as two segments. */
  modelPath: { params: object({ provider: ID, name: ID }, ['provider', 'name']) },
  updateAccount: { params: idParams, body: object({ name: NAME, tier: ID, status: { type: 'string', enum: ['active', 'suspended'] }, allowed_models: KEY_FIELDS.allowed_models }) },
  createKey: { params: idParams, body: object(KEY_FIELDS, ['name']) },
  updateKey: { params: idParams, body: object(KEY_FIELDS) },
  importLegacyKey: { params: idParams, body: object({ ...KEY_FIELDS, key: { type: 'string', minLength: 1, maxLength: 200 } }, ['key']) },
  credit: {
    params: idParams,
    body: object({
      amount: { ...MONEY, pattern: `^[0-9]{1,${String(MAX_CREDIT_UNITS).length}}(\\.[0-9]{1,9})?$` },
      kind: { type: 'string', enum: ['topup', 'grant'] },
      idempotency_key: { type: 'string', pattern: '^[\\x21-\\x7e]{1,200}$' },
      note: { type: 'string', maxLength: 500 }
    }, ['amount'])
  },
  listRequests: {
    querystring: object({
      account_id: ID,
      idempotency_key: { type: 'string', minLength: 1, maxLength: 255 },
      from: { type: 'string', maxLength: 64 },
      to: { type: 'string', maxLength: 64 },
      limit: PAGE_LIMIT,
      before: { type: 'string', maxLength: 400 }
    })
  },
  /** GET /admin/v1/console/outbox. */
  consoleOutbox: { querystring: object({ email: { type: 'string', maxLength: 320 }, limit: PAGE_LIMIT }) }
} satisfies Record<string, FastifySchema>

/** A route that takes no query parameter: any one is refused, by name. */
export const NO_QUERY = object({})

/** The schema of path parameters `names`, each an id (routes that declare none get this one). */
export function paramsOf (names: readonly string[]): Record<string, unknown> {
  return object(Object.fromEntries(names.map((n) => [n, ID])), [...names])
}

/** A sentence per field whose pattern a person cannot read from the pattern itself. */
const PATTERN_DETAILS: Readonly<Record<string, string>> = {
  amount: `amount must be a decimal string from 0.000000001 to ${MAX_CREDIT_UNITS} (at most 9 decimals).`,
  limit: 'limit must be an integer from 1 to 1000.'
}

/** The catalogue code of a schema refusal on key routes (the key settings' own code). */
export const KEY_SCHEMA_CODE: ErrorCode = 'AUTH_API_KEY_CONFIGURATION_INVALID'

/**
 * The admin API's own validator: no type coercion, no defaults, no removal of unknown fields
 * (Fastify's default would silently strip them: a misspelt "allowed_model" must be refused).
 * Compiled once per route at registration.
 */
export function adminValidatorCompiler (): (route: { schema: object }) => (data: unknown) => boolean {
  return ({ schema }) => {
    const text = JSON.stringify(schema)
    let validate = compiledSchemas.get(text)
    if (validate === undefined) {
      validate = adminAjv.compile(schema)
      compiledSchemas.set(text, validate)
    }
    return validate
  }
}

// One compiler and one validator per distinct schema for the process: the admin and console
// routes' schemas are the same at every boot and reload (compiling them again took 25 ms a
// server). Keyed by the schema's text, so the map holds one entry per distinct schema.
const adminAjv = new Ajv({ allErrors: false, strict: false, coerceTypes: false, useDefaults: false, removeAdditional: false })
const compiledSchemas = new Map<string, (data: unknown) => boolean>()

interface SchemaProblem {
  keyword: string
  instancePath: string
  params: Record<string, unknown>
  message?: string
}

/**
 * A Fastify validation error as the catalogue error the admin API answers: the field named in
 * `param` (the body itself as `body`), a short detail; null for any other error.
 */
export function schemaRefusal (err: unknown, code: ErrorCode): Error | null {
  const e = err as { validation?: SchemaProblem[], validationContext?: string } | null
  const first = e?.validation?.[0]
  if (first === undefined) return null
  const where = first.instancePath.split('/').filter((s) => s !== '')
  const context = e?.validationContext ?? 'body'
  let field = where[0] ?? context
  let detail: string
  const patternDetail = first.keyword === 'pattern' ? PATTERN_DETAILS[field] : undefined
  if (first.keyword === 'additionalProperties' && where.length === 0) {
    field = String(first.params.additionalProperty)
    detail = context === 'querystring' ? `Unknown query parameter ${JSON.stringify(field)}.` : `Unknown field ${JSON.stringify(field)}.`
  } else if (first.keyword === 'required' && where.length === 0) {
    field = String(first.params.missingProperty)
    detail = `${field} is required.`
  } else if (where.length === 0 && first.keyword === 'type') {
    detail = field === 'body' ? 'The body must be a JSON object.' : `${field} must be an object.`
  } else if (patternDetail !== undefined) {
    detail = patternDetail
  } else if (first.keyword === 'pattern' && first.params.pattern === ID.pattern) {
    detail = `${where.join('.')} must not contain control characters.`
  } else {
    detail = `${where.join('.')} ${first.message ?? 'is invalid'}.`
  }
  return gatewayError(code, { param: field, detail })
}
