#pragma once
// One table of what the store holds (issue 43): a row per kind of artifact row, a row per
// address variant of a kind (podplane's own releases are tool_archive/tool_shasums rows of the
// address "podplane"), and one for module trees (kModuleTrees), each giving the decision of
// every stage that handles it: how it was verified on fetch, checked again at import and by
// deps verify, bundled, laid out in the views, served, pushed, pruned and listed in the
// catalogue. Stages ask the table; none but its behaviour switches (one per enum, beside the
// stage's code) names a kind. Every enum starts at `unset`, and kinds.cpp refuses to compile a
// row that leaves a stage unset or a kind without a row. Pure data, immutable: thread-safe.
// Adding a kind: docs/architecture.md "Adding an artifact kind".
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cache/rows.hpp"

namespace podplane::cache {

// What `deps prune` keeps or drops whole and `deps du` sums; the names are `deps du --json` and
// catalogue.json keys (cache/prune.hpp says what each holds).
enum class ItemFamily {
  provider,
  module,
  vmconfig_manifest,
  image,
  seeds,
  seed_snapshot,
  vmconfig_artifact,
  vmconfig_boot_file,
  image_blobs,
  image_signature,
  tool,
};
std::string_view to_string(ItemFamily family);
// Whether a family's items are items of their own (the newest N of a name, pins), or there only
// because another item needs them (kept exactly when one does).
[[nodiscard]] bool own_family(ItemFamily family);

// What vouched for the bytes when they were fetched (fetch/ does it; the table says it).
enum class FetchCheck : std::uint8_t {
  unset,
  registry_signed_sums,    // SHA256SUMS signed by a registry key lists it; the registry's shasum agrees (deps tf)
  with_signed_release,     // a document of that check: SHA256SUMS, its signature, the keys
  manifest_digest,         // the sha256/sha512 its vmconfig manifest gives (deps download)
  os_boot_digest,          // read out of the os image, against the digest os.boot gives
  oci_digest,              // its OCI digest (deps images); an image's cosign signature under --cosign-key
  cosign_signature,        // a .sig verified with --cosign-key (.att, .sbom and referrers: their digest only)
  seeds_digest,            // the sha512 seeds.json gives
  pinned_key_signed_sums,  // SHA256SUMS signed by the project's pinned release key lists it (deps tools)
  store_written_sums,      // podplane's own: listed in the SHA256SUMS the store writes for its release
  release_key_signature,   // podplane's own: the site's release key signed that SHA256SUMS (deps tools --sign)
  format_only,             // its format, nothing upstream signs (trust "unverified")
  tree_h1,                 // module trees: the h1 of the tree
  git_object_ids,          // a git clone: git checks every object against its id; the refs document names the commit
  refused,                 // no such row is ever stored: the row rules refuse it
};

// What `deps verify` and `bundle import` check again, from the store alone (cache/recheck.hpp).
enum class Recheck : std::uint8_t {
  unset,
  none,                  // its content check is all (size, digests)
  provider_signed_sums,  // the stored SHA256SUMS, signature and registry keys (deps verify)
  engine_signed_sums,    // the stored SHA256SUMS against the pinned release key
  podplane_sums,         // the SHA256SUMS the store wrote for the release
  cosign_under_policy,   // the stored cosign signature, where --cosign-key/--cosign-policy name keys (import)
};

// What `deps verify` compares between a row and its object (artifact_content_problems).
enum class ContentCheck : std::uint8_t {
  unset,
  object,        // its size, and the upstream digest when the row names one
  provider_zip,  // also zh (its digest: zh_of) and the h1 of the zip
  module_tree,   // module trees: every file's object and size, the h1 over the files
};

// Whether the row may carry the plugin protocols the registry listed (Artifact::protocols).
enum class Protocols : std::uint8_t { unset, none, registry_listed };

// The online command that takes a row of this kind again (`deps verify` messages).
enum class Refetch : std::uint8_t {
  unset,
  deps_tf_provider_package,   // deps tf --engine E --platform P [--stack …]
  deps_tf_provider_document,  // deps tf --engine E [--stack …]
  deps_tf_module,             // deps tf
  deps_download_vmconfig,     // deps download --providers all [--arch A]
  deps_download_seeds,        // deps download
  deps_images,                // deps images -f … (or deps download --arch A)
  deps_tools_engine,          // deps tools --engine E --version V [--platform P]
  deps_tools_podplane,        // deps tools --podplane-release <dir>
};

// What prune reads of a row beyond the item it belongs to (cache/prune.cpp).
enum class PruneRole : std::uint8_t {
  unset,
  item,            // nothing more
  lists_needs,     // a vmconfig manifest: what it lists is read from its object
  image_top,       // an image index: found by its digest
  image_manifest,  // found by its digest, and its blobs are the version of an image_blobs item
  signs_image,     // a cosign signature or referrer: follows the image its tag or version names
};

// Which of a bundle's rows `bundle create --platform` leaves out.
enum class BundlePlatforms : std::uint8_t {
  unset,
  every_platform,      // the row travels whatever --platform says
  selected_platforms,  // only rows of a selected platform travel (provider packages)
};

// Where the views lay a row out (cache/views.cpp).
enum class View : std::uint8_t {
  unset,
  none,
  provider_zip,              // tf/providers/<address>/<zip>, listed in index.json and <version>.json
  vmconfig_manifest_newest,  // vmconfig/manifests/<name>.json: the newest row of each name
  vmconfig_artifact,         // vmconfig/artifacts/<name>/<version>/<basename(url)>, and below arch/<arch>/
  vmconfig_boot_file,        // vmconfig/artifacts/os-image/<version>/boot/<file>, and below arch/<arch>/
  seeds_manifest_newest,     // seeds/manifests/seeds.json: the newest row
  seed_snapshot,             // seeds/snapshots/<name>/<version>/<file>
  module_tree,               // tf/modules/… (module trees)
};

// Where `mirror serve` answers it (mirror/serve_site.cpp, serve_images.cpp). `mirror export`
// writes every site path but the /v2/ registry API, whose images go out as OCI image layouts.
enum class Served : std::uint8_t {
  unset,
  none,
  provider_package,      // network mirror zip, registry download
  provider_shasums,      // beside its release's zips, when signature and keys are stored too
  provider_signature,    // beside its release's zips, when SHA256SUMS and keys are stored too
  provider_keys_inline,  // inside the registry's download answers (signing_keys)
  vmconfig_manifest,     // /vmconfig/manifests/<file>, and the newest as <name>.json twice
  vmconfig_file,         // its view paths (cache::vmconfig_artifact_paths)
  seeds_manifest,        // the newest, at /manifests/seeds.json and /seeds/manifests/seeds.json
  seed_snapshot,         // /seeds/snapshots/<name>/<version>/<file>
  tool_release_file,     // /tools/<address>/<version>/<file>
  oci_index,             // /v2/: by digest, and at its tag (where it beats a manifest)
  oci_manifest,          // /v2/: by digest, and at its tag where no index is
  oci_attachment,        // /v2/: by digest, at its tag, and in its subject's referrers
  oci_blob,              // /v2/: blobs
  module_package,        // /v1/modules/…/package.tar.gz (module trees)
  git_repository,        // /git/<host>/<path>: the repository rebuilt from its snapshots, git's smart HTTP (mirror/git_repositories.hpp)
};

// What `mirror push` makes of it (mirror/push.cpp), in the order push sends them.
enum class Pushed : std::uint8_t {
  unset,
  none,
  provider_oci_mirror,  // OpenTofu's OCI provider mirror: an index per version, a manifest per platform
  module_package,       // OpenTofu's module package image (module trees)
  image_as_stored,      // the image byte for byte under its mirror name
};

// Where the catalogue lists it (mirror/catalogue.cpp).
enum class Listed : std::uint8_t {
  unset,
  not_listed,
  providers,
  signer_names,  // not a row: its keys name who signed the providers (the Signing key column)
  modules,
  vmconfig_manifests,
  vmconfig_artifacts,
  vmconfig_boot_files,  // in the vmconfig artifacts section, after the artifacts
  image_indexes,
  image_manifests,
  image_attachments,  // .att, .sbom and referrers as rows; a .sig shows as its image's Signature
  seeds,
  engines,
  podplane_releases,
  git_repositories,  // the repositories served at /git/, each ref and commit
};

// Whose key the catalogue names for it (mirror/catalogue.cpp).
enum class Signer : std::uint8_t {
  unset,
  none,
  openpgp_keys_document,  // the newest provenance's key, with the user ids of the stored keys document
  pinned_release_key,     // the key its provenance recorded
  cosign_key,             // the keys of the cosign signature of its tag's top manifest
  cosign_attachment,      // it is such a signature: its provenance records the key
  bundle_signature,       // none of its own: it came in under a bundle's signature
};

// What the transfer report (bundle/report.hpp) makes of it: the CycloneDX component type; its
// HTML page has a section per row of the table, titled by KindInfo::report_title.
enum class Reported : std::uint8_t {
  unset,
  application,  // a program: provider plugins, engine and podplane releases
  library,      // module packages (module trees)
  container,    // an image's index or manifest
  data,         // seed snapshots
  file,         // every other file: documents, artifacts, blobs, signatures
};

// Rules a row must meet beyond every row's (cache/row_rules.hpp): throws "<row>: <what is wrong>".
using RowLayoutCheck = void (*)(const std::string& row, const Artifact& artifact);

struct KindInfo {
  std::optional<ArtifactKind> kind;  // nullopt: module trees (kModuleTrees)
  std::string_view address;          // "": every row of the kind; else the rows of that address
  std::string_view name;             // as stored (SQLite, bundles, inventory row ids, deps ls): never renamed
  int since_schema = 0;              // the migration that marks a store that may hold it

