#include "generator/stack.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "cache/layout.hpp"
#include "cache/podplane_stack.hpp"
#include "cache/provider_documents.hpp"
#include "cache/views.hpp"
#include "generator/module_interface.hpp"
#include "generator/proxmox_stack.hpp"
#include "generator/render.hpp"
#include "generator/schema.hpp"
#include "generator/seed.hpp"
#include "lockfile/hcl.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/tf_config.hpp"
#include "lockfile/version.hpp"

namespace podplane::generator {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* main_tf = "podplane.cluster.main.tf";
constexpr const char* infra_tf = "podplane.cluster.inputs.infra.tf";
constexpr const char* schema_json = "podplane.cluster.schema.json";
constexpr const char* lock_hcl = ".terraform.lock.hcl";
constexpr const char* default_deps_url = kPublicDepsUrl;
constexpr const char* identity_message =
    "Changing these values is not supported in place; destroy the cluster, then update podplane.cluster.jsonc and "
    "recreate it.";
constexpr auto& module_names = cache::kStackSubmodules;

// The first header line is the marker; the second may be reworded by future versions.
bool has_managed_header(const std::string& text) {
  return text.rfind("# Podplane managed OpenTofu/Terraform file.\n", 0) == 0;
}

bool is_vmconfig_file(const std::string& name) {
  return name.rfind("podplane.cluster.vmconfig_", 0) == 0 && name.size() > 5 && name.ends_with(".json");
}

// "<addr ending in nstance-dev/nstance/aws>" matches the package name regardless of host.
bool address_is(const std::string& address, const std::string& package) {
  return address == package || (address.size() > package.size() && address.ends_with("/" + package));
}

lockfile::Engine engine_of(const std::optional<cache::TfSelection>& selection) {
  return lockfile::parse_engine(selection && !selection->engine.empty() ? selection->engine : "tofu");
}

// Platforms the store holds: the selection's union, else every platform of any package.
std::vector<std::string> store_platforms(const cache::Store& store, const std::optional<cache::TfSelection>& selection) {
  if (selection && !selection->platforms.empty()) return selection->platforms;
  std::set<std::string> platforms;
  for (const auto& artifact : store.artifacts({cache::ArtifactKind::provider_package, {}, {}, {}}))
    if (!artifact.platform.empty()) platforms.insert(artifact.platform);
  return {platforms.begin(), platforms.end()};
}

// The online command that fills the store for a provider address's engine and a platform.
std::string fetch_hint(const std::string& platform, const std::string& address = "") {
  std::string engine = address.rfind("registry.terraform.io/", 0) == 0   ? " --engine terraform"
                       : address.rfind("registry.opentofu.org/", 0) == 0 ? " --engine tofu"
                                                                          : "";
  return "run `podplane deps tf" + engine + " --platform " + platform + "` while online, or import a bundle that has it";
}

std::optional<cache::ModuleTree> newest_module(const cache::Store& store, const std::string& package,
                                               const std::string& constraints_text) {
  auto constraints = lockfile::Constraints::parse(constraints_text);
  std::optional<cache::ModuleTree> best;
  std::optional<lockfile::Version> best_version;
  for (auto& tree : store.module_trees()) {
    if (!address_is(tree.address, package)) continue;
    lockfile::Version version;
    try {
      version = lockfile::Version::parse(tree.version);
    } catch (const Error&) {
      continue;
    }
    if (!constraints.allows(version)) continue;
    if (!best_version || *best_version < version) {
      best_version = version;
      best = tree;
    }
  }
  return best;
}

// The newest allowed package in the store, or the error that names the online command.
cache::ModuleTree newest_module_or_fail(const cache::Store& store, const cache::PodplaneStack& stack,
                                       const fs::path& config_file) {
  const std::string& package = stack.module_package;
  auto newest = newest_module(store, package, stack.module_constraints);
  if (!newest)
    throw Error("no module " + package + " allowed by \"" + stack.module_constraints + "\" is in the store; run " +
                "`podplane deps tf -f " + config_file.filename().string() +
                "` while online, or import a bundle that has it");
  return *newest;
}

std::optional<cache::ModuleTree> module_tree(const cache::Store& store, const std::string& package,
                                             const std::string& version) {
  for (auto& tree : store.module_trees())
    if (address_is(tree.address, package) && tree.version == version) return tree;
  return std::nullopt;
}

void require_module_view(const fs::path& package_dir, const std::string& package, const std::string& version,
                         const fs::path& stack_dir) {
  for (const char* name : module_names) {
    std::error_code error;
    if (!fs::is_directory(package_dir / "modules" / name, error))
      throw Error("module " + package + " " + version + " is not in the store: " +
                  (package_dir / "modules" / name).string() + " is missing; run `podplane deps tf --stack " +
                  stack_dir.string() + "` while online, or import a bundle that has it");
  }
}

// The newest version of each provider the root and the module package require, allowed by
// the merged constraints, whose package the store holds for every platform.
lockfile::LockFile newest_lock(const cache::Store& store, ProviderKind kind, const fs::path& package_dir,
                               const std::string& host, const std::vector<std::string>& platforms) {
  std::map<std::string, std::vector<lockfile::Constraints>> wanted;
  for (const auto& requirement : cache::podplane_stack(kind).providers) {
    auto address = lockfile::ProviderAddress::parse(requirement.source, host).str();
    wanted[address].push_back(lockfile::Constraints::parse(requirement.constraints));
  }
  for (const char* name : module_names) {
    if (package_dir.empty()) break;  // a stack without a module package (proxmox)
    auto requirements = lockfile::read_module_requirements(package_dir / "modules" / name, package_dir);
    for (const auto& provider : requirements.providers) {
      std::string source = provider.source.empty() ? "hashicorp/" + provider.local_name : provider.source;
      auto address = lockfile::ProviderAddress::parse(source, host).str();
      wanted[address].push_back(lockfile::Constraints::parse(provider.constraints));
    }
  }
  std::vector<cache::TfSelection::Provider> chosen_versions;
  std::vector<cache::Artifact> chosen_packages;
  for (const auto& [address, all] : wanted) {
    auto constraints = lockfile::Constraints::merge(all);
    std::map<std::string, std::map<std::string, cache::Artifact>> by_version;
    for (auto& artifact : store.artifacts({cache::ArtifactKind::provider_package, address, {}, {}}))
      by_version[artifact.version][artifact.platform] = artifact;
    std::vector<lockfile::Version> complete;
    for (const auto& [version, packages] : by_version) {
      // (the binding is captured by an init-capture: clang before 16 cannot capture bindings)
      bool all_platforms = std::all_of(platforms.begin(), platforms.end(),
                                       [&held = packages](const std::string& p) { return held.count(p) > 0; });
      if (all_platforms) complete.push_back(lockfile::Version::parse(version));
    }
    auto chosen = lockfile::newest_allowed(complete, constraints);
    if (!chosen) {
      std::string have;
      for (const auto& [version, packages] : by_version) {
        have += have.empty() ? "" : ", ";
        have += version + " (";
        bool first = true;
        for (const auto& entry : packages) {
          have += (first ? "" : " ") + entry.first;
          first = false;
        }
        have += ")";
      }
      std::string platform_list;
      for (const auto& p : platforms) platform_list += (platform_list.empty() ? "" : ", ") + p;
      throw Error("no version of " + address + " allowed by \"" + constraints.canonical() +
                  "\" is in the store for every platform (" + platform_list + ")" +
                  (have.empty() ? "" : "; the store has " + have) + "; run `podplane deps tf" +
                  [&] {
                    std::string flags;
                    for (const auto& p : platforms) flags += " --platform " + p;
                    return flags;
                  }() +
                  "` while online, or import a bundle that has it");
    }
    chosen_versions.push_back({address, chosen->str(), constraints.canonical()});
    for (auto& [platform, artifact] : by_version[chosen->str()]) chosen_packages.push_back(std::move(artifact));
  }
  return cache::selection_lock(store, chosen_versions, platforms, chosen_packages);
}

// Every provider of the lock must have a package in the store for each platform.
void require_lock_packages(const cache::Store& store, const lockfile::LockFile& lock,
                           const std::vector<std::string>& platforms) {
  for (const auto& provider : lock.providers) {
    for (const auto& platform : platforms) {
      auto found = store.artifacts({cache::ArtifactKind::provider_package, provider.address, provider.version, platform});
      if (found.empty())
        throw Error("provider " + provider.address + " " + provider.version + " for " + platform +
                    " (in the stack's lock) is not in the store; " + fetch_hint(platform, provider.address));
    }
  }
}

// The stored bytes of a vmconfig manifest: the newest indexed one, else the view file.
std::optional<std::string> stored_manifest(const cache::Store& store, const std::string& name) {
  std::optional<cache::Artifact> newest;
  for (auto& artifact : store.artifacts({cache::ArtifactKind::vmconfig_manifest, {}, {}, {}})) {
    if (artifact.address != name && artifact.filename != name + ".json") continue;
    if (!newest || std::tie(newest->added_at, newest->id) < std::tie(artifact.added_at, artifact.id)) newest = artifact;
  }
  if (newest) return store.read_object(newest->digest);
  return read_file_if_present_within_limits(cache::layout::vmconfig_manifests_dir(store.root()) / (name + ".json"), "stack file");
}

std::string manifest_version(const std::string& bytes) {
  try {
    auto value = parse_json_within_limits(bytes, "vmconfig manifest");
    return value.at("vmconfig").at("version").get<std::string>();
  } catch (const std::exception&) {
    return "?";
  }
}

std::string relative_source(const fs::path& stack_dir, const fs::path& package_dir) {
  fs::path relative = fs::weakly_canonical(package_dir).lexically_relative(fs::weakly_canonical(stack_dir));
  std::string text = relative.generic_string();
  if (text.empty()) text = ".";
  if (text[0] != '.') text = "./" + text;
  return text;
}

struct Identity {
  std::map<std::string, std::string> values;  // cluster_id, name_prefix, provider_kind, provider_account, provider_region
};

std::optional<Identity> identity_of_stack(const std::string& infra_text) {
  lockfile::hcl::Body body = lockfile::hcl::parse(infra_text, infra_tf);
  for (const auto* block : body.blocks_of_type("locals")) {
    if (block->body.attribute("cluster_id") == nullptr) continue;
    Identity identity;
    for (const auto& attribute : block->body.attributes)
      if (const auto* text = attribute.value.as_string()) identity.values[attribute.name] = *text;
    return identity;
  }
  return std::nullopt;
}

Identity identity_of_config(const ClusterConfig& config) {
  return {{{"cluster_id", config.id},
           {"name_prefix", config.id},
           {"provider_kind", std::string(to_string(config.provider.kind))},
           {"provider_account", config.provider.account},
           {"provider_region", config.provider.region}}};
}

struct State {
  std::map<std::string, std::string> files;  // name → sha256 hex of what podplane wrote
};

State parse_state(const std::optional<std::string>& text, const fs::path& file) {
  State state;
  if (!text) return state;
  try {
    auto value = parse_json_within_limits(*text, file.string());
    for (const auto& item : value.at("files").items()) state.files[item.key()] = item.value().get<std::string>();
  } catch (const std::exception& error) {
    throw Error(file.string() + " is not valid podplane state (" + error.what() +
                "); remove it to regenerate the stack from the config");
  }
  return state;
}

std::string render_state(const State& state) {
  json value;
  value["comment"] = "Written by podplane cluster create|upgrade: sha256 of each generated file, to detect hand edits.";
  value["files"] = state.files;
  return value.dump(2) + "\n";
}

// Whether podplane may replace an existing file of this name with other content.
bool owned_by_podplane(const std::string& name, const std::string& current, const State& state) {
  if (name.ends_with(".tf")) return has_managed_header(current);
  if (state.files.count(name)) return true;
  if (name == schema_json) return current.find("Podplane generated schema support file") != std::string::npos;
  if (name == lock_hcl) return current.rfind("# This file is maintained automatically by", 0) == 0;
  if (is_vmconfig_file(name)) {
    try {
      return parse_json_within_limits(current, name).contains("vmconfig");
    } catch (const std::exception&) {
      return false;
    }
  }
  return false;
}

}  // namespace

