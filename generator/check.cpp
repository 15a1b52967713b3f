#include "generator/check.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "cache/layout.hpp"
#include "cache/podplane_stack.hpp"
#include "cache/provider_documents.hpp"
#include "cache/views.hpp"
#include "generator/config.hpp"
#include "generator/engine.hpp"
#include "generator/module_interface.hpp"
#include "generator/proxmox_stack.hpp"
#include "generator/render.hpp"
#include "generator/stack.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/hcl.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/platform.hpp"
#include "base/scratch_dir.hpp"
#include "lockfile/tf_config.hpp"
#include "lockfile/version.hpp"

namespace podplane::generator {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<std::string> read_text(const fs::path& file) {
  if (!std::ifstream(file, std::ios::binary)) return std::nullopt;
  return read_file_within_limits(file, "stack file");
}

using Reporter = CheckReporter;

std::string engine_name(lockfile::Engine engine) { return engine == lockfile::Engine::terraform ? "terraform" : "tofu"; }

void check_providers(const cache::Store& store, const lockfile::LockFile& lock, const std::string& platform,
                     lockfile::Engine engine, Reporter& out) {
  const std::string fetch = "podplane deps tf --engine " + engine_name(engine) + " --platform " + platform +
                            " (online), or import a bundle that has " + platform;
  const std::string rebuild = "the store's views disagree with its index: run `podplane deps verify` to find and "
                              "repair the damaged files";
  for (const auto& provider : lock.providers) {
    std::string item = "provider " + provider.address + " " + provider.version;
    auto packages = store.artifacts({cache::ArtifactKind::provider_package, provider.address, provider.version, platform});
    if (packages.empty()) {
      out.fail(platform, item, "MISSING: no package in the store", fetch);
      continue;
    }
    const cache::Artifact& package = packages.front();
    auto in_lock = [&](const std::string& hash) {
      return std::find(provider.hashes.begin(), provider.hashes.end(), hash) != provider.hashes.end();
    };
    const auto hashes = cache::package_lock_hashes(package);  // h1 (when the row has one), then zh
    if (!std::all_of(hashes.begin(), hashes.end(), in_lock)) {
      out.fail(platform, item, "LOCK: the lock has no hash of the store's package (" + short_hash(hashes.front()) + ")",
               "the stack's lock does not cover the store's packages: run `podplane cluster upgrade` (it rewrites the "
               "lock from the store)");
      continue;
    }
    auto address = lockfile::ProviderAddress::parse(provider.address, "registry.opentofu.org");
    fs::path zip = cache::layout::providers_dir(store.root()) / address.host / address.ns / address.type /
                   ("terraform-provider-" + address.type + "_" + provider.version + "_" + platform + ".zip");
    std::error_code error;
    if (!fs::is_regular_file(zip, error)) {
      out.fail(platform, item, "MISSING: " + zip.string(), rebuild);
      continue;
    }
    const std::string& expected_zh = hashes.back();
    std::string zh = lockfile::zh_hash_of_file(zip);
    std::string h1;  // compared only where the store recorded one
    if (!package.h1.empty()) {
      try {
        h1 = lockfile::h1_hash_of_zip(zip);
      } catch (const Error& e) {
        h1 = std::string("(unreadable: ") + e.what() + ")";
      }
    }
    if (zh != expected_zh || h1 != package.h1) {
      out.fail(platform, item,
               "CORRUPT: " + zip.filename().string() + " hashes to " + short_hash(zh != expected_zh ? zh : h1) +
                   ", the lock and the store say " + short_hash(zh != expected_zh ? expected_zh : package.h1),
               rebuild);
      continue;
    }
    out.ok(platform, item);
  }
}

// Every provider the stack requires (the root's required_providers and every called module's,
// as `init` collects them) needs an entry in the lock whose version its constraints allow:
// offline, `init -lockfile=readonly` fails otherwise, however complete the store is.
void check_lock_covers_requirements(const fs::path& stack_dir, const lockfile::LockFile& lock, lockfile::Engine engine,
                                    Reporter& out) {
  const std::string rewrite = "the stack's lock does not cover what the stack requires: run "
                              "`podplane cluster upgrade` (it rewrites the lock from the store)";
  lockfile::ModuleRequirements requirements;
  try {
    // A generated stack calls its modules where the deps root keeps them, which may be
    // anywhere (check_modules checks those paths against the store's views).
    requirements = lockfile::read_module_requirements(stack_dir, stack_dir.root_path());
  } catch (const Error& e) {
    out.fail("-", "lock covers the stack's providers", "UNKNOWN: cannot read what the stack requires: " + e.message(),
             "the stack's files or module sources cannot be read: rerun `podplane cluster create`");
    return;
  }
  const std::string host(lockfile::default_registry_host(engine));  // what a short source names for this engine
  struct Required {
    std::vector<lockfile::Constraints> constraints;
    std::string declared_in;  // the first file that asks for it
  };
  std::map<std::string, Required> required;  // address → what asks for it
  for (const auto& provider : requirements.providers) {
    std::string source = provider.source.empty() ? "hashicorp/" + provider.local_name : provider.source;
    lockfile::ProviderAddress address;
    try {
      address = lockfile::ProviderAddress::parse(source, host);
    } catch (const Error& e) {
      out.fail("-", "provider source " + source, "INVALID: " + e.message() + " (in " + provider.declared_in + ")", rewrite);
      continue;
    }
    if (address.host == "terraform.io" && address.ns == "builtin") continue;  // built into the engine, never locked
    auto& entry = required[address.str()];
    if (entry.declared_in.empty()) entry.declared_in = fs::path(provider.declared_in).lexically_normal().string();
    try {
      entry.constraints.push_back(lockfile::Constraints::parse(provider.constraints));
    } catch (const Error& e) {
      out.fail("-", "provider " + address.str(), "INVALID: " + e.message() + " (in " + provider.declared_in + ")", rewrite);
    }
  }
  bool covered = true;
  for (const auto& [address, entry] : required) {
    const lockfile::ProviderLock* locked = lock.find(address);
    std::string item = "lock covers " + address;
    if (locked == nullptr) {
      out.fail("-", item, "LOCK: the stack requires " + address + " (" + entry.declared_in + "), the lock has no entry",
               rewrite);
      covered = false;
      continue;
    }
    auto constraints = lockfile::Constraints::merge(entry.constraints);
    bool allowed = false;
    try {
      allowed = constraints.allows(lockfile::Version::parse(locked->version));
    } catch (const Error&) {
    }
    if (!allowed) {
      out.fail("-", item,
               "LOCK: the lock has " + address + " " + locked->version + ", which \"" + constraints.canonical() +
                   "\" (the stack's requirements) does not allow",
               rewrite);
      covered = false;
    }
  }
  if (covered) out.ok("-", "lock covers the " + std::to_string(required.size()) + " providers the stack requires");
}

// `cloud_package` is the Nstance package of the stack's cloud (nstance-dev/nstance/<cloud>), or
// "" when the config cannot be read.
void check_modules(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text,
                   const std::string& cloud_package, Reporter& out) {
  lockfile::hcl::Body body = lockfile::hcl::parse(main_text, "podplane.cluster.main.tf");
  std::set<fs::path> packages;
  for (const auto* block : body.blocks_of_type("module")) {
    const auto* source = block->body.attribute("source");
    std::string label = block->labels.empty() ? "?" : block->labels.front();
    if (source == nullptr || !source->value.is_string()) continue;
    fs::path dir = stack_dir / *source->value.as_string();
    std::error_code error;
    if (!fs::is_directory(dir, error)) {
      out.fail("-", "module " + label, "MISSING: " + dir.lexically_normal().string(),
               "the stack's module sources do not resolve: rerun `podplane cluster create` after moving the stack "
               "or the store, or import a bundle that has the module");
      continue;
    }
    packages.insert(fs::weakly_canonical(dir).parent_path().parent_path());
  }
  const auto trees = store.module_trees();
  for (const auto& package_dir : packages) {
    std::optional<cache::ModuleTree> tree;
    for (const auto& candidate : trees) {
      fs::path at = module_package_dir(store, candidate);
      if (fs::weakly_canonical(at) == package_dir) tree = candidate;
    }
    std::string item = "module " + package_dir.filename().string() + " at " + package_dir.string();
    if (!tree) {
      out.fail("-", item, "MISSING: no module package in the store's index lives here",
               "podplane deps tf -f podplane.cluster.jsonc (online), or import a bundle that has the module; then "
               "rerun `podplane cluster create` so the module sources follow the store's layout");
      continue;
    }
    item = "module " + tree->address + " " + tree->version;
    if (!cloud_package.empty() && !tree->address.ends_with("/" + cloud_package)) {
      // A stack written while an older podplane moved packages between views: its source
      // now names another cloud's package. The store still has its own, at a path that stays.
      out.fail("-", item,
               "WRONG: the stack's module source " + package_dir.string() + " holds " + tree->address + ", not " +
                   cloud_package,
               "the stack's module sources point at another cloud's package: run `podplane cluster create` (it "
               "keeps the stack's versions and points its sources at the store's " + cloud_package + ")");
      continue;
    }
    std::string h1 = lockfile::h1_hash_of_dir(package_dir);
    if (h1 != tree->h1) {
      out.fail("-", item, "CORRUPT: tree hashes to " + short_hash(h1) + ", the store says " + short_hash(tree->h1),
               "the module tree in the store's views was modified: run `podplane deps verify` to repair it");
      continue;
    }
    out.ok("-", item);
  }
}

// The store serves the stack's engine when it holds packages of that engine's registry host
// (registry.opentofu.org and registry.terraform.io packages are different artifacts).
void check_engine_served(const cache::Store& store, const lockfile::LockFile& lock, lockfile::Engine engine,
                         const std::vector<std::string>& platforms, Reporter& out) {
  const std::string host(lockfile::default_registry_host(engine));
  std::string item = "engine " + engine_name(engine) + " (lock entries for " + host + ")";
  bool served = lock.providers.empty();
  for (const auto& package : store.artifacts({cache::ArtifactKind::provider_package, {}, {}, {}})) {
    if (package.address.rfind(host + "/", 0) == 0) served = true;
  }
  if (served) {
    out.ok("-", item, "ok: the store holds " + host + " packages");
    return;
  }
  std::string flags;
  for (const auto& platform : platforms) flags += " --platform " + platform;
  out.fail("-", item, "ENGINE: the store holds no " + host + " package (it was filled for another engine)",
           "podplane deps tf --engine " + engine_name(engine) + flags +
               " (online), or import a bundle filled for " + engine_name(engine));
}

// Local module sources ("./…", "../…") of a stack file made absolute, so a copy elsewhere
// calls the same module trees: `source = "…"` in .tf files, `"source": "…"` in .tf.json files.
std::string with_absolute_module_sources(const std::string& text, const fs::path& stack_dir) {
  static const std::regex source(R"re(((?:\bsource\s*=\s*|"source"\s*:\s*)")(\.\.?/[^"]*)")re");
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), source);
  std::size_t at = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const auto& match = *it;
    out += text.substr(at, static_cast<std::size_t>(match.position(0)) - at);
    out += match[1].str() + (stack_dir / match[2].str()).lexically_normal().generic_string() + "\"";
    at = static_cast<std::size_t>(match.position(0) + match.length(0));
  }
  return out + text.substr(at);
}

