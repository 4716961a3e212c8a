import type { Migration } from '../../migrate.js'

// Key quotas and caps (plugins/foundation/store/ledger/caps.ts): a hold of a key with caps records the key
// and the periods it reserved in, so its settle, release or expiry gives the reservation back in
// the same transaction; key_usage keeps the buckets (used = posted, held = open reservations).
export const keyCaps: Migration = {
  version: 9,
  name: 'key-caps',
  sql: `
ALTER TABLE holds ADD COLUMN cap_key_id TEXT;
ALTER TABLE holds ADD COLUMN cap_day TEXT;
ALTER TABLE holds ADD COLUMN cap_image_day TEXT;
ALTER TABLE holds ADD COLUMN cap_images INTEGER NOT NULL DEFAULT 0 CHECK (cap_images >= 0);

CREATE TABLE key_usage (
  key_id  TEXT NOT NULL,
  kind    TEXT NOT NULL CHECK (kind IN ('total', 'spend', 'images')),
  period  TEXT NOT NULL,
  used    INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0),
  held    INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
  PRIMARY KEY (key_id, kind, period)
) STRICT, WITHOUT ROWID;

-- Account-level allowed models (JSON array of model ids; NULL = every model).
ALTER TABLE accounts ADD COLUMN allowed_models TEXT;

-- Platform image pauses switched by the admin API: one row per paused UTC day.
CREATE TABLE image_pauses (
  day         TEXT PRIMARY KEY,
  created_at  INTEGER NOT NULL
) STRICT;
`
}
