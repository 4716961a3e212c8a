import type { Migration } from '../../migrate.js'

// Revocation without Redis (plugins/concerns/auth/change-watcher.ts): one revision counter, bumped by
// every write to a key or an account, whoever writes (a gateway, the CLI, the console; triggers,
// so no write path can forget it). Each key and account row records the revision of its last
// write, so a running instance that saw the counter move reads which rows changed and drops just
// those from its key cache. A deleted row leaves nothing to read: `cleared` records the revision
// of the last delete, and an instance that sees it move drops its whole cache.
export const storeRevision: Migration = {
  version: 16,
  name: 'store-revision',
  sql: `
CREATE TABLE store_revision (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  value    INTEGER NOT NULL,
  cleared  INTEGER NOT NULL
) STRICT;
INSERT INTO store_revision (id, value, cleared) VALUES (1, 0, 0);
ALTER TABLE api_keys ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
CREATE INDEX api_keys_revision_idx ON api_keys (revision);
CREATE INDEX accounts_revision_idx ON accounts (revision);
CREATE TRIGGER api_keys_revision_insert AFTER INSERT ON api_keys BEGIN
  UPDATE store_revision SET value = value + 1 WHERE id = 1;
  UPDATE api_keys SET revision = (SELECT value FROM store_revision WHERE id = 1) WHERE id = NEW.id;
END;
CREATE TRIGGER api_keys_revision_update AFTER UPDATE ON api_keys WHEN NEW.revision = OLD.revision BEGIN
  UPDATE store_revision SET value = value + 1 WHERE id = 1;
  UPDATE api_keys SET revision = (SELECT value FROM store_revision WHERE id = 1) WHERE id = NEW.id;
END;
CREATE TRIGGER api_keys_revision_delete AFTER DELETE ON api_keys BEGIN
  UPDATE store_revision SET value = value + 1, cleared = value + 1 WHERE id = 1;
END;
CREATE TRIGGER accounts_revision_update AFTER UPDATE ON accounts WHEN NEW.revision = OLD.revision BEGIN
  UPDATE store_revision SET value = value + 1 WHERE id = 1;
  UPDATE accounts SET revision = (SELECT value FROM store_revision WHERE id = 1) WHERE id = NEW.id;
END;
CREATE TRIGGER accounts_revision_delete AFTER DELETE ON accounts BEGIN
  UPDATE store_revision SET value = value + 1, cleared = value + 1 WHERE id = 1;
END;
`
}
