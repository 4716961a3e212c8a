// The PostgreSQL ledger's statements. Each batch is ONE statement (data-modifying CTEs), so
// it commits or fails whole, in one round trip and one WAL flush.
//
// Deadlock freedom: every statement that writes a wallet or a hold first locks the wallets
// it touches in account_id order (`locked`, FOR NO KEY UPDATE, which the FK checks' KEY SHARE
// does not conflict with) and touches a hold row only through a join with `locked`, i.e.
// after its wallet lock is held. Hold rows are therefore never contended (whoever wants one
// already holds its wallet), and wallet locks are always taken in ascending order.
//
// Plans that do not depend on statistics: the statements run as named prepared statements,
// whose generic plan is kept until the next ANALYZE. A hold is therefore looked up by its
// primary key in a scalar subquery, never through a join or an EXISTS, which the planner may
// turn into a sequential scan: on a fresh table (no ANALYZE yet, 270 rows assumed) the settle
// batch's join scanned every hold, 17,000 rows and 2–7 ms per batch 20 s into a run
// (test/store-ledger-plans.test.ts checks every statement's generic plan).
//
// Exactness across processes: a row locked FOR NO KEY UPDATE is read in its newest committed
// version (READ COMMITTED re-check), and the later UPDATEs of the same rows add deltas
// (held = held + …), which PostgreSQL re-applies to that newest version too.

/**
 * Hold batch. $1 hold ids, $2 account ids, $3 amounts, $4 floors (the accounts' bounds),
 * $5 request ids, $6 expiries, $7 now. Per account, in queue order, a running SUM admits the
 * prefix whose every member keeps (available − running sum) ≥ its floor. Of the rest, a
 * request that would not fit even right after that prefix is refused (a serial order exists
 * in which it is refused); one that would fit (a bigger request before it failed) is left for
 * the next batch, so a large refusal never drags smaller requests down with it. A wallet
 * whose unrecovered_at is set refuses every hold (topup_required). The floor of the last
 * admitted hold becomes the wallet's bound (every admitted member left available ≥ its own
 * floor, the last one included). An account without a wallet row has balance 0: requests
 * that fit 0 wait until the row exists.
 */
export const HOLD_BATCH = `
WITH req AS MATERIALIZED (
  SELECT r.ord::int4 AS ord, r.hold_id, r.account_id, r.amount, r.floor, r.request_id, r.expires_at
  FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::text[], $6::timestamptz[])
    WITH ORDINALITY AS r (hold_id, account_id, amount, floor, request_id, expires_at, ord)
),
locked AS MATERIALIZED (
  SELECT w.account_id, w.balance - w.held AS available, w.unrecovered_at IS NOT NULL AS blocked
  FROM wallets w
  WHERE w.account_id IN (SELECT account_id FROM req)
  ORDER BY w.account_id
  FOR NO KEY UPDATE OF w
),
running AS MATERIALIZED (
  SELECT q.*, l.account_id IS NOT NULL AS has_wallet, COALESCE(l.available, 0) AS available,
    COALESCE(l.blocked, false) AS blocked,
    NOT COALESCE(l.blocked, false) AND COALESCE(l.available, 0) - SUM(q.amount) OVER acct >= q.floor AS fits
  FROM req q LEFT JOIN locked l ON l.account_id = q.account_id
  WINDOW acct AS (PARTITION BY q.account_id ORDER BY q.ord)
),
prefix AS MATERIALIZED (
  SELECT r.*, bool_and(r.fits) OVER (PARTITION BY r.account_id ORDER BY r.ord) AS in_prefix
  FROM running r
),
taken AS MATERIALIZED (
  SELECT account_id, COALESCE(SUM(amount) FILTER (WHERE in_prefix), 0)::int8 AS total,
    (array_agg(floor ORDER BY ord DESC) FILTER (WHERE in_prefix))[1] AS bound
  FROM prefix GROUP BY account_id
),
decided AS MATERIALIZED (
  SELECT p.ord, p.hold_id, p.account_id, p.amount, p.request_id, p.expires_at,
    CASE
      WHEN NOT p.has_wallet THEN CASE WHEN 0 - p.amount < p.floor THEN 'refused' ELSE 'no_wallet' END
      WHEN p.blocked THEN 'topup_required'
      WHEN p.in_prefix THEN 'admitted'
      WHEN p.available - t.total - p.amount < p.floor THEN 'refused'
      ELSE 'retry'
    END AS outcome
  FROM prefix p JOIN taken t ON t.account_id = p.account_id
),
inserted AS (
  INSERT INTO holds (id, account_id, amount, status, request_id, expires_at, created_at)
  SELECT hold_id, account_id, amount, 'open', request_id, expires_at, $7
  FROM decided WHERE outcome = 'admitted'
),
reserved AS (
  UPDATE wallets w SET held = w.held + t.total, bound = t.bound, updated_at = $7
  FROM taken t
  WHERE w.account_id = t.account_id AND t.bound IS NOT NULL
)
SELECT ord, outcome FROM decided ORDER BY ord`

