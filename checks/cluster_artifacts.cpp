#include "checks/cluster_artifacts.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "base/url.hpp"
#include "cache/views.hpp"
#include "generator/proxmox_stack.hpp"
#include "generator/render.hpp"
#include "lockfile/hcl.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The stack's pinned vmconfig manifests, sorted by file name.
std::vector<fs::path> stack_manifests(const fs::path& stack_dir) {
  std::vector<fs::path> manifests;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(stack_dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("podplane.cluster.vmconfig_", 0) == 0 && name.ends_with(".json")) manifests.push_back(entry.path());
  }
  std::sort(manifests.begin(), manifests.end());
  return manifests;
}

// Items with a `providers` list are installed only on VMs of those providers
// (docs/podplane-layout.md §2.3, §2.5), so a cluster needs only its own provider's items and
// the unrestricted ones.
bool needed_by(const json& item, const std::string& provider_kind) {
  if (!item.contains("providers") || !item["providers"].is_array() || item["providers"].empty()) return true;
  for (const auto& name : item["providers"]) {
    if (!name.is_string()) continue;
    std::string n = name.get<std::string>();
    if (n == provider_kind || (provider_kind == "google" && n == "gcp")) return true;
  }
  return false;
}

}  // namespace

void check_manifests(const cache::Store& store, const fs::path& stack_dir, const std::string& provider_kind,
                     CheckReporter& out) {
  for (const auto& file : stack_manifests(stack_dir)) {
    std::string name = file.filename().string();
    std::string item = name.substr(17, name.size() - 17 - 5);
    json manifest;
    try {
      manifest = parse_json_within_limits(read_file_if_present_within_limits(file, "stack file").value(), file.string()).at("vmconfig");
    } catch (const std::exception& e) {
      out.fail("-", item, std::string("INVALID: ") + e.what(), "regenerate the stack with `podplane cluster create --force`");
      continue;
    }
    std::vector<std::pair<std::string, json>> items;
    if (manifest.contains("os") && manifest["os"].contains("image")) items.push_back({"os-image", manifest["os"]["image"]});
    if (manifest.contains("dependencies"))
      for (const auto& dependency : manifest["dependencies"].items()) items.push_back({dependency.key(), dependency.value()});
    std::vector<std::string> missing;
    std::size_t count = 0;
    for (const auto& [dep_name, dep] : items) {
      std::string url = dep.value("url", "");
      std::string digest = dep.value("digest", "");
      if (url.empty() && digest.empty()) continue;  // the unreleased stub of dev manifests
      if (!provider_kind.empty() && !needed_by(dep, provider_kind)) continue;
      ++count;
      bool found = false;
      std::string version = dep.value("version", "");
      for (const auto& artifact : store.artifacts({cache::ArtifactKind::vmconfig_artifact, dep_name, version, {}})) {
        if (artifact.upstream_digest == digest && store.has_object(artifact.digest)) found = true;
      }
      if (!found) missing.push_back(dep_name + " " + version);
    }
    if (missing.empty()) {
      out.ok("-", item + " (" + std::to_string(count) + " artifacts)");
    } else {
      std::string list;
      for (std::size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", " : "") + missing[i];
      if (missing.size() > 5) list += ", …";
      std::string arch = item.substr(item.rfind('_') + 1);
      std::string kind = item.substr(9, 3);
      out.fail("-", item, "MISSING " + std::to_string(missing.size()) + " of " + std::to_string(count) + ": " + list,
               "podplane deps download --kind " + kind + " --arch " + arch + " (online), or import a bundle that has them");
    }
  }
}

namespace {

// sha256 of a stored object, each object hashed once per check.
class ObjectHashes {
 public:
  explicit ObjectHashes(const cache::Store& store) : store_(store) {}
  // Whether the object `hex` is indexed, on disk and still hashes to its name.
  std::optional<std::string> problem(const std::string& hex) {
    if (!store_.has_object(hex)) return "not in the store";
    auto [it, fresh] = results_.try_emplace(hex);
    if (fresh) {
      try {
        auto got = file_digest_hex(store_.object_path(hex), DigestAlgorithm::sha256);
        if (got != hex) it->second = "damaged (it hashes to sha256:" + short_hash(got) + ")";
      } catch (const Error& e) {
        it->second = "unreadable: " + e.message();
      }
    }
    if (it->second.empty()) return std::nullopt;
    return it->second;
  }

 private:
  const cache::Store& store_;
  std::map<std::string, std::string> results_;  // hex → problem ("" when fine)
};

}  // namespace

