import type { Migration } from '../../migrate.js'

// Live gateway instances and the config each serves (plugins/foundation/store/instances.ts): every instance
// upserts its row at start, after each reload and every few seconds; the admin API lists the
// rows seen recently (GET /admin/v1/instances). An instance deletes its row when it stops.
export const instances: Migration = {
  version: 12,
  name: 'instances',
  sql: `
CREATE TABLE gateway_instances (
  id           TEXT PRIMARY KEY,
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  config_hash  TEXT NOT NULL,
  reloaded_at  INTEGER,
  started_at   INTEGER NOT NULL,
  seen_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX gateway_instances_seen ON gateway_instances (seen_at);
`
}