std::string engine_host(const std::optional<cache::TfSelection>& selection) {
  lockfile::Engine engine = lockfile::parse_engine(selection ? selection->engine : "tofu");
  return std::string(lockfile::default_registry_host(engine));
}

std::string_view to_string(FileOutcome::Change change) {
  switch (change) {
    case FileOutcome::Change::created: return "created";
    case FileOutcome::Change::updated: return "updated";
    case FileOutcome::Change::unchanged: return "unchanged";
    case FileOutcome::Change::removed: return "removed";
  }
  return "?";
}

bool StackResult::changed() const {
  return std::any_of(files.begin(), files.end(),
                     [](const FileOutcome& f) { return f.change != FileOutcome::Change::unchanged; });
}

fs::path module_package_dir(const cache::Store& store, const cache::ModuleTree& tree) {
  return cache::module_view_dir(fs::absolute(store.root()), tree, store.module_trees());
}

lockfile::Engine stack_engine(const std::string& lock_text) {
  if (lock_text.rfind("# This file is maintained automatically by \"terraform init\"", 0) == 0) return lockfile::Engine::terraform;
  if (lock_text.rfind("# This file is maintained automatically by \"tofu init\"", 0) == 0) return lockfile::Engine::tofu;
  return lock_text.find("\"registry.terraform.io/") != std::string::npos ? lockfile::Engine::terraform
                                                                         : lockfile::Engine::tofu;
}

