#pragma once
// `deps prune` and `deps du`: the store item by item, and forgetting the items no one needs.
// An item is what a user names and keeps or drops whole:
//   provider       a provider version: its packages for every platform, SHA256SUMS, signature, keys
//   module         a module package version
//   vmconfig_manifest  a manifest (per kind and arch: its name) version
//   image          an image tag (or the digest it was fetched by): its index and manifests
//   seeds          a seeds.json
//   seed_snapshot  a seed snapshot version
//   tool           an engine release version (terraform or tofu): its zips, SHA256SUMS, signature;
//                  or a podplane release version: its tarballs, debs, OCI images and SHA256SUMS
// and what only exists because a kept item needs it, kept exactly when one does
// (ItemFamily, own_family: cache/kinds.hpp, whose table gives every kind its family):
//   vmconfig_artifact, vmconfig_boot_file  what a vmconfig manifest lists (by name, version, arch)
//   image_blobs    the config and layers of one image manifest (or of a signature manifest)
//   image_signature  a cosign signature (`sha256-<hex>.sig` attachment) of an image tag's top manifest
// plan_prune() only reads (it works on a read-only store); prune_store() needs the store alone,
// like gc. Errors are podplane::Error.
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cache/gc.hpp"
#include "cache/kinds.hpp"
#include "cache/store.hpp"

namespace podplane::cache {

// Whether `a` is an older version than `b`, both read as versions (a leading "v" allowed);
// false when either is not one.
[[nodiscard]] bool older_version(const std::string& a, const std::string& b);

// Something a user keeps whatever its age: a provider version a lock names, the module version
// and seed a cluster's stack pins. An empty `name` pins that version of every name.
struct ItemPin {
  ItemFamily family = ItemFamily::provider;
  std::string name;
  std::string version;
  std::string source;  // says who pins it: "lock /site/.terraform.lock.hcl"
};

struct PrunePolicy {
  // Keep the newest `keep` versions of every provider, module, manifest, image and seed.
  // Newest: by version where every version of the name is one (a leading "v" allowed), else
  // by when it was added. The default keeps everything (what `deps du` shows without --keep).
  std::size_t keep = SIZE_MAX;
  std::vector<ItemPin> pins;
  // vmconfig manifests a stack pinned, by the sha256 of their bytes, with who pins them.
  std::vector<std::pair<std::string, std::string>> pinned_manifests;
  // --older-than: an item added at or after this time (RFC 3339 UTC) is kept, one that only
  // exists for another item too.
  std::optional<std::string> added_before;
};

struct StoreItem {
  ItemFamily family = ItemFamily::provider;
  std::string name;      // provider or image address, module address, manifest name, seed name
  std::string version;   // image_blobs: the image manifest's digest
  std::string platform;  // vmconfig_artifact, vmconfig_boot_file: linux_<arch>; else ""
  std::size_t rows = 0;  // artifact rows, or a module tree's files
  std::uint64_t bytes = 0;  // the rows' sizes (an object two rows share counts twice)
  std::string added_at;     // its newest row's
  std::string kept_because;  // why it stays ("newest 3", "pinned by …", "needed by …"); "" when it goes
};

struct PrunePlan {
  std::vector<StoreItem> items;  // every item: by family, then name, then newest version first
  std::size_t objects = 0;       // indexed objects in the store
  std::uint64_t object_bytes = 0;
  std::size_t objects_freed = 0;  // indexed objects no kept row names (garbage already there included)
  std::uint64_t bytes_freed = 0;

  std::size_t removed_items() const;
};

// What the store holds by kind and by name: the totals `deps du` prints and the mirror's
// catalogue shows, summed from a plan's items (which list every item whatever the policy).
struct UsageTotals {
  std::size_t items = 0;
  std::size_t rows = 0;
  std::uint64_t bytes = 0;  // an object several rows share counts in each
};
struct StoreUsage {
  std::size_t objects = 0;  // indexed objects, each counted once
  std::uint64_t object_bytes = 0;
  std::map<std::string, UsageTotals> by_family;                          // family name → totals
  std::map<std::pair<std::string, std::string>, UsageTotals> by_name;  // (family, name) → totals
};
[[nodiscard]] StoreUsage usage_of(const PrunePlan& plan);
// by_family as `deps du --json` and catalogue.json write it: {family: {items, rows, bytes}}.
nlohmann::json to_json(const std::map<std::string, UsageTotals>& by_family);

// What a prune by `policy` would keep and remove, and the objects and bytes it would free.
// Reads the index and the kept vmconfig manifests (to know what they list); throws when a kept
// manifest cannot be read, since then nothing can say what it needs.
[[nodiscard]] PrunePlan plan_prune(const Store& store, const PrunePolicy& policy);

struct PruneReport {
  PrunePlan plan;
  std::size_t rows_removed = 0;            // artifact rows and module trees
  std::vector<std::string> removed_views;  // view files of removed rows, relative to the root
  GcReport gc;                             // the objects (and dead temp files) removed after
};

// Removes the items plan_prune() says go: their rows (and provenance, module files) and an
// audit entry "prune" in one transaction, then their views, then every object no row names
// (gc's step). Run again after a kill, it completes what the killed run left. Refuses, changing
// nothing, when another process has the store open for writing or the index cannot vouch for
// what it names (as gc).
// `after_step` is a seam for the crash tests: called once each step is done (and durable).
enum class PruneStep { planned, rows_removed, views_removed };
[[nodiscard]] PruneReport prune_store(Store& store, const PrunePolicy& policy,
                                      const std::function<void(PruneStep)>& after_step = {});

// The providers a .terraform.lock.hcl names, as pins naming the file.
[[nodiscard]] std::vector<ItemPin> lock_file_pins(const std::filesystem::path& lock_file);

nlohmann::json to_json(const PrunePlan& plan);

}  // namespace podplane::cache
