#pragma once
// `podplane deps tools` as one run (docs/tools.md): the engine releases, the release of each
// chosen by the required_versions when none is given (fetch/tools.hpp), and podplane's own
// release files (fetch/podplane_release.hpp), added to the store under a deps root. Errors:
// podplane::Error naming the file or the requirement.
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/ed25519.hpp"
#include "fetch/tools.hpp"
#include "lockfile/platform.hpp"

namespace podplane::fetch {

struct DepsToolsRequest {
  struct EngineReleases {
    std::vector<lockfile::Engine> engines;
    std::optional<std::string> version;         // canonical; nullopt: the newest every requirement allows
    std::vector<std::filesystem::path> stacks;  // --stack: the roots whose required_version chooses it
    std::optional<ConfigStack> config_stack;    // -f: Podplane's stack for the config's cloud
    DepsToolsOptions fetch;                     // platforms and transfers; the run fills its releases
  };
  std::optional<EngineReleases> engine_releases;          // nullopt: --podplane-release alone
  std::optional<std::filesystem::path> podplane_release;  // --podplane-release DIR
  const ed25519::SigningKey* release_key = nullptr;       // --sign: signs the podplane release's SHA256SUMS
};

// Chooses the releases (saying which and why on `out`), then opens the store under
// `deps_root` and adds what it lacks of them, then podplane's release files.
void run_deps_tools(const std::filesystem::path& deps_root, const DepsToolsRequest& request, std::ostream& out);

}  // namespace podplane::fetch
