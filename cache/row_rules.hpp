#pragma once
// The rules an index row must meet so that the views can lay it out (docs/store.md "Row
// rules"): the one owner of them. The views skip and report a row that breaks them (so one bad
// row never stops the rest), the store refuses such a row before its transaction commits, and
// `bundle verify`/`bundle import` apply them to every manifest row before reading an object
// (cache/kinds.hpp check_artifact_layout: every row's rules, then its kind's).
// Checks throw podplane::Error "<the row>: <what is wrong>"; they are pure and thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/rows.hpp"

namespace podplane::cache {

// The first path segment below tf/modules/ that only the stack's module package may use
// (tf/modules/nstance/<version>/, tf/modules/nstance/current-version).
inline constexpr std::string_view kStackModuleDir = "nstance";

// Why `name` is not one plain path segment (empty, "." or "..", a '/', '\' or control
// character, longer than 255 bytes), or nullopt when it is one.
std::optional<std::string> segment_problem(std::string_view name);
// The same for a '/'-separated relative path made of plain segments.
std::optional<std::string> relative_path_problem(std::string_view path);

// A provider address as the lock file needs it: HOST/NAMESPACE/TYPE, normalised.
std::optional<std::string> provider_address_problem(std::string_view address);

// Container images (docs/images.md): an image address is <registry host[:port]>/<repository>
// with the repository in the OCI distribution grammar (lower case, '/'-separated components);
// a tag is [A-Za-z0-9_][A-Za-z0-9._-]{0,127}; a digest here is always "sha256:<64 hex>".
std::optional<std::string> image_address_problem(std::string_view address);
std::optional<std::string> image_tag_problem(std::string_view tag);
std::optional<std::string> image_digest_problem(std::string_view digest);
// The tags cosign attaches things to the image manifest or index `digest` ("sha256:<hex>") at,
// in the image's own repository: sha256-<hex>.sig (its signature, the one podplane verifies),
// .att (attestations, `cosign attest`) and .sbom (`cosign attach sbom`). The suffix is what
// tells an attachment's kind; none but the signature is verified.
inline constexpr std::string_view kCosignSignatureSuffix = ".sig";
inline constexpr std::string_view kCosignAttestationSuffix = ".att";
inline constexpr std::string_view kCosignSbomSuffix = ".sbom";
std::string cosign_attachment_tag(std::string_view digest, std::string_view suffix);
// sha256-<hex>.sig.
std::string image_signature_tag(std::string_view digest);
// The digest ("sha256:<hex>") an attachment tag (sha256-<hex> and one of the suffixes above)
// belongs to, or nullopt when `tag` is not one.
std::optional<std::string> image_attachment_tag(std::string_view tag);
// An image row (index, manifest, blob or attachment) of the object whose OCI digest is
// `digest` ("sha256:<hex>"): filename and upstream digest are that digest, as the rules above
// demand, and trust is the digest check.
Artifact image_row(ArtifactKind kind, const std::string& address, const std::string& version, const std::string& platform,
                   const std::string& digest, std::int64_t size, const std::string& upstream_url);
// os_arch or os_arch_variant, lower-case letters and digits (linux_amd64, linux_arm_v7).
std::optional<std::string> image_platform_problem(std::string_view platform);

// The file name a vmconfig artifact's view gets: the last segment of its upstream URL's path
// (Podplane's layout), or its filename when it has no URL.
std::string vmconfig_view_name(const Artifact& artifact);
// The file name a provider package row must have: terraform-provider-<type>_<version>_<os>_<arch>.zip
// (lockfile::provider_package_filename, the one spelling of it, of the row's type, version, platform).
std::string provider_package_name(const Artifact& artifact);

// "provider_package registry.opentofu.org/hashicorp/aws 6.2.0 linux_amd64 (<filename>)".
std::string describe(const Artifact& artifact);
// "module registry.opentofu.org/nstance-dev/nstance/aws 2.0.1".
std::string describe(const ModuleTree& tree);

// Whether row version `a` comes before `b` in version order (lockfile/version.hpp); false when
// either is not a version (a git ref, "unversioned"): such rows have no order to go back in.
[[nodiscard]] bool version_precedes(std::string_view a, std::string_view b);

// The rules of every artifact row (an address, a version, a plain file name, no control
// characters, a sha256 digest, a well-formed upstream digest), and plugin protocols only where
// `protocols_allowed` (the table says which kinds: cache/kinds.hpp, whose check_artifact_layout
// calls this and then the kind's own check below). Each throws "<row>: <what is wrong>".
void check_common_layout(const std::string& row, const Artifact& artifact, bool protocols_allowed);
// One check per layout of a kind (cache/kinds.cpp points each kind's row at its own).
void check_provider_package_layout(const std::string& row, const Artifact& artifact);
void check_provider_document_layout(const std::string& row, const Artifact& artifact);  // SHA256SUMS, signature, keys
void check_vmconfig_manifest_layout(const std::string& row, const Artifact& artifact);
void check_vmconfig_artifact_layout(const std::string& row, const Artifact& artifact);
void check_boot_file_layout(const std::string& row, const Artifact& artifact);
void check_image_index_layout(const std::string& row, const Artifact& artifact);
void check_image_manifest_layout(const std::string& row, const Artifact& artifact);
void check_image_blob_layout(const std::string& row, const Artifact& artifact);
void check_image_attachment_layout(const std::string& row, const Artifact& artifact);
void check_seed_manifest_layout(const std::string& row, const Artifact& artifact);
void check_seed_snapshot_layout(const std::string& row, const Artifact& artifact);
void check_engine_archive_layout(const std::string& row, const Artifact& artifact);
void check_engine_shasums_layout(const std::string& row, const Artifact& artifact);
void check_engine_signature_layout(const std::string& row, const Artifact& artifact);
void check_podplane_archive_layout(const std::string& row, const Artifact& artifact);
void check_podplane_shasums_layout(const std::string& row, const Artifact& artifact);
// A git snapshot's pack or refs document: a module tree's address and version, "<commit><suffix>".
void check_git_pack_layout(const std::string& row, const Artifact& artifact);
void check_git_refs_layout(const std::string& row, const Artifact& artifact);
void check_podplane_signature_layout(const std::string& row, const Artifact& artifact);
// Also refuses a tree that has both a file `x` and files below `x/`.
void check_module_tree_layout(const ModuleTree& tree);
void check_selected_provider(const TfSelection::Provider& provider);
void check_selection_layout(const TfSelection& selection);

}  // namespace podplane::cache
