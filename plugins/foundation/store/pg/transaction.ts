// One PostgreSQL transaction on a pooled client: BEGIN, the work, COMMIT; on any failure a
// ROLLBACK, and a client whose ROLLBACK failed too is handed back broken, so the pool drops it
// instead of lending out a connection stuck in a failed transaction.
import type { Pool, PoolClient } from 'pg'

export async function inTransaction<T> (pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const value = await work(client)
    await client.query('COMMIT')
    return value
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: unknown) => {
      broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr))
    })
    throw err
  } finally {
    client.release(broken)
  }
}
