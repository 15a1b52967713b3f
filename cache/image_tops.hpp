#pragma once
// The top of an image is what its tag names: its index, or its manifest when the tag has no
// index (docs/images.md). A cosign signature signs the top; the manifests below an index are
// covered by the index's digests. The one answer to "which row is an image's top", for the
// recheck under a cosign policy (cache/cosign_policy.hpp) and the signer lookup of the catalogue
// and the transfer report (cache/signers.hpp); which rows are indexes and manifests the table
// of kinds says (PruneRole::image_top, image_manifest).
// Immutable once built; reads `store` (when given) from the calling thread only.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cache/rows.hpp"

namespace podplane::cache {

class Store;

class ImageTops {
 public:
  // The tags the indexes among `rows` name. With `store`, a tag without an index among `rows`
  // is also looked up in the store (is_top).
  explicit ImageTops(const std::vector<Artifact>& rows, const Store* store = nullptr);

  // Whether `row` is the top of its image: an index, or a manifest whose tag (address and
  // version) has no index. False for every other row.
  [[nodiscard]] bool is_top(const Artifact& row) const;
  // The digest the tag of `row` names: that of the index of its address and version among the
  // rows (the last one given), else its own (its filename).
  [[nodiscard]] const std::string& top_digest(const Artifact& row) const;

 private:
  const Store* store_;
  std::map<std::pair<std::string, std::string>, std::string> index_of_tag_;  // (address, tag) → index digest
};

}  // namespace podplane::cache
