#pragma once
// How commands open the store under the deps root. Each throws podplane::Error naming the
// deps root and what to do.
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "base/error.hpp"
#include "cache/layout.hpp"
#include "cache/store.hpp"

namespace podplane::cli {

// Objects without their index: a store whose index was deleted or lost, never one to open as
// new and empty (an inventory of nothing would ask for every object again). Throws then.
inline void refuse_lost_index(const std::filesystem::path& root) {
  std::error_code error;
  if (std::filesystem::exists(cache::layout::index_db(root), error) || error) return;
  if (std::filesystem::is_empty(cache::layout::objects_dir(root), error) || error) return;
  throw Error("the store at " + root.string() + " has lost its index: " + cache::layout::index_db(root).string() +
              " is missing while store/objects holds objects; nothing was created or changed (restore the index "
              "from a backup, or import the bundles again into a new deps root)");
}

// The store of the commands that only read it (`cluster *`, `stack check`): it must exist
// already, and it is opened read-only when the media (or the user's permissions) do not allow
// writes.
inline cache::Store open_existing_store() {
  std::filesystem::path root = cache::default_deps_root();
  std::error_code error;
  if (!std::filesystem::exists(cache::layout::index_db(root), error)) {
    refuse_lost_index(root);
    throw Error("no dependency store at " + root.string() +
                " (set PODPLANE_DEPS_CACHE_DIR); run `podplane deps tf` while online, or import a bundle");
  }
  bool writable = ::access(root.c_str(), W_OK) == 0 && ::access(cache::layout::store_dir(root).c_str(), W_OK) == 0;
  return cache::Store::open(root, writable ? cache::Store::Access::read_write : cache::Store::Access::read_only);
}

// Queries (`deps ls|verify|du`, `deps prune --dry-run`) open read-only: they work on read-only
// media and never sweep or create anything. nullopt when there is no store yet.
inline std::optional<cache::Store> open_for_reading(const std::filesystem::path& root) {
  if (!std::filesystem::exists(cache::layout::index_db(root))) return std::nullopt;
  return cache::Store::open(root, cache::Store::Access::read_only);
}

// Commands that change an existing store never create one (gc, repair, prune): a missing index
// is an error, not an empty store to act on.
inline cache::Store open_existing_for_writing(const std::filesystem::path& root, const std::string& command) {
  if (!std::filesystem::exists(cache::layout::index_db(root))) {
    throw Error(command + " refused: there is no store index at " + cache::layout::index_db(root).string() +
                " (and " + command + " never creates one; nothing was changed)");
  }
  return cache::Store::open(root, cache::Store::Access::read_write, cache::Store::TempSweep::none);
}

}  // namespace podplane::cli
