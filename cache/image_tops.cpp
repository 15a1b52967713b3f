#include "cache/image_tops.hpp"

#include "cache/kinds.hpp"
#include "cache/store.hpp"

namespace podplane::cache {

namespace {

bool is_index(const Artifact& row) { return kind_info(row).prune_role == PruneRole::image_top; }

}  // namespace

ImageTops::ImageTops(const std::vector<Artifact>& rows, const Store* store) : store_(store) {
  for (const auto& row : rows)
    if (is_index(row)) index_of_tag_[{row.address, row.version}] = row.filename;
}

bool ImageTops::is_top(const Artifact& row) const {
  const PruneRole role = kind_info(row).prune_role;
  if (role == PruneRole::image_top) return true;
  if (role != PruneRole::image_manifest) return false;
  if (index_of_tag_.count({row.address, row.version})) return false;
  if (store_ == nullptr) return true;
  for (const auto& kind : kinds()) {
    if (kind.prune_role != PruneRole::image_top) continue;
    if (!store_->artifacts({.kind = kind.kind, .address = row.address, .version = row.version}).empty()) return false;
  }
  return true;
}

const std::string& ImageTops::top_digest(const Artifact& row) const {
  auto index = index_of_tag_.find({row.address, row.version});
  return index != index_of_tag_.end() ? index->second : row.filename;
}

}  // namespace podplane::cache
