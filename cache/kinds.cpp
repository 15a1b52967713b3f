#include "cache/kinds.hpp"

#include <array>
#include <cstddef>

#include "base/error.hpp"
#include "cache/row_rules.hpp"
#include "lockfile/hash.hpp"

namespace podplane::cache {

namespace {

// Podplane's own release rows (cache/podplane_releases.hpp kPodplaneReleaseAddress, which
// speaks lockfile/ and so stays out of this header's way).
constexpr std::string_view kPodplane = "podplane";

// Designated initializers, every field named: a field a row leaves out stays `unset`, which the
// checks below refuse (and -Wmissing-field-initializers, an error in CI, names first).
constexpr KindInfo kKinds[] = {
    // ---- providers (deps tf) ----------------------------------------------------------------
    {.kind = ArtifactKind::provider_package, .address = "", .name = "provider_package", .since_schema = 1,
     .check_layout = check_provider_package_layout, .protocols = Protocols::registry_listed,  // 005 added the column
     .content = ContentCheck::provider_zip, .fetch_check = FetchCheck::registry_signed_sums,
     // bundle import does not recheck it (yet): it would refuse bundles import takes today (issue 43).
     .recheck = Recheck::provider_signed_sums, .refetch = Refetch::deps_tf_provider_package,
     .family = ItemFamily::provider, .prune_role = PruneRole::item,
     .bundle_rank = 3, .bundle_platforms = BundlePlatforms::selected_platforms,
     .view = View::provider_zip, .served = Served::provider_package, .pushed = Pushed::provider_oci_mirror,
     .listed = Listed::providers, .signer = Signer::openpgp_keys_document,
     .reported = Reported::application, .report_title = "Provider packages"},
    {.kind = ArtifactKind::provider_shasums, .address = "", .name = "provider_shasums", .since_schema = 1,
     .check_layout = check_provider_document_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::with_signed_release, .recheck = Recheck::none, .refetch = Refetch::deps_tf_provider_document,
     .family = ItemFamily::provider, .prune_role = PruneRole::item,
     .bundle_rank = 1, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::provider_shasums, .pushed = Pushed::none,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Provider SHA256SUMS documents"},
    {.kind = ArtifactKind::provider_signature, .address = "", .name = "provider_signature", .since_schema = 1,
     .check_layout = check_provider_document_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::with_signed_release, .recheck = Recheck::none, .refetch = Refetch::deps_tf_provider_document,
     .family = ItemFamily::provider, .prune_role = PruneRole::item,
     .bundle_rank = 2, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::provider_signature, .pushed = Pushed::none,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Provider signatures"},
    {.kind = ArtifactKind::provider_keys, .address = "", .name = "provider_keys", .since_schema = 1,
     .check_layout = check_provider_document_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::with_signed_release, .recheck = Recheck::none, .refetch = Refetch::deps_tf_provider_document,
     .family = ItemFamily::provider, .prune_role = PruneRole::item,
     .bundle_rank = 0, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::provider_keys_inline, .pushed = Pushed::none,
     .listed = Listed::signer_names, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Provider signing keys"},
    // ---- vmconfig (deps download) -----------------------------------------------------------
    {.kind = ArtifactKind::vmconfig_manifest, .address = "", .name = "vmconfig_manifest", .since_schema = 1,
     .check_layout = check_vmconfig_manifest_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::format_only, .recheck = Recheck::none, .refetch = Refetch::deps_download_vmconfig,
     .family = ItemFamily::vmconfig_manifest, .prune_role = PruneRole::lists_needs,
     .bundle_rank = 4, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::vmconfig_manifest_newest, .served = Served::vmconfig_manifest, .pushed = Pushed::none,
     .listed = Listed::vmconfig_manifests, .signer = Signer::none,
     .reported = Reported::file, .report_title = "vmconfig manifests"},
    {.kind = ArtifactKind::vmconfig_artifact, .address = "", .name = "vmconfig_artifact", .since_schema = 1,
     .check_layout = check_vmconfig_artifact_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::manifest_digest, .recheck = Recheck::none, .refetch = Refetch::deps_download_vmconfig,
     .family = ItemFamily::vmconfig_artifact, .prune_role = PruneRole::item,
     .bundle_rank = 5, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::vmconfig_artifact, .served = Served::vmconfig_file, .pushed = Pushed::none,
     .listed = Listed::vmconfig_artifacts, .signer = Signer::none,
     .reported = Reported::file, .report_title = "vmconfig artifacts"},
    // No migration names boot files: they came with schema 5, and 006 is the first marker after
    // them (every store a current podplane wrote them into is at 6 or later).
    {.kind = ArtifactKind::vmconfig_boot_file, .address = "", .name = "vmconfig_boot_file", .since_schema = 6,
     .check_layout = check_boot_file_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::os_boot_digest, .recheck = Recheck::none, .refetch = Refetch::deps_download_vmconfig,
     .family = ItemFamily::vmconfig_boot_file, .prune_role = PruneRole::item,
     .bundle_rank = 5,  // beside the image it came out of
     .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::vmconfig_boot_file, .served = Served::vmconfig_file, .pushed = Pushed::none,
     .listed = Listed::vmconfig_boot_files, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Boot files read out of os images"},
    // ---- container images (deps images; deps download for the pinned ones) -----------------
    // Bundled top down, so that a volume holding an image's blobs usually holds its manifests.
    {.kind = ArtifactKind::image_index, .address = "", .name = "image_index", .since_schema = 4,
     .check_layout = check_image_index_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::oci_digest, .recheck = Recheck::cosign_under_policy, .refetch = Refetch::deps_images,
     .family = ItemFamily::image, .prune_role = PruneRole::image_top,
     .bundle_rank = 8, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::oci_index, .pushed = Pushed::image_as_stored,
     .listed = Listed::image_indexes, .signer = Signer::cosign_key,
     .reported = Reported::container, .report_title = "Image indexes"},
    {.kind = ArtifactKind::image_manifest, .address = "", .name = "image_manifest", .since_schema = 4,
     .check_layout = check_image_manifest_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::oci_digest, .recheck = Recheck::cosign_under_policy, .refetch = Refetch::deps_images,
     .family = ItemFamily::image, .prune_role = PruneRole::image_manifest,
     .bundle_rank = 9, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::oci_manifest, .pushed = Pushed::image_as_stored,
     .listed = Listed::image_manifests, .signer = Signer::cosign_key,
     .reported = Reported::container, .report_title = "Image manifests"},
    {.kind = ArtifactKind::image_blob, .address = "", .name = "image_blob", .since_schema = 4,
     .check_layout = check_image_blob_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::oci_digest, .recheck = Recheck::none, .refetch = Refetch::deps_images,
     .family = ItemFamily::image_blobs, .prune_role = PruneRole::item,
     .bundle_rank = 11, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::oci_blob, .pushed = Pushed::image_as_stored,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Image configs and layers"},
    {.kind = ArtifactKind::image_attachment, .address = "", .name = "image_attachment", .since_schema = 6,
     .check_layout = check_image_attachment_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::cosign_signature, .recheck = Recheck::none, .refetch = Refetch::deps_images,
     .family = ItemFamily::image_signature, .prune_role = PruneRole::signs_image,
     .bundle_rank = 10,  // a signature, then its payloads
     .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::oci_attachment, .pushed = Pushed::image_as_stored,
     .listed = Listed::image_attachments, .signer = Signer::cosign_attachment,
     .reported = Reported::file, .report_title = "Image signatures and attachments"},
    // ---- seeds (deps download) --------------------------------------------------------------
    {.kind = ArtifactKind::seed_manifest, .address = "", .name = "seed_manifest", .since_schema = 4,
     .check_layout = check_seed_manifest_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::format_only, .recheck = Recheck::none, .refetch = Refetch::deps_download_seeds,
     .family = ItemFamily::seeds, .prune_role = PruneRole::item,
     .bundle_rank = 6, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::seeds_manifest_newest, .served = Served::seeds_manifest, .pushed = Pushed::none,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Seed manifests"},
    {.kind = ArtifactKind::seed_snapshot, .address = "", .name = "seed_snapshot", .since_schema = 4,
     .check_layout = check_seed_snapshot_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::seeds_digest, .recheck = Recheck::none, .refetch = Refetch::deps_download_seeds,
     .family = ItemFamily::seed_snapshot, .prune_role = PruneRole::item,
     .bundle_rank = 7, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::seed_snapshot, .served = Served::seed_snapshot, .pushed = Pushed::none,
     .listed = Listed::seeds, .signer = Signer::none,
     .reported = Reported::data, .report_title = "Seed snapshots"},
    // ---- engine releases (deps tools) -------------------------------------------------------
    // A release's signed SHA256SUMS is bundled before the zips it vouches for.
    {.kind = ArtifactKind::tool_archive, .address = "", .name = "tool_archive", .since_schema = 7,
     .check_layout = check_engine_archive_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::pinned_key_signed_sums, .recheck = Recheck::engine_signed_sums,
     .refetch = Refetch::deps_tools_engine, .family = ItemFamily::tool, .prune_role = PruneRole::item,
     .bundle_rank = 14, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::tool_release_file, .pushed = Pushed::none,
     .listed = Listed::engines, .signer = Signer::pinned_release_key,
     .reported = Reported::application, .report_title = "Engine releases (tofu, terraform)"},
    {.kind = ArtifactKind::tool_shasums, .address = "", .name = "tool_shasums", .since_schema = 7,
     .check_layout = check_engine_shasums_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::with_signed_release, .recheck = Recheck::none, .refetch = Refetch::deps_tools_engine,
     .family = ItemFamily::tool, .prune_role = PruneRole::item,
     .bundle_rank = 12, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::tool_release_file, .pushed = Pushed::none,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Engine SHA256SUMS documents"},
    {.kind = ArtifactKind::tool_signature, .address = "", .name = "tool_signature", .since_schema = 7,
     .check_layout = check_engine_signature_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::with_signed_release, .recheck = Recheck::none, .refetch = Refetch::deps_tools_engine,
     .family = ItemFamily::tool, .prune_role = PruneRole::item,
     .bundle_rank = 13, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::tool_release_file, .pushed = Pushed::none,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Engine signatures"},
    // ---- git module sources (deps tf --stack): the objects beside the module tree ----------
    // Rows of the module item of the same address and version: kept, pruned and bundled with
    // the tree; served as one repository per address at /git/, written out by mirror export.
    {.kind = ArtifactKind::git_pack, .address = "", .name = "git_pack", .since_schema = 9,
     .check_layout = check_git_pack_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::git_object_ids, .recheck = Recheck::none, .refetch = Refetch::deps_tf_module,
     .family = ItemFamily::module, .prune_role = PruneRole::item,
     .bundle_rank = 16, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::git_repository, .pushed = Pushed::none,
     .listed = Listed::git_repositories, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Git packs of module sources"},
    {.kind = ArtifactKind::git_refs, .address = "", .name = "git_refs", .since_schema = 9,
     .check_layout = check_git_refs_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::git_object_ids, .recheck = Recheck::none, .refetch = Refetch::deps_tf_module,
     .family = ItemFamily::module, .prune_role = PruneRole::item,
     .bundle_rank = 15, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::git_repository, .pushed = Pushed::none,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Git refs of module sources"},
    // ---- address variants: podplane's own releases (deps tools --podplane-release) ----------
    // tool_archive/tool_shasums rows of the address "podplane": stored names never change
    // (SQLite, bundle manifests, inventory row ids), so a variant, not a kind of its own.
    {.kind = ArtifactKind::tool_archive, .address = kPodplane, .name = "tool_archive", .since_schema = 8,
     .check_layout = check_podplane_archive_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::store_written_sums, .recheck = Recheck::podplane_sums,
     .refetch = Refetch::deps_tools_podplane, .family = ItemFamily::tool, .prune_role = PruneRole::item,
     .bundle_rank = 14, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::tool_release_file, .pushed = Pushed::none,
     .listed = Listed::podplane_releases, .signer = Signer::bundle_signature,
     .reported = Reported::application, .report_title = "Podplane releases"},
    {.kind = ArtifactKind::tool_shasums, .address = kPodplane, .name = "tool_shasums", .since_schema = 8,
     .check_layout = check_podplane_shasums_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::store_written_sums, .recheck = Recheck::none, .refetch = Refetch::deps_tools_podplane,
     .family = ItemFamily::tool, .prune_role = PruneRole::item,
     .bundle_rank = 12, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::tool_release_file, .pushed = Pushed::none,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Podplane SHA256SUMS documents"},
    // The site's release key's signature of the SHA256SUMS (deps tools --sign): served beside it,
    // checked by `tools install podplane --from` against its --trust keys; across the air gap
    // the bundle's signature covers it like every row.
    {.kind = ArtifactKind::tool_signature, .address = kPodplane, .name = "tool_signature", .since_schema = 8,
     .check_layout = check_podplane_signature_layout, .protocols = Protocols::none, .content = ContentCheck::object,
     .fetch_check = FetchCheck::release_key_signature, .recheck = Recheck::none, .refetch = Refetch::deps_tools_podplane,
     .family = ItemFamily::tool, .prune_role = PruneRole::item,
     .bundle_rank = 13, .bundle_platforms = BundlePlatforms::every_platform,
     .view = View::none, .served = Served::tool_release_file, .pushed = Pushed::none,
     .listed = Listed::not_listed, .signer = Signer::none,
     .reported = Reported::file, .report_title = "Podplane release signatures"},
};

constexpr std::size_t kKindCount = static_cast<std::size_t>(ArtifactKind::count_);

// Every kind has exactly one row of address "", in enum order (kind_info(kind) indexes by it):
// a kind added to rows.hpp without its row here fails the next assertion.
constexpr bool every_kind_in_enum_order() {
  for (std::size_t i = 0; i < kKindCount; ++i)
    if (!kKinds[i].kind || *kKinds[i].kind != static_cast<ArtifactKind>(i) || !kKinds[i].address.empty()) return false;
  for (std::size_t i = kKindCount; i < std::size(kKinds); ++i)
    if (!kKinds[i].kind || kKinds[i].address.empty()) return false;
  return true;
}
static_assert(std::size(kKinds) >= kKindCount, "a kind of rows.hpp has no row in the table");
static_assert(every_kind_in_enum_order(), "the table lists each kind once, in enum order, then its address variants");

// No stage left undecided. The tests (tests/cache/kinds_test.cpp) say the same by name, and
// they alone check check_layout: the sanitizers' -fno-delete-null-pointer-checks makes "a
// function's address is not null" no constant expression, so it cannot be asserted here.
constexpr bool decided(const KindInfo& k, bool artifact_row) {
  return !k.name.empty() && k.since_schema >= 1 &&
         k.protocols != Protocols::unset && k.content != ContentCheck::unset && k.fetch_check != FetchCheck::unset &&
         k.recheck != Recheck::unset && k.refetch != Refetch::unset && k.family.has_value() &&
         k.prune_role != PruneRole::unset && (!artifact_row || k.bundle_rank >= 0) &&
         k.bundle_platforms != BundlePlatforms::unset && k.view != View::unset && k.served != Served::unset &&
         k.pushed != Pushed::unset && k.listed != Listed::unset && k.signer != Signer::unset &&
         k.reported != Reported::unset && !k.report_title.empty();
}
constexpr bool every_row_decided() {
  for (const auto& row : kKinds)
    if (!decided(row, true)) return false;
  return decided(kModuleTrees, false);
}
static_assert(every_row_decided(), "a row of the table leaves a stage unset");

// A variant shares its kind's stored name and family: it is the same kind of row.
constexpr bool variants_share_their_kind() {
  for (std::size_t i = kKindCount; i < std::size(kKinds); ++i) {
    const auto& base = kKinds[static_cast<std::size_t>(*kKinds[i].kind)];
    if (kKinds[i].name != base.name || kKinds[i].family != base.family) return false;
  }
  return true;
}
static_assert(variants_share_their_kind());

struct FamilyRow {
  ItemFamily family;
  std::string_view name;  // `deps du --json` and catalogue.json keys
  bool own;
};
constexpr FamilyRow kFamilies[] = {
    {ItemFamily::provider, "provider", true},
    {ItemFamily::module, "module", true},
    {ItemFamily::vmconfig_manifest, "vmconfig_manifest", true},
    {ItemFamily::image, "image", true},
    {ItemFamily::seeds, "seeds", true},
    {ItemFamily::seed_snapshot, "seed_snapshot", true},
    {ItemFamily::vmconfig_artifact, "vmconfig_artifact", false},
    {ItemFamily::vmconfig_boot_file, "vmconfig_boot_file", false},
    {ItemFamily::image_blobs, "image_blobs", false},
    {ItemFamily::image_signature, "image_signature", false},
    {ItemFamily::tool, "tool", true},
};
constexpr bool families_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kFamilies); ++i)
    if (kFamilies[i].family != static_cast<ItemFamily>(i)) return false;
  return std::size(kFamilies) == static_cast<std::size_t>(ItemFamily::tool) + 1;
}
static_assert(families_in_enum_order(), "one row per item family, in enum order");

}  // namespace

std::span<const KindInfo> kinds() { return kKinds; }

const KindInfo& kind_info(ArtifactKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  if (index >= kKindCount) throw Error("no artifact kind number " + std::to_string(index));
  return kKinds[index];
}

const KindInfo& kind_info(ArtifactKind kind, std::string_view address) {
  if (!address.empty()) {
    for (std::size_t i = kKindCount; i < std::size(kKinds); ++i)
      if (*kKinds[i].kind == kind && kKinds[i].address == address) return kKinds[i];
  }
  return kind_info(kind);
}

std::string_view to_string(ArtifactKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return index < kKindCount ? kKinds[index].name : std::string_view("unknown");
}

ArtifactKind parse_artifact_kind(std::string_view text) {
  std::string names;
  for (std::size_t i = 0; i < kKindCount; ++i) {
    if (kKinds[i].name == text) return *kKinds[i].kind;
    names += (i == 0 ? "" : i + 1 == kKindCount ? " or " : ", ") + std::string(kKinds[i].name);
  }
  throw Error("unknown artifact kind '" + std::string(text) + "' (expected " + names + ")");
}

std::string_view to_string(ItemFamily family) {
  const auto index = static_cast<std::size_t>(family);
  return index < std::size(kFamilies) ? kFamilies[index].name : std::string_view("unknown");
}

bool own_family(ItemFamily family) {
  const auto index = static_cast<std::size_t>(family);
  return index < std::size(kFamilies) && kFamilies[index].own;
}

std::string zh_of(const Artifact& artifact) {
  if (artifact.zh.empty() && kind_info(artifact).content == ContentCheck::provider_zip) return lockfile::zh_hash(artifact.digest);
  return artifact.zh;
}

void check_artifact_layout(const Artifact& artifact) {
  const std::string row = describe(artifact);
  const KindInfo& info = kind_info(artifact);
  check_common_layout(row, artifact, info.protocols == Protocols::registry_listed);
  info.check_layout(row, artifact);
}

}  // namespace podplane::cache
