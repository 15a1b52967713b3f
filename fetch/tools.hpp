#pragma once
// `podplane deps tools`: the terraform and tofu release zips (docs/tools.md), fetched from
// releases.hashicorp.com and OpenTofu's GitHub releases, each release's SHA256SUMS verified
// against the project's pinned key (cache/tool_releases.hpp) and every zip against the
// SHA256SUMS before it is stored. A run indexes all or nothing, at the end. Errors:
// podplane::Error naming the file.
#include <ostream>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "lockfile/platform.hpp"
#include "net/download_options.hpp"

namespace podplane::mirror {

struct ToolRelease {
  lockfile::Engine engine = lockfile::Engine::terraform;
  std::string version;  // canonical: 1.9.8
};

struct DepsToolsOptions {
  std::vector<ToolRelease> releases;
  std::vector<std::string> platforms;  // os_arch; empty: linux_amd64
  DownloadOptions download;
  // Where releases come from; empty: tool_releases_base_url(engine).
  std::string terraform_base_url;
  std::string tofu_base_url;
};

// https://releases.hashicorp.com (terraform) or https://github.com (tofu), unless
// $PODPLANE_TERRAFORM_RELEASES_URL or $PODPLANE_TOFU_RELEASES_URL names another (a site's copy,
// or a test's loopback fixture); no trailing slash.
[[nodiscard]] std::string tool_releases_base_url(lockfile::Engine engine);

// The directory URL of one release, ending in '/': <base>/terraform/<v>/ or
// <base>/opentofu/opentofu/releases/download/v<v>/.
[[nodiscard]] std::string tool_release_url(lockfile::Engine engine, const std::string& base, const std::string& version);

struct DepsToolsResult {
  std::size_t fetched = 0;  // zips added this run
  std::size_t present = 0;  // zips the store had already
};

// Fetches what the store lacks of each release for each platform; a release whose zips are
// all stored is not asked for at all.
DepsToolsResult deps_tools(cache::Store& store, const DepsToolsOptions& options, std::ostream& out);

}  // namespace podplane::mirror
