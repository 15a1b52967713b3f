#pragma once
// The published view of a store: every URL path that `mirror serve`, `mirror export` and
// `mirror push` offer, computed in one pass over the index (a snapshot). Keys are
// '/'-separated paths starting with '/', built only from checked safe names, so the same map
// is also a safe relative file tree. A built MirrorSite is immutable and may be shared by
// any number of threads. The URL layout is documented in docs/mirror.md.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/store.hpp"
#include "mirror/git_repositories.hpp"
#include "mirror/site_paths.hpp"

namespace podplane::mirror {

struct Catalogue;

// One file of a module package, resolved to its object in the store. `object` is a plain
// string: a site of 50,000 module files would hold a std::filesystem::path's list of
// components for each (about 700 bytes a file).
struct ModulePackageEntry {
  std::string path;              // '/'-separated; directories end in '/'
  std::uint32_t mode = 0644;
  std::string object;            // the object's file; empty for directories
  std::int64_t size = 0;
  std::string digest;            // sha256 hex of the object; empty for directories
};

// A module package in archive order (sorted by path, parents before children).
struct ModulePackage {
  std::string address;  // host/ns/name/system
  std::string version;
  std::vector<ModulePackageEntry> entries;
};

enum class ResourceKind {
  document,         // bytes held in memory (JSON, the health answer)
  object,           // a store object, streamed from disk
  module_package,   // a tar.gz built on the fly from a ModulePackage
  module_download,  // the module registry download answer (204 + X-Terraform-Get when served)
  catalogue_page,   // HTML of the catalogue, rendered per request (the mirror's URL, the ?q= filter)
};

struct SiteResource {
  ResourceKind kind = ResourceKind::document;
  std::string content_type;
  std::string body;                // document: the bytes; module_download: {"location": …}
  std::filesystem::path object;    // object: the file in the store
  std::int64_t size = 0;           // object: its size
  std::string digest;              // object: its sha256 hex
  std::string location;            // module_download: the X-Terraform-Get value (relative)
  std::shared_ptr<const ModulePackage> module;  // module_package
  std::shared_ptr<const Catalogue> catalogue;   // catalogue_page
  std::string catalogue_section;                // catalogue_page: "" for the whole catalogue
  // OCI distribution API answers (under /v2/): the Docker-Content-Digest they carry, "" for
  // other paths. They are not files of a static export (mirror export writes an OCI layout).
  std::string oci_digest;
  bool registry_api = false;
  // document: an OCI referrers index, which ?artifactType= filters per request (OCI 1.1).
  bool referrers_index = false;
};

// One stored image as published under its mirror name (input for `mirror export` and `mirror push`).
struct PublishedImage {
  std::string address;     // registry.k8s.io/pause
  std::string repository;  // mirror/registry.k8s.io/pause
  // tag → the digest ("sha256:…") and media type of what the tag resolves to.
  struct Tag {
    std::string tag, digest, media_type;
    std::int64_t size = 0;
  };
  std::vector<Tag> tags;
  // Every stored manifest, index and blob of the image by OCI digest: what a layout or a push carries.
  struct Content {
    std::string digest, media_type;  // media_type empty for blobs
    std::filesystem::path object;
    std::int64_t size = 0;
  };
  std::vector<Content> manifests;  // indexes and manifests, children before the indexes that list them
  std::vector<Content> blobs;
  // subject digest → the OCI image index of its stored referrers, as /referrers/ answers it;
  // only subjects that have some (`mirror push` writes it where a registry lacks the API).
  std::map<std::string, std::string> referrers;
};

// One provider version as published (input for `mirror push`).
struct PublishedProviderRelease {
  std::string host, ns, type, version;
  std::vector<cache::Artifact> packages;  // sorted by platform
};

struct SiteOptions {
  // The origin registry host that /.well-known/terraform.json answers for. Empty: the host of
  // the engine recorded by `deps tf` (registry.opentofu.org unless it was terraform).
  std::string primary_host;
  // The mirror's own URL for the catalogue's snippets (--public-url). Empty: mirror serve
  // takes it from each request's Host header; an export leaves it to the page's script.
  std::string public_url;
};

// The image rows of a store, by where the table serves them (cache/kinds.hpp Served), each list
// in index order.
struct ImageRows {
  std::vector<cache::Artifact> indexes, manifests, attachments, blobs;
};

class MirrorSite {
 public:
  [[nodiscard]] static MirrorSite build(const cache::Store& store, const SiteOptions& options = {});

  const SiteResource* find(std::string_view path) const;
  const std::map<std::string, SiteResource>& resources() const { return resources_; }
  const std::vector<PublishedProviderRelease>& provider_releases() const { return provider_releases_; }
  const std::vector<std::shared_ptr<const ModulePackage>>& module_packages() const { return module_packages_; }
  const std::vector<PublishedImage>& images() const { return images_; }
  // Index rows left out, each with the reason (unsafe names, missing objects, …).
  const std::vector<std::string>& skipped() const { return skipped_; }
  const std::string& primary_host() const { return primary_host_; }
  const std::shared_ptr<const Catalogue>& catalogue() const { return catalogue_; }
  // The git repositories of the store's git snapshots, served at /git/ (never null).
  const std::shared_ptr<GitRepositories>& git() const { return git_; }
  // What /healthz says of the store the site was built from (docs/operations.md "Replicas"):
  // its Store::content_generation in the same snapshot, and the time ("2026-…Z") of its newest
  // successful bundle import, "" when it has none.
  const std::string& generation() const { return generation_; }
  const std::string& last_import() const { return last_import_; }

 private:
  std::map<std::string, SiteResource> resources_;
  std::vector<PublishedProviderRelease> provider_releases_;
  std::vector<std::shared_ptr<const ModulePackage>> module_packages_;
  std::vector<PublishedImage> images_;
  std::vector<std::string> skipped_;

  friend void add_image_resources(const cache::Store& store, ImageRows rows, MirrorSite& site);
  std::string primary_host_;
  std::shared_ptr<const Catalogue> catalogue_;
  std::shared_ptr<GitRepositories> git_;
  std::string generation_;
  std::string last_import_;
};

// The /healthz document of a site: {"status": "ok", "generation": …, "last_import": … or null}.
[[nodiscard]] std::string health_document(const MirrorSite& site);

// A name that may appear as one path segment of the site: non-empty, at most 255 bytes,
// not "." or "..", only [A-Za-z0-9._+~@=,-].
bool is_safe_segment(std::string_view segment);

// The /v2/ paths of the store's images (mirror/serve_images.cpp): part of MirrorSite::build.
void add_image_resources(const cache::Store& store, ImageRows rows, MirrorSite& site);

using ByteSink = std::function<void(const char* data, std::size_t size)>;

// The deterministic gzip'd tar of a module package (fixed mtime, uid/gid 0, no owner
// names, no gzip timestamp, entries sorted), written through `sink` as it is produced.
void write_module_tar_gz(const ModulePackage& package, const ByteSink& sink);
// The same package as a zip (OpenTofu's OCI module packages are archive/zip). Fixed mtimes.
void write_module_zip(const ModulePackage& package, const ByteSink& sink);

}  // namespace podplane::mirror