/**
 * Creates the empty wallets of existing accounts (for holds that fit a balance of 0):
 * $1 account ids, $2 now. Answers the ids that name no account.
 */
export const CREATE_WALLETS = `
WITH input AS MATERIALIZED (
  SELECT DISTINCT a.id, EXISTS (SELECT 1 FROM accounts WHERE accounts.id = a.id) AS known
  FROM unnest($1::text[]) AS a (id)
),
created AS (
  INSERT INTO wallets (account_id, balance, held, updated_at)
  SELECT id, 0, 0, $2 FROM input WHERE known ORDER BY id
  ON CONFLICT (account_id) DO NOTHING
)
SELECT id FROM input WHERE NOT known`

/**
 * Gives back the reservations of the capped holds in `closed` (a CTE of closed hold rows with
 * their cap columns; uncapped holds have cap_key_id NULL and add nothing): every bucket loses
 * the hold's reservation from `held`; `posted` (an expression over `f`, the closed row;
 * NULL = nothing posted) goes to `used`, and a posted hold's images too. Sums per bucket
 * first: one UPDATE may change a row only once. The key's wallet is locked already.
 */
function unreserveSql (closed: string, posted: string): string {
  return `
  UPDATE key_usage u SET held = u.held - d.held, used = u.used + d.used
  FROM (
    SELECT key_id, kind, period, SUM(held)::int8 AS held, SUM(used)::int8 AS used
    FROM (
      SELECT f.cap_key_id AS key_id, b.kind, b.period, b.held, b.used
      FROM ${closed} f,
        LATERAL (SELECT COALESCE(${posted}, 0)::int8 AS posted) p,
        LATERAL (VALUES
          ('total', '', f.amount, p.posted),
          ('spend', f.cap_day, f.amount, p.posted),
          ('images', f.cap_image_day, f.cap_images::int8, CASE WHEN f.status = 'posted' THEN f.cap_images::int8 ELSE 0 END)
        ) AS b (kind, period, held, used)
      WHERE f.cap_key_id IS NOT NULL AND (b.kind <> 'images' OR f.cap_images > 0)
    ) parts
    GROUP BY key_id, kind, period
  ) d
  WHERE u.key_id = d.key_id AND u.kind = d.kind AND u.period = d.period`
}

/**
 * A capped hold (one key, one account), in one transaction after the account's wallet is
 * locked FOR NO KEY UPDATE (the lock every writer of the key's buckets takes first): the
 * key's buckets, summed by the caller. $1 key, $2 first local day of the 30-day window,
 * $3 UTC day of the images.
 */
export const CAP_USAGE = `
SELECT kind, period, used + held AS amount FROM key_usage
WHERE key_id = $1 AND (kind = 'total' OR (kind = 'spend' AND period >= $2) OR (kind = 'images' AND period = $3))`

/**
 * Locks the wallet of a capped hold: $1 account. Answers its available balance and whether
 * holds wait for a top-up.
 */
export const LOCK_WALLET = 'SELECT balance - held AS available, unrecovered_at IS NOT NULL AS blocked FROM wallets WHERE account_id = $1 FOR NO KEY UPDATE'

/**
 * Places a capped hold and reserves it: $1 hold id, $2 account, $3 amount, $4 request id,
 * $5 expiry, $6 now, $7 key, $8 local day, $9 UTC day, $10 images, $11 floor (the account's
 * bound from now on).
 */