std::optional<std::string> pinned_module_version(const std::string& main_text) {
  std::string text = main_text;
  std::replace(text.begin(), text.end(), '\\', '/');
  // The real Podplane path, or the path of a package the store's selection does not name.
  static const std::regex pattern(R"(/tf/modules/(nstance|[^"]*/nstance-dev/nstance/[a-z0-9]+)/([^/"\\]+)/modules/cluster)");
  std::smatch match;
  if (!std::regex_search(text, match, pattern)) return std::nullopt;
  return match[2].str();
}

std::string content_hash(const std::string& bytes) { return sha256_hex(bytes); }

namespace {

// What the stack directory holds now: read once, before anything is planned.
struct StackDir {
  fs::path dir;
  fs::path config_file;
  std::map<std::string, std::string> files;  // name → bytes of each file podplane may own
  State state;
  std::optional<std::string> state_text;     // .podplane.cluster.state.json as it is
  std::optional<std::string> pinned;         // the module version the generated main.tf is pinned to
  std::vector<std::string> edited;           // generated files edited by hand since podplane wrote them

  const std::string* file(const std::string& name) const {
    auto it = files.find(name);
    return it == files.end() ? nullptr : &it->second;
  }
  bool was_edited(const std::string& name) const { return std::find(edited.begin(), edited.end(), name) != edited.end(); }
};

StackDir read_stack_dir(const fs::path& config_file) {
  StackDir now;
  now.config_file = config_file;
  now.dir = config_file.parent_path();
  now.state_text = read_file_if_present_within_limits(now.dir / state_file_name, "stack file");
  now.state = parse_state(now.state_text, now.dir / state_file_name);
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(now.dir, error)) {
    std::string name = entry.path().filename().string();
    bool ours = name.rfind("podplane.cluster.", 0) == 0 || name == lock_hcl || now.state.files.count(name);
    if (!ours || !entry.is_regular_file() || name == config_file.filename().string()) continue;
    if (auto text = read_file_if_present_within_limits(entry.path(), "stack file")) now.files[name] = *text;
  }
  if (error) throw Error("cannot list " + now.dir.string() + ": " + error.message());
  if (const auto* main = now.file(main_tf); main && has_managed_header(*main)) now.pinned = pinned_module_version(*main);
  for (const auto& [name, hash] : now.state.files) {
    if (name == lock_hcl) continue;  // the engines own the lock's content (providers lock adds hashes)
    const auto* current = now.file(name);
    if (current && content_hash(*current) != hash) now.edited.push_back(name);
  }
  return now;
}

