#pragma once
// The parallel download engine: libcurl multi, --jobs transfers at once with a per-host cap,
// HTTP/2 where offered, retries of transient failures with jittered backoff, Range resume of
// a transfer cut off half way, and streaming into the store's temp file while hashing (no
// whole file in memory). Progress on a terminal, plain log lines otherwise, nothing when quiet.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "mirror/http.hpp"

namespace podplane::mirror {

enum class Progress { automatic, plain_lines, quiet };  // automatic: bar on a tty, else lines

struct DownloadOptions {
  int jobs = 8;
  int per_host = 4;
  HttpOptions http;
  Progress progress = Progress::automatic;
};

struct DownloadItem {
  std::string url;
  std::optional<std::string> expected_sha256;  // checked before the object is committed
  std::string label;                           // shown in progress and errors, e.g. the filename
  std::vector<std::string> headers;            // rarely needed: package downloads get no token
};

struct DownloadOutcome {
  bool ok = false;
  std::string digest;   // sha256 hex of the committed object
  std::uint64_t size = 0;
  std::string error;    // when !ok: what failed, for which item, expected/got where relevant
};

struct DownloadTotals {
  std::uint64_t bytes = 0;        // body bytes received this run
  std::size_t transfers = 0;
};

class Downloader {
 public:
  explicit Downloader(DownloadOptions options = {});
  ~Downloader();
  Downloader(const Downloader&) = delete;
  Downloader& operator=(const Downloader&) = delete;

  // Fetches every item into the store (through Store::new_object, so only verified bytes
  // become objects). Per-item failures are reported in the outcome, never thrown; the
  // outcomes are in the order of `items`.
  [[nodiscard]] std::vector<DownloadOutcome> fetch_into_store(cache::Store& store, const std::vector<DownloadItem>& items);

  // Fetches each item to its destination (same index), atomically, all in one parallel run:
  // files checked by other digests than sha256 (sha512 artifacts, seed snapshots) before they
  // are added. Per-item failures are in the outcomes, as with fetch_into_store.
  [[nodiscard]] std::vector<DownloadOutcome> fetch_to_files(const std::vector<DownloadItem>& items,
                                                            const std::vector<std::filesystem::path>& destinations);

  // Fetches one file to `destination` (e.g. a module archive to unpack), atomically; throws
  // the item's error.
  void fetch_to_file(const DownloadItem& item, const std::filesystem::path& destination);

  const DownloadTotals& totals() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace podplane::mirror
