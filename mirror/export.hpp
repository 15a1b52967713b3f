#pragma once
// `podplane mirror export DIR`: the export plan of a store (mirror/export_plan.hpp) written as
// a static tree that any web server can host (docs/mirror.md has the nginx configuration). The tree is built in a
// sibling temp dir and swapped in with one rename, so readers see the old or the new tree,
// never a mix. Only an empty dir or an earlier export is ever replaced. Every store object is
// hashed on the way out; one that does not match its digest fails the export (nothing is
// replaced). Container images go out as OCI image layouts under registry/mirror/<registry>/
// <repository>/ (mirror/oci_layout.hpp), not as /v2/ files. Errors: podplane::Error.
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "mirror/export_plan.hpp"

namespace podplane::mirror {

struct ExportStats {
  std::size_t files = 0;
  std::size_t linked = 0;        // store objects hard-linked instead of copied
  std::uint64_t bytes = 0;
  std::size_t skipped_rows = 0;  // index rows the site left out (see MirrorSite::skipped)
  std::size_t images = 0;        // OCI image layouts written under registry/
  std::size_t git_repositories = 0;  // bare repositories written under git/
};

[[nodiscard]] ExportStats export_site(const std::filesystem::path& deps_root, const std::filesystem::path& dir,
                                      const SiteOptions& options = {});

}  // namespace podplane::mirror