// Every container image the stack's manifests pin (vmconfig.images; knc and knd list the same
// ones, so each once): its index, its platform manifest and every blob that manifest names are
// in the store with the rows `mirror serve` answers from, each object hashing to its digest.
// Without them the nodes' containerd would pull from the internet.
void check_images(const cache::Store& store, const fs::path& stack_dir, CheckReporter& out) {
  const auto manifest_rows = store.artifacts({.kind = cache::ArtifactKind::image_manifest});
  const auto index_rows = store.artifacts({.kind = cache::ArtifactKind::image_index});
  ObjectHashes hashes(store);
  const std::string repair = "the store's object does not match its digest: run `podplane deps verify --repair`";
  std::set<std::string> seen;
  for (const auto& file : stack_manifests(stack_dir)) {
    json images;
    try {
      auto document = parse_json_within_limits(read_file_if_present_within_limits(file, "stack file").value(), file.string());
      images = document.at("vmconfig").value("images", json::array());
    } catch (const std::exception&) {
      continue;  // check_manifests reports a manifest that does not parse
    }
    if (!images.is_array()) continue;
    for (const auto& entry : images) {
      if (!entry.is_object()) continue;
      std::string image = entry.value("image", ""), digest = entry.value("digest", ""), index = entry.value("index", "");
      std::string platform = entry.value("platform", "");
      if (image.empty() || !seen.insert(image + "@" + digest).second) continue;
      const std::string item = "image " + image + (platform.empty() ? "" : " " + platform);
      std::string arch = platform.substr(platform.rfind('/') + 1);
      if (arch.empty()) arch = "amd64,arm64";
      const std::string fetch = "podplane deps download --arch " + arch + " (online), or import a bundle that has the image";
      const cache::Artifact* manifest = nullptr;
      for (const auto& row : manifest_rows)
        if (row.filename == digest && (manifest == nullptr || store.has_object(row.digest))) manifest = &row;
      if (manifest == nullptr || !store.has_object(manifest->digest)) {
        out.fail("-", item, "MISSING: its manifest " + short_hash(digest) + " is not in the store", fetch);
        continue;
      }
      if (auto problem = hashes.problem(manifest->digest)) {
        out.fail("-", item, "CORRUPT: its manifest " + short_hash(digest) + " is " + *problem, repair);
        continue;
      }
      if (!index.empty()) {
        bool stored = false;
        for (const auto& row : index_rows)
          stored = stored || (row.filename == index && row.address == manifest->address && store.has_object(row.digest));
        if (!stored) {
          out.fail("-", item, "MISSING: its index " + short_hash(index) + " is not in the store", fetch);
          continue;
        }
      }
      // The blobs the manifest itself names (config and layers), not only what the rows say.
      std::vector<std::string> blobs;
      auto document = json::parse(store.read_object(manifest->digest), nullptr, false);
      if (document.is_object() && document.contains("config") && document["config"].is_object())
        blobs.push_back(document["config"].value("digest", ""));
      if (document.is_object() && document.contains("layers") && document["layers"].is_array())
        for (const auto& layer : document["layers"])
          if (layer.is_object()) blobs.push_back(layer.value("digest", ""));
      std::set<std::string> rows;
      for (const auto& row : store.artifacts({.kind = cache::ArtifactKind::image_blob, .address = manifest->address, .version = digest}))
        rows.insert(row.filename);
      std::vector<std::string> missing, damaged;
      for (const auto& blob : blobs) {
        std::string hex = blob.rfind("sha256:", 0) == 0 ? blob.substr(7) : "";
        if (hex.empty() || !rows.count(blob)) {
          missing.push_back(short_hash(blob.empty() ? "(no digest)" : blob));
        } else if (auto problem = hashes.problem(hex)) {
          (problem->rfind("not in", 0) == 0 ? missing : damaged).push_back(short_hash(blob));
        }
      }
      auto list = [](const std::vector<std::string>& items) {
        std::string text;
        for (std::size_t i = 0; i < items.size() && i < 3; ++i) text += (i ? ", " : "") + items[i];
        return text + (items.size() > 3 ? ", …" : "");
      };
      if (!missing.empty()) {
        out.fail("-", item, "MISSING " + std::to_string(missing.size()) + " of " + std::to_string(blobs.size()) + " blobs: " +
                                list(missing), fetch);
      } else if (!damaged.empty()) {
        out.fail("-", item, "CORRUPT " + std::to_string(damaged.size()) + " of " + std::to_string(blobs.size()) + " blobs: " +
                                list(damaged), repair);
      } else {
        out.ok("-", item, "ok: " + short_hash(digest) + " and its " + std::to_string(blobs.size()) + " blobs, digests ok");
      }
    }
  }
}

