#pragma once
// What a bundle carries, gathered from its volumes' signed manifests (each row once, the
// objects the volumes hold, the volumes seen and missing) with its parity files beside them:
// what `bundle show` prints and the transfer report (bundle/report.hpp) describes. Reading a
// bundle's contents reads only the first two entries of each volume, never its objects.
// Errors are podplane::Error.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bundle/manifest.hpp"
#include "bundle/parity.hpp"

namespace podplane::bundle {

struct ContentsVolume {
  std::filesystem::path file;
  int index = 0;                   // 1-based, as its manifest says
  std::uint64_t objects = 0;       // the objects it holds
  std::uint64_t object_bytes = 0;
  std::uint64_t file_bytes = 0;    // the size of the volume file
};

struct BundleContents {
  std::string name;                // the bundle's file name (FILE of FILE.001-of-003)
  std::string bundle_id;
  std::string created_at;
  std::string tool_version;
  std::optional<std::string> expires_at;
  bool expired = false;
  std::optional<SinceInventory> since;
  std::vector<std::string> platforms;  // the --platform filter; empty = all
  std::string signer;                  // "sha256:<key id>" or "unsigned"
  int volume_count = 0;
  std::uint64_t total_objects = 0;     // over every volume, as the manifests say
  std::uint64_t total_bytes = 0;
  std::vector<ContentsVolume> volumes;            // those read, by index
  std::vector<TravellingArtifact> artifacts;      // each row once, in manifest order
  std::vector<cache::ModuleTree> module_trees;
  std::set<std::string> carried;                  // objects the volumes read hold
  std::optional<cache::TfSelection> tf_selection;
  std::optional<ParitySet> parity;
  std::optional<int> parity_percent;              // as `bundle create --parity` asked

  // Merges one volume's manifest (of this bundle): its rows not seen yet, its objects.
  void add(const BundleManifest& manifest, ContentsVolume volume);
  std::vector<int> missing_volumes() const;  // indexes no volume read has
  // What import would add to an empty store, by kind: each kind of the table of kinds with rows
  // (its stored name, in the table's order: "provider_package" → rows), then "module_tree" → trees.
  std::vector<std::pair<std::string, std::size_t>> rows_by_kind() const;

 private:
  std::set<std::string> row_ids_;
};

struct ShownBundles {
  std::vector<BundleContents> bundles;   // one per bundle id, in the order first given
  std::vector<std::string> unreadable;   // "<file>: <why>" for volumes whose header failed
  std::vector<std::string> notes;        // reports skipped, parity files that could not be read
};

// `bundle show`: the headers of the given volumes (each signature checked, no trust asked),
// grouped by bundle, with each bundle's parity files.
ShownBundles show_bundles(const std::vector<std::filesystem::path>& files);

nlohmann::json to_json(const ShownBundles& shown);

}  // namespace podplane::bundle