  RowLayoutCheck check_layout = nullptr;  // module trees: their own rules (check_module_tree_layout)
  Protocols protocols = Protocols::unset;
  ContentCheck content = ContentCheck::unset;

  FetchCheck fetch_check = FetchCheck::unset;
  Recheck recheck = Recheck::unset;
  Refetch refetch = Refetch::unset;

  std::optional<ItemFamily> family;  // a contract enum without `unset`: nullopt is undecided
  PruneRole prune_role = PruneRole::unset;

  int bundle_rank = -1;  // order within a release in a bundle: documents before what they vouch for
  BundlePlatforms bundle_platforms = BundlePlatforms::unset;

  View view = View::unset;
  Served served = Served::unset;
  Pushed pushed = Pushed::unset;
  Listed listed = Listed::unset;
  Signer signer = Signer::unset;

  Reported reported = Reported::unset;
  std::string_view report_title;  // the transfer report's section of its rows
};

// Every row: one per ArtifactKind in enum order, then the address variants.
[[nodiscard]] std::span<const KindInfo> kinds();
// The row of `kind` (its address-"" row).
[[nodiscard]] const KindInfo& kind_info(ArtifactKind kind);
// The variant of `kind` for `address` where the table has one, else the kind's row.
[[nodiscard]] const KindInfo& kind_info(ArtifactKind kind, std::string_view address);
[[nodiscard]] inline const KindInfo& kind_info(const Artifact& artifact) { return kind_info(artifact.kind, artifact.address); }

// Module trees: not artifact rows (module_trees and module_files), decided here all the same.
inline constexpr KindInfo kModuleTrees{
    .kind = std::nullopt,
    .address = "",
    .name = "module",
    .since_schema = 1,
    .check_layout = nullptr,
    .protocols = Protocols::none,
    .content = ContentCheck::module_tree,
    .fetch_check = FetchCheck::tree_h1,
    .recheck = Recheck::none,
    .refetch = Refetch::deps_tf_module,
    .family = ItemFamily::module,
    .prune_role = PruneRole::item,
    .bundle_rank = -1,  // they travel in the manifest's own array
    .bundle_platforms = BundlePlatforms::every_platform,
    .view = View::module_tree,
    .served = Served::module_package,
    .pushed = Pushed::module_package,
    .listed = Listed::modules,
    .signer = Signer::none,
    .reported = Reported::library,
    .report_title = "Module packages",
};

// The row's zh: where the kind's zh is the zh: hash of its object (provider zips) and the row
// has none, that hash; else the row's own (empty for every other kind).
[[nodiscard]] std::string zh_of(const Artifact& artifact);

// Every rule a row must meet: those of every row, then its kind's (KindInfo::check_layout).
// Throws podplane::Error "<the row>: <what is wrong>".
void check_artifact_layout(const Artifact& artifact);

}  // namespace podplane::cache
