-- The store's identity: a random id that names this store in `bundle inventory` files, so that
-- an incremental bundle made against one store's inventory (`bundle create --since`) is refused
-- by another. Created on first use by a writable store (Store::identity), never changed, so
-- two copies of one backup differ as soon as each asks for an id.

-- One row at most (the CHECK), so two processes racing to create it agree on the first.
CREATE TABLE store_identity (
  singleton  INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
  store_id   TEXT NOT NULL,               -- 32 lower-case hex digits (16 random bytes)
  created_at TEXT NOT NULL
);

-- Stores made before this table kept their id in the audit log (action "store-identity"; the
-- oldest entry won): they keep it.
INSERT INTO store_identity (singleton, store_id, created_at)
  SELECT 1, subject, at FROM audit_log WHERE action = 'store-identity' ORDER BY id LIMIT 1;
