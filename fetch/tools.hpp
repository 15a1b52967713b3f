#pragma once
// `podplane deps tools`: the terraform and tofu release zips (docs/tools.md), fetched from
// releases.hashicorp.com and OpenTofu's GitHub releases, each release's SHA256SUMS verified
// against the project's pinned key (cache/tool_releases.hpp) and every zip against the
// SHA256SUMS before it is stored. A run indexes all or nothing, at the end. Errors:
// podplane::Error naming the file.
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cache/podplane_stack.hpp"
#include "cache/store.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/version.hpp"
#include "net/download_options.hpp"

namespace podplane::fetch {

struct ToolRelease {
  lockfile::Engine engine = lockfile::Engine::terraform;
  std::string version;  // canonical: 1.9.8
};

struct DepsToolsOptions {
  std::vector<ToolRelease> releases;
  std::vector<std::string> platforms;  // os_arch; empty: linux_amd64
  net::DownloadOptions download;
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

// Where the list of an engine's releases is: releases.hashicorp.com's index,
// <base>/terraform/index.json ({"versions": {"1.9.8": {…}, …}}), or OpenTofu's
// https://get.opentofu.org/tofu/api.json ({"versions": [{"id": "1.8.5", …}, …]}) unless
// $PODPLANE_TOFU_VERSIONS_URL names another (OpenTofu's releases are on github.com, its index is
// not).
[[nodiscard]] std::string tool_versions_url(lockfile::Engine engine, const std::string& base);

// The versions a release index lists, in either shape; an entry that is not a version is
// skipped. A document of neither shape is an Error naming `url`.
[[nodiscard]] std::vector<lockfile::Version> parse_tool_versions(const std::string& document, const std::string& url);

// One required_version an engine must satisfy, and who asked for it (for messages).
struct RequiredEngineVersion {
  std::string constraints;  // as written: ">= 1.6.0"
  std::string required_by;  // "stack/" or "Podplane's stacks"
};

// The newest release of `engine` that upstream lists and every requirement allows (a
// prerelease only when one names it exactly with "="), for `deps tools` without --version.
// Errors name the requirements when none is allowed.
[[nodiscard]] std::string newest_tool_release(lockfile::Engine engine, const std::vector<RequiredEngineVersion>& required,
                                              const std::string& base, const net::HttpOptions& http);

// The stack Podplane generates for a cluster config's cloud, and how messages name it
// ("Podplane's aws stack, podplane.cluster.jsonc").
struct ConfigStack {
  cache::ProviderKind kind = cache::ProviderKind::aws;
  std::string named;
};

// The required_versions `deps tools` without --version must satisfy: every root's in `stacks`,
// else `config_stack`'s, else every cloud's stack. Errors name the root that cannot be read.
[[nodiscard]] std::vector<RequiredEngineVersion> engine_versions_required(
    const std::vector<std::filesystem::path>& stacks, const std::optional<ConfigStack>& config_stack);

// The releases to fetch: `version` for each engine when given, else the newest release each
// engine's upstream lists that every requirement allows, saying on `out` which it chose and why.
[[nodiscard]] std::vector<ToolRelease> choose_tool_releases(const std::vector<lockfile::Engine>& engines,
                                                            const std::optional<std::string>& version,
                                                            const std::vector<RequiredEngineVersion>& required,
                                                            const net::HttpOptions& http, std::ostream& out);

struct DepsToolsResult {
  std::size_t fetched = 0;  // zips added this run
  std::size_t present = 0;  // zips the store had already
};

// Fetches what the store lacks of each release for each platform; a release whose zips are
// all stored is not asked for at all.
DepsToolsResult deps_tools(cache::Store& store, const DepsToolsOptions& options, std::ostream& out);

}  // namespace podplane::fetch