// A module version that requires a variable podplane does not set cannot be called: the
// stack would fail at `plan`. Refused before anything is written.
void refuse_unset_required_variables(const std::string& main_text, const std::map<std::string, ModuleInterface>& interfaces) {
  auto body = lockfile::hcl::parse(main_text, main_tf);
  auto problems = module_call_problems(body, main_tf, [&](const std::string& source) -> const ModuleInterface* {
    auto at = source.rfind("/modules/");
    if (at == std::string::npos) return nullptr;
    auto it = interfaces.find(source.substr(at + 1));
    return it == interfaces.end() ? nullptr : &it->second;
  });
  std::string list;
  for (const auto& problem : problems)
    if (problem.kind == ModuleCallProblem::Kind::missing_required) list += "\n  " + problem.message;
  if (!list.empty())
    throw Error("the module version in the store requires input this podplane does not set:" + list +
                "\nPin a module version this podplane supports (`podplane cluster create` keeps a pinned stack's), "
                "or update podplane");
}

// Refusals that need no plan: they come first, whatever the store holds.
void refuse_upgrade_without_stack(const StackDir& now, const ClusterConfig& config, Command command) {
  // A Proxmox stack has no main.tf to pin: its state file says it was generated.
  bool generated = config.provider.kind == ProviderKind::proxmox ? now.state_text.has_value() : now.pinned.has_value();
  if (command == Command::upgrade && !generated)
    throw Error("cluster infrastructure has not been generated in " + now.dir.string() +
                "; run `podplane cluster create` first");
}

// The cluster's identity cannot change under an existing stack.
void refuse_identity_change(const StackDir& now, const ClusterConfig& config) {
  const auto* infra = now.file(infra_tf);
  if (!infra || !has_managed_header(*infra)) return;
  auto before = identity_of_stack(*infra);
  if (!before) return;
  std::string changes;
  for (const auto& [key, value] : identity_of_config(config).values) {
    auto old = before->values.find(key);
    if (old != before->values.end() && old->second != value) changes += "\n  " + key + ": " + old->second + " → " + value;
  }
  if (!changes.empty())
    throw Error("the cluster identity in " + now.config_file.filename().string() + " differs from the stack in " +
                now.dir.string() + ":" + changes + "\n" + identity_message);
}

void refuse_hand_edits(const StackDir& now, Force force) {
  if (now.edited.empty() || force == Force::yes) return;
  std::string list;
  for (const auto& name : now.edited) list += "\n  " + (now.dir / name).string();
  throw Error("generated file(s) edited by hand since podplane wrote them:" + list +
              "\nMove the change into podplane.cluster.jsonc or a user-owned file (custom.tf, *.auto.tfvars), "
              "or rerun with --force to overwrite the edits.");
}

