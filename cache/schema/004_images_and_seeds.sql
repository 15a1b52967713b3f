-- Container images and Netsy seed snapshots (docs/images.md). Their rows are artifacts of
-- the kinds image_index, image_manifest, image_blob, seed_manifest and seed_snapshot, so that
-- `deps ls/verify/gc`, bundles, deltas and inventories carry them like every other file. This
-- version marks a store that may hold those kinds (an older podplane refuses it rather than
-- misreading a row), and indexes what the OCI read API of `mirror serve` looks up: the rows of
-- one image repository by OCI digest (filename) and by tag (version).
CREATE INDEX artifacts_by_kind_address_filename ON artifacts (kind, address, filename);
