#pragma once
// ASCII case folding, the one kind protocols use (scheme and host names, header names, hex
// digits, HCL identifiers): locale-free, each byte as unsigned char, no other byte changed.
#include <algorithm>
#include <string>
#include <string_view>

namespace podplane {

[[nodiscard]] inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

[[nodiscard]] inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) { return ascii_lower(c); });
  return out;
}

[[nodiscard]] inline bool ascii_iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

[[nodiscard]] inline bool ascii_istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && ascii_iequals(text.substr(0, prefix.size()), prefix);
}

}  // namespace podplane