// Everything a run would do, computed from the config, the store and the stack as it is,
// with no side effect: the files the stack should hold, the changes that gets it there (in
// the order they are made: each generated file, the removals, the state last) and the report.
struct StackPlan {
  StackResult result;
  std::map<std::string, std::string> desired;  // every generated file → its content
  std::vector<FileChange> changes;
};

// The module version and, where it is fixed already, the lock: a pinned stack's own, or the
// store's selection's for a new stack.
struct ModuleChoice {
  std::string version;
  std::optional<std::string> lock_text;
};

ModuleChoice choose_module(const cache::Store& store, const std::optional<cache::TfSelection>& selection,
                           const std::vector<std::string>& platforms, const cache::PodplaneStack& podplane,
                           const StackDir& now, Command command, std::vector<std::string>& warnings) {
  const std::string& package = podplane.module_package;
  if (command == Command::upgrade) return {newest_module_or_fail(store, podplane, now.config_file).version, {}};
  if (now.pinned) {
    const auto* lock = now.file(lock_hcl);
    if (!lock)
      throw Error("existing cluster stack is missing .terraform.lock.hcl; cannot restore its exact provider versions (" +
                  now.dir.string() + ")");
    return {*now.pinned, *lock};
  }
  bool selection_fits = selection && address_is(selection->module_address, package) &&
                        module_tree(store, package, selection->module_version).has_value();
  if (!selection_fits) {
    ModuleChoice newest{newest_module_or_fail(store, podplane, now.config_file).version, {}};
    if (selection)
      warnings.push_back("the store's current selection is " + selection->module_address + " " +
                         selection->module_version + "; took the newest " + package + " in the store, " +
                         newest.version);
    return newest;
  }
  // The store's lock view, else the same lock built from the index (a store without views).
  auto lock_text = read_file_if_present_within_limits(cache::layout::lock_file(fs::absolute(store.root())), "stack file");
  if (!lock_text) {
    auto lock = cache::selection_lock(store, selection->providers, platforms,
                                      store.artifacts({cache::ArtifactKind::provider_package, {}, {}, {}}));
    lock_text = lockfile::render_lock_file(lock, engine_of(selection));
  }
  return {selection->module_version, lock_text};
}

// The vmconfig manifest files the pools need. create keeps a pinned stack's manifests.
void add_manifests(const cache::Store& store, const ClusterConfig& config, const StackDir& now, Command command,
                   std::map<std::string, std::string>& desired) {
  for (const auto& [kind, arch] : config.vm_flavours()) {
    std::string manifest = vmconfig_manifest_name(kind, arch);
    std::string name = "podplane.cluster." + manifest + ".json";
    const auto* current = now.file(name);
    if (command == Command::create && current && !now.was_edited(name)) {
      desired[name] = *current;  // pinned: create never refreshes a manifest
      continue;
    }
    std::optional<std::string> bytes;
    if (now.was_edited(name) && command == Command::create) {
      // --force on a pinned manifest: restore the exact bytes podplane wrote, which the
      // content-addressed store still holds under their sha256.
      const std::string& recorded = now.state.files.at(name);
      if (store.has_object(recorded)) bytes = store.read_object(recorded);
    }
    if (!bytes) bytes = stored_manifest(store, manifest);
    if (!bytes)
      throw Error("vmconfig manifest " + manifest + " is not in the store; run `podplane deps download --kind " + kind +
                  " --arch " + arch + "` while online, or import a bundle that has it");
    desired[name] = *bytes;
  }
}

// upgrade: each item whose version moved.
std::vector<VersionChange> version_changes(const std::string& package, const StackDir& now, const std::string& version,
                                           const lockfile::LockFile& old_lock, const lockfile::LockFile& lock,
                                           const std::map<std::string, std::string>& desired) {
  std::vector<VersionChange> changes;
  if (now.pinned && *now.pinned != version) changes.push_back({package, *now.pinned, version});
  std::map<std::string, std::string> before, after;
  for (const auto& p : old_lock.providers) before[p.address] = p.version;
  for (const auto& p : lock.providers) after[p.address] = p.version;
  for (const auto& [address, v] : after)
    if (!before.count(address) || before[address] != v) changes.push_back({address, before.count(address) ? before[address] : "", v});
  for (const auto& [address, v] : before)
    if (!after.count(address)) changes.push_back({address, v, ""});
  for (const auto& [name, content] : desired) {
    if (!is_vmconfig_file(name)) continue;
    const auto* current = now.file(name);
    if (current && *current == content) continue;
    changes.push_back({name.substr(17, name.size() - 17 - 5), current ? manifest_version(*current) : "",
                       manifest_version(content)});
  }
  return changes;
}

