CREATE TABLE schema_migrations ( version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);
CREATE TABLE objects (
  digest   TEXT PRIMARY KEY NOT NULL CHECK (length(digest) = 64),  -- sha256 hex, lower case
  size     INTEGER NOT NULL CHECK (size >= 0),
  added_at TEXT NOT NULL
);
CREATE TABLE artifacts (
  id              INTEGER PRIMARY KEY,
  kind            TEXT NOT NULL,            -- cache::ArtifactKind as text
  address         TEXT NOT NULL,            -- registry.opentofu.org/hashicorp/aws, vmconfig item name
  version         TEXT NOT NULL,
  platform        TEXT NOT NULL DEFAULT '', -- linux_amd64, '' when not platform-specific
  filename        TEXT NOT NULL,            -- basename as published upstream
  digest          TEXT NOT NULL REFERENCES objects (digest),
  size            INTEGER NOT NULL,
  h1              TEXT NOT NULL DEFAULT '',
  zh              TEXT NOT NULL DEFAULT '',
  upstream_digest TEXT NOT NULL DEFAULT '', -- vmconfig "sha256:…" / "sha512:…"
  upstream_url    TEXT NOT NULL DEFAULT '', -- never holds credentials
  trust           TEXT NOT NULL,            -- signed_upstream | checksum | unverified
  added_at        TEXT NOT NULL, protocols TEXT NOT NULL DEFAULT '',
  UNIQUE (kind, address, version, platform, filename)
);
CREATE INDEX artifacts_by_digest ON artifacts (digest);
CREATE INDEX artifacts_by_address ON artifacts (address, version);
CREATE TABLE provenance (
  id               INTEGER PRIMARY KEY,
  artifact_id      INTEGER NOT NULL REFERENCES artifacts (id),
  shasums_digest   TEXT NOT NULL DEFAULT '',
  signature_digest TEXT NOT NULL DEFAULT '',
  keys_digest      TEXT NOT NULL DEFAULT '',
  key_fingerprint  TEXT NOT NULL DEFAULT '',
  result           TEXT NOT NULL,
  checked_at       TEXT NOT NULL,
  UNIQUE (artifact_id, shasums_digest, signature_digest, keys_digest, key_fingerprint, result)
);
CREATE TABLE module_trees (
  id           INTEGER PRIMARY KEY,
  address      TEXT NOT NULL,
  version      TEXT NOT NULL,
  h1           TEXT NOT NULL,
  upstream_url TEXT NOT NULL DEFAULT '',
  added_at     TEXT NOT NULL,
  UNIQUE (address, version)
);
CREATE TABLE module_files (
  tree_id INTEGER NOT NULL REFERENCES module_trees (id),
  path    TEXT NOT NULL,                    -- '/'-separated, relative to the package root
  mode    INTEGER NOT NULL,                 -- permission bits, e.g. 420 (0644) or 493 (0755)
  digest  TEXT NOT NULL REFERENCES objects (digest),
  size    INTEGER NOT NULL,
  PRIMARY KEY (tree_id, path)
);
CREATE INDEX module_files_by_digest ON module_files (digest);
CREATE TABLE tf_selection (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  module_address TEXT NOT NULL,
  module_version TEXT NOT NULL,
  engine         TEXT NOT NULL,
  updated_at     TEXT NOT NULL
);
CREATE TABLE tf_selection_providers (
  address     TEXT PRIMARY KEY NOT NULL,
  version     TEXT NOT NULL,
  constraints TEXT NOT NULL DEFAULT ''
);
CREATE TABLE tf_selection_platforms (
  platform TEXT PRIMARY KEY NOT NULL
);
CREATE TABLE audit_log (
  id      INTEGER PRIMARY KEY,
  at      TEXT NOT NULL,
  action  TEXT NOT NULL,
  subject TEXT NOT NULL,
  detail  TEXT NOT NULL DEFAULT '{}'        -- JSON
);
CREATE TABLE bundle_signers (
  signer      TEXT PRIMARY KEY NOT NULL,
  created_at  TEXT NOT NULL,               -- the newest bundle's manifest created_at
  bundle_id   TEXT NOT NULL,               -- that bundle's id
  recorded_at TEXT NOT NULL
);
CREATE TABLE quarantine (
  id      INTEGER PRIMARY KEY,
  at      TEXT NOT NULL,
  what    TEXT NOT NULL,                   -- object | artifact | module_tree | selected_provider | selected_platform | selected_module
  subject TEXT NOT NULL,                   -- the object digest, or the row in words
  reason  TEXT NOT NULL,
  detail  TEXT NOT NULL DEFAULT '{}'       -- JSON: the removed row(s), or where the object's bytes went
);
CREATE TABLE store_identity (
  singleton  INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
  store_id   TEXT NOT NULL,               -- 32 lower-case hex digits (16 random bytes)
  created_at TEXT NOT NULL
);
CREATE INDEX artifacts_by_kind_address_filename ON artifacts (kind, address, filename);
