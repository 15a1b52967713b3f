-- Rollback protection for bundles, and the quarantine of `deps verify --repair`.

-- The newest bundle imported from each signer ("sha256:<key id>" of its Ed25519 key, or
-- "unsigned"). An import holds the tf selection of any older bundle from the same signer
-- (a replay) unless the user passes --allow-downgrade. Only ever moves forward.
CREATE TABLE bundle_signers (
  signer      TEXT PRIMARY KEY NOT NULL,
  created_at  TEXT NOT NULL,               -- the newest bundle's manifest created_at
  bundle_id   TEXT NOT NULL,               -- that bundle's id
  recorded_at TEXT NOT NULL
);

-- What `deps verify --repair` moved aside so that the store is never stuck: rows the views
-- cannot lay out (removed from their tables; the whole row is kept here as JSON) and
-- corrupt objects (the file moved to store/quarantine/; its rows stay, so that the next
-- fetch or import takes the object again).
CREATE TABLE quarantine (
  id      INTEGER PRIMARY KEY,
  at      TEXT NOT NULL,
  what    TEXT NOT NULL,                   -- object | artifact | module_tree | selected_provider | selected_platform | selected_module
  subject TEXT NOT NULL,                   -- the object digest, or the row in words
  reason  TEXT NOT NULL,
  detail  TEXT NOT NULL DEFAULT '{}'       -- JSON: the removed row(s), or where the object's bytes went
);