// What of main.tf reaches the VMs: each pool's arch and the userdata it boots with, and the
// deps_mirror_url of each userdata data source. Empty when the text does not parse.
struct VmFacts {
  std::map<std::string, std::string> pool_arch;       // pool → arch
  std::map<std::string, std::string> pool_userdata;   // pool → userdata data source label
  std::map<std::string, std::string> mirror_url;      // userdata label → deps_mirror_url
};

VmFacts vm_facts(const std::string& main_text) {
  VmFacts facts;
  lockfile::hcl::Body body;
  try {
    body = lockfile::hcl::parse(main_text, main_tf);
  } catch (const Error&) {
    return facts;
  }
  for (const auto* block : body.blocks_of_type("data")) {
    if (block->labels.size() != 2 || block->labels[0] != "podplane_userdata") continue;
    if (const auto* url = block->body.attribute("deps_mirror_url"); url && url->value.is_string())
      facts.mirror_url[block->labels[1]] = *url->value.as_string();
  }
  for (const auto* block : body.blocks_of_type("locals")) {
    const auto* pools = block->body.attribute("pools");
    const auto* members = pools ? std::get_if<lockfile::hcl::Object>(&pools->value.data) : nullptr;
    if (members == nullptr) continue;
    for (const auto& pool : *members) {
      const auto* fields = std::get_if<lockfile::hcl::Object>(&pool.value.data);
      if (fields == nullptr) continue;
      for (const auto& field : *fields) {
        if (field.key == "arch" && field.value.is_string()) facts.pool_arch[pool.key] = *field.value.as_string();
        if (const auto* ref = std::get_if<lockfile::hcl::Expression>(&field.value.data); ref && field.key == "userdata") {
          // .rendered: what stacks generated before the provider's own name (.content) said.
          static const std::regex label(R"(data\.podplane_userdata\.([A-Za-z0-9_-]+)\.(?:content|rendered))");
          std::smatch match;
          if (std::regex_search(ref->text, match, label)) facts.pool_userdata[pool.key] = match[1];
        }
      }
    }
  }
  return facts;
}

// A pool's arch and a userdata's deps_mirror_url reach the VMs only through main.tf, and
// both replace them: reported as VM impact, like an instance type change in inputs.vm.tf.
std::vector<std::string> main_tf_vm_impacts(const std::string& before_text, const std::string& after_text) {
  const VmFacts before = vm_facts(before_text), after = vm_facts(after_text);
  const std::string prefix = std::string(main_tf) + " changed: VM impact (" + inputs_impact("podplane.cluster.inputs.vm.tf").meaning + "): ";
  std::vector<std::string> impacts;
  for (const auto& [pool, arch] : after.pool_arch) {
    auto old = before.pool_arch.find(pool);
    if (old != before.pool_arch.end() && old->second != arch)
      impacts.push_back(prefix + "pool " + pool + " arch " + old->second + " → " + arch);
  }
  for (const auto& [pool, label] : after.pool_userdata) {
    auto old_label = before.pool_userdata.find(pool);
    if (old_label == before.pool_userdata.end()) continue;
    if (auto arch = before.pool_arch.find(pool); arch != before.pool_arch.end() && after.pool_arch.at(pool) != arch->second)
      continue;  // reported as the arch change, which moves its mirror base with it
    auto old_url = before.mirror_url.find(old_label->second);
    auto new_url = after.mirror_url.find(label);
    if (old_url == before.mirror_url.end() || new_url == after.mirror_url.end() || old_url->second == new_url->second) continue;
    impacts.push_back(prefix + "pool " + pool + " deps_mirror_url " + old_url->second + " → " + new_url->second);
  }
  return impacts;
}

// The generated files the user runs (the Proxmox node script); every other one is data.
FileMode generated_file_mode(const std::string& name) {
  return name == proxmox_node_init_file ? FileMode::executable : FileMode::regular;
}

// An executable the user cannot execute (written by a podplane that made it 0644, or chmod'ed)
// is rewritten with its mode even when its bytes are right.
bool lacks_exec_bit(const fs::path& file) {
  std::error_code error;
  auto status = fs::status(file, error);
  return !error && (status.permissions() & fs::perms::owner_exec) == fs::perms::none;
}