export const CAPPED_HOLD = `
WITH inserted AS (
  INSERT INTO holds (id, account_id, amount, status, request_id, expires_at, created_at, cap_key_id, cap_day, cap_image_day, cap_images)
  VALUES ($1::text, $2::text, $3::int8, 'open', $4::text, $5::timestamptz, $6::timestamptz, $7::text, $8::text, $9::text, $10::int4)
),
reserved AS (
  UPDATE wallets SET held = held + $3::int8, bound = $11::int8, updated_at = $6::timestamptz WHERE account_id = $2::text
)
INSERT INTO key_usage (key_id, kind, period, used, held)
SELECT $7::text, b.kind, b.period, 0, b.held
FROM (VALUES ('total', '', $3::int8), ('spend', $8::text, $3::int8), ('images', $9::text, $10::int4::int8)) AS b (kind, period, held)
WHERE b.kind <> 'images' OR $10::int4 > 0
ON CONFLICT (key_id, kind, period) DO UPDATE SET held = key_usage.held + excluded.held`

/**
 * Settle/release batch. $1 hold ids (distinct), $2 amounts (NULL = release), $3 request
 * ids, $4 notes, $5 entry ids, $6 now.
 *
 * After its wallets, the batch locks its holds still open (`open`): a hold another process
 * closed meanwhile is re-read in its newest version and left out (READ COMMITTED re-check),
 * so a second settle of it is a no-op. A hold past its expiry flips to expired and posts
 * nothing.
 *
 * The bound: per account, in queue order, each settle posts at most its hold plus the slack
 * D = available − bound that is left when it comes (the account's other open holds stay
 * backed); what it asked beyond that is its unrecovered part. D starts at the locked wallet's
 * available − bound (0 when the wallet has no bound yet or is below it) and moves by
 * g = hold − asked per close (a release or expiry asks 0), never below 0: D_k = max(0,
 * D_k−1 + g_k). That is a walk reflected at 0, whose closed form needs no loop: with
 * T_k = D_0 + (g_1 + … + g_k) and M_k = min(0, T_1, …, T_k), the unrecovered part of close k is
 * M_k−1 − M_k (`walk`, then `settled`: two window passes), the same answers as the closes one
 * by one.
 *
 * A posted hold records the part of it the charge used (posted_amount), the posted part above
 * it (overage) and the unrecovered part; the charge entry carries the posted amount and both
 * marks: same statement and row count, with or without them. Each wallet is updated once with
 * the batch's sums (held loses every flipped hold, balance the charges actually inserted) and,
 * when a charge left something unrecovered, unrecovered_at is set: holds wait for a top-up.
 */
export const SETTLE_BATCH = `
WITH req AS MATERIALIZED (
  SELECT r.ord::int4 AS ord, r.hold_id, r.amount, r.request_id, r.note, r.entry_id
  FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::text[])
    WITH ORDINALITY AS r (hold_id, amount, request_id, note, entry_id, ord)
),
locked AS MATERIALIZED (
  SELECT w.account_id, w.balance - w.held AS available, w.bound
  FROM wallets w
  WHERE w.account_id IN (SELECT (SELECT h.account_id FROM holds h WHERE h.id = r.hold_id) FROM req r)
  ORDER BY w.account_id
  FOR NO KEY UPDATE OF w
),
open AS MATERIALIZED (
  SELECT h.id, h.account_id, h.amount, r.ord,
    CASE WHEN r.amount IS NULL THEN 'released' WHEN h.expires_at <= $6 THEN 'expired' ELSE 'posted' END AS status,
    CASE WHEN r.amount IS NOT NULL AND h.expires_at > $6 THEN r.amount ELSE 0 END AS asked,
    GREATEST(l.available - COALESCE(l.bound, l.available), 0) AS slack
  FROM req r
  JOIN holds h ON h.id = r.hold_id
  JOIN locked l ON l.account_id = h.account_id
  WHERE h.status = 'open'
  FOR NO KEY UPDATE OF h
),
walk AS MATERIALIZED (
  SELECT o.*, o.slack + SUM(o.amount - o.asked) OVER (PARTITION BY o.account_id ORDER BY o.ord ROWS UNBOUNDED PRECEDING) AS reach
  FROM open o
),
settled AS MATERIALIZED (
  SELECT u.*, u.asked - u.unrecovered AS posted
  FROM (
    SELECT w.id, w.amount, w.status, w.asked,
      (LEAST(0, MIN(w.reach) OVER (PARTITION BY w.account_id ORDER BY w.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
        - LEAST(0, MIN(w.reach) OVER (PARTITION BY w.account_id ORDER BY w.ord ROWS UNBOUNDED PRECEDING)))::int8 AS unrecovered
    FROM walk w
  ) u
),
flipped AS (
  UPDATE holds h SET
    status = s.status,
    posted_amount = CASE WHEN s.status = 'posted' THEN LEAST(s.posted, h.amount) END,
    overage = NULLIF(GREATEST(s.posted - h.amount, 0), 0),
    unrecovered = NULLIF(s.unrecovered, 0),
    settled_at = $6
  FROM settled s
  WHERE h.id = s.id AND h.status = 'open'
  RETURNING h.id, h.account_id, h.amount, h.status, h.posted_amount, h.overage, h.unrecovered,
    h.cap_key_id, h.cap_day, h.cap_image_day, h.cap_images
),
charged AS (
  INSERT INTO ledger_entries (id, account_id, amount, kind, posting_id, hold_id, request_id, note, overage, unrecovered, created_at)
  SELECT r.entry_id, f.account_id, -(f.posted_amount + COALESCE(f.overage, 0)), 'charge', 'post:' || f.id, f.id, r.request_id, r.note,
    f.overage, f.unrecovered, $6
  FROM flipped f JOIN req r ON r.hold_id = f.id
  WHERE f.status = 'posted'
  ON CONFLICT (posting_id) DO NOTHING
  RETURNING hold_id, account_id, amount, unrecovered
),
unreserved AS (${unreserveSql('flipped', '(SELECT -c.amount FROM charged c WHERE c.hold_id = f.id)')}),
moved AS (
  UPDATE wallets w SET held = w.held - d.unheld, balance = w.balance + d.charged,
    unrecovered_at = CASE WHEN d.unrecovered THEN $6 ELSE w.unrecovered_at END, updated_at = $6
  FROM (
    SELECT account_id, SUM(unheld)::int8 AS unheld, SUM(charged)::int8 AS charged, bool_or(unrecovered) AS unrecovered
    FROM (
      SELECT account_id, amount AS unheld, 0::int8 AS charged, false AS unrecovered FROM flipped
      UNION ALL
      SELECT account_id, 0::int8, amount, unrecovered IS NOT NULL FROM charged
    ) parts
    GROUP BY account_id
  ) d
  WHERE w.account_id = d.account_id
)
SELECT r.ord, f.status, f.amount, f.posted_amount, f.overage, f.unrecovered,
  f.id IS NOT NULL OR (SELECT h.id FROM holds h WHERE h.id = r.hold_id) IS NOT NULL AS known
FROM req r LEFT JOIN flipped f ON f.id = r.hold_id
ORDER BY r.ord`