// The engine itself as the judge: `<engine> init -backend=false -lockfile=readonly` in a scratch
// copy of the stack, from the store's tfrc alone (HOME, plugin caches and credentials of this
// machine out of reach), so any network use fails. Where the engine is absent the row says so.
}  // namespace

void check_engine_init(const cache::Store& store, const fs::path& stack_dir, lockfile::Engine engine, Reporter& out,
                       const std::string& recheck) {
  const std::string name = engine_name(engine);
  std::string item = name + " init -lockfile=readonly (offline)";
  std::optional<fs::path> binary;
  try {
    binary = find_engine(engine);
  } catch (const Error&) {
  }
  if (!binary) {
    out.ok("-", item, "not run: " + name + " is not on PATH (the checks above are podplane's own reading)");
    return;
  }
  ScratchDir scratch("podplane-check-");
  const fs::path copy = scratch.path() / "stack";
  fs::create_directories(copy);
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(stack_dir, error)) {
    if (!entry.is_regular_file()) continue;  // .terraform/ and the like stay behind
    std::string file = entry.path().filename().string();
    // Only what `init` reads, and the files podplane generated: a root's terraform.tfvars, .env
    // and the like may hold secrets, and are never opened.
    const bool configuration = file.ends_with(".tf") || file.ends_with(".tf.json");
    if (!configuration && file != ".terraform.lock.hcl" && !file.starts_with("podplane.cluster.")) continue;
    auto text = read_text(entry.path());
    if (!text) continue;
    std::ofstream(copy / file, std::ios::binary) << (configuration ? with_absolute_module_sources(*text, stack_dir) : *text);
  }
  const fs::path tfrc = fs::absolute(cache::layout::tfrc_file(store.root()));
  const std::vector<std::string> env = {
      "TF_CLI_CONFIG_FILE=" + tfrc.string(), "HOME=" + scratch.path().string(), "CHECKPOINT_DISABLE=1",
      "TF_IN_AUTOMATION=1", "PATH=/usr/bin:/bin", "TMPDIR=" + scratch.path().string()};
  auto run = run_engine_captured(*binary, {"init", "-backend=false", "-lockfile=readonly", "-input=false", "-no-color"},
                                 copy, env);
  std::string lock_after;
  if (auto text = read_text(copy / ".terraform.lock.hcl")) lock_after = *text;
  auto lock_before = read_text(stack_dir / ".terraform.lock.hcl").value_or("");
  if (run.exit_code != 0) {
    std::string tail = run.output;
    if (tail.size() > 600) tail = "…" + tail.substr(tail.size() - 600);
    out.fail("-", item, "FAILED (exit " + std::to_string(run.exit_code) + ", " + binary->string() + "):\n" + tail,
             "`" + name + " init` refuses the stack offline: fix what it reports above, then rerun `" + recheck + "`");
    return;
  }
  if (lock_after != lock_before) {
    out.fail("-", item, "CHANGED: " + name + " init rewrote the stack's lock",
             "the stack's lock is not what " + name + " writes: run `podplane cluster upgrade` (it rewrites the lock "
             "from the store)");
    return;
  }
  out.ok("-", item, "ok (" + binary->string() + ", from the store's tfrc alone)");
}

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

