#include "checks/cluster_check.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "cache/layout.hpp"
#include "cache/podplane_stack.hpp"
#include "cache/views.hpp"
#include "checks/cluster_artifacts.hpp"
#include "checks/stored_package.hpp"
#include "generator/config.hpp"
#include "generator/module_interface.hpp"
#include "generator/proxmox_stack.hpp"
#include "generator/render.hpp"
#include "generator/stack.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/hcl.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/lock_rules.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/provider_names.hpp"
#include "lockfile/tf_config.hpp"
#include "lockfile/version.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;
using generator::load_cluster_config;
using generator::module_call_problems;
using generator::module_package_dir;
using generator::ModuleCallProblem;
using generator::ModuleInterface;
using generator::pinned_module_version;
using generator::ProviderKind;
using generator::proxmox_node_init_file;
using generator::read_module_interface;
using generator::stack_engine;
using generator::to_string;

namespace {

using generator::ClusterConfig;

void check_providers(const cache::Store& store, const lockfile::LockFile& lock, const std::string& platform,
                     lockfile::Engine engine, CheckReporter& out) {
  const std::string fetch = "podplane deps tf --engine " + std::string(lockfile::engine_name(engine)) + " --platform " +
                            platform + " (online), or import a bundle that has " + platform;
  const std::string rebuild = "the store's views disagree with its index: run `podplane deps verify` to find and "
                              "repair the damaged files";
  for (const auto& provider : lock.providers) {
    const std::string item = "provider " + provider.address + " " + provider.version;
    const StoredPackage judged = judge_stored_package(store, provider, platform);
    switch (judged.verdict) {
      case StoredPackage::Verdict::missing:
        out.fail(platform, item, "MISSING: no package in the store", fetch);
        break;
      case StoredPackage::Verdict::not_in_lock:
        out.fail(platform, item, "LOCK: the lock has no hash of the store's package (" + short_hash(judged.hashes.front()) + ")",
                 "the stack's lock does not cover the store's packages: run `podplane cluster upgrade` (it rewrites "
                 "the lock from the store)");
        break;
      case StoredPackage::Verdict::view_missing:
        out.fail(platform, item, "MISSING: " + judged.view.string(), rebuild);
        break;
      case StoredPackage::Verdict::view_damaged:
        out.fail(platform, item,
                 "CORRUPT: " + judged.view.filename().string() + " hashes to " + short_hash(judged.got) +
                     ", the lock and the store say " + short_hash(judged.expected),
                 rebuild);
        break;
      case StoredPackage::Verdict::ok:
        out.ok(platform, item);
        break;
    }
  }
}

// Every provider the stack requires (the root's required_providers and every called module's,
// as `init` collects them) needs an entry in the lock whose version its constraints allow:
// offline, `init -lockfile=readonly` fails otherwise, however complete the store is.
void check_lock_covers_requirements(const fs::path& stack_dir, const lockfile::LockFile& lock, lockfile::Engine engine,
                                    CheckReporter& out) {
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
  std::map<std::string, lockfile::RequiredProvider> required;        // address → what asks for it
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
  const auto gaps = lockfile::lock_gaps(required, lock);
  for (const auto& gap : gaps) {
    if (gap.kind == lockfile::LockGap::Kind::no_entry)
      out.fail("-", "lock covers " + gap.address,
               "LOCK: the stack requires " + gap.address + " (" + gap.declared_in + "), the lock has no entry", rewrite);
    else
      out.fail("-", "lock covers " + gap.address,
               "LOCK: the lock has " + gap.address + " " + gap.locked_version + ", which \"" + gap.constraints +
                   "\" (the stack's requirements) does not allow",
               rewrite);
  }
  if (gaps.empty()) out.ok("-", "lock covers the " + std::to_string(required.size()) + " providers the stack requires");
}

// `cloud_package` is the Nstance package of the stack's cloud (nstance-dev/nstance/<cloud>), or
// "" when the config cannot be read.
void check_modules(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text,
                   const std::string& cloud_package, CheckReporter& out) {
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
                         const std::vector<std::string>& platforms, CheckReporter& out) {
  const std::string host(lockfile::default_registry_host(engine));
  const std::string name(lockfile::engine_name(engine));
  std::string item = "engine " + name + " (lock entries for " + host + ")";
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
           "podplane deps tf --engine " + name + flags + " (online), or import a bundle filled for " + name);
}

