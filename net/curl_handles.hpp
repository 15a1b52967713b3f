#pragma once
// libcurl plumbing of HttpClient and Downloader, private to net/ (only net/*.cpp include it, and
// the build lets nothing else: no other header of ours exposes <curl/curl.h>): one RAII type per
// curl handle, one check() per libcurl result type, the options every request gets (CA file
// from SSL_CERT_FILE, HTTP/2, protocol limits, timeouts, proxies from the environment).
// Thread-compatible.
#ifndef PODPLANE_NET_INTERNAL
#error "net/curl_handles.hpp is private to net/: use net/http.hpp or net/download.hpp"
#endif
#include <curl/curl.h>

#include <optional>
#include <string>
#include <string_view>

#include "net/http_options.hpp"

namespace podplane::net::transport {

// Throw podplane::Error("libcurl: <what>: <curl's text>") unless the call succeeded.
void check(CURLcode code, std::string_view what);
void check(CURLMcode code, std::string_view what);

// curl_easy_setopt with its result checked (an option this libcurl lacks is an Error, not a
// silently weaker transfer).
template <typename Value>
void set(CURL* easy, CURLoption option, Value value) {
  check(curl_easy_setopt(easy, option, value), "cannot set a transfer option");
}

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

// A URL as libcurl parses it (RFC 3986). A handle libcurl could not make parses nothing.
class CurlUrl {
 public:
  CurlUrl() : handle_(curl_url()) {}
  ~CurlUrl();
  CurlUrl(const CurlUrl&) = delete;
  CurlUrl& operator=(const CurlUrl&) = delete;
  // Parses url; with a URL already set, resolves url against it as a reference (RFC 3986 §5,
  // dot segments removed). False when it is not a URL or not a reference libcurl can resolve.
  [[nodiscard]] bool set(const std::string& url);
  // One component (CURLUPART_HOST…), or nothing when the URL has none.
  [[nodiscard]] std::optional<std::string> part(CURLUPart which, unsigned int flags = 0) const;

 private:
  CURLU* handle_;
};

// TLS trust (options.ca_file, else $SSL_CERT_FILE / $SSL_CERT_DIR), HTTP/2 over TLS where the
// server offers it, only http and https (redirects too), the connect timeout and the low-speed
// limit, a user agent. Proxies come from libcurl's own reading of http_proxy, https_proxy,
// all_proxy and no_proxy. Each attempt also sets CURLOPT_TIMEOUT_MS from its RetryBudget.
void apply_common_options(CURL* easy, const HttpOptions& options);

// Worth another attempt: resets, timeouts, cut-off bodies, refused connections.
[[nodiscard]] bool is_transient_error(CURLcode code);

// The request's URL, and the redirects it may follow: from an https URL only to https (a
// downgrade to plain http is refused, whatever headers the request carries).
void set_url(CURL* easy, const std::string& url);

// A curl failure in words: the error buffer when set, else curl's text for the code.
[[nodiscard]] std::string describe(CURLcode code, const char* error_buffer);

}  // namespace podplane::net::transport
