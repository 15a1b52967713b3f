#pragma once
// What a root module asks for: terraform { required_version, required_providers } and
// module { source, version } blocks, read from the .tf files (native syntax) and .tf.json files
// (JSON syntax: "terraform", "required_providers", "module" as objects or arrays of objects) of
// one directory. Every other construct is skipped. Local module calls ("./x", "../y") are followed recursively.
#include <filesystem>
#include <string>
#include <vector>

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
};

// Reads every *.tf and *.tf.json file in `dir`, and follows local module sources that stay
// inside `within` (after links); one that leaves it is an error naming the call and where it
// leads. Errors name the file.
[[nodiscard]] ModuleRequirements read_module_requirements(const std::filesystem::path& dir,
                                                          const std::filesystem::path& within);
// Within repository_of(dir): a root's local modules may be anywhere in its git repository
// (`../modules/vpc` of a monorepo), never outside it.
[[nodiscard]] ModuleRequirements read_module_requirements(const std::filesystem::path& dir);

// The nearest directory at or above `dir` that holds `.git`, else `dir` itself (canonical).
[[nodiscard]] std::filesystem::path repository_of(const std::filesystem::path& dir);

}  // namespace podplane::lockfile
