#include "net/curl_handles.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "base/ascii.hpp"
#include "base/error.hpp"

namespace podplane::net::transport {

namespace {

void global_init() {
  // curl_global_init is not thread-safe on every build; do it once, before any handle exists.
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  check(result, "cannot initialise");
}

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

}  // namespace

void check(CURLcode code, std::string_view what) {
  if (code != CURLE_OK) throw Error("libcurl: " + std::string(what) + ": " + curl_easy_strerror(code));
}
void check(CURLMcode code, std::string_view what) {
  if (code != CURLM_OK) throw Error("libcurl: " + std::string(what) + ": " + curl_multi_strerror(code));
}

CurlEasy::CurlEasy() {
  global_init();
  handle_ = curl_easy_init();
  if (handle_ == nullptr) throw Error("libcurl could not create a transfer handle");
}
CurlEasy::~CurlEasy() {
  if (handle_ != nullptr) curl_easy_cleanup(handle_);
}
CurlEasy::CurlEasy(CurlEasy&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
CurlEasy& CurlEasy::operator=(CurlEasy&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) curl_easy_cleanup(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

CurlMulti::CurlMulti() {
  global_init();
  handle_ = curl_multi_init();
  if (handle_ == nullptr) throw Error("libcurl could not create a multi handle");
}
CurlMulti::~CurlMulti() {
  if (handle_ != nullptr) curl_multi_cleanup(handle_);
}

CurlSlist::~CurlSlist() {
  if (list_ != nullptr) curl_slist_free_all(list_);
}
CurlSlist::CurlSlist(CurlSlist&& other) noexcept : list_(std::exchange(other.list_, nullptr)) {}
CurlSlist& CurlSlist::operator=(CurlSlist&& other) noexcept {
  if (this != &other) {
    if (list_ != nullptr) curl_slist_free_all(list_);
    list_ = std::exchange(other.list_, nullptr);
  }
  return *this;
}
void CurlSlist::append(const std::string& line) {
  curl_slist* extended = curl_slist_append(list_, line.c_str());
  if (extended == nullptr) throw Error("out of memory building request headers");
  list_ = extended;
}

CurlUrl::~CurlUrl() {
  if (handle_ != nullptr) curl_url_cleanup(handle_);
}
bool CurlUrl::set(const std::string& url) {
  return handle_ != nullptr && curl_url_set(handle_, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK;
}
std::optional<std::string> CurlUrl::part(CURLUPart which, unsigned int flags) const {
  char* value = nullptr;
  if (handle_ == nullptr || curl_url_get(handle_, which, &value, flags) != CURLUE_OK || value == nullptr) {
    curl_free(value);
    return std::nullopt;
  }
  std::string text = value;
  curl_free(value);
  return text;
}

void apply_common_options(CURL* easy, const HttpOptions& options) {
  // libcurl does not read SSL_CERT_FILE itself (the curl program does), so pass it on.
  if (options.ca_file) {
    set(easy, CURLOPT_CAINFO, options.ca_file->c_str());
  } else if (const char* file = env("SSL_CERT_FILE")) {
    set(easy, CURLOPT_CAINFO, file);
  }
  if (!options.ca_file) {
    if (const char* dir = env("SSL_CERT_DIR")) set(easy, CURLOPT_CAPATH, dir);
  }
  set(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  set(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  set(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  set(easy, CURLOPT_MAXREDIRS, 10L);
  set(easy, CURLOPT_NOSIGNAL, 1L);
  set(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max<long long>(1, options.connect_timeout.count())));
  // A transfer slower than low_speed_limit for low_speed_timeout fails (and counts as a failed
  // attempt): a server dripping a byte a second must not hold a transfer forever.
  set(easy, CURLOPT_LOW_SPEED_LIMIT, std::max(1L, options.low_speed_limit));
  set(easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(std::max<long long>(1, options.low_speed_timeout.count())));
  set(easy, CURLOPT_USERAGENT, "podplane/" PODPLANE_VERSION);
  set(easy, CURLOPT_TCP_KEEPALIVE, 1L);
}

bool is_transient_error(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP3:
    case CURLE_QUIC_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

void set_url(CURL* easy, const std::string& url) {
  set(easy, CURLOPT_URL, url.c_str());
  const bool tls = ascii_istarts_with(url, "https://");
  set(easy, CURLOPT_REDIR_PROTOCOLS_STR, tls ? "https" : "http,https");
}

std::string describe(CURLcode code, const char* error_buffer) {
  if (error_buffer != nullptr && *error_buffer != '\0') {
    std::string text = error_buffer;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
  }
  return curl_easy_strerror(code);
}

}  // namespace podplane::net::transport
