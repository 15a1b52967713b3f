#pragma once
// What one OpenTofu/Terraform root needs for its offline `init -lockfile=readonly`, defined
// once and shared by `stack check` (the store or a mirror must hold it, then the engine
// proves it), `deps prune --keep-root/--keep-lock` (it is kept whatever its age) and
// `bundle create --for-root` (it is what travels):
//   - the provider versions its lock selects, for what its configuration asks for (a lock
//     entry nothing asks for is dropped, as the engines drop it);
//   - the module package version each call selects: a registry call the newest version the
//     store (or mirror) holds that its constraints allow, which is what the engine takes from
//     the mirror's version list; a git or archive call the package of its ref; followed
//     through the packages those call in turn, as deep as `deps tf` follows them, whether the
//     packages are read from the store or handed out by a mirror.
// Reads the root's .tf/.tf.json files and lock, and asks a ModuleLookup; never opens a
// connection itself. Not thread-safe. Errors are podplane::Error (a root that cannot be read:
// lockfile::LocalModuleOutside for a local call outside the boundary).
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cache/prune.hpp"
#include "cache/store.hpp"
#include "fetch/module_source.hpp"
#include "fetch/tf_requirements.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/version.hpp"

namespace podplane::fetch {

// Where module packages are looked up: the store, or a mirror's module registry.
class ModuleLookup {
 public:
  virtual ~ModuleLookup() = default;
  // The versions held of a registry module (empty: none).
  [[nodiscard]] virtual std::vector<lockfile::Version> registry_versions(const ModuleAddress& address) = 0;
  // Whether the package of a direct (git, archive, http) `source` is held.
  [[nodiscard]] virtual bool holds(const ModuleSource& source, const ModulePackage& package) = 0;
  // The files of the package `source` selected, written below `scratch`, so that the calls in
  // it can be followed; nullopt when this lookup holds no files of it. A package that is held
  // but cannot be read is an Error.
  [[nodiscard]] virtual std::optional<std::filesystem::path> files(const ModuleSource& source, const ModulePackage& package,
                                                                   const std::filesystem::path& scratch) = 0;
  // Where the packages are, for messages: "the store", "https://mirror.site:8443".
  [[nodiscard]] virtual std::string where() const = 0;
};

// The store's module trees as a ModuleLookup.
class StoreModuleLookup : public ModuleLookup {
 public:
  explicit StoreModuleLookup(const cache::Store& store);
  std::vector<lockfile::Version> registry_versions(const ModuleAddress& address) override;
  bool holds(const ModuleSource& source, const ModulePackage& package) override;
  std::optional<std::filesystem::path> files(const ModuleSource& source, const ModulePackage& package,
                                             const std::filesystem::path& scratch) override;
  std::string where() const override { return "the store"; }

 private:
  const cache::Store& store_;
  std::vector<cache::ModuleTree> trees_;
  int written_ = 0;
};

// One module call as the lookup answers it.
struct ModuleSelection {
  std::string item;                      // "module ADDRESS[ CONSTRAINTS]"
  std::string context;                   // `<file>: module "name"`
  ModuleSource source;
  std::optional<ModulePackage> package;  // what the call selects; nullopt when nothing is held
  // "" when the call is answered; else "MISSING: …" (no package) or "UNREADABLE: …" (no
  // package, or one held whose files could not be read, so the calls inside it were not followed)
  std::string problem;
  std::string declared_in;               // the file that holds the call
};

struct RootNeeds {
  std::filesystem::path root;      // absolute, normal
  std::filesystem::path boundary;  // where its local module calls may lead
  lockfile::Engine engine = lockfile::Engine::tofu;  // whose registry its lock names
  std::optional<lockfile::LockFile> lock;  // nullopt: the root has none
  RootRequirements requirements;           // what its configuration asks for
  std::vector<ModuleSelection> modules;    // each distinct call, in the order met
  std::set<std::string> registry_hosts;    // of its lock's providers and registry module calls
  std::set<std::string> git_hosts;         // host[:port] of its git module calls

  // The packages selected (each once).
  [[nodiscard]] std::vector<ModulePackage> module_packages() const;
};

// What `deps prune --keep-root` keeps of a root: every provider version its lock names and
// every module package version its calls select, each naming the root as who pins it.
[[nodiscard]] std::vector<cache::ItemPin> pins_of(const RootNeeds& needs);

// pins_of() the root at `dir`, its module calls selected from `store`: what `deps prune
// --keep-root` keeps and `bundle create --for-root` carries. A root that cannot be read, or a
// stored package of it whose calls cannot be followed, is an Error saying that nothing can then
// say what it needs.
[[nodiscard]] std::vector<cache::ItemPin> stored_root_pins(const cache::Store& store, const std::filesystem::path& dir,
                                                           const std::optional<std::filesystem::path>& repo_root);

// The boundary of local module calls: `repo_root` when given (--repo-root), else the root's
// git repository (lockfile::repository_of).
[[nodiscard]] std::filesystem::path module_boundary(const std::filesystem::path& root,
                                                    const std::optional<std::filesystem::path>& repo_root);

// Reads `root` and resolves its calls through `lookup`. The lock is read when present (an
// invalid lock is an Error); module calls nothing answers are selections without a package.
[[nodiscard]] RootNeeds root_needs(const std::filesystem::path& root, const std::filesystem::path& boundary,
                                   ModuleLookup& lookup);

// The engine a root's lock was written for: registry.terraform.io entries → terraform, else tofu.
[[nodiscard]] lockfile::Engine lock_engine(const lockfile::LockFile& lock);

}  // namespace podplane::fetch
