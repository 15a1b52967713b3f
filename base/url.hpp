#pragma once
// The one reading of an absolute URL's parts ("scheme://[userinfo@]host[:port][/path][?query]
// [#fragment]", RFC 3986's generic syntax, as git, Go and libcurl read the http(s), git and oci
// URLs we meet). One word, one meaning:
//   host             the host alone (UrlParts::host);
//   authority        host[:port] as the URL writes them, userinfo left out: how git's credential
//                    helpers and docker's auth files name a server, what `mirror push` and
//                    `--public-url` take;
//   host_as_written  host[:port], the scheme's default port dropped: how Terraform names a
//                    service host (TF_TOKEN_<host>, credentials blocks), and the git server a
//                    module is fetched from (fetch/root_needs.hpp);
//   host_with_port   host:port, the default port filled in: a connection's endpoint (libcurl's
//                    per-host limits, a login's origin).
// Pure; nothing is resolved or percent-decoded. libcurl stays the resolver of relative references
// (net/http.hpp resolve_url).
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

// The scheme of `url` as written before its "://" (RFC 3986: a letter, then letters, digits,
// "+", "-" or "."), "" when the text starts with none: what tells a URL from a path or an
// address of another grammar (a module source's getter, a `mirror export` directory).
[[nodiscard]] std::string_view url_scheme(std::string_view url);

// host[:port] as `url` writes them (the host lower-cased, no userinfo): "[::1]:8443",
// "h.example:443", "h.example".
[[nodiscard]] std::string authority(const UrlParts& url);

// Whether `text` is an authority with only the characters such names have: host[:port] or
// [v6 literal][:port], a host of letters, digits, "." and "-" not starting with either, a port of
// 1 to 5 digits up to 65535, 300 characters at most. No userinfo, path or spaces: what may be
// pasted into a URL, a snippet or a page as a server's name.
[[nodiscard]] bool valid_authority(std::string_view text);

// What `url` writes between its "scheme://" and its query or fragment, userinfo included and
// nothing lower-cased ("Host:8443/org/repo.git"): a name derived from a URL keeps its author's
// case. A text with no scheme is that part already (cut at "?" or "#").
[[nodiscard]] std::string authority_and_path_as_written(std::string_view url);

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
