#pragma once
// Engine release zips checked again from what the store keeps (docs/tools.md): their stored
// SHA256SUMS and signature against the pinned release keys, offline, for `deps verify`,
// `bundle import` and `tools install`. Reads only. Kept apart from cache/tool_releases.hpp so
// that its callers (bundle/) need no lockfile/ types.
#include <cstddef>
#include <string>
#include <vector>

#include "cache/store.hpp"

namespace podplane::cache {

struct ToolRecheck {
  std::size_t archives_checked = 0;    // tool_archive rows whose signed provenance was re-verified
  std::size_t signatures_checked = 0;  // distinct SHA256SUMS signatures verified
  std::vector<std::string> problems;   // each names the archive and what failed
};

// For each of `archives` (tool_archive rows of `store`; podplane's own are left out,
// cache/podplane_releases.hpp checks them): its provenance names a stored
// SHA256SUMS and signature, the signature verifies with the engine's signing keys
// (cache/tool_releases.hpp) by the recorded key, and the document lists the archive's digest
// under its filename.
[[nodiscard]] ToolRecheck recheck_tool_archives(const Store& store, const std::vector<Artifact>& archives);
// recheck_tool_archives() of every engine's tool_archive row.
[[nodiscard]] ToolRecheck recheck_tool_archives(const Store& store);

}  // namespace podplane::cache
