#pragma once
// The bundle manifest (first tar entry of every volume), its signature block (second entry)
// and the inventory a receiving store sends back. Byte formats: docs/bundle-format.md.
// Serialisation is deterministic (sorted keys, compact JSON, trailing newline). Parsing
// treats the text as hostile: every digest, name and path is validated, and a violation is a
// podplane::Error naming the field.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cache/store.hpp"

namespace podplane::bundle {

inline constexpr int kFormatVersion = 1;
inline constexpr std::string_view kManifestEntry = "manifest.json";
inline constexpr std::string_view kSignatureEntry = "manifest.sig";
inline constexpr std::string_view kObjectPrefix = "objects/sha256/";
// Largest manifest a volume may carry: create refuses to write more, import to read more.
inline constexpr std::uint64_t kManifestLimit = 64ULL << 20;

struct ManifestObject {
  std::string digest;  // sha256 hex
  std::uint64_t size = 0;
  auto operator<=>(const ManifestObject&) const = default;
};

// A provenance row travels with its artifact; artifact ids are local to each store.
struct TravellingArtifact {
  cache::Artifact artifact;                  // id ignored
  std::vector<cache::Provenance> provenance;  // artifact_id ignored
};

// What the bundle was cut against (empty when it holds the whole store).
struct SinceInventory {
  std::string inventory_digest;  // sha256 hex of the inventory file's bytes
  std::string store_id;
  std::uint64_t generation = 0;
};

struct BundleManifest {
  int format_version = kFormatVersion;
  std::string tool_version;
  std::string created_at;  // RFC 3339: the newest added_at among the store's rows (reproducible)
  std::string bundle_id;   // sha256 hex over every volume's object list: ties the volumes together
  // RFC 3339: import and verify refuse the bundle after this time unless told otherwise
  // (`bundle create --expires-in`). Absent in bundles made without it, and then not serialised.
  std::optional<std::string> expires_at;
  std::optional<SinceInventory> since;
  std::vector<std::string> platforms;  // the --platform filter; empty = all platforms
  int volume_index = 1;                // 1-based
  int volume_count = 1;
  std::uint64_t total_objects = 0;     // over all volumes
  std::uint64_t total_bytes = 0;
  std::vector<ManifestObject> objects;  // this volume's objects, in tar order
  std::vector<TravellingArtifact> artifacts;
  std::vector<cache::ModuleTree> module_trees;
  std::optional<cache::TfSelection> tf_selection;

  std::string serialize() const;                         // the exact bytes that are signed
  // Validates everything (hostile input). Reads the row arrays as a stream, one row at a time,
  // so memory stays near the size of the rows rather than of a JSON document tree.
  static BundleManifest parse(std::string_view text);
};

// The second entry. algorithm "none" for an unsigned bundle.
struct SignatureBlock {
  std::string algorithm = "none";  // "ed25519" | "none"
  std::string public_key_hex;      // raw 32-byte Ed25519 key
  std::string key_id;              // sha256:<hex of the raw key>
  std::string signature_hex;       // over the manifest bytes

  std::string serialize() const;
  static SignatureBlock parse(std::string_view text);
};

// What a store holds, carried back to the online side to cut a delta.
struct Inventory {
  std::string tool_version;
  std::string store_id;
  std::uint64_t generation = 0;
  std::set<std::string> objects;  // object digests
  std::set<std::string> rows;     // row_id() of every artifact and module tree

  std::string serialize() const;
  static Inventory parse(std::string_view text);
};

// Identity of an index row as the delta logic sees it: the key, the content and (for
// artifacts) the provenance. sha256 hex.
std::string row_id(const cache::Artifact& artifact, const std::vector<cache::Provenance>& provenance);
std::string row_id(const cache::ModuleTree& tree);

// Every object a row needs: the artifact's own and its provenance documents.
std::vector<std::string> objects_of(const TravellingArtifact& artifact);
std::vector<std::string> objects_of(const cache::ModuleTree& tree);

// Rejects names that could escape a directory: empty, '/', "..", ".", control characters.
void check_safe_name(std::string_view what, std::string_view name);
// '/'-separated relative path made of safe names.
void check_safe_relative_path(std::string_view what, std::string_view path);

}  // namespace podplane::bundle
