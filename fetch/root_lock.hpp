#pragma once
// The lock of one OpenTofu/Terraform root (`deps tf --stack DIR --write-lock`): what
// `terraform providers lock -platform=…` writes into DIR/.terraform.lock.hcl, from the store.
// Each selected provider gets the hashes of the store's packages for the platforms asked for
// (cache::selection_lock, the one owner of a lock's hashes); where the committed lock already
// held that version, its hashes are kept beside them, and its entries for providers the root no
// longer requires stay, as `providers lock` keeps both. Errors are podplane::Error naming the file.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/platform.hpp"

namespace podplane::fetch {

// The root's lock: `selection` (one root's, as resolution chose it) with the store's hashes for
// `platforms`, merged with `committed` (the root's lock before this run, if it had one).
[[nodiscard]] lockfile::LockFile root_lock(const cache::Store& store,
                                           const std::vector<cache::TfSelection::Provider>& selection,
                                           const std::vector<std::string>& platforms,
                                           const std::optional<lockfile::LockFile>& committed);

// Writes `lock` as `engine` writes it to a root's lock `file` (lockfile::root_lock_file: where
// its links lead, inside the repository): a temp file beside it, synced, renamed over it, the
// directory synced; a crash leaves the old lock or the new one. Returns whether the bytes changed.
bool write_root_lock(const std::filesystem::path& file, const lockfile::LockFile& lock, lockfile::Engine engine);

}  // namespace podplane::fetch
