#pragma once
// What an OpenTofu/Terraform root needs, read from its files (the first stage of `deps tf`):
// every provider the root and the modules it calls require, with each constraint on it, and
// the versions the root's own .terraform.lock.hcl pins. Reading is pure; a remote module call
// is handed to a ModulePackages, which answers where the called package lies on disk
// (resolution chooses and fetches it; a test points at fixture directories). Each root gets
// its own RootRequirements, and roots are resolved each on its own (two roots may lock one
// provider at different versions). Errors are podplane::Error naming the file, UsageError
// for a --stack that is not a directory.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/podplane_stack.hpp"
#include "cache/store.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/version.hpp"
#include "fetch/module_source.hpp"

namespace podplane::fetch {

// One provider a root needs.
struct ProviderWant {
  lockfile::ProviderAddress address;
  std::vector<lockfile::Constraints> constraints;  // one per declaration
  std::optional<lockfile::Version> pinned;         // by the root's lock, or the store's kept selection
  std::string pinned_by;                           // the lock file that pinned it, for messages
  std::string declared_in;                         // the first file that asked for it
};

// A remote module call (registry, git, archive or http source) to follow.
struct RemoteModuleCall {
  ModuleSource source;
  std::string constraints;  // the call's version = "…"; "" when none
  std::string context;      // `<file>: module "name"`, for messages
  std::string declared_in;  // the file that holds the call (a root's own, or a package's on disk)
};

// A module package as resolution chose it: how the store indexes it.
struct ModulePackage {
  std::string address;  // registry.opentofu.org/nstance-dev/nstance/aws, or host/path of a direct source
  std::string version;  // 2.1.0, a git ref, or "unversioned"
};

// Where called module packages lie on disk.
class ModulePackages {
 public:
  struct Called {
    ModulePackage package;
    std::filesystem::path dir;  // the called module: the package root plus the call's //subdir
    std::filesystem::path root;  // the package root, which its local calls stay inside ("": dir)
  };
  virtual ~ModulePackages() = default;
  [[nodiscard]] virtual Called call(const RemoteModuleCall& call) = 0;
};

struct RootRequirements {
  std::string name;                               // the root directory, or "podplane default stack"
  std::map<std::string, ProviderWant> providers;  // by full address
  std::optional<ModulePackage> stack_module;      // Podplane's stack: its module package (tf/modules/nstance/)

  // Adds one declaration. Built-in providers (terraform.io/builtin/…) need nothing and are
  // left out. `constraints` that do not parse are an Error naming `declared_in`.
  void want(const lockfile::ProviderAddress& address, const std::string& constraints, const std::string& declared_in);
};

// A --stack root: DIR's .tf files and the local modules they call, every remote module they
// call (followed up to 8 levels deep), and DIR/.terraform.lock.hcl's pins of what those ask for
// (a lock entry nothing asks for is dropped, as the engines drop it). Local module calls stay
// inside `boundary` (empty: lockfile::repository_of(dir)).
[[nodiscard]] RootRequirements read_root(const std::filesystem::path& dir, const std::string& registry_host,
                                         ModulePackages& packages, const std::filesystem::path& boundary = {});

// Podplane's stack: its providers, its module package, and what that package's
// modules/{cluster,account,network,shard} ask for.
[[nodiscard]] RootRequirements read_podplane_stack(const cache::PodplaneStack& stack, const std::string& registry_host,
                                                   ModulePackages& packages);

}  // namespace podplane::fetch