/** Expires up to $2 open holds whose expiry is ≤ $1, with the same lock order as settle. */
export const REAP = `
WITH due AS MATERIALIZED (
  SELECT id, account_id FROM holds
  WHERE status = 'open' AND expires_at <= $1
  ORDER BY expires_at LIMIT $2
),
locked AS MATERIALIZED (
  SELECT w.account_id
  FROM wallets w
  WHERE w.account_id IN (SELECT account_id FROM due)
  ORDER BY w.account_id
  FOR NO KEY UPDATE OF w
),
flipped AS (
  UPDATE holds h SET status = 'expired', settled_at = $1
  FROM due d, locked l
  WHERE h.id = d.id AND h.account_id = l.account_id AND h.status = 'open'
  RETURNING h.id, h.account_id, h.amount, h.status, h.cap_key_id, h.cap_day, h.cap_image_day, h.cap_images
),
unreserved AS (${unreserveSql('flipped', 'NULL::int8')}),
moved AS (
  UPDATE wallets w SET held = w.held - f.total, updated_at = $1
  FROM (SELECT account_id, SUM(amount)::int8 AS total FROM flipped GROUP BY account_id) f
  WHERE w.account_id = f.account_id
)
SELECT (SELECT count(*) FROM flipped)::int4 AS expired, (SELECT count(*) FROM due)::int4 AS due`

/**
 * Renews one hold: $1 hold id, $2 now, $3 ttl in ms. Only an open hold whose expiry is still
 * ahead moves, and never backwards. It locks the hold row alone, not its wallet: it waits on
 * nothing while holding that lock, so it cannot take part in a deadlock, and a settle that
 * comes after it reads the new expiry (READ COMMITTED re-check of the row it waited for).
 */
export const RENEW = `
WITH renewed AS (
  UPDATE holds SET expires_at = GREATEST(expires_at, $2::timestamptz + make_interval(secs => $3::int8 / 1000.0))
  WHERE id = $1 AND status = 'open' AND expires_at > $2
  RETURNING expires_at
)
SELECT (SELECT expires_at FROM renewed) AS expires_at,
  EXISTS (SELECT 1 FROM renewed) OR (SELECT id FROM holds WHERE id = $1) IS NOT NULL AS known`
