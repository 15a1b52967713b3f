#pragma once
// The module packages one `deps tf` run calls, chosen and put on disk so their .tf files can
// be read: a registry module at the newest version its call allows, from the package location
// the registry names; a direct git, archive or http source as it is. A package the store
// already indexes is never fetched again: its files are written out of the store into the
// run's scratch directory. Each package is resolved once per run, whatever calls it. Not
// thread-safe. Errors are podplane::Error naming the call.
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "cache/store.hpp"
#include "fetch/module_source.hpp"
#include "fetch/registry.hpp"
#include "fetch/tf_requirements.hpp"

namespace podplane::fetch {

class ModuleResolver : public ModulePackages {
 public:
  using Note = std::function<void(const std::string&)>;  // one progress line

  // Every reference must outlive the resolver; `scratch` receives the packages read from the store.
  ModuleResolver(cache::Store& store, RegistryClient& registry, ModuleFetcher& fetcher, std::filesystem::path scratch,
                 std::string registry_host, Note note);

  [[nodiscard]] Called call(const RemoteModuleCall& call) override;

  struct Resolved {
    ModulePackage package;
    std::string upstream_url;    // redacted
    std::filesystem::path root;  // the package tree on disk
    bool in_store = false;       // already indexed: nothing to add
    // A direct git source's objects, stored beside its tree (a registry module whose location
    // is a git repository is served by the registry protocol, not as a repository).
    std::optional<ModuleFetcher::GitSnapshot> git;
  };
  // Every package resolved so far, by "address version".
  [[nodiscard]] const std::map<std::string, Resolved>& packages() const { return packages_; }

 private:
  std::filesystem::path write_out_of_store(const cache::ModuleTree& tree);

  cache::Store& store_;
  RegistryClient& registry_;
  ModuleFetcher& fetcher_;
  std::filesystem::path scratch_;
  std::string host_;
  Note note_;
  std::map<std::string, Resolved> packages_;
  int written_out_ = 0;
};

}  // namespace podplane::fetch
