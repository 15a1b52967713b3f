#include "generator/check.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cache/layout.hpp"
#include "cache/views.hpp"
#include "generator/config.hpp"
#include "generator/stack.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/error.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/hcl.hpp"
#include "lockfile/input_limits.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/platform.hpp"
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

class Reporter {
 public:
  explicit Reporter(CheckReport& report) : report_(report) {}
  void ok(std::string platform, std::string item, std::string detail = "ok") {
    report_.rows.push_back({std::move(platform), std::move(item), true, std::move(detail)});
  }
  void fail(std::string platform, std::string item, std::string detail, const std::string& remedy) {
    report_.rows.push_back({std::move(platform), std::move(item), false, std::move(detail)});
    if (std::find(report_.remedies.begin(), report_.remedies.end(), remedy) == report_.remedies.end())
      report_.remedies.push_back(remedy);
  }

 private:
  CheckReport& report_;
};

std::string short_hash(const std::string& hash) { return hash.size() > 15 ? hash.substr(0, 15) + "…" : hash; }

void check_providers(const cache::Store& store, const lockfile::LockFile& lock, const std::string& platform,
                     Reporter& out) {
  const std::string fetch = "podplane deps tf --platform " + platform +
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
void check_lock_covers_requirements(const cache::Store& store, const fs::path& stack_dir,
                                    const lockfile::LockFile& lock, Reporter& out) {
  const std::string rewrite = "the stack's lock does not cover what the stack requires: run "
                              "`podplane cluster upgrade` (it rewrites the lock from the store)";
  lockfile::ModuleRequirements requirements;
  try {
    requirements = lockfile::read_module_requirements(stack_dir);
  } catch (const Error& e) {
    out.fail("-", "lock covers the stack's providers", "UNKNOWN: cannot read what the stack requires: " + e.message(),
             "the stack's files or module sources cannot be read: rerun `podplane cluster create`");
    return;
  }
  const std::string host = engine_host(store.tf_selection());
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

void check_modules(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text, Reporter& out) {
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
  const auto selection = store.tf_selection();
  const auto trees = store.module_trees();
  for (const auto& package_dir : packages) {
    std::optional<cache::ModuleTree> tree;
    for (const auto& candidate : trees) {
      fs::path at = module_package_dir(store, selection, candidate.address, candidate.version);
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
    std::string h1 = lockfile::h1_hash_of_dir(package_dir);
    if (h1 != tree->h1) {
      out.fail("-", item, "CORRUPT: tree hashes to " + short_hash(h1) + ", the store says " + short_hash(tree->h1),
               "the module tree in the store's views was modified: run `podplane deps verify` to repair it");
      continue;
    }
    out.ok("-", item);
  }
}

// Items with a `providers` list are installed only on VMs of those providers (reference §1.2,
// §3.4), so a cluster needs only its own provider's items and the unrestricted ones.
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
  std::vector<fs::path> manifests;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(stack_dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("podplane.cluster.vmconfig_", 0) == 0 && name.ends_with(".json")) manifests.push_back(entry.path());
  }
  std::sort(manifests.begin(), manifests.end());
  for (const auto& file : manifests) {
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

bool CheckReport::ok() const {
  return std::all_of(rows.begin(), rows.end(), [](const CheckRow& row) { return row.ok; });
}

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

CheckReport check_stack(const cache::Store& store, const fs::path& config_file, const std::vector<std::string>& platforms) {
  const fs::path stack_dir = fs::absolute(config_file).parent_path();
  // A Proxmox stack has no OpenTofu root: its check is that every artifact the nodes and VMs
  // fetch (the image and nstance-server among them) is in the store with the manifest's digest.
  if (load_cluster_config(config_file).provider.kind == ProviderKind::proxmox) {
    if (!read_text(stack_dir / "podplane.cluster.proxmox.node-init.sh"))
      throw Error("no generated Proxmox stack in " + stack_dir.string() + "; run `podplane cluster create` first");
    CheckReport report;
    Reporter out(report);
    if (auto lock_text = read_text(stack_dir / ".terraform.lock.hcl")) {  // manage_api_token: the OpenTofu root
      lockfile::LockFile lock = lockfile::parse_lock_file(*lock_text, (stack_dir / ".terraform.lock.hcl").string());
      check_lock_covers_requirements(store, stack_dir, lock, out);
      for (const auto& platform : check_platforms(store, platforms)) check_providers(store, lock, platform, out);
      check_tfrc(store, out);
    }
    check_manifests(store, stack_dir, "proxmox", out);
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
  check_lock_covers_requirements(store, stack_dir, lock, out);
  for (const auto& platform : wanted) check_providers(store, lock, platform, out);
  check_modules(store, stack_dir, *main_text, out);
  std::string provider_kind;  // empty when the config cannot be read: then every item counts
  try {
    provider_kind = std::string(to_string(load_cluster_config(config_file).provider.kind));
  } catch (const Error&) {
  }
  check_manifests(store, stack_dir, provider_kind, out);
  check_tfrc(store, out);
  return report;
}

std::string render_check_table(const CheckReport& report) {
  std::size_t platform_width = 8, item_width = 5;
  for (const auto& row : report.rows) {
    platform_width = std::max(platform_width, row.platform.size());
    item_width = std::max(item_width, row.item.size());
  }
  auto pad = [](const std::string& text, std::size_t width) { return text + std::string(width - text.size() + 2, ' '); };
  std::string out = pad("PLATFORM", platform_width) + pad("CHECK", item_width) + "RESULT\n";
  for (const auto& row : report.rows) out += pad(row.platform, platform_width) + pad(row.item, item_width) + row.detail + "\n";
  return out;
}

}  // namespace podplane::generator
