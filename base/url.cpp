#include "base/url.hpp"

#include <algorithm>
#include <cctype>

#include "base/ascii.hpp"

namespace podplane {

namespace {

bool is_scheme(std::string_view text) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto scheme_char = [&](char c) { return letter(c) || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'; };
  return !text.empty() && letter(text.front()) && std::all_of(text.begin(), text.end(), scheme_char);
}

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

bool valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  return std::stoi(std::string(port)) <= 65535;
}

// What follows "scheme://", or `url` itself when it has no scheme.
std::string_view after_scheme(std::string_view url) {
  const auto scheme = url_scheme(url);
  return scheme.empty() ? url : url.substr(scheme.size() + 3);
}

}  // namespace

std::string_view url_scheme(std::string_view url) {
  const auto colon = url.find("://");
  if (colon == std::string_view::npos || !is_scheme(url.substr(0, colon))) return {};
  return url.substr(0, colon);
}

std::optional<UrlParts> split_url(std::string_view url) {
  const auto scheme = url_scheme(url);
  if (scheme.empty()) return std::nullopt;
  UrlParts parts;
  parts.scheme = ascii_lower(scheme);
  std::string_view rest = after_scheme(url);
  const auto authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  std::string_view authority = rest.substr(0, authority_end);
  rest.remove_prefix(authority_end);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    parts.userinfo = std::string(authority.substr(0, at));
    authority.remove_prefix(at + 1);
  }
  // An IPv6 literal's colons are not the port's.
  const auto bracket = authority.rfind(']');
  const auto port_colon = authority.rfind(':');
  if (port_colon != std::string_view::npos && (bracket == std::string_view::npos || port_colon > bracket)) {
    parts.port = std::string(authority.substr(port_colon + 1));
    authority = authority.substr(0, port_colon);
  }
  parts.host = ascii_lower(authority);
  if (parts.host.empty()) return std::nullopt;
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) {
    parts.fragment = std::string(rest.substr(hash + 1));
    rest = rest.substr(0, hash);
  }
  if (const auto question = rest.find('?'); question != std::string_view::npos) {
    parts.query = std::string(rest.substr(question + 1));
    rest = rest.substr(0, question);
  }
  parts.path = std::string(rest);
  return parts;
}

std::string default_port(std::string_view scheme) {
  if (scheme == "https" || scheme == "oci") return "443";
  if (scheme == "http") return "80";
  return "";
}

std::string authority(const UrlParts& url) { return url.port.empty() ? url.host : url.host + ":" + url.port; }

bool valid_authority(std::string_view text) {
  if (text.empty() || text.size() > 300) return false;
  std::string_view host = text;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close < 2) return false;
    host = text.substr(1, close - 1);
    auto v6_char = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; };
    if (!std::all_of(host.begin(), host.end(), v6_char)) return false;
    const auto rest = text.substr(close + 1);
    return rest.empty() || (rest.front() == ':' && valid_port(rest.substr(1)));
  }
  if (const auto colon = text.find(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    if (!valid_port(text.substr(colon + 1))) return false;
  }
  return !host.empty() && std::all_of(host.begin(), host.end(), is_host_char) && host.front() != '-' && host.front() != '.';
}

std::string authority_and_path_as_written(std::string_view url) {
  const auto rest = after_scheme(url);
  return std::string(rest.substr(0, std::min(rest.find_first_of("?#"), rest.size())));
}

std::string host_as_written(const UrlParts& url) {
  if (url.port.empty() || url.port == default_port(url.scheme)) return url.host;
  return url.host + ":" + url.port;
}

std::string host_with_port(const UrlParts& url) {
  const std::string port = url.port.empty() ? default_port(url.scheme) : url.port;
  return port.empty() ? url.host : url.host + ":" + port;
}

bool has_http_scheme(std::string_view url) {
  return ascii_istarts_with(url, "http://") || ascii_istarts_with(url, "https://");
}

std::string url_path(std::string_view url) {
  if (auto parts = split_url(url)) return parts->path;
  return std::string(url.substr(0, std::min(url.find_first_of("?#"), url.size())));
}

std::string url_basename(std::string_view url) {
  std::string path = url_path(url);
  if (path.empty()) return ".";
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "/") return path;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string percent_encoded(std::string_view text, std::string_view also_kept, HexCase hex_case) {
  const char* hex = hex_case == HexCase::upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~';
    if (unreserved || also_kept.find(c) != std::string_view::npos) {
      out += c;
    } else {
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 0x0F];
    }
  }
  return out;
}

std::string without_trailing_slashes(std::string url) {
  while (url.ends_with('/')) url.pop_back();
  return url;
}

}  // namespace podplane
