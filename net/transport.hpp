#pragma once
// What HttpClient and Downloader share that needs no libcurl type: the retry policy
// (RetryBudget, which failures are worth another attempt, Retry-After), the exception fence of
// transfer callbacks, and URL and header helpers. The libcurl handles and options themselves
// are in net/curl_handles.hpp, private to net/, so that no includer of a net/ header sees
// <curl/curl.h>. Thread-compatible.
#include <chrono>
#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "net/http_options.hpp"

namespace podplane::net::transport {

using Clock = std::chrono::steady_clock;

// Worth another attempt: 408, 429 and 5xx other than 501/505.
[[nodiscard]] bool is_transient_status(long status);
// A Retry-After header value (delta-seconds or an HTTP date) as a wait from now.
[[nodiscard]] std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value);

// The wait before retry number `retry` (1 = the first retry): Retry-After when the server gave
// one, else initial_backoff * 2^(retry-1) with ±50% jitter; both capped at max_retry_wait.
[[nodiscard]] std::chrono::milliseconds retry_delay(int retry, const HttpOptions& options,
                                                    std::optional<std::chrono::milliseconds> retry_after);

// The retry budget of one request or download item (docs/download.md "Retry budgets"): at
// most 1 + max_retries failed attempts, max_resumes free resumes of a transfer cut off after
// new bytes, and every attempt and wait within `deadline` of the first attempt's start.
class RetryBudget {
 public:
  enum class Attempt {
    failed,   // no usable progress: an error status, a stall, a restart from zero, …
    resumed,  // cut off after bringing new bytes; the next attempt asks only for the rest
  };
  explicit RetryBudget(const HttpOptions& options);

  // Records an attempt that did not complete. Returns the wait before the next attempt, or
  // nullopt when the budget is spent (more failures than max_retries, or the deadline would
  // pass first); spent() then says why.
  [[nodiscard]] std::optional<std::chrono::milliseconds> next(
      Attempt attempt, std::optional<std::chrono::milliseconds> retry_after = std::nullopt);

  // What is left of the deadline, at least 1 ms: CURLOPT_TIMEOUT_MS of the next attempt.
  [[nodiscard]] std::chrono::milliseconds time_left() const;
  [[nodiscard]] int attempts() const { return attempts_; }
  // "after 3 attempts in 1.2 s" (+ "; the transfer deadline of 2 s passed" when it did), for
  // the end of an error message.
  [[nodiscard]] std::string summary() const;

 private:
  HttpOptions options_;
  Clock::time_point start_;
  Clock::time_point deadline_;
  int attempts_ = 0;
  int failures_ = 0;
  int resumes_ = 0;
  bool deadline_hit_ = false;
};

// Runs the body of a libcurl write or header callback so that no exception crosses into
// libcurl: an exception's text goes to `failure` (the caller reports it once the libcurl call
// has returned) and the callback returns 0, which aborts the transfer.
template <typename Body>
size_t without_exceptions(std::string& failure, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& error) {
    failure = error.what();
  } catch (...) {
    failure = "a transfer callback failed";
  }
  return 0;
}

// "host:port" of a URL, the default port filled in (base/url.hpp host_with_port), for per-host
// limits ("" when it does not parse).
[[nodiscard]] std::string host_key(const std::string& url);

// "scheme://host:port" of a URL, lower-cased, the default port filled in ("" when it does not
// parse): whom a login may be sent to (the same origin as the registry's, nothing else).
[[nodiscard]] std::string origin(const std::string& url);

// Splits one raw header line into a lower-cased name and a trimmed value; false for status
// lines and the blank end-of-headers line.
bool parse_header_line(std::string_view line, std::string& name, std::string& value);

}  // namespace podplane::net::transport
