#include "bundle/contents.hpp"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "bundle/import.hpp"
#include "cache/kinds.hpp"

namespace podplane::bundle {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void take_header(BundleContents& contents, const VolumeHeader& header, const fs::path& file) {
  const BundleManifest& m = header.manifest;
  contents.name = bundle_name_of(file);
  contents.bundle_id = m.bundle_id;
  contents.created_at = m.created_at;
  contents.tool_version = m.tool_version;
  contents.expires_at = m.expires_at;
  contents.expired = header.expired;
  contents.since = m.since;
  contents.platforms = m.platforms;
  contents.signer = header.signer;
  contents.volume_count = m.volume_count;
  contents.total_objects = m.total_objects;
  contents.total_bytes = m.total_bytes;
  contents.tf_selection = m.tf_selection;
}

json artifact_json(const TravellingArtifact& travelling, const std::set<std::string>& carried) {
  const cache::Artifact& a = travelling.artifact;
  json keys = json::array();
  for (const auto& p : travelling.provenance)
    if (!p.key_fingerprint.empty()) keys.push_back({{"key_fingerprint", p.key_fingerprint}, {"result", p.result}});
  return {{"kind", cache::to_string(a.kind)},
          {"address", a.address},
          {"version", a.version},
          {"platform", a.platform},
          {"filename", a.filename},
          {"digest", a.digest},
          {"size", a.size},
          {"upstream_url", a.upstream_url},
          {"trust", cache::to_string(a.trust)},
          {"signatures", keys},
          {"object_carried", carried.count(a.digest) > 0}};
}

json module_tree_json(const cache::ModuleTree& tree) {
  std::int64_t bytes = 0;
  for (const auto& f : tree.files) bytes += f.size;
  return {{"address", tree.address},
          {"version", tree.version},
          {"h1", tree.h1},
          {"upstream_url", tree.upstream_url},
          {"files", tree.files.size()},
          {"bytes", bytes}};
}

json parity_json(const ParitySet& set) {
  json files = json::array();
  for (const auto& f : set.files) files.push_back(f.string());
  return {{"files", files},
          {"bytes", set.bytes},
          {"volumes", set.volumes},
          {"source_blocks", set.source_blocks},
          {"recovery_blocks", set.recovery_blocks}};
}

json contents_json(const BundleContents& c) {
  json volumes = json::array();
  for (const auto& v : c.volumes)
    volumes.push_back({{"file", v.file.string()}, {"index", v.index}, {"objects", v.objects},
                       {"object_bytes", v.object_bytes}, {"bytes", v.file_bytes}});
  json artifacts = json::array();
  for (const auto& a : c.artifacts) artifacts.push_back(artifact_json(a, c.carried));
  json trees = json::array();
  for (const auto& t : c.module_trees) trees.push_back(module_tree_json(t));
  json kinds = json::object();
  for (const auto& [kind, count] : c.rows_by_kind()) kinds[kind] = count;
  json selection = nullptr;
  if (c.tf_selection) {
    json providers = json::array();
    for (const auto& p : c.tf_selection->providers)
      providers.push_back({{"address", p.address}, {"version", p.version}, {"constraints", p.constraints}});
    selection = {{"providers", providers},
                 {"platforms", c.tf_selection->platforms},
                 {"module_address", c.tf_selection->module_address},
                 {"module_version", c.tf_selection->module_version},
                 {"engine", c.tf_selection->engine}};
  }
  json since = nullptr;
  if (c.since)
    since = {{"inventory_digest", c.since->inventory_digest}, {"store_id", c.since->store_id}, {"generation", c.since->generation}};
  return {{"name", c.name},
          {"bundle_id", c.bundle_id},
          {"created_at", c.created_at},
          {"tool_version", c.tool_version},
          {"expires_at", c.expires_at ? json(*c.expires_at) : json(nullptr)},
          {"expired", c.expired},
          {"since", since},
          {"platforms", c.platforms},
          {"signer", c.signer},
          {"volume_count", c.volume_count},
          {"volumes", volumes},
          {"missing_volumes", c.missing_volumes()},
          {"objects", {{"total", c.total_objects}, {"bytes", c.total_bytes}, {"in_volumes_given", c.carried.size()}}},
          {"rows_by_kind", kinds},
          {"artifacts", artifacts},
          {"module_trees", trees},
          {"tf_selection", selection},
          {"parity", c.parity ? parity_json(*c.parity) : json(nullptr)}};
}

}  // namespace

