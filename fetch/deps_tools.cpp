#include "fetch/deps_tools.hpp"

#include "cache/store.hpp"
#include "fetch/podplane_release.hpp"

namespace podplane::fetch {

void run_deps_tools(const std::filesystem::path& deps_root, const DepsToolsRequest& request, std::ostream& out) {
  auto add_podplane_release_to = [&](cache::Store& store) {
    if (request.podplane_release)
      (void)add_podplane_release(store, *request.podplane_release, out, request.release_key);
  };
  if (!request.engine_releases) {
    auto store = cache::Store::open(deps_root);
    add_podplane_release_to(store);
    return;
  }
  const auto& asked = *request.engine_releases;
  std::vector<RequiredEngineVersion> required;
  if (!asked.version) required = engine_versions_required(asked.stacks, asked.config_stack);
  DepsToolsOptions options = asked.fetch;
  options.releases = choose_tool_releases(asked.engines, asked.version, required, options.download.http, out);
  auto store = cache::Store::open(deps_root);
  (void)deps_tools(store, options, out);
  add_podplane_release_to(store);
}

}  // namespace podplane::fetch
