#include "mirror/http.hpp"

#include <algorithm>
#include <cctype>
#include <thread>

#include "lockfile/error.hpp"
#include "mirror/transport.hpp"

namespace podplane::mirror {

std::string HttpResponse::content_type() const {
  auto it = headers.find("content-type");
  if (it == headers.end()) return "";
  std::string type = it->second.substr(0, it->second.find(';'));
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.back()))) type.pop_back();
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  return type;
}

struct HttpClient::Impl {
  HttpOptions options;
  transport::CurlEasy easy;  // kept across calls so its connection cache is reused
};

namespace {

struct Capture {
  HttpResponse* response = nullptr;
  std::size_t limit = 0;
  bool too_big = false;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* capture = static_cast<Capture*>(user);
  const size_t n = size * count;
  if (capture->response->body.size() + n > capture->limit) {
    capture->too_big = true;
    return 0;  // aborts the transfer
  }
  capture->response->body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* capture = static_cast<Capture*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  // Each response of a redirect chain starts with a status line; keep the last one's headers.
  if (line.rfind("HTTP/", 0) == 0) capture->response->headers.clear();
  std::string name, value;
  if (transport::parse_header_line(line, name, value)) {
    auto [it, inserted] = capture->response->headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }
  return n;
}

}  // namespace

HttpClient::HttpClient(HttpOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = std::move(options); }
HttpClient::~HttpClient() = default;
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;

HttpResponse HttpClient::get(const std::string& url, const std::vector<std::string>& headers) {
  const auto& options = impl_->options;
  for (int attempt = 0;; ++attempt) {
    HttpResponse response;
    Capture capture{&response, options.max_body_bytes, false};
    char error_buffer[CURL_ERROR_SIZE] = {0};
    CURL* easy = impl_->easy.get();
    curl_easy_reset(easy);
    transport::apply_common_options(easy, options);
    transport::CurlSlist header_list;
    for (const auto& header : headers) header_list.append(header);
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, header_list.get());
    curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");  // documents only: gzip is welcome
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &capture);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &capture);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
    const CURLcode code = curl_easy_perform(easy);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
    if (capture.too_big) {
      throw Error("response from " + transport::redact_url(url) + " is larger than " +
                  std::to_string(options.max_body_bytes) + " bytes");
    }
    const bool retries_left = attempt < options.max_retries;
    if (code == CURLE_OK) {
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &response.status);
      char* effective = nullptr;
      curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &effective);
      response.final_url = effective != nullptr ? effective : url;
      if (transport::is_transient_status(response.status) && retries_left) {
        std::optional<std::chrono::milliseconds> retry_after;
        if (auto it = response.headers.find("retry-after"); it != response.headers.end()) {
          retry_after = transport::parse_retry_after(it->second);
        }
        std::this_thread::sleep_for(transport::retry_delay(attempt + 1, options, retry_after));
        continue;
      }
      return response;
    }
    if (transport::is_transient_error(code) && retries_left) {
      std::this_thread::sleep_for(transport::retry_delay(attempt + 1, options, std::nullopt));
      continue;
    }
    throw Error("cannot fetch " + transport::redact_url(url) + ": " + transport::describe(code, error_buffer) +
                (attempt > 0 ? " (after " + std::to_string(attempt + 1) + " attempts)" : ""));
  }
}

std::string resolve_url(const std::string& base, const std::string& reference) {
  CURLU* u = curl_url();
  if (u == nullptr) throw Error("out of memory resolving " + reference);
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> guard(u, curl_url_cleanup);
  if (curl_url_set(u, CURLUPART_URL, base.c_str(), 0) != CURLUE_OK) {
    throw Error("cannot resolve " + transport::redact_url(reference) + ": the base URL " +
                transport::redact_url(base) + " is not a valid URL");
  }
  // With a URL already in the handle, libcurl resolves a relative reference against it
  // (RFC 3986 §5, dot segments removed).
  if (curl_url_set(u, CURLUPART_URL, reference.c_str(), 0) != CURLUE_OK) {
    throw Error("cannot resolve " + transport::redact_url(reference) + " against " + transport::redact_url(base));
  }
  char* out = nullptr;
  if (curl_url_get(u, CURLUPART_URL, &out, 0) != CURLUE_OK || out == nullptr) {
    throw Error("cannot resolve " + transport::redact_url(reference) + " against " + transport::redact_url(base));
  }
  std::string resolved = out;
  curl_free(out);
  return resolved;
}

}  // namespace podplane::mirror
