#include "fetch/tf_modules.hpp"

#include "base/error.hpp"
#include "fetch/tf_resolution.hpp"

namespace podplane::fetch {

namespace fs = std::filesystem;

ModuleResolver::ModuleResolver(cache::Store& store, RegistryClient& registry, ModuleFetcher& fetcher, fs::path scratch,
                               std::string registry_host, Note note)
    : store_(store),
      registry_(registry),
      fetcher_(fetcher),
      scratch_(std::move(scratch)),
      host_(std::move(registry_host)),
      note_(std::move(note)) {}

ModulePackages::Called ModuleResolver::call(const RemoteModuleCall& call) {
  const ModuleSource& source = call.source;
  const bool from_registry = source.kind == ModuleSource::Kind::registry;
  ModulePackage package = from_registry ? choose_module_version(call, registry_.module_versions(source.registry))
                                        : direct_module_package(call);
  const std::string key = package.address + " " + package.version;
  if (auto it = packages_.find(key); it != packages_.end()) {
    return {it->second.package, resolve_subdir(it->second.root, source.subdir), it->second.root};
  }

  Resolved resolved;
  resolved.package = package;
  auto stored = store_.find_module_tree(package.address, package.version);
  // A git source's tree stored before its objects were (an older podplane) is fetched again for
  // them: without them the site cannot serve the repository the source names.
  if (stored && source.kind == ModuleSource::Kind::git &&
      store_.artifacts({.kind = cache::ArtifactKind::git_refs, .address = package.address, .version = package.version}).empty())
    stored.reset();
  if (stored) {
    resolved.in_store = true;
    resolved.upstream_url = stored->upstream_url;
    resolved.root = write_out_of_store(*stored);
    note_("module " + package.address + " " + package.version + ": already in the store");
  } else {
    ModuleSource location = source;
    if (from_registry) {
      auto text = registry_.module_location(source.registry, lockfile::Version::parse(package.version));
      location = ModuleSource::parse(text, host_);
      if (location.kind == ModuleSource::Kind::registry || location.kind == ModuleSource::Kind::local) {
        throw Error(call.context + ": the registry's location for " + package.address + " " + package.version +
                    " must be a direct remote package address, got " + net::redact_url(text));
      }
    } else {
      location.subdir.clear();  // the whole repository or archive is the package
    }
    note_("module " + package.address + " " + package.version + ": fetching " + location.package_address());
    auto fetched = fetcher_.fetch(location);
    resolved.root = fetched.root;
    resolved.upstream_url = fetched.upstream_url;
    if (!from_registry) resolved.git = std::move(fetched.git);
  }
  auto root = resolved.root;
  packages_.emplace(key, std::move(resolved));
  return {std::move(package), resolve_subdir(root, source.subdir), root};
}

// Writes a stored module tree out of the objects so its .tf files can be read offline.
fs::path ModuleResolver::write_out_of_store(const cache::ModuleTree& tree) {
  fs::path root = scratch_ / ("stored-" + std::to_string(++written_out_));
  store_.write_module_files(tree, root);
  return root;
}

}  // namespace podplane::fetch
