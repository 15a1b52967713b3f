#pragma once
// What a stored module version accepts, and whether the stack's module calls match it: the
// `variable` blocks of each submodule, read from the store's objects (offline, through the
// project's HCL reader), against the arguments of each `module` block. `cluster create|upgrade`
// render only declared arguments and refuse a required variable they cannot set; `cluster
// check` reports either mismatch with file:line. Errors are podplane::Error naming the file.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "lockfile/hcl.hpp"

namespace podplane::generator {

struct ModuleVariable {
  std::string name;
  bool required = false;    // no `default`: every call must pass it
  std::string declared_at;  // "modules/shard/variables.tf:12"
};

// The variables of one directory of a module package, e.g. "modules/cluster".
struct ModuleInterface {
  std::string address, version, directory;
  std::map<std::string, ModuleVariable> variables;

  std::string name() const;  // "<address> <version> <directory>"
};

// Reads the .tf files directly in `directory` of the stored tree (not below it: those are
// other modules). A .tf file that does not parse is an Error naming it.
[[nodiscard]] ModuleInterface read_module_interface(const cache::Store& store, const cache::ModuleTree& tree,
                                                    const std::string& directory);

struct ModuleCallProblem {
  enum class Kind { undeclared_argument, missing_required };
  Kind kind = Kind::undeclared_argument;
  std::string module;   // the call's label
  std::string where;    // "<file>:<line>" of the argument, or of the module block
  std::string message;  // the whole sentence, with both places
};

// Each argument of each `module` block in `main` that its module does not declare, and each
// required variable it leaves out. `interface_of(source)` gives the called module's interface,
// or null when it is not known (that call is not compared: check_modules reports it).
[[nodiscard]] std::vector<ModuleCallProblem> module_call_problems(
    const lockfile::hcl::Body& main, const std::string& file_name,
    const std::function<const ModuleInterface*(const std::string& source)>& interface_of);

}  // namespace podplane::generator
