#include "net/transport.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <random>
#include <utility>

#include "base/error.hpp"

namespace podplane::mirror::transport {

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

bool is_transient_status(long status) {
  return status == 408 || status == 429 || (status >= 500 && status <= 599 && status != 501 && status != 505);
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

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) value.remove_prefix(1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (value.size() > 9) return std::chrono::milliseconds(999'999'999'000LL);
    return std::chrono::seconds(std::stol(std::string(value)));
  }
  const time_t when = curl_getdate(std::string(value).c_str(), nullptr);
  if (when < 0) return std::nullopt;
  const time_t now = std::time(nullptr);
  return std::chrono::seconds(when > now ? when - now : 0);
}

std::chrono::milliseconds retry_delay(int retry, const HttpOptions& options,
                                      std::optional<std::chrono::milliseconds> retry_after) {
  using std::chrono::milliseconds;
  if (retry_after) return std::min(*retry_after, options.max_retry_wait);
  const int shift = std::clamp(retry - 1, 0, 20);
  const double base = static_cast<double>(options.initial_backoff.count()) * static_cast<double>(1LL << shift);
  // Jitter spreads the retries of many parallel transfers that failed together.
  thread_local std::mt19937 random{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  const auto delay = milliseconds(static_cast<long long>(base * jitter(random)));
  return std::min(delay, options.max_retry_wait);
}

RetryBudget::RetryBudget(const HttpOptions& options)
    : options_(options), start_(Clock::now()), deadline_(start_ + options.deadline) {}

std::optional<std::chrono::milliseconds> RetryBudget::next(Attempt attempt,
                                                           std::optional<std::chrono::milliseconds> retry_after) {
  ++attempts_;
  // A resume beyond max_resumes counts as a failure: cut-offs cannot go on forever either.
  const bool free_resume = attempt == Attempt::resumed && resumes_ < options_.max_resumes;
  if (free_resume) {
    ++resumes_;
  } else {
    ++failures_;
  }
  if (failures_ > options_.max_retries) return std::nullopt;
  const auto wait = free_resume ? std::chrono::milliseconds(0) : retry_delay(failures_, options_, retry_after);
  if (Clock::now() + wait >= deadline_) {
    deadline_hit_ = true;
    return std::nullopt;
  }
  return wait;
}

std::chrono::milliseconds RetryBudget::time_left() const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

std::string RetryBudget::summary() const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", elapsed);
  std::string text = "after " + std::to_string(attempts_) + (attempts_ == 1 ? " attempt" : " attempts") + " in " +
                     seconds + " s";
  char limit[32];
  std::snprintf(limit, sizeof limit, "%g", std::chrono::duration<double>(options_.deadline).count());
  if (Clock::now() >= deadline_) {
    text += "; the transfer deadline of " + std::string(limit) + " s passed";
  } else if (deadline_hit_) {
    text += "; the next attempt would start after the transfer deadline of " + std::string(limit) + " s";
  }
  return text;
}

std::string host_key(const std::string& url) {
  CURLU* u = curl_url();
  if (u == nullptr) return "";
  std::string key;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char* host = nullptr;
    char* port = nullptr;
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) key = host;
    if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) key += std::string(":") + port;
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(u);
  return key;
}

std::string origin(const std::string& url) {
  CURLU* u = curl_url();
  if (u == nullptr) return "";
  std::string key;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char* scheme = nullptr;
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK && scheme != nullptr) key = scheme;
    curl_free(scheme);
  }
  curl_url_cleanup(u);
  std::string host = host_key(url);
  if (key.empty() || host.empty()) return "";
  key += "://" + host;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return key;
}

void set_url(CURL* easy, const std::string& url) {
  set(easy, CURLOPT_URL, url.c_str());
  const bool tls = url.size() >= 8 && std::equal(url.begin(), url.begin() + 8, "https://", [](char a, char b) {
                     return std::tolower(static_cast<unsigned char>(a)) == b;
                   });
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

bool parse_header_line(std::string_view line, std::string& name, std::string& value) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const auto colon = line.find(':');
  if (line.empty() || line.rfind("HTTP/", 0) == 0 || colon == std::string_view::npos) return false;
  name.assign(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  auto rest = line.substr(colon + 1);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
  value.assign(rest);
  return true;
}

}  // namespace podplane::mirror::transport
