#pragma once
// libcurl plumbing shared by HttpClient and Downloader (internal to mirror/): one RAII type per
// curl handle, the options every request gets (CA file from SSL_CERT_FILE, HTTP/2, timeouts,
// redirects, proxies from the environment), and the retry policy. Thread-compatible.
#include <curl/curl.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "mirror/http.hpp"

namespace podplane::mirror::transport {

class CurlEasy {
 public:
  CurlEasy();  // Error when libcurl cannot make a handle
  ~CurlEasy();
  CurlEasy(CurlEasy&& other) noexcept;
  CurlEasy& operator=(CurlEasy&& other) noexcept;
  CurlEasy(const CurlEasy&) = delete;
  CurlEasy& operator=(const CurlEasy&) = delete;
  CURL* get() const { return handle_; }

 private:
  CURL* handle_ = nullptr;
};

class CurlMulti {
 public:
  CurlMulti();
  ~CurlMulti();
  CurlMulti(const CurlMulti&) = delete;
  CurlMulti& operator=(const CurlMulti&) = delete;
  CURLM* get() const { return handle_; }

 private:
  CURLM* handle_ = nullptr;
};

class CurlSlist {
 public:
  CurlSlist() = default;
  ~CurlSlist();
  CurlSlist(CurlSlist&& other) noexcept;
  CurlSlist& operator=(CurlSlist&& other) noexcept;
  CurlSlist(const CurlSlist&) = delete;
  CurlSlist& operator=(const CurlSlist&) = delete;
  void append(const std::string& line);
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// TLS trust (options.ca_file, else $SSL_CERT_FILE / $SSL_CERT_DIR), HTTP/2 over TLS where the
// server offers it, redirects, timeouts, a user agent. Proxies come from libcurl's own reading
// of http_proxy, https_proxy, all_proxy and no_proxy.
void apply_common_options(CURL* easy, const HttpOptions& options);

// Worth another attempt: 408, 429 and 5xx other than 501/505.
[[nodiscard]] bool is_transient_status(long status);
// Worth another attempt: resets, timeouts, cut-off bodies, refused connections.
[[nodiscard]] bool is_transient_error(CURLcode code);

// A Retry-After header value (delta-seconds or an HTTP date) as a wait from now.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value);

// The wait before retry number `retry` (1 = the first retry): Retry-After when the server gave
// one, else initial_backoff * 2^(retry-1) with ±50% jitter; both capped at max_retry_wait.
[[nodiscard]] std::chrono::milliseconds retry_delay(int retry, const HttpOptions& options,
                                                    std::optional<std::chrono::milliseconds> retry_after);

// "host:port" of a URL, for per-host limits ("" when it does not parse).
[[nodiscard]] std::string host_key(const std::string& url);

// The URL without any user:password@ part, for messages.
[[nodiscard]] std::string redact_url(const std::string& url);

// A curl failure in words: the error buffer when set, else curl's text for the code.
[[nodiscard]] std::string describe(CURLcode code, const char* error_buffer);

// Splits one raw header line into a lower-cased name and a trimmed value; false for status
// lines and the blank end-of-headers line.
bool parse_header_line(std::string_view line, std::string& name, std::string& value);

}  // namespace podplane::mirror::transport