// Every module call passes only what its module version declares and everything it requires,
// read from the stored tree the call's source resolves to.
void check_module_calls(const cache::Store& store, const fs::path& stack_dir, const std::string& main_text, CheckReporter& out) {
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

void check_tfrc(const cache::Store& store, CheckReporter& out) {
  fs::path tfrc = cache::layout::tfrc_file(store.root());
  fs::path expected = fs::absolute(cache::layout::providers_dir(store.root())).lexically_normal();
  std::string remedy = "the store's podplane.tfrc does not point at this store (was it moved?): run "
                       "`podplane deps verify` on a writable store to rewrite its views";
  auto text = read_file_if_present_within_limits(tfrc, "stack file");
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

// A generated stack's lock is rewritten by `cluster upgrade`, from the store.
const EngineRemedies kClusterRemedies{"podplane cluster check", "podplane cluster upgrade"};

}  // namespace

CheckReport check_cluster(const cache::Store& store, const fs::path& config_file, const std::vector<std::string>& platforms,
                          EngineInit engine_init) {
  const fs::path stack_dir = fs::absolute(config_file).parent_path();
  CheckReport report;
  CheckReporter out(report);
  // The config is read once. One that cannot be read does not stop the check of what init
  // needs: its row says what was not narrowed by it (every vmconfig item counts, the module
  // package's cloud and the seed's pin are not compared).
  std::optional<ClusterConfig> config;
  try {
    config = load_cluster_config(config_file);
  } catch (const Error& e) {
    out.fail("-", "config " + config_file.filename().string(),
             "UNREADABLE: " + e.message() + "; checked without it: every vmconfig item counts, the module package's "
             "cloud and the seed's pin are not compared",
             "fix " + config_file.string() + " (`podplane cluster create --no-apply` names what is wrong), then rerun "
             "`podplane cluster check`");
  }
  // A Proxmox stack has no OpenTofu root: its check is that every artifact the nodes and VMs
  // fetch (the image and nstance-server among them) is in the store with the manifest's digest.
  // Without a config, its node script says what the stack is.
  const auto node_init = read_file_if_present_within_limits(stack_dir / proxmox_node_init_file, "stack file");
  if (config ? config->provider.kind == ProviderKind::proxmox : node_init.has_value()) {
    if (!node_init)
      throw Error("no generated Proxmox stack in " + stack_dir.string() + "; run `podplane cluster create` first");
    if (auto lock_text = read_file_if_present_within_limits(stack_dir / ".terraform.lock.hcl", "stack file")) {
      // manage_api_token: the OpenTofu root
      lockfile::LockFile lock = lockfile::parse_lock_file(*lock_text, (stack_dir / ".terraform.lock.hcl").string());
      const lockfile::Engine engine = stack_engine(*lock_text);
      check_lock_covers_requirements(stack_dir, lock, engine, out);
      for (const auto& platform : check_platforms(store, platforms)) check_providers(store, lock, platform, engine, out);
      check_tfrc(store, out);
      check_engine_init([&store] { return through_store_tfrc(store); }, stack_dir, "/", engine, engine_init, kClusterRemedies, out);
    }
    check_manifests(store, stack_dir, "proxmox", out);
    check_images(store, stack_dir, out);
    check_node_fetches(store, *node_init, out);
    check_boot_files(store, stack_dir, out);
    return report;
  }
  auto main_text = read_file_if_present_within_limits(stack_dir / "podplane.cluster.main.tf", "stack file");
  if (!main_text || !pinned_module_version(*main_text))
    throw Error("no generated stack in " + stack_dir.string() + "; run `podplane cluster create` first");
  auto lock_text = read_file_if_present_within_limits(stack_dir / ".terraform.lock.hcl", "stack file");
  if (!lock_text)
    throw Error("the stack in " + stack_dir.string() + " has no .terraform.lock.hcl; run `podplane cluster create`");
  lockfile::LockFile lock = lockfile::parse_lock_file(*lock_text, (stack_dir / ".terraform.lock.hcl").string());

  std::vector<std::string> wanted = check_platforms(store, platforms);
  if (wanted.empty())
    out.fail("-", "platforms", "MISSING: the store holds no provider packages",
             "podplane deps tf --platform <os_arch> (online), or import a bundle");
  const lockfile::Engine engine = stack_engine(*lock_text);
  check_engine_served(store, lock, engine, wanted, out);
  check_lock_covers_requirements(stack_dir, lock, engine, out);
  for (const auto& platform : wanted) check_providers(store, lock, platform, engine, out);
  // Empty when the config cannot be read: then every item counts and no cloud is compared.
  const std::string provider_kind = config ? std::string(to_string(config->provider.kind)) : "";
  const std::string cloud_package = config ? cache::podplane_stack(config->provider.kind).module_package : "";
  check_modules(store, stack_dir, *main_text, cloud_package, out);
  check_module_calls(store, stack_dir, *main_text, out);
  check_manifests(store, stack_dir, provider_kind, out);
  check_images(store, stack_dir, out);
  check_seed(store, stack_dir, *main_text, config ? &*config : nullptr, out);
  check_vm_fetches(store, stack_dir, *main_text, provider_kind, out);
  check_tfrc(store, out);
  check_engine_init([&store] { return through_store_tfrc(store); }, stack_dir, "/", engine, engine_init, kClusterRemedies, out);
  return report;
}

}  // namespace podplane::checks
