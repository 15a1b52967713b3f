#pragma once
// Netsy seed snapshots (docs/podplane-layout.md §3): $PODPLANE_DEPS_URL/manifests/seeds.json
// ({"seeds": {"version", "snapshots": {"<name>": {"url", "digest": "sha512:…", "size"}}}})
// and the snapshots it lists, each checked against its sha512 before it is stored, with
// Podplane's wording on a mismatch. Rows are returned, not indexed (the caller indexes its run
// all or nothing). Errors: podplane::Error naming the snapshot.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "net/download.hpp"
#include "net/http.hpp"

namespace podplane::fetch {

struct SeedSnapshot {
  std::string name;      // recommended, minimal, …
  std::string url;
  std::string digest;    // sha512:<128 hex>
  std::uint64_t size = 0;
  std::string filename;  // basename of the URL path (Podplane's cache file name)
};

struct SeedsManifest {
  std::string version;
  std::vector<SeedSnapshot> snapshots;  // by name
};

// Error naming `source` and the snapshot when something is missing or malformed.
[[nodiscard]] SeedsManifest parse_seeds_manifest(std::string_view bytes, const std::string& source);

// "podplane seed file digest is sha512:<got>, want sha512:<expected>" unless they agree
// (`got_sha512_hex`: hashed as the file streamed).
void check_seed_digest(const std::string& got_sha512_hex, const std::string& expected);

struct SeedsFetch {
  std::vector<cache::Artifact> rows;
  std::vector<std::string> failures;
  std::vector<std::string> missing;  // view paths of snapshots not stored yet (for --dry-run)
  std::size_t fetched = 0;
  std::uint64_t bytes = 0;
};

// seeds.json as fetched from $PODPLANE_DEPS_URL/manifests/seeds.json. Error naming its URL
// (a 404 says how to go without seeds) or what is malformed in it.
struct SeedsDocument {
  std::string url;
  std::string bytes;
  SeedsManifest manifest;
};
[[nodiscard]] SeedsDocument fetch_seeds_document(net::HttpClient& http, const std::string& base);

// The snapshots of a seeds.json the store lacks, fetched through a run shared with other items:
// start() adds each to the run, to its own file in `scratch`; finish(), after the run, checks
// each against its sha512 (hashed as it streamed), makes the file itself its object and
// returns the rows (seeds.json's too, when the store does not have it yet). `scratch` belongs
// on the store's file system (under Store::temp_dir()), where that costs no copy. Nothing is
// written before start(). Not thread-safe; must outlive the run.
class SeedsFetcher {
 public:
  SeedsFetcher(cache::Store& store, SeedsDocument document);
  SeedsFetcher(const SeedsFetcher&) = delete;
  SeedsFetcher& operator=(const SeedsFetcher&) = delete;

  const std::vector<std::string>& missing() const { return missing_; }  // view paths (for --dry-run)
  void start(net::DownloadRun& run, const std::filesystem::path& scratch);
  [[nodiscard]] SeedsFetch finish();

 private:
  struct Pending {
    const SeedSnapshot* snapshot;
    std::filesystem::path file;              // set by start()
    std::optional<net::DownloadOutcome> outcome;  // once the run has ended it
  };
  cache::Store& store_;
  SeedsDocument document_;
  std::vector<std::string> missing_;
  std::vector<Pending> pending_;  // same index as missing_
};

}  // namespace podplane::fetch
