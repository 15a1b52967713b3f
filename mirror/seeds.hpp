#pragma once
// Netsy seed snapshots (podplane.md §2.2, §6): $PODPLANE_DEPS_URL/manifests/seeds.json
// ({"seeds": {"version", "snapshots": {"<name>": {"url", "digest": "sha512:…", "size"}}}})
// and the snapshots it lists, each checked against its sha512 before it is stored, with
// Podplane's wording on a mismatch. Rows are returned, not indexed (the caller indexes its run
// all or nothing). Errors: podplane::Error naming the snapshot.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "mirror/download.hpp"
#include "mirror/http.hpp"

namespace podplane::mirror {

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

// "podplane seed file digest is sha512:<got>, want sha512:<expected>" unless they agree.
void check_seed_digest(const std::filesystem::path& file, const std::string& expected);

struct SeedsFetch {
  std::vector<cache::Artifact> rows;
  std::vector<std::string> failures;
  std::vector<std::string> missing;  // view paths of snapshots not stored yet (for --dry-run)
  std::size_t fetched = 0;
  std::uint64_t bytes = 0;
};

enum class SeedsMode { fetch, list_only };

// Fetches seeds.json from `base` and every snapshot the store lacks into the store, using
// `scratch` for the sha512 check.
[[nodiscard]] SeedsFetch fetch_seeds(cache::Store& store, HttpClient& http, Downloader& downloader, const std::string& base,
                                     const std::filesystem::path& scratch, SeedsMode mode);

}  // namespace podplane::mirror
