#include "base/clock.hpp"

#include <time.h>

#include <string>

namespace podplane {

namespace {

std::string format_utc(std::time_t when, const char* format) {
  std::tm utc{};
  if (gmtime_r(&when, &utc) == nullptr) return "";  // only for years beyond int: never a real clock
  char text[64];
  std::size_t length = std::strftime(text, sizeof text, format, &utc);
  return std::string(text, length);
}

}  // namespace

std::string utc_timestamp(std::time_t when) { return format_utc(when, "%Y-%m-%dT%H:%M:%SZ"); }

std::string utc_timestamp_now() { return utc_timestamp(std::time(nullptr)); }

std::string utc_file_stamp(std::time_t when) { return format_utc(when, "%Y%m%dT%H%M%SZ"); }

std::optional<std::time_t> parse_utc_timestamp(std::string_view text) {
  const std::string copy(text);  // strptime needs a NUL-terminated string
  std::tm tm{};
  const char* end = strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0' || copy.size() != 20) return std::nullopt;
  return timegm(&tm);
}

}  // namespace podplane
