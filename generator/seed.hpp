#pragma once
// The Netsy seed of a generated stack (docs/images.md "Seeds"): the provider's seed resource
// downloads seeds.json and the snapshot from the internet during apply unless it is given a
// local seed_path. A config that names a seed without a path gets the stored snapshot's view
// (seeds/snapshots/<name>/<version>/<file> under the deps root) and the digest seeds.json
// pinned, so apply never downloads. Pure lookups in the store; errors are podplane::Error
// naming the seed and the online command that fetches it.
#include <filesystem>
#include <string>

#include "cache/store.hpp"
#include "generator/config.hpp"

namespace podplane::generator {

struct StoredSeed {
  std::filesystem::path view;  // the snapshot file under the deps root's views
  std::string digest;          // "sha512:…" as seeds.json pinned it
};

// The stored snapshot for the config's seed, or nullopt when the config names none ("" or
// "none") or gives its own path. Error when it is not stored, or when the config pins another
// digest than the stored snapshot's.
[[nodiscard]] std::optional<StoredSeed> stored_seed(const cache::Store& store, const ClusterConfig& config);

}  // namespace podplane::generator
