#include "generator/seed.hpp"

#include "cache/layout.hpp"
#include "base/error.hpp"

namespace podplane::generator {

std::optional<StoredSeed> stored_seed(const cache::Store& store, const ClusterConfig& config) {
  const auto& seed = config.seed;
  if (seed.name.empty() || seed.name == "none" || !seed.path.empty()) return std::nullopt;
  if (seed.version.empty()) throw Error("cluster.seed.version is required when cluster.seed.name is \"" + seed.name + "\"");
  const cache::Artifact* chosen = nullptr;
  auto rows = store.artifacts({.kind = cache::ArtifactKind::seed_snapshot, .address = seed.name, .version = seed.version});
  for (const auto& row : rows)
    if (store.has_object(row.digest) && (chosen == nullptr || row.id > chosen->id)) chosen = &row;
  if (chosen == nullptr)
    throw Error("seed snapshot " + seed.name + " " + seed.version +
                " is not in the store, and without it the seed resource would download it during apply; run "
                "`podplane deps download` while online (or import a bundle that has it), or set cluster.seed.path");
  if (!seed.digest.empty() && seed.digest != chosen->upstream_digest)
    throw Error("podplane seed file digest is " + chosen->upstream_digest + ", want " + seed.digest + " (the stored " +
                seed.name + " " + seed.version + " snapshot is not the one cluster.seed.digest pins)");
  StoredSeed stored;
  stored.view = cache::layout::seeds_snapshots_dir(store.root()) / chosen->address / chosen->version / chosen->filename;
  stored.digest = chosen->upstream_digest;
  if (!std::filesystem::exists(stored.view))
    throw Error("the stored seed snapshot's view " + stored.view.string() + " is missing; run `podplane deps verify --repair`");
  return stored;
}

}  // namespace podplane::generator
