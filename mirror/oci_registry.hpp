#pragma once
// The read side of the OCI distribution API as a client, for fetching container images into
// the store: manifests by tag or digest, blob URLs, and the registry's auth (a 401's challenge
// is answered by mirror/oci_auth.hpp: Basic with the user's login, or a Bearer token from the
// realm, anonymous unless a login is configured; cached per repository). Every request goes through the
// one HttpClient (mirror/http.hpp: SSL_CERT_FILE, proxies, retry budget). Registries are
// reached over https, except hosts listed in $PODPLANE_PLAIN_HTTP_REGISTRIES (host[:port],
// comma-separated), as with `skopeo --tls-verify=false`. Not thread-safe. Errors: podplane::Error.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mirror/http.hpp"
#include "mirror/oci_auth.hpp"

namespace podplane::mirror {

namespace image_media {
inline constexpr const char* oci_index = "application/vnd.oci.image.index.v1+json";
inline constexpr const char* oci_manifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* docker_list = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr const char* docker_manifest = "application/vnd.docker.distribution.manifest.v2+json";
// Every manifest type we accept, for the Accept header.
inline constexpr const char* accept_all =
    "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";
// Whether `media_type` is one of the four above: the only types a manifest is stored and
// served as (any other, text/html above all, would let a registry plant a page on the mirror).
[[nodiscard]] bool is_manifest_type(std::string_view media_type);
}  // namespace image_media

// An image reference as users write it: [registry/]repository[:tag][@sha256:…]. Docker Hub's
// short forms are normalised ("nginx" → docker.io/library/nginx).
struct ImageReference {
  std::string registry;    // registry.k8s.io, docker.io, 127.0.0.1:5000
  std::string repository;  // pause, library/nginx
  std::string tag;         // empty when only a digest was given
  std::string digest;      // "sha256:…" or empty

  std::string address() const { return registry + "/" + repository; }  // the store's address
  std::string str() const;  // registry/repository[:tag][@digest]
  // Error naming `text` and what is wrong (no tag and no digest gives tag "latest").
  [[nodiscard]] static ImageReference parse(std::string_view text);
};

// The mirror name `mirror serve` publishes an image under: mirror/<registry>/<repository>, a
// registry port written with '_' (':' cannot appear in a repository name).
std::string mirror_repository(const std::string& address);
// The inverse, or "" when `repository` is not a mirror name.
std::string address_of_mirror_repository(const std::string& repository);

// One manifest as fetched: its bytes, verified against the digest it was asked for.
struct FetchedManifest {
  std::string bytes;
  std::string digest;      // "sha256:…" of bytes
  std::string media_type;  // from the document, else the Content-Type
  std::string url;
};

// A manifest's media type: its own mediaType, else an index when it lists manifests, else
// `content_type` (what the registry or the descriptor said) when that names one, else an OCI manifest.
[[nodiscard]] std::string manifest_media_type(const std::string& bytes, const std::string& content_type);

class OciPuller {
 public:
  OciPuller(HttpOptions options, RegistryCredentials credentials);

  // GET /v2/<repository>/manifests/<reference>. By digest: the bytes must hash to it. By tag:
  // the registry's Docker-Content-Digest, when given, must match the bytes.
  [[nodiscard]] FetchedManifest manifest(const ImageReference& image, const std::string& reference);
  // GET /v2/<repository>/blobs/<digest> into memory, for the small blobs read before anything
  // is stored (a signature's payloads): `size` is the descriptor's, at most `limit`; the bytes
  // must have that size and hash to `digest`.
  [[nodiscard]] std::string small_blob(const ImageReference& image, const std::string& digest, std::int64_t size,
                                       std::int64_t limit);
  // Where a manifest is, for a download through the engine (with auth_headers and an Accept
  // of image_media::accept_all).
  std::string manifest_url(const ImageReference& image, const std::string& reference) const;
  // The blob URL and the headers (auth) a download of it needs.
  std::string blob_url(const ImageReference& image, const std::string& digest) const;
  std::vector<std::string> auth_headers(const ImageReference& image) const;

 private:
  std::string base(const ImageReference& image) const;
  HttpResponse get(const ImageReference& image, const std::string& url, const std::string& accept);

  HttpClient http_;
  RegistryAuth auth_;
};

}  // namespace podplane::mirror