namespace {

// The seed's pin: cluster.seed.digest where the config has one, else the digest seeds.json
// gave the stored snapshot of that name and version (what create checked it against).
std::string pinned_seed_digest(const cache::Store& store, const generator::ClusterConfig& config) {
  if (!config.seed.digest.empty()) return config.seed.digest;
  std::string digest;
  for (const auto& row : store.artifacts({.kind = cache::ArtifactKind::seed_snapshot, .address = config.seed.name,
                                          .version = config.seed.version}))
    if (store.has_object(row.digest)) digest = row.upstream_digest;
  return digest;
}

}  // namespace

// The Netsy seed of the stack's seed resource: the snapshot it reads at apply (seed_path,
// relative to the stack) exists and has the digest pinned for the config's cluster.seed (the
// provider reads name, version and digest from the config), so apply downloads nothing. A
// stack without a seed_path would download the seed during apply.
void check_seed(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text,
                const generator::ClusterConfig* config, CheckReporter& out) {
  lockfile::hcl::Body body;
  try {
    body = lockfile::hcl::parse(main_text, "podplane.cluster.main.tf");
  } catch (const Error&) {
    return;
  }
  for (const auto* block : body.blocks_of_type("resource")) {
    if (block->labels.size() != 2 || block->labels[0].rfind("podplane_netsy_seed_", 0) != 0) continue;
    auto text = [&](const char* name) {
      const auto* attribute = block->body.attribute(name);
      return attribute && attribute->value.is_string() ? *attribute->value.as_string() : std::string();
    };
    const std::string name = config ? config->seed.name : "", version = config ? config->seed.version : "";
    const std::string digest = config ? pinned_seed_digest(store, *config) : "";
    const std::string path = text("seed_path");
    const std::string item = "seed " + name + " " + version;
    // Seeds are not per arch: any `deps download` without --skip-seeds takes them, so the fix
    // names no placeholder a user would have to fill in.
    const std::string fetch = "podplane deps download (online, without --skip-seeds: it fetches seeds.json and the "
                              "snapshots), or import a bundle that has the seed; then rerun `podplane cluster create`";
    if (path.empty()) {
      out.fail("-", item, "UPSTREAM: the seed resource has no seed_path, so apply would download the snapshot", fetch);
      continue;
    }
    fs::path file = fs::path(path).is_absolute() ? fs::path(path) : stack_dir / path;
    std::error_code error;
    if (!fs::is_regular_file(file, error)) {
      bool from_store = false;
      for (const auto& row : store.artifacts({.kind = cache::ArtifactKind::seed_snapshot, .address = name, .version = version}))
        from_store = from_store || store.has_object(row.digest);
      if (fs::path(path).is_absolute() && !from_store) {
        // An operator's own file (cluster.seed.path), read on the host that applies.
        out.ok("-", item, "ok: cluster.seed.path " + path + " (the operator's file, not on this host: not checked)");
      } else {
        out.fail("-", item, "MISSING: " + path + " (what apply reads) does not exist", fetch);
      }
      continue;
    }
    if (digest.empty()) {
      out.ok("-", item, "ok: " + path + " (no digest pinned)");
      continue;
    }
    TypedDigest wanted{DigestAlgorithm::sha512, {}};
    try {
      wanted = TypedDigest::parse(digest);
    } catch (const Error& e) {
      out.fail("-", item, "INVALID: cluster.seed.digest " + e.message(), "correct cluster.seed.digest in the config");
      continue;
    }
    std::string got;
    try {
      got = file_digest_hex(file, wanted.algorithm);
    } catch (const Error& e) {
      out.fail("-", item, "UNREADABLE: " + e.message(), "run `podplane deps verify --repair`");
      continue;
    }
    if (got != wanted.hex) {
      out.fail("-", item, "CORRUPT: " + path + " hashes to " + short_hash(got) + ", the stack pins " + short_hash(digest),
               "run `podplane deps verify --repair`, or rerun `podplane cluster create` after `podplane deps download`");
      continue;
    }
    out.ok("-", item, "ok: " + path + ", " + short_hash(digest));
  }
}

