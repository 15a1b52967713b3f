#pragma once
// The policy every request and download runs under: the retry budget, timeouts, size caps and
// TLS trust (docs/download.md "Retry budgets"). A plain value type, below both the client
// (net/http.hpp) and the libcurl plumbing that applies it (net/transport.hpp), so that neither
// has to include the other.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>

namespace podplane::net {

struct HttpOptions {
  // The retry budget of one request, or of one item of the download engine.
  int max_retries = 4;                              // failed attempts allowed after the first
  int max_resumes = 8;                              // engine: cut-off attempts that brought new bytes, resumed free
  std::chrono::milliseconds initial_backoff{200};   // doubled per failed attempt, ±50% jitter
  std::chrono::milliseconds max_retry_wait{30000};  // caps backoff and Retry-After
  std::chrono::milliseconds deadline{std::chrono::hours(1)};  // every attempt and wait of one request together
  // Per attempt.
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::seconds low_speed_timeout{30};       // slower than low_speed_limit this long: abandoned
  long low_speed_limit = 1024;                      // bytes per second
  std::size_t max_body_bytes = 16 * 1024 * 1024;    // in-memory responses only
  // Engine: the most bytes an item of unknown size may bring (a provider zip whose registry
  // states no package_size, a module archive); an item with a declared size has that instead.
  std::uint64_t max_download_bytes = std::uint64_t{4} << 30;
  std::optional<std::filesystem::path> ca_file;     // overrides SSL_CERT_FILE when set

  // The defaults above, each overridden by its PODPLANE_HTTP_* environment variable
  // (docs/download.md). Throws UsageError naming the variable when a value is malformed.
  [[nodiscard]] static HttpOptions from_environment();
};

}  // namespace podplane::net
