#pragma once
// What a root module asks for: terraform { required_version, required_providers } and
// module { source, version } blocks, read from the .tf files (native syntax) and .tf.json files
// (JSON syntax: "terraform", "required_providers", "module" as objects or arrays of objects) of
// one directory. Every other construct is skipped. Local module calls ("./x", "../y") are followed recursively.
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace podplane::lockfile {

struct ProviderRequirement {
  std::string local_name;   // aws
  std::string source;       // hashicorp/aws (as written; may be empty → hashicorp/<local_name>)
  std::string constraints;  // as written, may be empty
  std::string declared_in;  // file path, for messages
};

struct ModuleCall {
  std::string name;
  std::string source;   // as written
  std::string version;  // as written, may be empty
  std::string declared_in;
};

struct ModuleRequirements {
  std::vector<std::string> required_versions;
  std::vector<ProviderRequirement> providers;
  std::vector<ModuleCall> remote_modules;  // every non-local call, across followed local modules
  std::vector<std::filesystem::path> local_module_dirs;  // every local module followed (canonical), once each
};

// A local module call that leaves the directory local modules are read in (the root's git
// repository, else the root itself: a tarball of a repo or a CI workspace has no .git). The
// message names `--repo-root` with `suggested_root`, the nearest directory that holds both:
// every command that reads roots takes that flag to set the boundary.
class LocalModuleOutside : public Error {
 public:
  LocalModuleOutside(const std::string& message, std::filesystem::path suggested_root)
      : Error(message), suggested_root_(std::move(suggested_root)) {}
  const std::filesystem::path& suggested_root() const { return suggested_root_; }

 private:
  std::filesystem::path suggested_root_;
};

// Reads every *.tf and *.tf.json file in `dir`, and follows local module sources that stay
// inside `within` (after links); one that leaves it is a LocalModuleOutside naming the call and
// where it leads. Other errors name the file.
[[nodiscard]] ModuleRequirements read_module_requirements(const std::filesystem::path& dir,
                                                          const std::filesystem::path& within);
// Within repository_of(dir): a root's local modules may be anywhere in its git repository
// (`../modules/vpc` of a monorepo), never outside it.
[[nodiscard]] ModuleRequirements read_module_requirements(const std::filesystem::path& dir);

// Where the lock of the root at `dir` (its .terraform.lock.hcl) is read and written: through
// links, as the engines follow them (a lock linked to a shared one), but only while they stay
// inside `boundary` (the root's repository). A link that leads outside it (to /etc/shadow, to
// a token file), or a dangling one that would make a write create a file there, is an Error
// before a byte is read or written, so no message can quote what it points at.
[[nodiscard]] std::filesystem::path root_lock_file(const std::filesystem::path& dir, const std::filesystem::path& boundary);

// The nearest directory at or above `dir` that holds `.git`, else `dir` itself (canonical).
[[nodiscard]] std::filesystem::path repository_of(const std::filesystem::path& dir);

}  // namespace podplane::lockfile
