#pragma once
// Splitting text at one separator, the way every path, address and pattern of ours is split.
#include <string>
#include <string_view>
#include <vector>

namespace podplane {

// Every part between separators, empty ones included: "a//b" → {"a", "", "b"}, "" → {""}.
[[nodiscard]] inline std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

}  // namespace podplane
