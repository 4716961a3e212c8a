// The built-in operations table (config/operations.yaml, compiled by the production code) looked
// up by name, for unit tests that feed one operation's meter or bounds to the code under test.
import { compileOperations, type CompiledOperation, type MeterSpec, type OperationBounds } from '../../plugins/foundation/operations/index.js'

export const BUILTIN_OPERATIONS = compileOperations({ operations: {} })

export function opOf (name: string): CompiledOperation {
  const op = BUILTIN_OPERATIONS.get(name)
  if (op === undefined) throw new Error(`no built-in operation ${name}`)
  return op
}

export const meterOf = (name: string): MeterSpec => opOf(name).meter
export const boundsOf = (name: string): OperationBounds => opOf(name).bounds
