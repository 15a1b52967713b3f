#pragma once
// The parallel download engine: libcurl multi, --jobs transfers at once with a per-host cap,
// HTTP/2 where offered, retries of transient failures with jittered backoff, Range resume of
// a transfer cut off half way, and streaming into the store's temp file while hashing (no
// whole file in memory). Progress on a terminal, plain log lines otherwise, nothing when quiet.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/digest.hpp"
#include "cache/store.hpp"
#include "net/download_options.hpp"
#include "net/http.hpp"

namespace podplane::net {

struct DownloadItem {
  std::string url;
  std::optional<std::string> expected_sha256;  // checked before the object is committed
  std::string label;                           // shown in progress and errors, e.g. the filename
  std::vector<std::string> headers;            // rarely needed: package downloads get no token
  // The size the item is declared to have (an OCI descriptor's, a vmconfig item's, a registry's
  // package_size): a transfer that would bring more stops at once and fails naming both sizes.
  // Without it, HttpOptions::max_download_bytes is the ceiling.
  std::optional<std::uint64_t> expected_size;
  // Another digest of the bytes, for an item checked by another algorithm than sha256 (a
  // vmconfig item's sha512): computed as they stream, on a thread of its own, and given in
  // DownloadOutcome::other_digest. For items fetched to a destination (add with a path).
  std::optional<DigestAlgorithm> other_algorithm = std::nullopt;
  // Into the store only: whether the run publishes the object as it lands (synced, renamed into
  // place, indexed) or leaves it checked but unsynced in the store's temp area, its writer in
  // DownloadOutcome::unpublished, for the caller to seal and publish (Store::publish_sealed).
  // A caller that reads each object anyway (deps tf, the h1 of each zip) then syncs it on its
  // own worker, and the run's thread, which all transfers share, never waits for a sync.
  enum class Publish { as_it_lands, by_caller };
  Publish publish = Publish::as_it_lands;
};

struct DownloadOutcome {
  bool ok = false;
  std::string digest;   // sha256 hex of the committed object
  std::string other_digest;  // hex in the item's other_algorithm, when it has one
  std::uint64_t size = 0;
  std::string error;    // when !ok: what failed, for which item, expected/got where relevant
  // Publish::by_caller: the checked object (its sha256 is `digest`), neither synced nor
  // published; its temp file is removed when the last reference goes unpublished.
  std::shared_ptr<cache::ObjectWriter> unpublished;
};

struct DownloadTotals {
  std::uint64_t bytes = 0;        // body bytes received this run
  std::size_t transfers = 0;
};

// One parallel run that grows while it goes: an item added from another item's `then` (a
// manifest's blobs, once the manifest is in) joins the same run, under the same --jobs and
// per-host caps, so no item waits for a whole batch before it. `then` is called on the run's
// thread as each item ends, in the order they end, with its outcome; it should be quick (the
// transfers wait meanwhile) and may add() more items. Not thread-safe: add only before the run
// starts or from a `then`, except wake().
class DownloadRun {
 public:
  using Then = std::function<void(const DownloadOutcome&)>;
  virtual ~DownloadRun() = default;
  // Into the store, as fetch_into_store.
  virtual void add(DownloadItem item, Then then) = 0;
  // To `destination`, renamed into place whole (not synced: a scratch file), as fetch_to_files.
  virtual void add(DownloadItem item, std::filesystem::path destination, Then then) = 0;
  // Work on another thread that will know more items (an image's manifests, once its index is
  // in): `then` is called on the run's thread once `ready` is, and may add them; the run does
  // not end before. The other thread calls wake() when it is done, so the run looks at once;
  // it may do so just before `ready` is (as a std::async must), and the run then looks again
  // every millisecond for a while rather than sleep to its poll timeout.
  virtual void after(std::shared_future<void> ready, std::function<void()> then) = 0;
  virtual void wake() = 0;  // thread-safe
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

  // Fetches each item to its destination (same index), all in one parallel run: scratch files
  // checked by other digests than sha256 (sha512 artifacts, seed snapshots) before they are
  // added to the store. Each is renamed into place whole, but not synced: only the store syncs.
  // Per-item failures are in the outcomes, as with fetch_into_store.
  [[nodiscard]] std::vector<DownloadOutcome> fetch_to_files(const std::vector<DownloadItem>& items,
                                                            const std::vector<std::filesystem::path>& destinations);

  // Fetches one file to `destination` (e.g. a module archive to unpack), atomically; throws
  // the item's error.
  void fetch_to_file(const DownloadItem& item, const std::filesystem::path& destination);

  // `start` adds the first items; the run ends when every item, and every item their `then`s
  // added, has ended. An exception thrown by a `then` ends the run (no new transfer starts,
  // running ones are let go) and is rethrown from here.
  void run(cache::Store& store, const std::function<void(DownloadRun&)>& start);

  const DownloadTotals& totals() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace podplane::net
