#pragma once
// Renders the .tf files of a cluster stack from its config: pure text, no I/O. What the root
// module requires and which modules it calls come from cache/podplane_stack.hpp, the
// definition `deps tf` fetches; the module sources point at one module package version in
// the store by a relative path.
#include <map>
#include <string>
#include <vector>

#include "generator/config.hpp"

namespace podplane::generator {

// The first two lines of every generated .tf file (then a blank line), as the real Podplane writes.
extern const char* const managed_header;

struct RenderInputs {
  const ClusterConfig* config = nullptr;
  std::string module_package_path;  // relative from the stack dir to <deps>/tf/modules/nstance/<ver>
  std::string deps_mirror_url;
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
