// A job create whose hook after the job is recorded fails (the idempotency concern linking its
// key to the job; here PostgreSQL refuses the link with a trigger): the provider accepted the job
// and the gateway recorded it with the request's hold. Were the failure thrown, the request would
// release the hold while the job row stayed pending, and the job's completion at the provider
// would find its hold released: unbilled (with the idempotency hook made to rethrow, this test
// saw the create answered 500 NOT_BILLED). The idempotency hook reports its failure, and jobs
// answer a create whose hook throws all the same: the job keeps its hold and is billed once.
import pg from 'pg'
import t from 'tap'
import { ledgerState } from './helpers/billing.js'
import { startTestGateway } from './helpers/gateway.js'
import { createVideo, rawGet, settledLedger } from './helpers/jobs.js'
import { TEST_DATABASE_URL } from './helpers/store.js'

t.test('a job create whose created hook fails is answered, keeps its hold and is billed once when it completes (pg)', async (t) => {
  const gw = await startTestGateway({ backend: 'pg' })
  t.teardown(() => gw.close())
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await db.connect()
  t.teardown(() => db.end())
  const schema = `"${gw.location}"`
  await db.query(`CREATE FUNCTION ${schema}.refuse_job_link() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'injected: the idempotency store refuses the job link'; END $$`)
  await db.query(`CREATE TRIGGER refuse_job_link BEFORE UPDATE ON ${schema}.idempotency_keys
    FOR EACH ROW WHEN (NEW.job_id IS NOT NULL) EXECUTE FUNCTION ${schema}.refuse_job_link()`)

  const before = await ledgerState(gw)
  const job = await createVideo(gw, { 'x-mock-job': 'complete', 'x-mock-job-polls': '1', 'x-idempotency-key': 'created-hook-fails' })
  t.match(job.id, /^job_[0-9A-Za-z]{22}$/, 'the create is answered with the gateway id')
  const linked = await db.query<{ job_id: string | null }>(`SELECT job_id FROM ${schema}.idempotency_keys WHERE idem_key = $1`, ['created-hook-fails'])
  t.same(linked.rows.map((r) => r.job_id), [null], 'the hook did fail: the key names no job')
  const held = await settledLedger(gw)
  t.equal(held.openHolds, 1, "the job's hold stays open after the request ended")
  t.equal((await gw.services.store.jobs.getOwned(job.id, gw.account.id))?.state, 'pending')

  let status = ''
  let lastPoll = ''
  for (let i = 0; i < 10 && status !== 'completed'; i++) {
    const poll = await rawGet(gw, `/v1/videos/${job.id}`, gw.auth)
    t.equal(poll.status, 200)
    status = (JSON.parse(poll.body) as { status: string }).status
    lastPoll = String(poll.headers['x-request-id'])
  }
  t.equal(status, 'completed', 'the job completed')
  // The completing poll posts the job in its settle, after its answer.
  const after = await settledLedger(gw, lastPoll)
  t.equal(after.openHolds, 0, 'its hold is closed')
  t.equal(after.charges.length, before.charges.length + 1, 'the job is charged once')
  t.ok(after.charged > before.charged, 'for more than nothing')
  t.equal(after.balance, before.balance - (after.charged - before.charged), 'the balance paid it')
})
