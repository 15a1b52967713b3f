#pragma once
// Byte counts for people: "512 B", "1.5 KiB", "4.0 GiB" (binary units, one decimal above
// bytes). Every listing, plan, progress line and error that shows a size uses this one.
#include <cstdint>
#include <cstdio>
#include <string>

namespace podplane {

inline std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace podplane