namespace {

// The site entry that answers `path` when the site is hosted at the root or below a prefix:
// the longest '/'-bounded suffix of the path the site has.
const cache::Artifact* answer_for(const std::map<std::string, cache::Artifact>& site, const std::string& path) {
  for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    if (auto it = site.find(path.substr(slash + 1)); it != site.end()) return &it->second;
  }
  return nullptr;
}

}  // namespace

// Replays what each VM's userdata does (docs/podplane-layout.md §2.5): for every podplane_userdata data
// source of main.tf, every item of its manifest the cluster's provider installs is fetched from
// <deps_mirror_url>/vmconfig/artifacts/<name>/<version>/<basename(url)> and checked with
// sha256sum/sha512sum against the manifest's digest. Here the URL is looked up in the paths the
// store publishes (what `mirror serve` and `mirror export` answer), and the object is hashed
// with the manifest's algorithm: a VM that would receive another arch's bytes fails here.
// Kept whole: one VM's replay, read top to bottom as its userdata runs (base URL, manifest, each item).
void check_vm_fetches(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text,
                      const std::string& provider_kind, CheckReporter& out) {
  lockfile::hcl::Body body;
  try {
    body = lockfile::hcl::parse(main_text, "podplane.cluster.main.tf");
  } catch (const Error&) {
    return;  // check_modules reports a main.tf that does not parse
  }
  const auto site = cache::vmconfig_artifact_paths(store.artifacts({cache::ArtifactKind::vmconfig_artifact, {}, {}, {}}));
  std::map<std::pair<std::string, DigestAlgorithm>, std::string> hashed;  // (object, algorithm) → hex
  const std::string rerun = "each VM flavour needs the mirror base of its own arch: rerun `podplane cluster create` "
                            "(it writes <deps_mirror_url>/arch/<arch> into every podplane_userdata)";
  for (const auto* block : body.blocks_of_type("data")) {
    if (block->labels.size() != 2 || block->labels[0] != "podplane_userdata") continue;
    const std::string item = "VM " + block->labels[1] + " fetches its artifacts";
    const std::string at = "podplane.cluster.main.tf:" + std::to_string(block->pos.line);
    const auto* url_attr = block->body.attribute("deps_mirror_url");
    const auto* manifest_attr = block->body.attribute("manifest_json");
    std::smatch match;
    static const std::regex manifest_file(R"(podplane\.cluster\.(vmconfig_[A-Za-z0-9._-]+)\.json)");
    const auto* manifest_expr = manifest_attr ? std::get_if<lockfile::hcl::Expression>(&manifest_attr->value.data) : nullptr;
    if (url_attr == nullptr || !url_attr->value.is_string() || manifest_expr == nullptr ||
        !std::regex_search(manifest_expr->text, match, manifest_file)) {
      out.fail("-", item, "UNKNOWN: " + at + " has no literal deps_mirror_url and file(…) manifest_json to replay",
               "regenerate the stack with `podplane cluster create --force`");
      continue;
    }
    const std::string base = *url_attr->value.as_string();
    const std::string manifest_name = match[1];
    if (base.empty() || base == generator::kPublicDepsUrl) {
      out.fail("-", item, "UPSTREAM: " + at + " sends VMs to " + (base.empty() ? "the upstream URLs" : base) +
                              ", not to this store",
               "set cluster.deps_mirror_url (or $PODPLANE_DEPS_URL) to the site's `podplane mirror serve` and rerun "
               "`podplane cluster create`");
      continue;
    }
    json manifest;
    try {
      manifest = parse_json_within_limits(read_file_if_present_within_limits(stack_dir / ("podplane.cluster." + manifest_name + ".json"), "stack file").value(),
                                          manifest_name).at("vmconfig");
    } catch (const std::exception& e) {
      out.fail("-", item, std::string("INVALID: ") + manifest_name + ": " + e.what(),
               "regenerate the stack with `podplane cluster create --force`");
      continue;
    }
    std::vector<std::pair<std::string, json>> items;
    if (manifest.contains("os") && manifest["os"].contains("image")) items.push_back({"os-image", manifest["os"]["image"]});
    if (manifest.contains("dependencies"))
      for (const auto& dependency : manifest["dependencies"].items()) items.push_back({dependency.key(), dependency.value()});
    std::vector<std::string> problems;
    std::string remedy;
    std::size_t count = 0;
    for (const auto& [name, dep] : items) {
      if (!dep.is_object()) continue;
      std::string url = dep.value("url", ""), digest = dep.value("digest", ""), version = dep.value("version", "");
      if (url.empty() && digest.empty()) continue;  // the unreleased stub of dev manifests
      if (!provider_kind.empty() && !needed_by(dep, provider_kind)) continue;
      ++count;
      const std::string vm_url = base + "/vmconfig/artifacts/" + name + "/" + version + "/" + url_basename(url);
      auto note = [&](std::string problem, const std::string& fix) {
        problems.push_back(name + " " + version + ": " + std::move(problem));
        if (remedy.empty()) remedy = fix;
      };
      TypedDigest wanted{DigestAlgorithm::sha256, {}};
      try {
        wanted = TypedDigest::parse(digest);
      } catch (const Error& e) {
        note("the manifest's digest: " + e.message(), "regenerate the stack with `podplane cluster create --force`");
        continue;
      }
      // The path part of the URL (docs/podplane-layout.md §2.5: the userdata takes its file name
      // with Go's path.Base, base/url.hpp's url_basename).
      const auto parts = split_url(vm_url);
      const cache::Artifact* served = parts ? answer_for(site, parts->path) : nullptr;
      if (served == nullptr) {
        note("nothing in the store answers " + vm_url,
             "podplane deps download --kind " + manifest.value("kind", std::string("knc,knd")) + " --arch " +
                 manifest.value("os", json::object()).value("arch", std::string("amd64,arm64")) +
                 " (online), or import a bundle that has them");
        continue;
      }
      auto key = std::make_pair(served->digest, wanted.algorithm);
      if (!hashed.count(key)) {
        try {
          hashed[key] = file_digest_hex(store.object_path(served->digest), wanted.algorithm);
        } catch (const Error& e) {
          hashed[key] = "(unreadable: " + e.message() + ")";
        }
      }
      const std::string& got = hashed[key];
      if (got == wanted.hex) continue;
      if (served->upstream_digest == digest) {
        note("the object behind " + vm_url + " is damaged (it hashes to " + short_hash(got) + ")",
             "the store's object does not match its digest: run `podplane deps verify --repair`");
      } else {
        note(vm_url + " answers " + served->platform + "'s " + served->filename + " (" + short_hash(served->upstream_digest) +
                 "), the manifest wants " + short_hash(digest),
             rerun);
      }
    }
    if (problems.empty()) {
      out.ok("-", item, "ok: " + std::to_string(count) + " artifacts of " + manifest_name + " from " + base +
                            " match the manifest's digests");
      continue;
    }
    std::string list;
    for (std::size_t i = 0; i < problems.size() && i < 3; ++i) list += (i ? "; " : "") + problems[i];
    if (problems.size() > 3) list += "; …";
    out.fail("-", item, "WRONG " + std::to_string(problems.size()) + " of " + std::to_string(count) + " (" + at + "): " + list,
             remedy);
  }
}

