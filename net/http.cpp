#include "net/http.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <thread>

#include "base/ascii.hpp"
#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "net/curl_handles.hpp"
#include "net/transport.hpp"

namespace podplane::net {

const char* to_string(Method method) {
  switch (method) {
    case Method::get: return "GET";
    case Method::head: return "HEAD";
    case Method::post: return "POST";
    case Method::put: return "PUT";
    case Method::patch: return "PATCH";
    case Method::delete_: return "DELETE";
  }
  return "GET";
}

RequestBody RequestBody::bytes(std::string_view bytes) {
  RequestBody body;
  body.bytes_ = bytes;
  return body;
}

RequestBody RequestBody::file_range(std::filesystem::path file, std::uint64_t offset, std::uint64_t length) {
  RequestBody body;
  body.file_ = std::move(file);
  body.offset_ = offset;
  body.length_ = length;
  return body;
}

std::string HttpResponse::content_type() const {
  auto it = headers.find("content-type");
  if (it == headers.end()) return "";
  std::string type = it->second.substr(0, it->second.find(';'));
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.back()))) type.pop_back();
  type = ascii_lower(type);
  return type;
}

std::string HttpResponse::header(const std::string& lower_case_name) const {
  auto it = headers.find(lower_case_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string HttpResponse::status_text() const {
  return "HTTP " + std::to_string(status) + (attempts > 1 ? " (after " + std::to_string(attempts) + " attempts)" : "");
}

struct HttpClient::Impl {
  HttpOptions options;
  transport::CurlEasy easy;  // kept across calls so its connection cache is reused
};

namespace {

// The state of one attempt, shared with the callbacks. No exception may cross libcurl: each
// callback catches, records the failure here and returns the value that aborts the transfer.
struct Exchange {
  HttpResponse* response = nullptr;
  std::size_t limit = 0;
  bool too_big = false;
  std::string callback_error;
  // The request body: memory, or a file read with pread at offset + position.
  const RequestBody* body = nullptr;
  int fd = -1;
  std::uint64_t position = 0;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  const size_t n = size * count;
  return transport::without_exceptions(exchange->callback_error, [&]() -> size_t {
    if (exchange->response->body.size() + n > exchange->limit) {
      exchange->too_big = true;
      return 0;  // aborts the transfer
    }
    exchange->response->body.append(data, n);
    return n;
  });
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  const size_t n = size * count;
  return transport::without_exceptions(exchange->callback_error, [&]() -> size_t {
    std::string_view line(data, n);
    // Each response of a redirect chain starts with a status line; keep the last one's headers.
    if (line.rfind("HTTP/", 0) == 0) exchange->response->headers.clear();
    std::string name, value;
    if (transport::parse_header_line(line, name, value)) {
      auto [it, inserted] = exchange->response->headers.emplace(name, value);
      if (!inserted) it->second += ", " + value;
    }
    return n;
  });
}

size_t on_read(char* buffer, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  const RequestBody& body = *exchange->body;
  const std::uint64_t left = body.size() - std::min(exchange->position, body.size());
  const size_t want = static_cast<size_t>(std::min<std::uint64_t>(size * count, left));
  if (want == 0) return 0;
  if (!body.file()) {
    std::memcpy(buffer, body.in_memory().data() + exchange->position, want);
    exchange->position += want;
    return want;
  }
  for (;;) {
    const ssize_t got = ::pread(exchange->fd, buffer, want, static_cast<off_t>(body.offset() + exchange->position));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      exchange->callback_error = "cannot read " + body.file()->string() + ": " +
                                 (got < 0 ? std::strerror(errno) : "the file is shorter than the request body");
      return CURL_READFUNC_ABORT;
    }
    exchange->position += static_cast<std::uint64_t>(got);
    return static_cast<size_t>(got);
  }
}

// libcurl rewinds the body when it must send it again on the same attempt (a redirect, an
// authentication round); retries open a new Exchange.
int on_seek(void* user, curl_off_t offset, int origin) {
  auto* exchange = static_cast<Exchange*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<std::uint64_t>(offset) > exchange->body->size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  exchange->position = static_cast<std::uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

void set_method(CURL* easy, const HttpRequest& request, Exchange& exchange) {
  using transport::set;
  const auto size = static_cast<curl_off_t>(request.body.size());
  switch (request.method) {
    case Method::get:
    case Method::head:
      if (!request.body.empty()) throw Error(std::string(to_string(request.method)) + " with a body is not supported");
      if (request.method == Method::head) set(easy, CURLOPT_NOBODY, 1L);
      // Documents only: gzip is welcome. Never for uploads, whose answers are small.
      set(easy, CURLOPT_ACCEPT_ENCODING, "");
      set(easy, CURLOPT_FOLLOWLOCATION, 1L);
      return;
    case Method::delete_:
      if (!request.body.empty()) throw Error("DELETE with a body is not supported");
      set(easy, CURLOPT_CUSTOMREQUEST, "DELETE");
      return;
    case Method::post:
      set(easy, CURLOPT_POST, 1L);
      set(easy, CURLOPT_POSTFIELDSIZE_LARGE, size);
      break;
    case Method::put:
    case Method::patch:
      set(easy, CURLOPT_UPLOAD, 1L);
      set(easy, CURLOPT_INFILESIZE_LARGE, size);
      if (request.method == Method::patch) set(easy, CURLOPT_CUSTOMREQUEST, "PATCH");
      break;
  }
  set(easy, CURLOPT_READFUNCTION, on_read);
  set(easy, CURLOPT_READDATA, &exchange);
  set(easy, CURLOPT_SEEKFUNCTION, on_seek);
  set(easy, CURLOPT_SEEKDATA, &exchange);
}

}  // namespace

HttpClient::HttpClient(HttpOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = std::move(options); }
HttpClient::~HttpClient() = default;
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;

const HttpOptions& HttpClient::options() const { return impl_->options; }

HttpResponse HttpClient::get(const std::string& url, const std::vector<std::string>& headers) {
  HttpRequest request;
  request.url = url;
  request.headers = headers;
  return send(request);
}

HttpResponse HttpClient::send(const HttpRequest& request) {
  using transport::set;
  const auto& options = impl_->options;
  const std::string shown_url = redact_url(request.url);
  // "cannot fetch URL: …" for a GET, "cannot PUT URL: …" for the others.
  const std::string what =
      (request.method == Method::get ? std::string("fetch") : std::string(to_string(request.method))) + " " + shown_url;
  transport::RetryBudget budget(options);
  for (;;) {
    HttpResponse response;
    Exchange exchange{&response, options.max_body_bytes, false, {}, &request.body, -1, 0};
    UniqueFd file;
    if (request.body.file()) {
      file = UniqueFd(::open(request.body.file()->c_str(), O_RDONLY | O_CLOEXEC));
      if (!file) {
        throw Error("cannot read " + request.body.file()->string() + " to " + what + ": " + std::strerror(errno));
      }
      exchange.fd = file.get();
    }
    char error_buffer[CURL_ERROR_SIZE] = {0};
    CURL* easy = impl_->easy.get();
    curl_easy_reset(easy);
    transport::apply_common_options(easy, options);
    transport::CurlSlist header_list;
    for (const auto& header : request.headers) header_list.append(header);
    // No 100-continue round trip before each upload. Not when signing: libcurl 7.88 would sign
    // the empty "expect:" it never sends, and the server would refuse the signature.
    if ((!request.body.empty() || request.method == Method::post) && !request.aws_sigv4) header_list.append("Expect:");
    if (request.aws_sigv4) {
      const auto& sigv4 = *request.aws_sigv4;
      set(easy, CURLOPT_AWS_SIGV4, ("aws:amz:" + sigv4.region + ":" + sigv4.service).c_str());
      set(easy, CURLOPT_USERNAME, sigv4.access_key_id.c_str());
      set(easy, CURLOPT_PASSWORD, sigv4.secret_access_key.c_str());
    }
    transport::set_url(easy, request.url);
    set(easy, CURLOPT_HTTPHEADER, header_list.get());
    set_method(easy, request, exchange);
    set(easy, CURLOPT_WRITEFUNCTION, on_body);
    set(easy, CURLOPT_WRITEDATA, &exchange);
    set(easy, CURLOPT_HEADERFUNCTION, on_header);
    set(easy, CURLOPT_HEADERDATA, &exchange);
    set(easy, CURLOPT_ERRORBUFFER, error_buffer);
    set(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(budget.time_left().count()));
    const CURLcode code = curl_easy_perform(easy);
    // The buffer dies with this scope. Clearing a pointer cannot fail, and a throw here would
    // hide the transfer's own result.
    (void)curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
    if (exchange.too_big) {
      throw Error("response from " + shown_url + " is larger than " + std::to_string(options.max_body_bytes) + " bytes");
    }
    if (!exchange.callback_error.empty()) throw Error("cannot " + what + ": " + exchange.callback_error);
    if (code == CURLE_OK) {
      transport::check(curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &response.status), "no response status");
      char* effective = nullptr;
      if (curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &effective) != CURLE_OK || effective == nullptr) {
        effective = nullptr;
      }
      response.final_url = effective != nullptr ? effective : request.url;
      response.attempts = budget.attempts() + 1;
      if (!transport::is_transient_status(response.status)) return response;
      std::optional<std::chrono::milliseconds> retry_after;
      if (auto it = response.headers.find("retry-after"); it != response.headers.end()) {
        retry_after = transport::parse_retry_after(it->second);
      }
      const auto wait = budget.next(transport::RetryBudget::Attempt::failed, retry_after);
      if (!wait) return response;  // the caller says what the last status means
      std::this_thread::sleep_for(*wait);
      continue;
    }
    const std::string reason = transport::describe(code, error_buffer);
    if (!transport::is_transient_error(code)) {
      throw Error("cannot " + what + ": " + reason +
                  (budget.attempts() > 0 ? " (after " + std::to_string(budget.attempts() + 1) + " attempts)" : ""));
    }
    // In memory there is nothing to resume: a cut-off body is a failed attempt like any other.
    const auto wait = budget.next(transport::RetryBudget::Attempt::failed);
    if (!wait) throw Error("cannot " + what + ": " + reason + " (" + budget.summary() + ")");
    std::this_thread::sleep_for(*wait);
  }
}

std::string redact_url(std::string_view text) {
  static const std::regex userinfo(R"(([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@)");
  return std::regex_replace(std::string(text), userinfo, "$1");
}

std::string resolve_url(const std::string& base, const std::string& reference) {
  transport::CurlUrl url;
  if (!url.set(base)) {
    throw Error("cannot resolve " + redact_url(reference) + ": the base URL " +
                redact_url(base) + " is not a valid URL");
  }
  auto resolved = url.set(reference) ? url.part(CURLUPART_URL) : std::nullopt;
  if (!resolved) throw Error("cannot resolve " + redact_url(reference) + " against " + redact_url(base));
  return *resolved;
}

}  // namespace podplane::net
