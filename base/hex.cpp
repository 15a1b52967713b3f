#include "base/hex.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace podplane {

std::string to_hex(std::string_view raw) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    hex.push_back(digits[c >> 4]);
    hex.push_back(digits[c & 15]);
  }
  return hex;
}

std::string from_hex(std::string_view hex) {
  auto value = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw Error("invalid hex digit '" + std::string(1, c) + "'");
  };
  if (hex.size() % 2 != 0) throw Error("hex text of odd length " + std::to_string(hex.size()));
  std::string raw;
  raw.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) raw.push_back(static_cast<char>(value(hex[i]) * 16 + value(hex[i + 1])));
  return raw;
}

bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

bool is_lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_sha256_hex(std::string_view text) { return text.size() == 64 && is_lower_hex(text); }

std::string base64_encode(std::string_view raw) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((raw.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t at) { return static_cast<unsigned>(static_cast<unsigned char>(raw[at])); };
  for (; i + 3 <= raw.size(); i += 3) {
    unsigned n = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out += {alphabet[(n >> 18) & 63], alphabet[(n >> 12) & 63], alphabet[(n >> 6) & 63], alphabet[n & 63]};
  }
  if (raw.size() - i == 1) {
    unsigned n = byte(i) << 16;
    out += {alphabet[(n >> 18) & 63], alphabet[(n >> 12) & 63], '=', '='};
  } else if (raw.size() - i == 2) {
    unsigned n = (byte(i) << 16) | (byte(i + 1) << 8);
    out += {alphabet[(n >> 18) & 63], alphabet[(n >> 12) & 63], alphabet[(n >> 6) & 63], '='};
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  unsigned bits = 0;
  int count = 0;
  for (char c : text) {
    int v = value(c);
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

}  // namespace podplane
