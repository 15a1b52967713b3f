#pragma once
// Verifying and importing bundle volumes. Per volume: the signature is checked before any
// object is read; objects stream from the tar straight into temp files of the store, are
// hashed on worker threads, and are committed in manifest order, each only when its digest
// matches the manifest; rows follow in one transaction once their objects are present. A
// damaged volume stops at the damage: what was verified before it stays, the report lists the
// rest. Volumes are independent and may come in any order.
#include <cstdint>
#include <ctime>
#include <functional>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bundle/manifest.hpp"
#include "bundle/parity.hpp"
#include "cache/cosign_policy.hpp"
#include "cache/store.hpp"

namespace podplane::bundle {

enum class UnsignedBundles { refuse, allow };
// Whether an import may move the store's tf selection backwards: apply the selection of a
// bundle older than the newest one its signer gave before (a replay), or one with lower
// versions or fewer providers than the store's.
enum class Downgrades { refuse, allow };
// Whether a bundle past its signed expiry (`bundle create --expires-in`) is taken.
enum class ExpiredBundles { refuse, allow };

struct VerifyOptions {
  std::vector<std::filesystem::path> trusted_keys;  // PEM public keys from `bundle keygen`
  UnsignedBundles unsigned_bundles = UnsignedBundles::refuse;  // also covers untrusted signers
  Downgrades downgrades = Downgrades::refuse;
  ExpiredBundles expired = ExpiredBundles::refuse;
  std::function<std::time_t()> now;  // seam for tests (default: the clock)
  // import --cosign-key: every image a volume indexes must carry a stored cosign signature by
  // one of these keys (or of those the policy names for it: cache/cosign_policy.hpp), or none
  // of that volume's rows is recorded.
  std::vector<std::filesystem::path> cosign_keys;
  std::optional<std::filesystem::path> cosign_policy;  // import --cosign-policy: keys per registry/repository
  cache::KeylessFlags cosign_keyless;  // --certificate-identity…, --trusted-root: keyless signatures
  // Parity files beside the volumes (bundle create --parity): par2 checks the volumes first and
  // rebuilds a damaged or missing one; ParityFiles::ignore reads the volumes as they are.
  ParityFiles parity = ParityFiles::use;
};

struct VolumeReport {
  std::filesystem::path file;
  std::string rebuilt;       // "damaged" or "missing" when read from the volume par2 rebuilt
  std::string bundle_id;     // empty when the manifest could not be trusted
  int volume_index = 0;
  int volume_count = 0;
  std::string signer;        // "sha256:<key id>" or "unsigned"
  bool trusted_signer = false;
  std::uint64_t objects = 0;           // in this volume's manifest
  std::uint64_t objects_verified = 0;  // hashed and found right (imported or, for verify, read)
  std::uint64_t objects_present = 0;   // import: already in the store, skipped
  std::uint64_t bytes_verified = 0;
  // import: rows new to the store that the volume's transaction committed (those whose objects
  // are all present); both 0 when it rolled back
  std::size_t artifacts_added = 0;
  std::size_t module_trees_added = 0;
  std::vector<std::string> missing_objects;  // digests this volume should have delivered
  std::string expired_at;                    // set when an expired bundle was taken (ExpiredBundles::allow)
  std::string error;                         // empty when the volume is complete
  // import: not read, whole or not, because its bundle has lost volumes that parity cannot
  // rebuild (ImportReport::lost); `error` says so
  bool held_back = false;
};

struct ImportReport {
  std::vector<VolumeReport> volumes;
  std::vector<std::string> missing_volumes;  // "volume 2 of 3 of bundle <id>"
  std::vector<std::string> waiting_rows;     // rows still lacking objects after this run
  std::vector<std::string> notes;            // tf selection, foreign deltas, …
  std::vector<std::string> held;             // why the tf selection was not applied (a replay, a downgrade)
  std::vector<std::string> parity;           // per bundle with parity files: what par2 found and rebuilt
  std::vector<std::string> lost;             // volumes damaged or missing that parity cannot rebuild
  bool ok() const;                           // every volume complete, none missing or lost, the selection not held
};

// Reads every volume through, checking signature, structure and every object's digest; with
// parity files, par2 first says which volumes are damaged or missing and rebuilds them, and the
// rebuilt ones are read in their place. Needs no store. Never throws for a bad volume: the
// problem is in its report (a bad parity file is an Error).
ImportReport verify_bundle(const std::vector<std::filesystem::path>& files, const VerifyOptions& options);

// Imports the volumes into `store`, then rebuilds the views and records an audit row. The
// selection moves only forward unless Downgrades::allow; the newest bundle of each signer is
// recorded for that (Store::record_bundle_signer). A bundle with parity files is checked by par2
// first: its damaged and missing volumes are rebuilt and imported in their place, and a bundle
// whose lost volumes parity cannot rebuild is not imported at all (nothing of it is read).
ImportReport import_bundle(cache::Store& store, const std::vector<std::filesystem::path>& files,
                           const VerifyOptions& options);
// The same into the store at `deps_root`, which is opened (created) only when at least one
// volume passes its signature, expiry and row checks: a refused import leaves nothing behind.
ImportReport import_bundle(const std::filesystem::path& deps_root, const std::vector<std::filesystem::path>& files,
                           const VerifyOptions& options);

// A volume's signed header: what `bundle show` lists without reading objects.
struct VolumeHeader {
  BundleManifest manifest;
  std::string signer;  // "sha256:<key id>" or "unsigned"
  bool trusted_signer = false;
  bool expired = false;
};
// Reads only the manifest and its signature, checked as import checks them (a signature that
// does not verify is an Error whatever the options; trust and expiry as `options` say).
VolumeHeader read_volume_header(const std::filesystem::path& file, const VerifyOptions& options);

}  // namespace podplane::bundle
