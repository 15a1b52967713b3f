#include "fetch/tf_requirements.hpp"

#include "base/error.hpp"
#include "lockfile/tf_config.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;
using lockfile::Constraints;
using lockfile::ProviderAddress;
using lockfile::Version;

constexpr int kMaxModuleDepth = 8;  // nested remote module calls followed at most this deep

// Adds what the module in `dir` requires (with the local modules it calls), then follows its
// remote module calls, `depth` levels below the root.
void read_module_dir(RootRequirements& root, const fs::path& dir, const fs::path& within, int depth,
                     const std::string& host, ModulePackages& packages) {
  auto requirements = lockfile::read_module_requirements(dir, within);
  for (const auto& provider : requirements.providers) {
    std::string source = provider.source.empty() ? "hashicorp/" + provider.local_name : provider.source;
    ProviderAddress address;
    try {
      address = ProviderAddress::parse(source, host);
    } catch (const Error& error) {
      throw Error(provider.declared_in + ": " + error.what());
    }
    root.want(address, provider.constraints, provider.declared_in);
  }
  for (const auto& call : requirements.remote_modules) {
    const std::string context = call.declared_in + ": module \"" + call.name + "\"";
    if (depth >= kMaxModuleDepth) {
      throw Error(context + ": remote module calls nest deeper than " + std::to_string(kMaxModuleDepth));
    }
    auto source = ModuleSource::parse(call.source, host);
    if (source.kind == ModuleSource::Kind::local) continue;  // followed by read_module_requirements
    auto called = packages.call({std::move(source), call.version, context, call.declared_in});
    read_module_dir(root, called.dir, called.root.empty() ? called.dir : called.root, depth + 1, host, packages);
  }
}

}  // namespace

void RootRequirements::want(const ProviderAddress& address, const std::string& constraints,
                            const std::string& declared_in) {
  if (address.host == "terraform.io" && address.ns == "builtin") return;  // built into the engines
  auto [it, inserted] = providers.try_emplace(address.str(), ProviderWant{address, {}, std::nullopt, "", declared_in});
  try {
    it->second.constraints.push_back(Constraints::parse(constraints));
  } catch (const Error& error) {
    throw Error(declared_in + ": provider " + address.str() + ": " + error.what());
  }
}

RootRequirements read_root(const fs::path& dir, const std::string& registry_host, ModulePackages& packages,
                           const fs::path& boundary) {
  if (!fs::is_directory(dir)) throw UsageError("--stack " + dir.string() + " is not a directory");
  RootRequirements root;
  root.name = dir.string();
  std::map<std::string, Version> pins;
  const fs::path within = boundary.empty() ? lockfile::repository_of(dir) : boundary;
  const auto lock_path = lockfile::root_lock_file(dir, within);
  if (fs::exists(lock_path)) {
    for (const auto& entry : lockfile::read_lock_file(lock_path).providers) {
      pins.emplace(entry.address, Version::parse(entry.version));
    }
  }
  read_module_dir(root, dir, within, 0, registry_host, packages);
  for (const auto& [address, version] : pins) {
    auto it = root.providers.find(address);
    if (it == root.providers.end()) continue;  // a lock entry no module asks for: the engines drop it too
    it->second.pinned = version;
    it->second.pinned_by = lock_path.string();
  }
  return root;
}

RootRequirements read_podplane_stack(const cache::PodplaneStack& stack, const std::string& registry_host,
                                     ModulePackages& packages) {
  RootRequirements root;
  root.name = "podplane default stack";
  for (const auto& provider : stack.providers) {
    root.want(ProviderAddress::parse(provider.source, registry_host), provider.constraints, root.name);
  }
  if (stack.module_package.empty()) return root;  // proxmox: providers only
  auto called = packages.call({ModuleSource::parse(stack.module_package, registry_host), stack.module_constraints,
                               root.name + ": module " + stack.module_package, ""});
  root.stack_module = called.package;
  for (const char* name : cache::kStackSubmodules) {
    auto dir = called.dir / "modules" / name;
    if (!fs::is_directory(dir)) {
      throw Error("module package " + called.package.address + " " + called.package.version + " lacks modules/" + name);
    }
    read_module_dir(root, dir, called.root.empty() ? called.dir : called.root, 1, registry_host, packages);
  }
  return root;
}

}  // namespace podplane::fetch