// Replays what podplane.cluster.proxmox.node-init.sh does on a node of each arch: the image and
// nstance-server it downloads from <deps_mirror_url>/<path> must be answered, at that path, by
// the store (what `mirror serve` and `mirror export` publish) with bytes of the digest the
// script checks. Paths and digests are read from the script's own `readonly NAME='…'` lines
// of each arch case, so what is checked is what the node will do.
void check_node_fetches(const cache::Store& store, const std::string& script, CheckReporter& out) {
  static const std::regex case_line(R"(^  ([a-z0-9]+)\)$)");
  static const std::regex value_line(R"(^    readonly ([A-Z_]+)='([^']*)'$)");
  std::map<std::string, std::map<std::string, std::string>> archs;  // arch → NAME → value
  std::string arch;
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, case_line)) arch = match[1];
    else if (line == "    ;;") arch.clear();
    else if (!arch.empty() && std::regex_match(line, match, value_line)) archs[arch][match[1]] = match[2];
  }
  const std::string regenerate = "regenerate the stack with `podplane cluster create --force`";
  if (archs.empty()) {
    out.fail("-", "Proxmox nodes fetch their image and nstance-server",
             "UNKNOWN: " + std::string(generator::proxmox_node_init_file) + " names no arch's downloads", regenerate);
    return;
  }
  const auto site = cache::vmconfig_artifact_paths(store.artifacts({cache::ArtifactKind::vmconfig_artifact, {}, {}, {}}));
  for (const auto& [node_arch, values] : archs) {
    const std::string item = "Proxmox " + node_arch + " node fetches";
    std::vector<std::string> problems;
    std::string remedy;
    auto note = [&](std::string problem, const std::string& fix) {
      problems.push_back(std::move(problem));
      if (remedy.empty()) remedy = fix;
    };
    for (const std::string what : {"IMAGE", "SERVER"}) {
      auto path = values.find(what + "_PATH");
      auto digest = values.find(what + "_DIGEST");
      if (path == values.end() || digest == values.end()) {
        note(what + "_PATH or " + what + "_DIGEST is missing", regenerate);
        continue;
      }
      TypedDigest wanted{DigestAlgorithm::sha256, {}};
      try {
        wanted = TypedDigest::parse(digest->second);
      } catch (const Error& e) {
        note(what + "_DIGEST: " + e.message(), regenerate);
        continue;
      }
      auto served = site.find(path->second);
      if (served == site.end()) {
        note("nothing in the store answers <deps_mirror_url>/" + path->second,
             "podplane deps download --providers proxmox --arch " + node_arch +
                 " (online), or import a bundle that has them");
        continue;
      }
      std::string got;
      try {
        got = file_digest_hex(store.object_path(served->second.digest), wanted.algorithm);
      } catch (const Error& e) {
        got = "(unreadable: " + e.message() + ")";
      }
      if (got == wanted.hex) continue;
      if (served->second.upstream_digest == digest->second)
        note("the object behind " + path->second + " is damaged (it hashes to " + short_hash(got) + ")",
             "the store's object does not match its digest: run `podplane deps verify --repair`");
      else
        note(path->second + " answers " + served->second.platform + "'s " + served->second.filename + " (" +
                 short_hash(served->second.upstream_digest) + "), the script wants " + short_hash(digest->second),
             regenerate);
    }
    if (problems.empty()) {
      out.ok("-", item, "ok: the image and nstance-server at the script's paths match its digests");
      continue;
    }
    std::string list;
    for (std::size_t i = 0; i < problems.size(); ++i) list += (i ? "; " : "") + problems[i];
    out.fail("-", item, "WRONG " + std::to_string(problems.size()) + " of 2 (" + generator::proxmox_node_init_file + "): " + list,
             remedy);
  }
}