// The outcome of each file and the changes to make: what differs is written, generated files
// the config no longer needs are removed unless edited, and the state records what was written.
void plan_changes(const StackDir& now, StackPlan& plan) {
  StackResult& result = plan.result;
  State next;
  for (const auto& [name, content] : plan.desired) {
    const auto* current = now.file(name);
    const FileMode mode = generated_file_mode(name);
    FileOutcome outcome{name, FileOutcome::Change::unchanged};
    if (!current) {
      outcome.change = FileOutcome::Change::created;
      plan.changes.push_back({name, content, mode});
    } else if (*current != content || (mode == FileMode::executable && lacks_exec_bit(now.dir / name))) {
      outcome.change = FileOutcome::Change::updated;
      plan.changes.push_back({name, content, mode});
      auto impact = inputs_impact(name);
      if (!impact.level.empty())
        result.impacts.push_back(name + " changed: " + impact.level + " impact (" + impact.meaning + ")");
      if (name == main_tf)
        for (auto& line : main_tf_vm_impacts(*current, content)) result.impacts.push_back(std::move(line));
    }
    result.files.push_back(outcome);
    next.files[name] = content_hash(content);
  }
  for (const auto& [name, hash] : now.state.files) {
    if (plan.desired.count(name)) continue;
    const auto* current = now.file(name);
    if (!current) continue;
    if (content_hash(*current) == hash) {
      plan.changes.push_back({name, std::nullopt});
      result.files.push_back({name, FileOutcome::Change::removed});
    } else {
      result.warnings.push_back((now.dir / name).string() + " is no longer generated but was edited; left in place");
      next.files[name] = hash;
    }
  }
  std::string state_text = render_state(next);
  if (now.state_text != state_text) plan.changes.push_back({state_file_name, state_text});
}

// Where VMs (and Proxmox nodes) fetch vmconfig artifacts: the config's deps_mirror_url, else
// $PODPLANE_DEPS_URL, else the public default (with a warning: it is not reachable in an air gap).
std::string site_mirror_url(const ClusterConfig& config, const StackOptions& options, std::vector<std::string>& warnings) {
  std::string deps_url = !config.deps_mirror_url.empty() ? config.deps_mirror_url
                         : !options.env_deps_url.empty() ? options.env_deps_url
                                                         : default_deps_url;
  while (deps_url.size() > 1 && deps_url.back() == '/') deps_url.pop_back();
  if (deps_url == default_deps_url)
    warnings.push_back("VMs will fetch vmconfig artifacts from " + deps_url +
                       "; in an air gap set cluster.deps_mirror_url (or $PODPLANE_DEPS_URL) to your "
                       "`podplane mirror serve`");
  return deps_url;
}

// A Proxmox stack: the node-init script, the shard configs and the vmconfig manifests they
// come from; no OpenTofu files, so no module or lock (generator/proxmox_stack.hpp).
StackPlan plan_proxmox_stack(const cache::Store& store, const ClusterConfig& config, const StackDir& now,
                             const StackOptions& options) {
  StackPlan plan;
  StackResult& result = plan.result;
  result.stack_dir = now.dir;
  result.tfrc = cache::layout::tfrc_file(fs::absolute(store.root()));
  result.new_stack = !now.state_text.has_value();
  ProxmoxInputs inputs{&config, site_mirror_url(config, options, result.warnings), config.deps_mirror_fallback_urls, {}};
  plan.desired[schema_json] = cluster_schema_file_content();
  add_manifests(store, config, now, options.command, plan.desired);
  for (const auto& [kind, arch] : config.vm_flavours()) {
    std::string manifest = vmconfig_manifest_name(kind, arch);
    inputs.manifests[manifest] = plan.desired.at("podplane.cluster." + manifest + ".json");
  }
  for (auto& [name, content] : render_proxmox_stack(store, inputs)) plan.desired[name] = std::move(content);
  if (plan.desired.count(proxmox_root_file)) {
    // The OpenTofu root gets its lock from the store like the other stacks: create keeps the
    // stack's own, a new stack or upgrade takes the newest bpg/proxmox held for every platform.
    const auto selection = store.tf_selection();
    const auto platforms = store_platforms(store, selection);
    if (platforms.empty())
      throw Error("the store at " + fs::absolute(store.root()).string() +
                  " holds no provider packages; run `podplane deps tf -f " + now.config_file.string() +
                  "` while online, or import a bundle");
    const auto* kept = options.command == Command::create ? now.file(lock_hcl) : nullptr;
    std::string lock_text = kept ? *kept
                                 : lockfile::render_lock_file(newest_lock(store, ProviderKind::proxmox, {},
                                                                          engine_host(selection), platforms),
                                                              engine_of(selection));
    require_lock_packages(store, lockfile::parse_lock_file(lock_text, (now.dir / lock_hcl).string()), platforms);
    plan.desired[lock_hcl] = lock_text;
  }
  plan_changes(now, plan);
  return plan;
}

