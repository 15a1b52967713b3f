#pragma once
// What an OCI image is called and what its manifests are, with no request made: references as
// users write them, the manifest media types we accept, and the names `mirror serve` publishes
// images under. Shared by the puller that fills the store (fetch/oci_registry.hpp) and the
// server that hands it out (mirror/serve_site.hpp). Errors: podplane::Error.
#include <string>
#include <string_view>

namespace podplane::net {

namespace image_media {
inline constexpr const char* oci_index = "application/vnd.oci.image.index.v1+json";
inline constexpr const char* oci_manifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* docker_list = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr const char* docker_manifest = "application/vnd.docker.distribution.manifest.v2+json";
// An image's config (a runnable image's; any other config type makes an OCI artifact) and the
// empty descriptor of OCI 1.1.
inline constexpr const char* oci_config = "application/vnd.oci.image.config.v1+json";
inline constexpr const char* docker_config = "application/vnd.docker.container.image.v1+json";
inline constexpr const char* oci_empty = "application/vnd.oci.empty.v1+json";
// A Helm chart's config (`helm push`): the catalogue gives such an artifact a `helm pull` line.
inline constexpr const char* helm_config = "application/vnd.cncf.helm.config.v1+json";
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
// The part of that name every repository of `registry` shares: mirror/<registry>, its port
// written with '_' (containerd's hosts.toml points at <mirror>/v2/ + this).
std::string mirror_registry_prefix(const std::string& registry);
// The inverse, or "" when `repository` is not a mirror name.
std::string address_of_mirror_repository(const std::string& repository);

// A manifest's media type: its own mediaType, else an index when it lists manifests, else
// `content_type` (what the registry or the descriptor said) when that names one, else an OCI manifest.
[[nodiscard]] std::string manifest_media_type(const std::string& bytes, const std::string& content_type);

}  // namespace podplane::net
