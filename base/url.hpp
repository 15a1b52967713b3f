#pragma once
// The one reading of an absolute URL's parts ("scheme://[userinfo@]host[:port][/path][?query]
// [#fragment]", RFC 3986's generic syntax, as git, Go and libcurl read the http(s), git and oci
// URLs we meet), and the two things "host" means beside it:
//   host_as_written  host[:port], the scheme's default port dropped: how Terraform names a
//                    service host (TF_TOKEN_<host>, credentials blocks), how git's insteadOf
//                    and credential helpers and docker's auth files name a server;
//   host_with_port   host:port, the default port filled in: a connection's endpoint (libcurl's
//                    per-host limits, a login's origin).
// Pure; nothing is resolved or percent-decoded. libcurl stays the resolver of relative
// references (net/http.hpp resolve_url).
#include <optional>
#include <string>
#include <string_view>

namespace podplane {

struct UrlParts {
  std::string scheme;    // lower-cased
  std::string userinfo;  // before the '@' of the authority, "" when none
  std::string host;      // lower-cased; an IPv6 literal keeps its brackets
  std::string port;      // as written, "" when none
  std::string path;      // from the '/' after the authority, "" when none
  std::string query;     // after '?', "" when none
  std::string fragment;  // after '#', "" when none
};

// The parts of `url`, nullopt when it has no "scheme://" or no host.
[[nodiscard]] std::optional<UrlParts> split_url(std::string_view url);

// The port a scheme means when none is written ("443" for https and oci, "80" for http).
[[nodiscard]] std::string default_port(std::string_view scheme);

[[nodiscard]] std::string host_as_written(const UrlParts& url);
[[nodiscard]] std::string host_with_port(const UrlParts& url);

// Whether `url` starts with http:// or https://, in any case.
[[nodiscard]] bool has_http_scheme(std::string_view url);

// The path of a URL, query and fragment cut ("" when it has none); a text with no scheme is a
// path already.
[[nodiscard]] std::string url_path(std::string_view url);

// The last element of a URL's path, as Go's path.Base names it (what a VM's fetch saves a file
// as, and what the views name it): trailing slashes dropped, "/" for a path of slashes, "."
// for an empty one.
[[nodiscard]] std::string url_basename(std::string_view url);

// `url` without its trailing slashes.
[[nodiscard]] std::string without_trailing_slashes(std::string url);

enum class HexCase { upper, lower };

// `text` with every byte but RFC 3986's unreserved ones (ASCII letters and digits, "-._~")
// and those in `also_kept` written as %XX: a query value, an S3 key (SigV4 wants upper-case
// hex and keeps "/" in a path), a pkcs11: URI attribute (RFC 7512).
[[nodiscard]] std::string percent_encoded(std::string_view text, std::string_view also_kept = "",
                                          HexCase hex_case = HexCase::upper);

}  // namespace podplane
