import type { Migration } from '../../migrate.js'

// Revocation without Redis (plugins/concerns/auth/change-watcher.ts): one revision counter, bumped by
// every write to a key or an account, whoever writes (a gateway, the CLI, the console; triggers,
// so no write path can forget it). Each key and account row records the revision of its last
// write, so a running instance that saw the counter move reads which rows changed and drops just
// those from its key cache. The bump takes the counter row's lock until commit, so revisions
// commit in order: once an instance reads revision N, every write up to N is visible to it. A
// deleted row leaves nothing to read: `cleared` records the revision of the last delete, and an
// instance that sees it move drops its whole cache.
export const storeRevision: Migration = {
  version: 16,
  name: 'store-revision',
  sql: `
CREATE TABLE store_revision (
  id       SMALLINT PRIMARY KEY CHECK (id = 1),
  value    BIGINT NOT NULL,
  cleared  BIGINT NOT NULL
);
INSERT INTO store_revision (id, value, cleared) VALUES (1, 0, 0);
ALTER TABLE api_keys ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE INDEX api_keys_revision_idx ON api_keys (revision);
CREATE INDEX accounts_revision_idx ON accounts (revision);
CREATE FUNCTION store_revision_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE store_revision SET value = value + 1 WHERE id = 1 RETURNING value INTO NEW.revision;
  RETURN NEW;
END
$$;
CREATE FUNCTION store_revision_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE store_revision SET value = value + 1, cleared = value + 1 WHERE id = 1;
  RETURN OLD;
END
$$;
CREATE TRIGGER api_keys_revision BEFORE INSERT OR UPDATE ON api_keys FOR EACH ROW EXECUTE FUNCTION store_revision_bump();
CREATE TRIGGER accounts_revision BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION store_revision_bump();
CREATE TRIGGER api_keys_revision_delete AFTER DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION store_revision_clear();
CREATE TRIGGER accounts_revision_delete AFTER DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION store_revision_clear();
`
}
