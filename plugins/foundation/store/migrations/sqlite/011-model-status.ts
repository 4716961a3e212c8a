import type { Migration } from '../../migrate.js'

// Model statuses set by the admin API (publish, pause, retire, unpublish): one row per model
// whose status overrides the one gateway.yaml declares, in the database every instance shares
// (each reads the table through a short cache, plugins/concerns/models/index.ts). No row: the
// configured status holds. Times are ms since the epoch.
export const modelStatus: Migration = {
  version: 11,
  name: 'model-status',
  sql: `
CREATE TABLE model_status (
  model_id    TEXT PRIMARY KEY,
  status      TEXT NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'retired')),
  updated_at  INTEGER NOT NULL
) STRICT;
`
}
