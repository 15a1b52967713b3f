#pragma once
// The Podplane-compatible views of a store (DESIGN.md "Views"), derived from the index and
// rebuildable from it at any time: provider zips (hard links into objects, copies where
// links fail), module trees, current-version, platforms, the lock file, the tfrc and the
// vmconfig manifests and artifacts. Safe against concurrent rebuilds by other processes.
#include "cache/store.hpp"

namespace podplane::cache {

struct ViewStats {
  std::size_t files_written = 0;  // files created or replaced this time
  std::size_t files_present = 0;  // already up to date
};

// Writes every view that the index implies. Does nothing (and returns zeros) on a
// read-only store. Never touches anything outside tf/ and vmconfig/.
ViewStats rebuild_views(Store& store);

}  // namespace podplane::cache
