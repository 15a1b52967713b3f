#include "net/transport.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <random>
#include <utility>

#include "base/ascii.hpp"
#include "base/error.hpp"
#include "base/url.hpp"
#include "net/curl_handles.hpp"

namespace podplane::net::transport {

bool is_transient_status(long status) {
  return status == 408 || status == 429 || (status >= 500 && status <= 599 && status != 501 && status != 505);
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
  const auto parts = split_url(url);
  return parts ? host_with_port(*parts) : "";
}

std::string origin(const std::string& url) {
  const auto parts = split_url(url);
  return parts ? parts->scheme + "://" + host_with_port(*parts) : "";
}

bool parse_header_line(std::string_view line, std::string& name, std::string& value) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const auto colon = line.find(':');
  if (line.empty() || line.rfind("HTTP/", 0) == 0 || colon == std::string_view::npos) return false;
  name.assign(line.substr(0, colon));
  name = ascii_lower(name);
  auto rest = line.substr(colon + 1);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
  value.assign(rest);
  return true;
}

}  // namespace podplane::net::transport
