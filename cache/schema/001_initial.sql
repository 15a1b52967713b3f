-- The store index, version 1. Every row is a commit point: an object file is published
-- (renamed into store/objects/) before its row exists, so a row never names a missing file.
-- Text timestamps are RFC 3339 UTC ("2026-01-02T03:04:05Z").

-- One row per published object file store/objects/sha256/<2 hex>/<62 hex>.
CREATE TABLE objects (
  digest   TEXT PRIMARY KEY NOT NULL CHECK (length(digest) = 64),  -- sha256 hex, lower case
  size     INTEGER NOT NULL CHECK (size >= 0),
  added_at TEXT NOT NULL
);

-- One row per indexed file: provider packages, their SHA256SUMS, signatures and keys,
-- vmconfig manifests and artifacts. The key (kind, address, version, platform, filename)
-- is unique; the store is additive, so a key never changes its digest.
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
  added_at        TEXT NOT NULL,
  UNIQUE (kind, address, version, platform, filename)
);
CREATE INDEX artifacts_by_digest ON artifacts (digest);
CREATE INDEX artifacts_by_address ON artifacts (address, version);

-- How a provider package was checked (SHA256SUMS, signature, keys are objects too).
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

-- A module package and its files; h1 is dirhash Hash1 over (path, digest) of the files.
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

-- What `deps tf` last resolved (state, replaced as a whole): one settings row (id = 1),
-- the selected providers and the union of requested platforms.
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

-- Fetches, bundles, imports, gc runs.
CREATE TABLE audit_log (
  id      INTEGER PRIMARY KEY,
  at      TEXT NOT NULL,
  action  TEXT NOT NULL,
  subject TEXT NOT NULL,
  detail  TEXT NOT NULL DEFAULT '{}'        -- JSON
);
