#pragma once
// The counters of `mirror serve` and their Prometheus text exposition (`/metrics`, format
// 0.0.4; docs/operations.md lists every series). Requests are counted on the hot path with
// relaxed atomic adds only: no lock, no allocation, and each thread adds to a shard of its own
// (summed by a scrape), so that the event loops on different cores do not pass the same cache
// lines back and forth per request. What changes only at a reload (the site and the store's
// size) is set under a mutex that only reloads and scrapes take.
// Every member function is thread-safe.
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace podplane::mirror {

// The route families requests are counted by: one per protocol the site serves.
enum class Route : std::uint8_t {
  registry,        // /.well-known/terraform.json, /v1/providers/
  network_mirror,  // /v1/mirror/ (zips and SHA256SUMS included)
  modules,         // /v1/modules/
  vmconfig,        // /vmconfig/, /arch/, /manifests/
  images,          // /v2/
  seeds,           // /seeds/
  tools,           // /tools/: engine and podplane releases
  git,             // /git/: git's smart HTTP
  catalogue,       // /, /catalogue/, /catalogue.json
  health,          // /healthz
  metrics,         // /metrics
  other,           // anything else (404s, refused targets)
};
inline constexpr std::size_t kRouteCount = static_cast<std::size_t>(Route::other) + 1;

[[nodiscard]] Route route_of(std::string_view path);
[[nodiscard]] std::string_view route_name(Route route);

// What is known of a request before its answer goes out; recorded once the last byte left.
struct RequestSample {
  Route route = Route::other;
  int status = 0;
  std::chrono::steady_clock::time_point started{};
};

// Counters the connection layer keeps (serve_connections.hpp), read at scrape time.
struct ConnectionCounters {
  std::atomic<std::int64_t> open{0};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> refused_per_client{0};  // over --max-connections-per-client
  std::atomic<std::uint64_t> head_timeouts{0};       // no complete request head in time
  std::atomic<std::uint64_t> tls_handshakes{0};
  std::atomic<std::uint64_t> tls_handshake_failures{0};
};

// Counters the object checks keep (serve_objects.hpp), read at scrape time: the verdicts
// reached, one per object file checked (a missing file once until it comes back).
struct ObjectCheckCounters {
  std::atomic<std::uint64_t> good{0};
  std::atomic<std::uint64_t> damaged{0};     // another size, or bytes that hash to another digest
  std::atomic<std::uint64_t> missing{0};
  std::atomic<std::uint64_t> unreadable{0};  // a read error: checked again at the next request
};

// What the current site holds, set at each (re)load.
struct SiteFigures {
  std::size_t paths = 0;
  std::size_t skipped_rows = 0;
  std::int64_t loaded_at = 0;  // Unix seconds
  std::string generation;      // MirrorSite::generation of the site
  std::int64_t last_import = 0;  // Unix seconds of its newest successful bundle import; 0: none
  // The store's size, cache::usage_of's figures (the catalogue's store-usage section).
  bool usage_known = false;
  std::uint64_t objects = 0, object_bytes = 0;
  struct Family {
    std::uint64_t items = 0, rows = 0, bytes = 0;
  };
  std::map<std::string, Family> by_family;
  // Bundle imports recorded in the store's audit log, by outcome.
  std::uint64_t bundle_imports_ok = 0, bundle_imports_failed = 0;
};

class ServeMetrics {
 public:
  // Request duration buckets, in seconds: JSON answers take well under a millisecond, a
  // provider zip seconds, an image layer over a slow link minutes.
  static constexpr std::array<double, 14> kBuckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                   0.1,    0.25,  0.5,    1,     5,     30,    300};

  // One answered request: `body_bytes` are the body bytes that really left (the access log's).
  void record(const RequestSample& sample, std::uint64_t body_bytes, std::chrono::steady_clock::time_point done);

  // A whole-object answer that streamed beside its object's check reached its held-back last
  // bytes and waited for the check: `passed`, they went out; else the answer was cut short.
  void held_back_for_check(bool passed);

  void reloaded(const SiteFigures& figures);  // the initial load too (it is not counted as a reload)
  void reload_failed();

  // The exposition, with the connection layer's and the object checks' counters.
  [[nodiscard]] std::string render(const ConnectionCounters& connections, const ObjectCheckCounters& objects) const;

 private:
  // The statuses the server answers with, each its own series; any other is counted as "other".
  static constexpr std::array<int, 15> kStatuses{200, 204, 206, 304, 400, 404, 405, 408, 413, 414, 416, 431, 500, 501, 503};
  static constexpr std::size_t kStatusSlots = kStatuses.size() + 1;

  // One route's counters.
  struct RouteCounters {
    std::array<std::atomic<std::uint64_t>, kStatusSlots> requests{};
    std::atomic<std::uint64_t> body_bytes{0};
    std::array<std::atomic<std::uint64_t>, kBuckets.size() + 1> durations{};  // per bucket, +Inf last
    std::atomic<std::uint64_t> duration_sum_ns{0};
  };
  // The counters one group of threads adds to, on cache lines of their own. Threads take
  // shards in turn; more threads than shards (idle workers) share one, which stays correct.
  struct alignas(64) Shard {
    std::array<RouteCounters, kRouteCount> routes{};
  };
  static constexpr std::size_t kShards = 16;
  std::array<Shard, kShards> shards_{};

  std::atomic<std::uint64_t> reloads_{0}, reload_failures_{0};
  std::atomic<std::uint64_t> held_back_passed_{0}, held_back_cut_{0};
  mutable std::mutex site_mutex_;
  SiteFigures site_;
  bool loaded_once_ = false;
};

// Reads the store figures of SiteFigures from a built catalogue: the store-usage and bundles
// sections (defined with the catalogue, mirror/catalogue.hpp).
struct Catalogue;
void add_store_figures(const Catalogue& catalogue, SiteFigures& figures);

}  // namespace podplane::mirror
