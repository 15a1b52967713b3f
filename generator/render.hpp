#pragma once
// Renders the .tf files of a cluster stack from its config: pure text, no I/O. What the root
// module requires and which modules it calls come from cache/podplane_stack.hpp, the
// definition `deps tf` fetches; the module sources point at one module package version in
// the store by a relative path.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "generator/config.hpp"

namespace podplane::generator {

// The first two lines of every generated .tf file (then a blank line), as the real Podplane writes.
extern const char* const managed_header;

// Podplane's public deps host: the deps_mirror_url of a stack whose config and environment
// name no mirror of their own.
inline constexpr const char* kPublicDepsUrl = "https://deps.podplane.dev";

// The deps_mirror_url the userdata of `arch`'s VMs gets: the base of that arch on a podplane
// mirror (<url>/arch/<arch>, cache/views.hpp), where kubelet's amd64 and arm64 builds never
// share a path. The public host has no such bases and keeps its plain URL.
std::string vm_deps_mirror_url(const std::string& deps_mirror_url, const std::string& arch);

// The arguments a stored module version declares, per submodule ("cluster" → its variables):
// only these are rendered into the module calls (generator/module_interface.hpp).
using DeclaredVariables = std::map<std::string, std::set<std::string>>;

struct RenderInputs {
  const ClusterConfig* config = nullptr;
  std::string module_package_path;  // relative from the stack dir to <deps>/tf/modules/nstance/<ver>
  std::string deps_mirror_url;      // the mirror's root; each arch's userdata gets vm_deps_mirror_url()
  const DeclaredVariables* declared = nullptr;  // null: every argument podplane knows (render tests)
  // The config file beside the stack: the Podplane provider's seed resource reads cluster.seed
  // (name, version, digest) from it at apply.
  std::string config_file_name = "podplane.cluster.jsonc";
};

// File name → content for podplane.cluster.{main,buckets,dns,roles,inputs.runtime,inputs.vm,inputs.infra,outputs}.tf.
[[nodiscard]] std::map<std::string, std::string> render_stack_tf(const RenderInputs& inputs);

// The impact level of an inputs file ("runtime", "VM", "infrastructure") and what it means,
// or empty strings for any other file.
struct InputsImpact {
  std::string level;
  std::string meaning;
};
InputsImpact inputs_impact(const std::string& file_name);

}  // namespace podplane::generator
