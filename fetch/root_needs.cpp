#include "fetch/root_needs.hpp"

#include <algorithm>
#include <map>

#include "base/error.hpp"
#include "base/scratch_dir.hpp"
#include "base/url.hpp"
#include "lockfile/provider_names.hpp"
#include "lockfile/tf_config.hpp"
#include "fetch/tf_resolution.hpp"

namespace podplane::fetch {

namespace fs = std::filesystem;
using lockfile::Version;

namespace {

// "host[:port]" of a git clone URL ("https://user@host:port/org/repo.git"), as git's
// url.<base>.insteadOf matches it.
std::string git_host(const std::string& url) {
  const auto parts = split_url(url);
  return parts ? host_as_written(*parts) : url;
}

// Answers each remote call from the lookup and records what it selected.
class Selector : public ModulePackages {
 public:
  Selector(ModuleLookup& lookup, const fs::path& scratch, RootNeeds& needs)
      : lookup_(lookup), scratch_(scratch), needs_(needs) {
    fs::create_directories(scratch_ / "empty");
  }

  Called call(const RemoteModuleCall& call) override {
    const ModuleSource& source = call.source;
    if (source.kind == ModuleSource::Kind::registry) needs_.registry_hosts.insert(source.registry.host);
    if (source.kind == ModuleSource::Kind::git) needs_.git_hosts.insert(git_host(source.url));
    ModuleSelection selection{"module " + source.store_address() + (call.constraints.empty() ? "" : " " + call.constraints),
                              call.context, source, std::nullopt, "", call.declared_in};
    std::optional<fs::path> dir;
    try {
      selection.package = select(call, selection.problem);
    } catch (const Error& error) {
      selection.problem = "UNREADABLE: " + error.message();
    }
    // A package held but not readable stays selected (what needs it keeps it), with the problem.
    try {
      if (selection.package) dir = written_out(source, *selection.package);
    } catch (const Error& error) {
      selection.problem = "UNREADABLE: " + selection.package->address + " " + selection.package->version + " from " +
                          lookup_.where() + " could not be read, so the calls inside it were not followed: " +
                          error.message() + "; " + call.context;
    }
    const bool seen = std::any_of(needs_.modules.begin(), needs_.modules.end(), [&](const ModuleSelection& s) {
      return s.item == selection.item && s.problem == selection.problem &&
             (s.package ? s.package->address + " " + s.package->version : "") ==
                 (selection.package ? selection.package->address + " " + selection.package->version : "");
    });
    const auto package = selection.package;
    if (!seen) needs_.modules.push_back(std::move(selection));
    if (!package) return {{source.store_address(), "missing"}, scratch_ / "empty", scratch_ / "empty"};
    const fs::path root = dir ? *dir : scratch_ / "empty";
    return {*package, dir ? resolve_subdir(*dir, source.subdir) : root, root};
  }

 private:
  std::optional<ModulePackage> select(const RemoteModuleCall& call, std::string& problem) {
    const ModuleSource& source = call.source;
    if (source.kind == ModuleSource::Kind::registry) {
      const auto offered = lookup_.registry_versions(source.registry);
      try {
        return choose_module_version(call, offered);
      } catch (const Error&) {
        std::string have;
        for (const auto& version : offered) have += (have.empty() ? "" : ", ") + version.str();
        problem = "MISSING: " + lookup_.where() + " has no version that \"" + call.constraints + "\" allows" +
                  (have.empty() ? "" : " (it has " + have + ")") + "; " + call.context;
        return std::nullopt;
      }
    }
    ModulePackage package = direct_module_package(call);
    if (lookup_.holds(source, package)) return package;
    problem = "MISSING: no package " + package.address + " " + package.version + " in " + lookup_.where() + "; " +
              call.context;
    return std::nullopt;
  }

  std::optional<fs::path> written_out(const ModuleSource& source, const ModulePackage& package) {
    const std::string key = package.address + " " + package.version;
    if (auto it = written_.find(key); it != written_.end()) return it->second;
    auto dir = lookup_.files(source, package, scratch_);
    written_[key] = dir;
    return dir;
  }

