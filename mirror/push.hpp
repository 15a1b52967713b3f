#pragma once
// `podplane mirror push oci://REGISTRY/PREFIX`: publishes the store's providers in OpenTofu's
// OCI provider-mirror layout (oci_mirror, OpenTofu >= 1.10) and its modules as OpenTofu OCI
// module packages, through the OCI distribution HTTP API (net/http.hpp: the same TLS trust,
// proxies, timeouts and retry budget as every other request). Idempotent: blobs and manifests
// the registry already has are counted, not sent. Talks only to that registry (and the token
// realm it names), logging in with --creds-file or an auth file (net/oci_auth.hpp).
// Layout and sources: docs/mirror.md "mirror push". Errors: podplane::Error.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "net/http.hpp"
#include "net/oci_auth.hpp"
#include "net/oci_reference.hpp"
#include "mirror/serve.hpp"

namespace podplane::mirror {

namespace oci_media {
// The OCI index, manifest and empty types are the ones the image side names (net/oci_reference.hpp).
inline constexpr const char* index = net::image_media::oci_index;
inline constexpr const char* manifest = net::image_media::oci_manifest;
inline constexpr const char* empty_config = net::image_media::oci_empty;
inline constexpr const char* provider = "application/vnd.opentofu.provider";
inline constexpr const char* provider_target = "application/vnd.opentofu.provider-target";
inline constexpr const char* module_package = "application/vnd.opentofu.modulepkg";
inline constexpr const char* zip_layer = "archive/zip";
}  // namespace oci_media

struct PushOptions {
  Transport transport = Transport::https;
  std::optional<std::filesystem::path> ca_file;  // else SSL_CERT_FILE / the system store
  std::size_t chunk_size = 16 * 1024 * 1024;     // larger blobs go up in PATCH chunks
  net::HttpOptions http;                              // retry budget and timeouts (ca_file above wins)
  net::RegistryAuthOptions registry_auth;             // --creds-file / --authfile (creds_registry: the target's)
};

struct PushStats {
  std::size_t blobs_uploaded = 0;
  std::size_t blobs_present = 0;      // HEAD said the registry has it: not sent
  std::size_t blobs_mounted = 0;      // linked from another repository of this push: not sent
  std::size_t manifests_pushed = 0;
  std::size_t manifests_present = 0;  // same digest already there (under that tag)
  std::uint64_t bytes_uploaded = 0;
  std::vector<std::string> references;  // REGISTRY/REPO:TAG of every tag pushed or present
  // The store's git repositories (as served at /git/: "host/org/repo"), which no kind of the
  // table pushes: an OCI registry is no place for them (git_repositories_note).
  std::vector<std::string> git_repositories_not_pushed;
};

// Where things go below oci://REGISTRY/PREFIX (lower-case repository names):
//   PREFIX/providers/<host>/<namespace>/<type>:<version>        (index → one manifest per platform)
//   PREFIX/modules/<host>/<namespace>/<name>/<system>:<version> (image manifest, zip layer)
//   PREFIX/mirror/<registry>/<repository>:<tag>                 (container images, as stored)
// Versions become tags with '+' written as '_' (OpenTofu's rule).
struct OciTarget {
  std::string registry;  // the authority, host[:port] as the target writes them (base/url.hpp)
  std::string prefix;    // may be empty
  static OciTarget parse(const std::string& text);  // UsageError unless oci://REGISTRY[/PREFIX]
};

// What `mirror push` says on stderr of the git repositories it did not push: how many, and the
// commands, runnable as printed once DIR and SITE_GIT are set, that hand them to a site git
// server instead (docs/ci.md "Git sources"). "" when there are none.
[[nodiscard]] std::string git_repositories_note(const PushStats& stats);

[[nodiscard]] PushStats push_to_oci(const std::filesystem::path& deps_root, const std::string& target,
                                    const PushOptions& options, std::ostream* progress);

}  // namespace podplane::mirror