StackPlan plan_stack(const cache::Store& store, const ClusterConfig& config, const StackDir& now,
                     const StackOptions& options) {
  if (config.provider.kind == ProviderKind::proxmox) return plan_proxmox_stack(store, config, now, options);
  const fs::path deps_root = fs::absolute(store.root());
  const cache::PodplaneStack podplane = cache::podplane_stack(config.provider.kind);
  const std::string& package = podplane.module_package;
  StackPlan plan;
  StackResult& result = plan.result;
  result.stack_dir = now.dir;
  result.tfrc = cache::layout::tfrc_file(deps_root);
  result.new_stack = !now.pinned.has_value();

  // Module version, lock and platforms.
  const auto selection = store.tf_selection();
  const auto platforms = store_platforms(store, selection);
  if (platforms.empty())
    throw Error("the store at " + deps_root.string() + " holds no provider packages; run `podplane deps tf` while "
                "online, or import a bundle");
  lockfile::LockFile old_lock;
  if (const auto* lock = now.file(lock_hcl)) old_lock = lockfile::parse_lock_file(*lock, (now.dir / lock_hcl).string());
  ModuleChoice choice = choose_module(store, selection, platforms, podplane, now, options.command, result.warnings);
  result.module_version = choice.version;
  auto tree = module_tree(store, package, choice.version);
  if (!tree)
    throw Error("module " + package + " " + choice.version + " is not in the store's index; run `podplane deps tf --stack " +
                now.dir.string() + "` while online, or import a bundle that has it");
  const fs::path package_dir = module_package_dir(store, *tree);
  require_module_view(package_dir, package, choice.version, now.dir);
  std::string lock_text = choice.lock_text
                              ? *choice.lock_text
                              : lockfile::render_lock_file(newest_lock(store, config.provider.kind, package_dir,
                                                                       engine_host(selection), platforms),
                                                           engine_of(selection));
  lockfile::LockFile lock = lockfile::parse_lock_file(lock_text, (now.dir / lock_hcl).string());
  require_lock_packages(store, lock, platforms);

  // Everything the stack should hold.
  std::string deps_url = site_mirror_url(config, options, result.warnings);
  // The module calls pass only what this module version declares, and it may require nothing
  // podplane cannot set: a call that misses a required variable never plans.
  std::map<std::string, ModuleInterface> interfaces;
  DeclaredVariables declared;
  for (const char* name : module_names) {
    auto& interface = interfaces[std::string("modules/") + name] = read_module_interface(store, *tree, std::string("modules/") + name);
    for (const auto& [variable, _] : interface.variables) declared[name].insert(variable);
  }
  // The seed resource reads the stored snapshot (path relative to the stack; stored_seed()
  // checked it against cluster.seed.digest, which the provider checks again at apply).
  ClusterConfig rendered = config;
  if (auto seed = stored_seed(store, config)) {
    rendered.seed.path = relative_source(now.dir, seed->view);  // tofu runs in the stack dir
    // The provider re-checks the snapshot only against the digest the config pins: without
    // one, a snapshot changed on the apply host would be uploaded as it is.
    if (config.seed.digest.empty())
      result.warnings.push_back("cluster.seed pins no digest, so the Podplane provider will not re-check the snapshot "
                                "before upload; add \"digest\": \"" + seed->digest + "\" to cluster.seed in " +
                                now.config_file.filename().string());
  }
  plan.desired = render_stack_tf(
      {&rendered, relative_source(now.dir, package_dir), deps_url, &declared, now.config_file.filename().string()});
  refuse_unset_required_variables(plan.desired.at(main_tf), interfaces);
  plan.desired[schema_json] = cluster_schema_file_content();
  plan.desired[lock_hcl] = lock_text;
  add_manifests(store, config, now, options.command, plan.desired);

  if (options.command == Command::upgrade)
    result.version_changes = version_changes(package, now, choice.version, old_lock, lock, plan.desired);
  plan_changes(now, plan);
  return plan;
}

// Files podplane does not own are never replaced.
void refuse_foreign_files(const StackDir& now, const StackPlan& plan) {
  for (const auto& [name, content] : plan.desired) {
    const auto* current = now.file(name);
    if (!current || *current == content) continue;
    if (!owned_by_podplane(name, *current, now.state))
      throw Error((now.dir / name).string() + " exists but was not generated by podplane" +
                  (name.ends_with(".tf") ? " (it lacks the managed-file header)" : "") +
                  "; it is left untouched: move it away to let podplane generate it");
  }
}

}  // namespace

StackResult generate_stack(const cache::Store& store, const StackOptions& options) {
  Disk disk;
  return generate_stack(store, options, disk);
}

StackResult generate_stack(const cache::Store& store, const StackOptions& options, Disk& disk) {
  const fs::path config_file = fs::absolute(options.config_file);
  const ClusterConfig config = load_cluster_config(config_file);
  const StackDir now = read_stack_dir(config_file);
  // Check, plan, check the plan, and only then write: every refusal comes before the first write.
  refuse_upgrade_without_stack(now, config, options.command);
  refuse_identity_change(now, config);
  refuse_hand_edits(now, options.force);
  StackPlan plan = plan_stack(store, config, now, options);
  refuse_foreign_files(now, plan);
  write_all_or_nothing(now.dir, plan.changes, disk);
  return std::move(plan.result);
}

}  // namespace podplane::generator
