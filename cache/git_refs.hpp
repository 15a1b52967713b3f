#pragma once
// The refs document of a stored git snapshot (docs/store.md "Git sources"): which ref of a
// repository a module source named, what kind of ref it is, the commit it named when it was
// fetched and the shallow boundary of that fetch. Written by `deps tf` beside the snapshot's
// pack, carried in bundles, read by `mirror serve` to rebuild the repository. Pure; reading
// checks every field, since the document may come from a bundle.
#include <string>
#include <vector>

#include "cache/rows.hpp"

namespace podplane::cache {

struct GitRef {
  enum class Kind { tag, branch, commit };
  std::string name;    // as the source wrote it: v1.2.0, main, or a commit id
  Kind kind = Kind::tag;
  std::string commit;  // the full object id the ref named when it was fetched
  std::vector<std::string> shallow;  // the fetch's shallow boundary (empty: the whole history)
  std::string object_format = "sha1";  // or sha256

  // Where a bare repository keeps it: refs/tags/<name>, refs/heads/<name>, and for a commit
  // refs/heads/podplane/commit-<id> (so that a whole clone fetches it: a commit no branch
  // reaches is not sent).
  [[nodiscard]] std::string refname() const;
};

[[nodiscard]] std::string git_refs_document(const GitRef& ref);
// Error "<where>: …" unless the document is one git_refs_document writes: object ids of the
// format's length in lower-case hex, a ref name git accepts (no "..", no control characters,
// no leading '-' or '/', …).
[[nodiscard]] GitRef parse_git_refs_document(const std::string& text, const std::string& where);

// The row of one file of a git snapshot of the repository `address` (the source's store address)
// at the ref `version`: git_pack "<commit>.pack" or git_refs "<commit>.refs.json", trust
// checksum (git checks every object against its id).
[[nodiscard]] Artifact git_snapshot_row(ArtifactKind kind, const std::string& address, const std::string& version,
                                        const std::string& commit, const std::string& digest, const std::string& upstream_url);

}  // namespace podplane::cache
