#pragma once
// `podplane deps download` and `podplane deps status`: the container images the manifests
// pin (fetch/images.hpp), seeds.json and its snapshots (fetch/seeds.hpp), vmconfig manifests from
// $PODPLANE_DEPS_URL/manifests/vmconfig_<kind>_debian-13_<arch>.json (knc and knd), the
// artifacts they list (provider-filtered), each verified against its sha256:/sha512: digest
// before it is indexed. A run indexes all or nothing: any failed item leaves the index and
// the views as they were. Progress goes to `log`; results to `out`. Errors are podplane::Error.
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cache/cosign_policy.hpp"
#include "cache/store.hpp"
#include "net/download.hpp"
#include "net/oci_auth.hpp"

namespace podplane::fetch {

// $PODPLANE_DEPS_URL without a trailing '/', else https://deps.podplane.dev.
std::string deps_base_url();
// $PODPLANE_ARCH, else the host's amd64/arm64.
std::string default_vmconfig_arch();
// Splits "a,b" lists, trims, drops empties and duplicates.
std::vector<std::string> split_list(const std::vector<std::string>& values);

struct DepsDownloadOptions {
  enum class Mode { fetch, dry_run };
  std::vector<std::string> archs;                    // amd64 | arm64
  std::vector<std::string> kinds{"knc", "knd"};      // knc | knd
  std::vector<std::string> providers;                // aws, google, …, or "all"
  std::string providers_reason;                      // why these providers (printed with them), e.g. "--providers"
  Mode mode = Mode::fetch;
  enum class Seeds { fetch, skip };                  // --skip-seeds: no seeds.json, no snapshots
  Seeds seeds = Seeds::fetch;
  std::string base_url;                              // deps_base_url() when empty
  net::DownloadOptions download;
  net::RegistryAuthOptions registry_auth;                 // logins for the registries of the images
  std::vector<std::filesystem::path> cosign_keys;    // --cosign-key: every image must be signed by one
  std::optional<std::filesystem::path> cosign_policy;  // --cosign-policy: keys per registry/repository
  cache::KeylessFlags cosign_keyless;  // --certificate-identity…, --trusted-root: keyless signatures
};

// Fetches (or, in dry-run, lists) what is missing; then rebuilds the views.
void deps_download(cache::Store& store, const DepsDownloadOptions& options, std::ostream& out, std::ostream& log);

enum class DepsStatus { up_to_date, new_available };

// Compares each stored manifest with upstream (ignoring "cached" markers) and prints
// "New packages are available to download." or "No new packages available.". `store` is
// null when there is no store yet (then everything upstream is new).
[[nodiscard]] DepsStatus deps_status(const cache::Store* store, const DepsDownloadOptions& options, std::ostream& out);

}  // namespace podplane::fetch
