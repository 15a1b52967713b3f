#pragma once
// HTTP(S) for every single request podplane makes, on libcurl (OpenSSL): registry, mirror and
// vmconfig documents, module locations, and `mirror push` to an OCI registry. The download
// engine (net/download.hpp) streams files under the same policy (net/transport.hpp):
// TLS trust from SSL_CERT_FILE / SSL_CERT_DIR (or HttpOptions::ca_file), only http and https
// (redirects too), proxies from the standard variables (http_proxy, https_proxy, no_proxy, …),
// a connect timeout, a low-speed limit, an overall deadline, and a bounded retry budget with
// jittered backoff (docs/download.md "Retry budgets"). Never logs a credential: headers passed
// in are not printed anywhere, and URLs in messages lose any user:password@.
// An HttpClient is not thread-safe; use one per thread.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http_options.hpp"

namespace podplane::net {

enum class Method { get, head, post, put, patch, delete_ };
[[nodiscard]] const char* to_string(Method method);  // "GET", "HEAD", …

// What a request sends: nothing, bytes that the caller keeps alive during the call, or a range
// of a file (opened and read again from the range's start on every attempt).
class RequestBody {
 public:
  RequestBody() = default;  // no body
  [[nodiscard]] static RequestBody bytes(std::string_view bytes);
  [[nodiscard]] static RequestBody file_range(std::filesystem::path file, std::uint64_t offset, std::uint64_t length);

  [[nodiscard]] bool empty() const { return !file_ && bytes_.empty(); }
  [[nodiscard]] std::uint64_t size() const { return file_ ? length_ : bytes_.size(); }
  [[nodiscard]] std::string_view in_memory() const { return bytes_; }
  [[nodiscard]] const std::optional<std::filesystem::path>& file() const { return file_; }
  [[nodiscard]] std::uint64_t offset() const { return offset_; }

 private:
  std::string_view bytes_;
  std::optional<std::filesystem::path> file_;
  std::uint64_t offset_ = 0;
  std::uint64_t length_ = 0;
};

// AWS Signature Version 4, computed by libcurl (CURLOPT_AWS_SIGV4) on every attempt. libcurl
// 7.88 signs the path and query as written (the caller encodes and sorts them) and takes the
// payload hash from an "x-amz-content-sha256" header, which the caller must send.
struct AwsSigV4 {
  std::string region;   // "us-east-1"
  std::string service;  // "s3"
  std::string access_key_id;
  std::string secret_access_key;  // never printed
};

struct HttpRequest {
  Method method = Method::get;
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; never printed
  RequestBody body;
  std::optional<AwsSigV4> aws_sigv4;  // signed when set
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string final_url;                       // after redirects
  int attempts = 1;                            // requests made for this response
  std::string content_type() const;            // media type without parameters, lower-cased
  std::string header(const std::string& lower_case_name) const;  // "" when absent
  // "HTTP 503", with "(after 3 attempts)" when it was retried: the end of an error message.
  std::string status_text() const;
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options = {});
  ~HttpClient();
  HttpClient(HttpClient&&) noexcept;
  HttpClient& operator=(HttpClient&&) noexcept;

  // Sends the request. GET and HEAD follow redirects; other methods do not. Transient failures
  // (408, 429, 5xx other than 501/505, resets, timeouts, cut-off bodies) are retried within the
  // budget; the final response is returned whatever its status (callers decide what a 404 or a
  // last 503 means). Throws podplane::Error naming the (redacted) URL and the reason when no
  // response could be had, or when the body exceeds max_body_bytes.
  [[nodiscard]] HttpResponse send(const HttpRequest& request);

  // send() of a GET.
  [[nodiscard]] HttpResponse get(const std::string& url, const std::vector<std::string>& headers = {});

  [[nodiscard]] const HttpOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Drops any "user:password@" after a scheme, anywhere in `text` (a URL, or a program's output
// that quotes one): "https://user:secret@host/x" → "https://host/x". For every message.
[[nodiscard]] std::string redact_url(std::string_view text);

// RFC 3986 reference resolution (relative download_url, X-Terraform-Get, mirror urls).
[[nodiscard]] std::string resolve_url(const std::string& base, const std::string& reference);

}  // namespace podplane::net