  ModuleLookup& lookup_;
  fs::path scratch_;
  RootNeeds& needs_;
  std::map<std::string, std::optional<fs::path>> written_;
};

}  // namespace

StoreModuleLookup::StoreModuleLookup(const cache::Store& store) : store_(store), trees_(store.module_trees()) {}

std::vector<Version> StoreModuleLookup::registry_versions(const ModuleAddress& address) {
  std::vector<Version> versions;
  const std::string wanted = address.str();
  for (const auto& tree : trees_) {
    if (tree.address != wanted) continue;
    try {
      versions.push_back(Version::parse(tree.version));
    } catch (const Error&) {
    }
  }
  return versions;
}

bool StoreModuleLookup::holds(const ModuleSource&, const ModulePackage& package) {
  return store_.find_module_tree(package.address, package.version).has_value();
}

std::optional<fs::path> StoreModuleLookup::files(const ModuleSource&, const ModulePackage& package, const fs::path& scratch) {
  auto tree = store_.find_module_tree(package.address, package.version);
  if (!tree) return std::nullopt;
  fs::path root = scratch / ("module-" + std::to_string(written_++));
  try {
    store_.write_module_files(*tree, root);
  } catch (const fs::filesystem_error& error) {
    throw Error("a file of it is missing from the store or cannot be read (" + std::string(error.what()) + ")");
  }
  return root;
}

std::vector<ModulePackage> RootNeeds::module_packages() const {
  std::vector<ModulePackage> out;
  for (const auto& selection : modules) {
    if (!selection.package) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const ModulePackage& p) {
      return p.address == selection.package->address && p.version == selection.package->version;
    });
    if (!seen) out.push_back(*selection.package);
  }
  return out;
}

std::vector<cache::ItemPin> pins_of(const RootNeeds& needs) {
  std::vector<cache::ItemPin> pins;
  const std::string who = "root " + needs.root.string();
  if (needs.lock)
    for (const auto& entry : needs.lock->providers) pins.push_back({cache::ItemFamily::provider, entry.address, entry.version, who});
  for (const auto& package : needs.module_packages())
    pins.push_back({cache::ItemFamily::module, package.address, package.version, who});
  return pins;
}

std::vector<cache::ItemPin> stored_root_pins(const cache::Store& store, const fs::path& dir,
                                             const std::optional<fs::path>& repo_root) {
  StoreModuleLookup lookup(store);
  std::optional<RootNeeds> needs;
  try {
    needs = root_needs(dir, module_boundary(dir, repo_root), lookup);
  } catch (const Error& error) {
    throw Error("cannot read the root " + dir.string() + ", so nothing can say what it needs: " +
                error.message());
  }
  // A stored package whose calls were not followed hides what they select: refuse, rather than
  // let a prune drop it.
  for (const auto& selection : needs->modules)
    if (selection.package && !selection.problem.empty())
      throw Error("cannot read the root " + dir.string() + ", so nothing can say what it needs: " + selection.problem +
                  " (podplane deps verify finds and repairs damaged store files)");
  return pins_of(*needs);
}

fs::path module_boundary(const fs::path& root, const std::optional<fs::path>& repo_root) {
  return repo_root ? fs::absolute(*repo_root).lexically_normal() : lockfile::repository_of(root);
}

lockfile::Engine lock_engine(const lockfile::LockFile& lock) {
  for (const auto& provider : lock.providers)
    if (provider.address.starts_with("registry.terraform.io/")) return lockfile::Engine::terraform;
  return lockfile::Engine::tofu;
}

RootNeeds root_needs(const fs::path& root_dir, const fs::path& boundary, ModuleLookup& lookup) {
  RootNeeds needs;
  needs.root = fs::absolute(root_dir).lexically_normal();
  needs.boundary = boundary;
  const fs::path lock_path = lockfile::root_lock_file(needs.root, boundary);
  if (fs::exists(lock_path)) {
    needs.lock = lockfile::read_lock_file(lock_path);
    needs.engine = lock_engine(*needs.lock);
  }
  ScratchDir scratch("podplane-root-needs-");
  Selector selector(lookup, scratch.path(), needs);
  needs.requirements =
      read_root(needs.root, std::string(lockfile::default_registry_host(needs.engine)), selector, boundary);
  if (needs.lock)
    for (const auto& entry : needs.lock->providers) needs.registry_hosts.insert(entry.address.substr(0, entry.address.find('/')));
  return needs;
}

}  // namespace podplane::fetch
