#pragma once
// The Podplane-compatible views of a store (DESIGN.md "Views"), derived from the index and
// rebuildable from it at any time: provider zips (hard links into objects, copies where
// links fail), module trees, current-version, platforms, the lock file, the tfrc and the
// vmconfig manifests and artifacts. Safe against concurrent rebuilds by other processes.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/store.hpp"

namespace podplane::cache {

// One file of the views: either an object (hard-linked, or copied where a link fails or the
// mode differs from the object's read-only 0444) or generated content.
struct ViewFile {
  std::filesystem::path path;          // absolute, under <root>/tf or <root>/vmconfig
  std::string object_digest;           // non-empty: the file is this object
  std::optional<std::string> content;  // otherwise: these bytes
  std::uint32_t mode = 0444;           // object files: the mode to give a copy (module files keep theirs)
};

// Every view file the index implies, in a stable order. Pure: reads the index only.
// Errors when a row would name a path outside the views (it never should: ingest refuses such names).
[[nodiscard]] std::vector<ViewFile> planned_views(const Store& store);

struct ViewStats {
  std::size_t files_written = 0;  // files created or replaced this time
  std::size_t files_present = 0;  // already up to date
};

// Of two vmconfig artifacts that share one view path (the same name, version and file name
// for two arches), whether `a` is the one the view and `mirror serve` hold: the platform that
// sorts first (linux_amd64), then the older row.
bool vmconfig_artifact_wins(const Artifact& a, const Artifact& b);

// Writes every view that the index implies. Does nothing (and returns zeros) on a
// read-only store. Never touches anything outside tf/ and vmconfig/.
ViewStats rebuild_views(Store& store);

}  // namespace podplane::cache
