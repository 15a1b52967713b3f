#pragma once
// The value types of the store index's rows (docs/store.md): what cache::Store reads and
// writes, what the row rules (cache/row_rules.hpp) check and what the views lay out. Plain
// data, below both the store and its rules.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podplane::cache {

enum class ArtifactKind {
  provider_package,    // terraform-provider-<type>_<ver>_<os>_<arch>.zip
  provider_shasums,    // the upstream <name>_<ver>_SHA256SUMS document
  provider_signature,  // its detached binary OpenPGP signature
  provider_keys,       // the registry's signing_keys JSON (armored public keys)
  vmconfig_manifest,   // a vmconfig_<kind>_debian-13_<arch>.json as fetched
  vmconfig_artifact,   // a file a vmconfig manifest lists
  // A kernel or initrd read out of the os image (os.boot): address "os-image", version = the
  // image's version, filename = the file's name in the image, upstream_digest = os.boot's digest.
  vmconfig_boot_file,
  // Container images (docs/images.md): address = <upstream registry>/<repository>, filename =
  // the OCI digest "sha256:<hex>" of the object (always the object's own digest).
  image_index,         // an image index / manifest list; version = the tag it was fetched under
  image_manifest,      // one platform's image manifest; version = tag (or index digest), platform = os_arch[_variant]
  image_blob,          // a config or layer; version = the digest of the image manifest that lists it
  // A manifest that travels with an image and is served beside it at its tag: a cosign
  // signature at sha256-<hex of the image's top digest>.sig (docs/images.md "Signed images").
  // version = that tag, platform '', filename = its OCI digest; its config and layers are
  // image_blob rows whose version is this manifest's digest (platform '').
  image_attachment,
  // Netsy seeds (docs/podplane-layout.md §3).
  seed_manifest,       // seeds.json as fetched; address "seeds", version = its seeds.version
  seed_snapshot,       // <name>.netsy; address = seed name, upstream_digest = "sha512:…"
  // Engine releases (docs/tools.md): address = the engine ("terraform" or "tofu"), version =
  // its canonical version, filename = the upstream file name.
  tool_archive,        // <engine>_<ver>_<os>_<arch>.zip; platform = os_arch
  tool_shasums,        // <engine>_<ver>_SHA256SUMS; platform ''
  tool_signature,      // its detached OpenPGP signature (.sig, or tofu's .gpgsig); platform ''
  // A git module source's objects (docs/ci.md "Git sources"), kept beside the module tree of
  // the same address and version (the source's store address and ref): what lets the site serve
  // the repository with upstream's commit ids. filename = "<commit>.pack" / "<commit>.refs.json".
  git_pack,            // every object of the clone, one pack file
  git_refs,            // which ref of the repository it was (cache/git_refs.hpp), its commit and shallow boundary
  // Not a kind: the number of kinds. A kind added above it without a row in cache/kinds.cpp's
  // table does not compile (docs/architecture.md "Adding an artifact kind").
  count_,
};
// The name a kind is stored under, and back (cache/kinds.cpp: the table holds the names).
std::string_view to_string(ArtifactKind kind);
ArtifactKind parse_artifact_kind(std::string_view text);  // Error on unknown text

enum class Trust {
  signed_upstream,  // checksum and upstream OpenPGP signature verified
  checksum,         // only a digest from a trusted document verified (vmconfig, mirror hashes)
  unverified,       // taken on the user's explicit flag; never used silently
};
std::string_view to_string(Trust trust);
Trust parse_trust(std::string_view text);

