#include "net/http_options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/error.hpp"

namespace podplane::net {

namespace {

// "90", "90s", "250ms", "5m", "1h" → milliseconds; a bare number is seconds.
std::chrono::milliseconds parse_duration(const char* name, std::string_view text) {
  std::uint64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::uint64_t scale = 0;
  if (unit.empty() || unit == "s") scale = 1000;
  if (unit == "ms") scale = 1;
  if (unit == "m") scale = 60 * 1000;
  if (unit == "h") scale = 3600 * 1000;
  constexpr std::uint64_t kMaxMs = 100ULL * 24 * 3600 * 1000;  // 100 days: far beyond any transfer
  if (ec != std::errc() || end == text.data() || scale == 0 || number > kMaxMs / scale) {
    throw UsageError(std::string(name) + " must be a duration such as 30s, 250ms, 5m or 1h (at most 100 days); got \"" +
                     std::string(text) + "\"");
  }
  return std::chrono::milliseconds(number * scale);
}

long parse_count(const char* name, std::string_view text, long max) {
  long number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end != text.data() + text.size() || number < 0 || number > max) {
    throw UsageError(std::string(name) + " must be a whole number from 0 to " + std::to_string(max) + "; got \"" +
                     std::string(text) + "\"");
  }
  return number;
}

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

}  // namespace

HttpOptions HttpOptions::from_environment() {
  HttpOptions options;
  if (const char* v = env("PODPLANE_HTTP_RETRIES")) options.max_retries = static_cast<int>(parse_count("PODPLANE_HTTP_RETRIES", v, 100));
  if (const char* v = env("PODPLANE_HTTP_RESUMES")) options.max_resumes = static_cast<int>(parse_count("PODPLANE_HTTP_RESUMES", v, 1000));
  if (const char* v = env("PODPLANE_HTTP_BACKOFF")) options.initial_backoff = parse_duration("PODPLANE_HTTP_BACKOFF", v);
  if (const char* v = env("PODPLANE_HTTP_MAX_WAIT")) options.max_retry_wait = parse_duration("PODPLANE_HTTP_MAX_WAIT", v);
  if (const char* v = env("PODPLANE_HTTP_DEADLINE")) options.deadline = parse_duration("PODPLANE_HTTP_DEADLINE", v);
  if (const char* v = env("PODPLANE_HTTP_CONNECT_TIMEOUT")) {
    options.connect_timeout = parse_duration("PODPLANE_HTTP_CONNECT_TIMEOUT", v);
  }
  if (const char* v = env("PODPLANE_HTTP_LOW_SPEED_TIME")) {
    // libcurl counts the low-speed window in whole seconds: round up, at least one.
    const auto time = parse_duration("PODPLANE_HTTP_LOW_SPEED_TIME", v);
    options.low_speed_timeout = std::max(std::chrono::seconds(1), std::chrono::ceil<std::chrono::seconds>(time));
  }
  if (const char* v = env("PODPLANE_HTTP_LOW_SPEED_LIMIT")) {
    options.low_speed_limit = std::max(1L, parse_count("PODPLANE_HTTP_LOW_SPEED_LIMIT", v, 1L << 40));
  }
  if (const char* v = env("PODPLANE_HTTP_MAX_DOWNLOAD")) {
    options.max_download_bytes = std::max(1L, parse_count("PODPLANE_HTTP_MAX_DOWNLOAD", v, 1L << 50));
  }
  if (options.deadline.count() == 0) throw UsageError("PODPLANE_HTTP_DEADLINE must be more than 0");
  return options;
}

}  // namespace podplane::net
