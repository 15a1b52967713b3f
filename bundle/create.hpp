#pragma once
// Cutting a store into a bundle: the plan (which rows and objects travel, how they split into
// volumes, how many bytes each volume takes) and the writer. The same store and options
// always give byte-identical volumes. Errors are podplane::Error; bad options UsageError.
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/contents.hpp"
#include "bundle/manifest.hpp"
#include "bundle/parity.hpp"
#include "bundle/report.hpp"
#include "cache/prune.hpp"
#include "cache/store.hpp"

namespace podplane::bundle {

struct CreateOptions {
  std::optional<std::filesystem::path> since;         // inventory file of the receiving store
  std::vector<std::string> platforms;                 // keep provider packages of these only
  // `--for-root`: only the provider versions and module versions these name (what the roots
  // need, fetch/root_needs.hpp), each provider version with its SHA256SUMS, signature and keys;
  // nothing else travels, and the bundle carries no tf selection. nullopt: the whole store.
  std::optional<std::vector<cache::ItemPin>> only;
  std::optional<std::filesystem::path> signing_key;   // Ed25519 PEM from `bundle keygen`, or a pkcs11: URI
  std::optional<std::filesystem::path> pkcs11_module;  // --pkcs11-module: the token's module (else the URI's, $PODPLANE_PKCS11_MODULE)
  std::optional<std::uint64_t> volume_size;           // at most this many bytes per volume
  // `--parity PERCENT`: PAR2 recovery files of this much redundancy beside the volumes, made
  // by par2 (bundle/parity.hpp).
  std::optional<int> parity_percent;
  // Signed expiry: the manifest says import refuses the bundle after now + expires_in.
  std::optional<std::chrono::seconds> expires_in;
  std::function<std::time_t()> now;                   // seam for tests (default: the clock)
  // Seam for tests: free bytes in a directory (default statvfs f_bavail * f_frsize).
  std::function<std::uint64_t(const std::filesystem::path&)> free_space;
};

struct VolumePlan {
  std::filesystem::path file;
  BundleManifest manifest;
  std::string manifest_bytes;
  std::string signature_bytes;
  std::uint64_t bytes = 0;  // exact size of the volume file
};

struct BundlePlan {
  std::filesystem::path file;     // FILE, as given: the volumes, parity files and report are named after it
  std::string signer = "unsigned";  // "sha256:<key id>" of the signing key
  std::size_t artifacts = 0;      // rows that travel (each counted once)
  std::size_t module_trees = 0;
  std::uint64_t objects = 0;
  std::uint64_t object_bytes = 0;
  std::uint64_t total_bytes = 0;  // sum of the volume files
  bool signed_bundle = false;
  // With --since: the travelling items (a provider, module, manifest, image or seed version)
  // older than the newest version of the same name the receiver holds, and their rows' bytes.
  // Usually what the receiver pruned, sent again (docs/store.md "Prune and bundles").
  std::size_t older_than_receiver_items = 0;
  std::uint64_t older_than_receiver_bytes = 0;
  std::vector<VolumePlan> volumes;
};

// "700M", "4G", "1K", "123": binary multiples (K = 1024). UsageError on anything else.
std::uint64_t parse_size(std::string_view text);

// "30d", "12h", "90m", "3600s" (a positive whole number and one unit). UsageError otherwise.
std::chrono::seconds parse_duration(std::string_view text);
// The time of an RFC 3339 UTC text ("2027-01-15T08:00:00Z", base/clock.hpp); Error naming the
// text otherwise.
std::time_t parse_rfc3339(const std::string& text);

// FILE when there is one volume, else FILE.001-of-003, FILE.002-of-003, …
std::filesystem::path volume_file(const std::filesystem::path& file, int index, int count);

// Decides what travels and lays out the volumes; reads the index and stats objects only.
BundlePlan plan_bundle(const cache::Store& store, const std::filesystem::path& file, const CreateOptions& options);

struct WrittenBundle {
  ParityWritten parity;  // no files without CreateOptions::parity_percent
  std::optional<SingleLossCover> parity_cover;  // what that parity rebuilds of one lost volume
  ReportFiles report;
};

// Refuses when the target directory lacks plan.total_bytes (and room for the parity asked),
// or when parity is asked and par2 is not installed; then writes every volume through a temp
// file and a rename, removes the parity files of an earlier bundle of that name, has par2 make
// the parity asked, and writes the transfer report. `progress` (may be empty) gets one line
// per volume and one for the parity.
WrittenBundle write_bundle(cache::Store& store, const BundlePlan& plan, const CreateOptions& options,
                           const std::function<void(const std::string&)>& progress = {});

// What the planned bundle carries, as the transfer report describes it.
BundleContents contents_of(const BundlePlan& plan);

// What this store holds (objects present on disk and row ids), for `bundle inventory`.
Inventory make_inventory(cache::Store& store);

}  // namespace podplane::bundle