// One indexed file. The key (kind, address, version, platform, filename) is unique.
struct Artifact {
  std::int64_t id = 0;            // assigned by the index
  ArtifactKind kind = ArtifactKind::provider_package;
  std::string address;            // registry.opentofu.org/hashicorp/aws; vmconfig: item name or manifest name
  std::string version;            // 6.2.0; vmconfig manifest: the manifest's vmconfig.version
  std::string platform;           // linux_amd64; "" when not platform-specific
  std::string filename;           // basename as published upstream
  std::string digest;             // sha256 hex of the object (the store key)
  std::int64_t size = 0;
  std::string h1;                 // providers: h1 of the zip (HashZip)
  std::string zh;                 // providers: lockfile::zh_hash(digest)
  std::string upstream_digest;    // vmconfig: "sha256:…" / "sha512:…" from the manifest
  std::string upstream_url;       // never holds credentials
  Trust trust = Trust::unverified;
  std::string added_at;           // RFC 3339 UTC, assigned by the index when empty
  // Provider packages: the plugin protocols the registry listed for it ("6.0"), as upstream
  // gave them (an empty list when it gave none); nullopt when not known (a row from before
  // they were recorded, or from a network mirror, whose protocol lists none). Always nullopt
  // on other kinds.
  std::optional<std::vector<std::string>> protocols;
};

// A provider package's plugin protocols (Artifact::protocols) as the index column and the
// bundle manifest hold them: a JSON array of strings, "" when not known. Parsing refuses any
// other text with an Error saying what it got.
std::string protocols_column(const std::optional<std::vector<std::string>>& protocols);
std::optional<std::vector<std::string>> parse_protocols_column(std::string_view text);

// How a provider package was checked (docs/protocols.md §1.4).
struct Provenance {
  std::int64_t artifact_id = 0;
  std::string shasums_digest;     // object digest of the SHA256SUMS document
  std::string signature_digest;   // object digest of the .sig
  std::string keys_digest;        // object digest of the signing_keys JSON
  std::string key_fingerprint;    // the key that verified the signature
  std::string result;             // "signed", "unverified (--allow-unverified)", …
  std::string checked_at;
};

struct ModuleFile {
  std::string path;     // '/'-separated, relative to the package root
  std::uint32_t mode = 0644;
  std::string digest;   // object digest
  std::int64_t size = 0;
};

// A module package (the whole registry package, e.g. nstance-dev/nstance/aws 2.0.1).
struct ModuleTree {
  std::int64_t id = 0;
  std::string address;  // registry.opentofu.org/nstance-dev/nstance/aws
  std::string version;
  std::string h1;       // h1 over files (HashDir semantics)
  std::string upstream_url;
  std::string added_at;
  std::vector<ModuleFile> files;
};

// What `deps tf` last resolved: the lock's selection and the platform set. It is state,
// not content: replaced as a whole by set_tf_selection().
struct TfSelection {
  struct Provider {
    std::string address;
    std::string version;
    std::string constraints;  // canonical
  };
  std::vector<Provider> providers;
  std::vector<std::string> platforms;    // union of every platform ever requested, sorted
  std::string module_address;            // the stack's module package (Nstance by default)
  std::string module_version;            // current-version
  std::string engine = "tofu";           // tofu | terraform
};

struct AuditEntry {
  std::int64_t id = 0;
  std::string at;
  std::string action;   // fetch | bundle-create | bundle-import | gc | …
  std::string subject;
  std::string detail;   // JSON text
};

// A row or object that `deps verify --repair` moved aside (a store is never stuck:
// docs/design.md §3.3).
struct QuarantineEntry {
  std::int64_t id = 0;
  std::string at;
  std::string what;     // object | artifact | module_tree | selection_provider | selection_module | selection_platform
  std::string subject;  // the object digest or the row, in words
  std::string reason;   // why it was quarantined
  std::string detail;   // JSON: the removed row(s), or where the object's bytes went
};

// The newest bundle imported from one signer ("sha256:<key id>" or "unsigned"): import holds
// the selection of any older bundle from that signer (rollback protection).
struct BundleSignerMark {
  std::string signer;
  std::string created_at;  // the bundle manifest's created_at
  std::string bundle_id;
  std::string recorded_at;
};

}  // namespace podplane::cache
