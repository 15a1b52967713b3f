#pragma once
// HTTP(S) for everything podplane fetches, on libcurl (OpenSSL). Honours SSL_CERT_FILE /
// SSL_CERT_DIR, the standard proxy variables (http_proxy, https_proxy, no_proxy, …), and
// retries transient failures (5xx, 429 with Retry-After, resets, timeouts) with jittered
// backoff. Never logs a credential: headers passed in are not printed anywhere.
// An HttpClient is not thread-safe; use one per thread.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace podplane::mirror {

struct HttpOptions {
  int max_retries = 4;                                  // after the first attempt
  std::chrono::milliseconds initial_backoff{200};       // doubled per retry, ±50% jitter
  std::chrono::milliseconds max_retry_wait{30000};      // caps backoff and Retry-After
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds low_speed_timeout{30};           // abort a transfer stalled this long
  std::size_t max_body_bytes = 16 * 1024 * 1024;        // in-memory documents only
  std::optional<std::filesystem::path> ca_file;         // overrides SSL_CERT_FILE when set
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string final_url;                       // after redirects
  std::string content_type() const;            // media type without parameters, lower-cased
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options = {});
  ~HttpClient();
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;

  // GET into memory, following redirects. Transient failures are retried; the final
  // response is returned whatever its status (callers decide what a 404 means).
  // Throws podplane::Error when no response could be had (naming the URL).
  [[nodiscard]] HttpResponse get(const std::string& url, const std::vector<std::string>& headers = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// RFC 3986 reference resolution (relative download_url, X-Terraform-Get, mirror urls).
[[nodiscard]] std::string resolve_url(const std::string& base, const std::string& reference);

}  // namespace podplane::mirror
