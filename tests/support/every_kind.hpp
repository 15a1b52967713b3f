#pragma once
// Store rows for tests, shared by every test folder: a builder per kind (a valid row of that
// kind for an object already in the store; tests change the fields they test), and a stored
// example of every row of the table of kinds (cache/kinds.hpp) with a module tree, coherent
// enough to go through every stage: the views, verify and its rechecks, bundles, prune, mirror
// serve, export and push, the catalogue. The examples are built by a switch over ArtifactKind:
// a kind added without its example does not compile.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cache/kinds.hpp"
#include "cache/store.hpp"

namespace podplane::test {

inline constexpr const char* kNullProvider = "registry.opentofu.org/hashicorp/null";

// ---- Row builders: each a valid row of its kind naming object `digest` (add the object first;
// the store fills in the size). ----

// terraform-provider-<type>_<version>_<platform>.zip, trust signed_upstream.
cache::Artifact provider_package_row(const std::string& digest, const std::string& platform = "linux_amd64",
                                     const std::string& address = kNullProvider, const std::string& version = "3.2.4");
// A release's SHA256SUMS, its .sig or its signing keys (kind says which), trust signed_upstream.
cache::Artifact provider_document_row(cache::ArtifactKind kind, const std::string& digest,
                                      const std::string& address = kNullProvider, const std::string& version = "3.2.4");
// A vmconfig manifest `name` (vmconfig_knc_debian-13_amd64) at vmconfig.version `version`.
cache::Artifact vmconfig_manifest_row(const std::string& digest, const std::string& name, const std::string& version,
                                      const std::string& platform = "");
// A file a manifest lists, fetched from `url` (its view name is the URL's last segment),
// checked against its sha256 (the row's upstream digest), trust checksum.
cache::Artifact vmconfig_artifact_row(const std::string& digest, const std::string& name, const std::string& version,
                                      const std::string& url, const std::string& platform = "");
// A kernel or initrd read out of the os image `image_version`.
cache::Artifact boot_file_row(const std::string& digest, const std::string& image_version, const std::string& filename,
                              const std::string& platform = "");
// seeds.json at seeds.version `version`, trust unverified.
cache::Artifact seed_manifest_row(const std::string& digest, const std::string& version);
// A seed snapshot, checked against `sha512` (hex), trust checksum.
cache::Artifact seed_snapshot_row(const std::string& digest, const std::string& name, const std::string& version,
                                  const std::string& filename, const std::string& sha512);
// An engine release file of `engine` (tool_archive: the platform's zip; tool_shasums; tool_signature).
cache::Artifact engine_release_row(cache::ArtifactKind kind, const std::string& digest, const std::string& engine = "terraform",
                                   const std::string& version = "1.9.8", const std::string& platform = "linux_amd64");
// A podplane release file (tool_archive of the address "podplane", named `filename`), its SHA256SUMS
// (tool_shasums) or the release key's signature of it (tool_signature).
cache::Artifact podplane_release_row(cache::ArtifactKind kind, const std::string& digest, const std::string& version,
                                     const std::string& filename = "", const std::string& platform = "");
// Images: cache::image_row (cache/row_rules.hpp).

// ---- Every kind ----

struct EveryKind {
  // One stored row per row of the table that can be stored, by the table row's index in
  // cache::kinds().
  std::map<std::size_t, cache::Artifact> rows;
  cache::ModuleTree module;
  // The armored key that signed the provider and engine releases: a test that rechecks engine
  // releases points PODPLANE_TOOLS_KEYRING_FOR_TESTS at this file.
  std::filesystem::path keyring;

  // The stored example of `kind` (a row of cache::kinds()); throws when it has none.
  [[nodiscard]] const cache::Artifact& of(const cache::KindInfo& kind) const;
  // Whether the table row `kind` has a stored example (the refused ones have none).
  [[nodiscard]] bool has(const cache::KindInfo& kind) const;
};

// The index in cache::kinds() of `kind`.
[[nodiscard]] std::size_t kind_index(const cache::KindInfo& kind);

// Adds one example of every storable row of the table, and a module tree, to `store`, with the
// provenance a fetch records (a signed provider release and engine release, a cosign signature
// of the image); files it needs outside the store (the keyring) go to `work`. Needs gpg and zip.
EveryKind add_every_kind(cache::Store& store, const std::filesystem::path& work);

}  // namespace podplane::test