// The boot kernel and initrd a manifest names (os.boot): `deps download` read them out of the
// qcow2 image and checked them against these digests; here each must be in the store as the
// vmconfig_boot_file row of that image, and its object must still hash to its name.
void check_boot_files(const cache::Store& store, const fs::path& stack_dir, CheckReporter& out) {
  ObjectHashes hashes(store);
  for (const auto& file : stack_manifests(stack_dir)) {
    json os;
    try {
      os = parse_json_within_limits(read_file_if_present_within_limits(file, "stack file").value(), file.string()).at("vmconfig").at("os");
    } catch (const std::exception&) {
      continue;  // check_manifests reports a manifest it cannot read
    }
    if (!os.is_object() || !os.contains("boot") || !os["boot"].is_object()) continue;
    std::string name = file.filename().string();
    std::string manifest = name.substr(17, name.size() - 17 - 5);  // vmconfig_knc_debian-13_amd64
    std::string kind = manifest.substr(9, 3);
    std::string arch = manifest.substr(manifest.rfind('_') + 1);
    std::string image_version = os.value("image", json::object()).value("version", "");
    for (const char* part : {"kernel", "initrd"}) {
      const json& entry = os["boot"].value(part, json());
      if (!entry.is_object() || !entry.contains("digest")) continue;
      std::string path = entry.value("path", "");
      std::string digest = entry.value("digest", "");
      std::string file_name = path.substr(path.rfind('/') + 1);
      std::string item = manifest + " boot " + part;
      std::string remedy = "podplane deps download --kind " + kind + " --arch " + arch +
                           " (online: reads it out of the os image and checks it), or import a bundle that has it";
      auto row = store.find_artifact(cache::ArtifactKind::vmconfig_boot_file, "os-image", image_version, "linux_" + arch, file_name);
      if (!row || row->upstream_digest != digest) {
        out.fail("-", item, "MISSING: " + file_name + " of os-image " + image_version + " (" + digest.substr(0, 19) + "…)", remedy);
        continue;
      }
      if (!store.has_object(row->digest)) {
        out.fail("-", item, "MISSING: the object of " + file_name + " (" + short_hash(row->digest) + ") is not in the store", remedy);
        continue;
      }
      if (auto problem = hashes.problem(row->digest)) {
        out.fail("-", item, "DAMAGED: " + file_name + " object " + short_hash(row->digest) + " is " + *problem, remedy);
        continue;
      }
      out.ok("-", item, "ok: " + file_name + " of os-image " + image_version + ", " + digest.substr(0, 19) + "… verified");
    }
  }
}


}  // namespace podplane::checks