void check_manifests(const cache::Store& store, const fs::path& stack_dir, const std::string& provider_kind,
                     Reporter& out) {
  for (const auto& file : stack_manifests(stack_dir)) {
    std::string name = file.filename().string();
    std::string item = name.substr(17, name.size() - 17 - 5);
    json manifest;
    try {
      manifest = parse_json_within_limits(read_text(file).value(), file.string()).at("vmconfig");
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

// Every container image the stack's manifests pin (vmconfig.images; knc and knd list the same
// ones, so each once): its index, its platform manifest and every blob that manifest names are
// in the store with the rows `mirror serve` answers from, each object hashing to its digest.
// Without them the nodes' containerd would pull from the internet.
void check_images(const cache::Store& store, const fs::path& stack_dir, Reporter& out) {
  const auto manifest_rows = store.artifacts({.kind = cache::ArtifactKind::image_manifest});
  const auto index_rows = store.artifacts({.kind = cache::ArtifactKind::image_index});
  ObjectHashes hashes(store);
  const std::string repair = "the store's object does not match its digest: run `podplane deps verify --repair`";
  std::set<std::string> seen;
  for (const auto& file : stack_manifests(stack_dir)) {
    json images;
    try {
      auto document = parse_json_within_limits(read_text(file).value(), file.string());
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

// The seed's pin: cluster.seed.digest where the config has one, else the digest seeds.json
// gave the stored snapshot of that name and version (what create checked it against).
std::string pinned_seed_digest(const cache::Store& store, const ClusterConfig& config) {
  if (!config.seed.digest.empty()) return config.seed.digest;
  std::string digest;
  for (const auto& row : store.artifacts({.kind = cache::ArtifactKind::seed_snapshot, .address = config.seed.name,
                                          .version = config.seed.version}))
    if (store.has_object(row.digest)) digest = row.upstream_digest;
  return digest;
}

// The Netsy seed of the stack's seed resource: the snapshot it reads at apply (seed_path,
// relative to the stack) exists and has the digest pinned for the config's cluster.seed (the
// provider reads name, version and digest from the config), so apply downloads nothing. A
// stack without a seed_path would download the seed during apply.
void check_seed(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text,
                const ClusterConfig* config, Reporter& out) {
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

// The path part of an http(s) URL ("/a/b" of "https://host:8443/a/b?x"), or nullopt.
std::optional<std::string> url_path(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos || scheme == 0) return std::nullopt;
  auto slash = url.find('/', scheme + 3);
  std::string path = slash == std::string::npos ? "" : url.substr(slash);
  return path.substr(0, path.find_first_of("?#"));
}

// Go's path.Base of the URL's path, as the userdata takes the file name (docs/podplane-layout.md §2.5).
std::string url_basename(const std::string& url) {
  auto path = url_path(url).value_or(url);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path.substr(path.find_last_of('/') + 1);
}

// The site entry that answers `path` when the site is hosted at the root or below a prefix:
// the longest '/'-bounded suffix of the path the site has.
const cache::Artifact* answer_for(const std::map<std::string, cache::Artifact>& site, const std::string& path) {
  for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    if (auto it = site.find(path.substr(slash + 1)); it != site.end()) return &it->second;
  }
  return nullptr;
}

// Replays what each VM's userdata does (docs/podplane-layout.md §2.5): for every podplane_userdata data
// source of main.tf, every item of its manifest the cluster's provider installs is fetched from
// <deps_mirror_url>/vmconfig/artifacts/<name>/<version>/<basename(url)> and checked with
// sha256sum/sha512sum against the manifest's digest. Here the URL is looked up in the paths the
// store publishes (what `mirror serve` and `mirror export` answer), and the object is hashed
// with the manifest's algorithm: a VM that would receive another arch's bytes fails here.
void check_vm_fetches(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text,
                      const std::string& provider_kind, Reporter& out) {
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
    if (base.empty() || base == kPublicDepsUrl) {
      out.fail("-", item, "UPSTREAM: " + at + " sends VMs to " + (base.empty() ? "the upstream URLs" : base) +
                              ", not to this store",
               "set cluster.deps_mirror_url (or $PODPLANE_DEPS_URL) to the site's `podplane mirror serve` and rerun "
               "`podplane cluster create`");
      continue;
    }
    json manifest;
    try {
      manifest = parse_json_within_limits(read_text(stack_dir / ("podplane.cluster." + manifest_name + ".json")).value(),
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
      auto path = url_path(vm_url);
      const cache::Artifact* served = path ? answer_for(site, *path) : nullptr;
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
void check_node_fetches(const cache::Store& store, const std::string& script, Reporter& out) {
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
             "UNKNOWN: " + std::string(proxmox_node_init_file) + " names no arch's downloads", regenerate);
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
    out.fail("-", item, "WRONG " + std::to_string(problems.size()) + " of 2 (" + proxmox_node_init_file + "): " + list,
             remedy);
  }
}

// The boot kernel and initrd a manifest names (os.boot): `deps download` read them out of the
// qcow2 image and checked them against these digests; here each must be in the store as the
// vmconfig_boot_file row of that image, and its object must still hash to its name.
void check_boot_files(const cache::Store& store, const fs::path& stack_dir, ObjectHashes& hashes, Reporter& out) {
  for (const auto& file : stack_manifests(stack_dir)) {
    json os;
    try {
      os = parse_json_within_limits(read_text(file).value(), file.string()).at("vmconfig").at("os");
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

// Every module call passes only what its module version declares and everything it requires,
// read from the stored tree the call's source resolves to.
void check_module_calls(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text, Reporter& out) {
  lockfile::hcl::Body body;
  try {
    body = lockfile::hcl::parse(main_text, "podplane.cluster.main.tf");
  } catch (const Error&) {
    return;
  }
  const auto trees = store.module_trees();
  std::map<std::string, ModuleInterface> interfaces;  // by source
  std::vector<std::string> unreadable;
  auto interface_of = [&](const std::string& source) -> const ModuleInterface* {
    if (auto it = interfaces.find(source); it != interfaces.end()) return &it->second;
    std::error_code error;
    fs::path dir = fs::weakly_canonical(stack_dir / source, error);
    if (error) return nullptr;
    for (const auto& tree : trees) {
      fs::path package = fs::weakly_canonical(module_package_dir(store, tree), error);
      auto relative = dir.lexically_relative(package);
      if (error || relative.empty() || *relative.begin() == "..") continue;
      try {
        return &(interfaces[source] = read_module_interface(store, tree, relative.generic_string()));
      } catch (const Error& e) {
        unreadable.push_back(e.message());
        return nullptr;
      }
    }
    return nullptr;  // check_modules reports a source that is not in the store
  };
  auto problems = module_call_problems(body, "podplane.cluster.main.tf", interface_of);
  for (const auto& problem : unreadable)
    out.fail("-", "module variables", "UNREADABLE: " + problem,
             "the module tree in the store's views was modified: run `podplane deps verify` to repair it");
  for (const auto& problem : problems) {
    bool undeclared = problem.kind == ModuleCallProblem::Kind::undeclared_argument;
    out.fail("-", "module " + problem.module + " arguments", (undeclared ? "UNDECLARED: " : "REQUIRED: ") + problem.message,
             undeclared ? "rerun `podplane cluster create` (it passes only what the stored module version declares), "
                          "or remove the argument from the module block"
                        : "the module version needs an input the stack does not pass: rerun `podplane cluster create`, "
                          "or pin a module version this podplane supports");
  }
  if (problems.empty() && unreadable.empty() && !interfaces.empty())
    out.ok("-", "module calls match the " + std::to_string(interfaces.size()) + " module variable sets they call");
}

void check_tfrc(const cache::Store& store, Reporter& out) {
  fs::path tfrc = cache::layout::tfrc_file(store.root());
  fs::path expected = fs::absolute(cache::layout::providers_dir(store.root())).lexically_normal();
  std::string remedy = "the store's podplane.tfrc does not point at this store (was it moved?): run "
                       "`podplane deps verify` on a writable store to rewrite its views";
  auto text = read_text(tfrc);
  if (!text) {
    out.fail("-", "tfrc " + tfrc.string(), "MISSING", remedy);
    return;
  }
  lockfile::CliConfig config;
  try {
    config = lockfile::parse_cli_config(*text, tfrc.string());
  } catch (const Error& e) {
    out.fail("-", "tfrc " + tfrc.string(), std::string("INVALID: ") + e.what(), remedy);
    return;
  }
  bool points_here = false, other = false;
  for (const auto& method : config.provider_installation) {
    if (method.kind == lockfile::InstallationMethod::Kind::filesystem_mirror &&
        fs::path(method.location).lexically_normal() == expected)
      points_here = true;
    else
      other = true;
  }
  if (!points_here || other) {
    out.fail("-", "tfrc " + tfrc.string(), "WRONG: expected only a filesystem_mirror at " + expected.generic_string(),
             remedy);
    return;
  }
  out.ok("-", "tfrc → " + expected.generic_string());
}

}  // namespace

namespace {

// The platforms asked for, else the store selection's, else every platform the store holds.
std::vector<std::string> check_platforms(const cache::Store& store, const std::vector<std::string>& platforms) {
  std::vector<std::string> wanted = platforms;
  if (wanted.empty()) {
    auto selection = store.tf_selection();
    if (selection) wanted = selection->platforms;
    if (wanted.empty()) {
      std::set<std::string> seen;
      for (const auto& artifact : store.artifacts({cache::ArtifactKind::provider_package, {}, {}, {}}))
        if (!artifact.platform.empty()) seen.insert(artifact.platform);
      wanted.assign(seen.begin(), seen.end());
    }
  }
  for (const auto& platform : wanted) (void)lockfile::Platform::parse(platform);
  return wanted;
}

}  // namespace

CheckReport check_stack(const cache::Store& store, const fs::path& config_file, const std::vector<std::string>& platforms,
                        EngineInit engine_init) {
  const fs::path stack_dir = fs::absolute(config_file).parent_path();
  // A Proxmox stack has no OpenTofu root: its check is that every artifact the nodes and VMs
  // fetch (the image and nstance-server among them) is in the store with the manifest's digest.
  if (load_cluster_config(config_file).provider.kind == ProviderKind::proxmox) {
    if (!read_text(stack_dir / proxmox_node_init_file))
      throw Error("no generated Proxmox stack in " + stack_dir.string() + "; run `podplane cluster create` first");
    CheckReport report;
    Reporter out(report);
    if (auto lock_text = read_text(stack_dir / ".terraform.lock.hcl")) {  // manage_api_token: the OpenTofu root
      lockfile::LockFile lock = lockfile::parse_lock_file(*lock_text, (stack_dir / ".terraform.lock.hcl").string());
      const lockfile::Engine engine = stack_engine(*lock_text);
      check_lock_covers_requirements(stack_dir, lock, engine, out);
      for (const auto& platform : check_platforms(store, platforms)) check_providers(store, lock, platform, engine, out);
      check_tfrc(store, out);
      if (engine_init == EngineInit::when_present) check_engine_init(store, stack_dir, engine, out);
    }
    check_manifests(store, stack_dir, "proxmox", out);
    check_images(store, stack_dir, out);
    check_node_fetches(store, *read_text(stack_dir / proxmox_node_init_file), out);
    ObjectHashes hashes(store);
    check_boot_files(store, stack_dir, hashes, out);
    return report;
  }
  auto main_text = read_text(stack_dir / "podplane.cluster.main.tf");
  if (!main_text || !pinned_module_version(*main_text))
    throw Error("no generated stack in " + stack_dir.string() + "; run `podplane cluster create` first");
  auto lock_text = read_text(stack_dir / ".terraform.lock.hcl");
  if (!lock_text)
    throw Error("the stack in " + stack_dir.string() + " has no .terraform.lock.hcl; run `podplane cluster create`");
  lockfile::LockFile lock = lockfile::parse_lock_file(*lock_text, (stack_dir / ".terraform.lock.hcl").string());

  std::vector<std::string> wanted = check_platforms(store, platforms);

  CheckReport report;
  Reporter out(report);
  if (wanted.empty())
    out.fail("-", "platforms", "MISSING: the store holds no provider packages",
             "podplane deps tf --platform <os_arch> (online), or import a bundle");
  const lockfile::Engine engine = stack_engine(*lock_text);
  check_engine_served(store, lock, engine, wanted, out);
  check_lock_covers_requirements(stack_dir, lock, engine, out);
  for (const auto& platform : wanted) check_providers(store, lock, platform, engine, out);
  std::string provider_kind;  // empty when the config cannot be read: then every item counts
  std::string cloud_package;
  std::optional<ClusterConfig> config;
  try {
    config = load_cluster_config(config_file);
    provider_kind = std::string(to_string(config->provider.kind));
    cloud_package = cache::podplane_stack(config->provider.kind).module_package;
  } catch (const Error&) {
  }
  check_modules(store, stack_dir, *main_text, cloud_package, out);
  check_module_calls(store, stack_dir, *main_text, out);
  check_manifests(store, stack_dir, provider_kind, out);
  check_images(store, stack_dir, out);
  check_seed(store, stack_dir, *main_text, config ? &*config : nullptr, out);
  check_vm_fetches(store, stack_dir, *main_text, provider_kind, out);
  check_tfrc(store, out);
  if (engine_init == EngineInit::when_present) check_engine_init(store, stack_dir, engine, out);
  return report;
}

}  // namespace podplane::generator
