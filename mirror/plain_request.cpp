#include "mirror/plain_request.hpp"

#include <array>

namespace podplane::mirror {

namespace {

// Longer targets go to cpp-httplib, where serve.cpp refuses those over 2048 bytes.
constexpr std::size_t kLongestTarget = 2048;

// RFC 9110 §5.6.2 token characters.
bool token_char(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::string_view("!#$&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// A path as cpp-httplib would leave it undecoded: visible ASCII, no escape, query or fragment.
bool plain_target(std::string_view target) {
  if (target.empty() || target.size() > kLongestTarget || target.front() != '/') return false;
  for (unsigned char c : target) {
    if (c <= 0x20 || c >= 0x7f || c == '%' || c == '?' || c == '#' || c == '\\') return false;
  }
  return true;
}

bool same_ignoring_case(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c | 0x20);
    if (c != lower[i]) return false;
  }
  return true;
}

// Headers that do not change the answer to a GET or HEAD of a document here: cpp-httplib
// does not compress an answer of known length, and the mirror negotiates nothing.
// X-Terraform-Version is what terraform's and tofu's registry clients add to their requests.
constexpr std::array<std::string_view, 8> kIgnored{"host", "user-agent", "accept", "accept-encoding", "accept-language",
                                                   "cache-control", "pragma", "x-terraform-version"};

std::string_view trimmed(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

}  // namespace

std::optional<PlainRequest> parse_plain_request(std::string_view bytes) {
  PlainRequest request;
  if (bytes.starts_with("GET ")) {
    bytes.remove_prefix(4);
  } else if (bytes.starts_with("HEAD ")) {
    request.head = true;
    bytes.remove_prefix(5);
  } else {
    return std::nullopt;
  }
  auto space = bytes.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  request.target = bytes.substr(0, space);
  if (!plain_target(request.target)) return std::nullopt;
  bytes.remove_prefix(space + 1);
  if (!bytes.starts_with("HTTP/1.1\r\n")) return std::nullopt;
  bytes.remove_prefix(10);

  bool connection_seen = false;
  while (true) {
    auto end = bytes.find("\r\n");
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view line = bytes.substr(0, end);
    bytes.remove_prefix(end + 2);
    if (line.empty()) return bytes.empty() ? std::optional(request) : std::nullopt;
    auto colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) return std::nullopt;
    std::string_view name = line.substr(0, colon);
    for (unsigned char c : name)
      if (!token_char(c)) return std::nullopt;
    std::string_view value = line.substr(colon + 1);
    for (unsigned char c : value)
      if ((c < 0x20 && c != '\t') || c == 0x7f) return std::nullopt;
    value = trimmed(value);
    if (same_ignoring_case(name, "connection")) {
      // cpp-httplib reads the first Connection header, exactly "close"; one is all we take.
      if (connection_seen) return std::nullopt;
      connection_seen = true;
      if (value == "close") request.close = true;
      else if (value != "keep-alive" && value != "Keep-Alive") return std::nullopt;
      continue;
    }
    bool ignored = false;
    for (auto known : kIgnored) ignored = ignored || same_ignoring_case(name, known);
    if (!ignored) return std::nullopt;
  }
}

}  // namespace podplane::mirror