void BundleContents::add(const BundleManifest& manifest, ContentsVolume volume) {
  for (const auto& object : manifest.objects) carried.insert(object.digest);
  for (const auto& travelling : manifest.artifacts)
    if (row_ids_.insert(row_id(travelling.artifact, travelling.provenance)).second) artifacts.push_back(travelling);
  for (const auto& tree : manifest.module_trees)
    if (row_ids_.insert(row_id(tree)).second) module_trees.push_back(tree);
  volumes.push_back(std::move(volume));
  std::sort(volumes.begin(), volumes.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
}

std::vector<int> BundleContents::missing_volumes() const {
  std::vector<int> missing;
  for (int index = 1; index <= volume_count; ++index)
    if (std::none_of(volumes.begin(), volumes.end(), [&](const ContentsVolume& v) { return v.index == index; }))
      missing.push_back(index);
  return missing;
}

std::vector<std::pair<std::string, std::size_t>> BundleContents::rows_by_kind() const {
  std::vector<std::pair<std::string, std::size_t>> counts;
  // Every kind of the table (cache/kinds.hpp), in its order, under its stored name: an address
  // variant's rows count with their kind's (they share the name).
  for (const auto& info : cache::kinds()) {
    if (!info.address.empty()) continue;
    auto count = static_cast<std::size_t>(std::count_if(artifacts.begin(), artifacts.end(),
                                                        [&](const TravellingArtifact& t) { return t.artifact.kind == info.kind; }));
    if (count > 0) counts.emplace_back(std::string(info.name), count);
  }
  if (!module_trees.empty()) counts.emplace_back("module_tree", module_trees.size());
  return counts;
}

ShownBundles show_bundles(const std::vector<fs::path>& files) {
  ShownBundles shown;
  const GivenFiles given = sort_given_files(files);
  for (const auto& companion : given.companions)
    shown.notes.push_back(companion.string() + " is a bundle's transfer report, not a volume: not read");
  // Whoever signed it, whenever it expires: show judges no trust, only that each signature
  // verifies (a forged manifest is still refused).
  VerifyOptions options;
  options.unsigned_bundles = UnsignedBundles::allow;
  options.expired = ExpiredBundles::allow;
  std::map<std::string, std::size_t> by_id;
  for (const auto& file : given.volumes) {
    try {
      VolumeHeader header = read_volume_header(file, options);
      const BundleManifest& m = header.manifest;
      auto [it, fresh] = by_id.emplace(m.bundle_id, shown.bundles.size());
      if (fresh) {
        shown.bundles.emplace_back();
        take_header(shown.bundles.back(), header, file);
      }
      BundleContents& contents = shown.bundles[it->second];
      if (header.signer != contents.signer)
        shown.notes.push_back("volume " + file.string() + " of bundle " + m.bundle_id.substr(0, 12) + " is signed by " +
                              header.signer + ", another of its volumes by " + contents.signer);
      std::uint64_t object_bytes = 0;
      for (const auto& object : m.objects) object_bytes += object.size;
      std::error_code ec;
      const auto file_bytes = fs::file_size(file, ec);
      contents.add(m, ContentsVolume{file, m.volume_index, m.objects.size(), object_bytes, ec ? 0 : file_bytes});
    } catch (const Error& e) {
      shown.unreadable.push_back(file.string() + ": " + e.message());
    }
  }
  try {
    for (auto& set : find_parity_sets(given)) {
      auto owner = std::find_if(shown.bundles.begin(), shown.bundles.end(),
                                [&](const BundleContents& c) { return c.name == set.bundle && !c.parity; });
      for (const auto& note : set.notes) shown.notes.push_back(note);
      if (owner == shown.bundles.end()) shown.notes.push_back("parity files of bundle " + set.bundle + ": no volume of it given");
      else owner->parity = std::move(set);
    }
  } catch (const Error& e) {
    shown.notes.push_back("parity files not usable: " + e.message());
  }
  return shown;
}

json to_json(const ShownBundles& shown) {
  json bundles = json::array();
  for (const auto& c : shown.bundles) bundles.push_back(contents_json(c));
  return {{"bundles", bundles}, {"unreadable", shown.unreadable}, {"notes", shown.notes}};
}

}  // namespace podplane::bundle
