// The one URL reading (base/url.hpp) and ASCII case folding (base/ascii.hpp) every folder uses.
#include <gtest/gtest.h>

#include "base/ascii.hpp"
#include "base/url.hpp"

namespace podplane {
namespace {

TEST(Url, SplitsEveryPart) {
  auto parts = split_url("HTTPS://user:p%40ss@Registry.Example:8443/v1/a/b.zip?x=1&y#frag");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->scheme, "https");
  EXPECT_EQ(parts->userinfo, "user:p%40ss");
  EXPECT_EQ(parts->host, "registry.example");
  EXPECT_EQ(parts->port, "8443");
  EXPECT_EQ(parts->path, "/v1/a/b.zip");
  EXPECT_EQ(parts->query, "x=1&y");
  EXPECT_EQ(parts->fragment, "frag");
}

TEST(Url, AnIpv6LiteralKeepsItsColonsAndBrackets) {
  auto parts = split_url("https://[::1]:8443/x");
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->host, "[::1]");
  EXPECT_EQ(parts->port, "8443");
  auto bare = split_url("http://[fe80::1]/");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->host, "[fe80::1]");
  EXPECT_EQ(bare->port, "");
}

TEST(Url, NoSchemeOrNoHostIsNotAUrl) {
  EXPECT_FALSE(split_url("registry.example/ns/name"));
  EXPECT_FALSE(split_url("https:///path"));
  EXPECT_FALSE(split_url("://host/x"));
}

TEST(Url, TheTwoHostsDifferOnlyInTheDefaultPort) {
  EXPECT_EQ(host_as_written(*split_url("https://h.example/x")), "h.example");
  EXPECT_EQ(host_as_written(*split_url("https://h.example:443/x")), "h.example");
  EXPECT_EQ(host_as_written(*split_url("https://h.example:8443/x")), "h.example:8443");
  EXPECT_EQ(host_as_written(*split_url("http://h.example:80/x")), "h.example");
  EXPECT_EQ(host_with_port(*split_url("https://h.example/x")), "h.example:443");
  EXPECT_EQ(host_with_port(*split_url("http://h.example/x")), "h.example:80");
  EXPECT_EQ(host_with_port(*split_url("https://u:p@h.example:8443/x")), "h.example:8443");
}

TEST(Url, TheSchemeIsRfc3986sGrammarAsWritten) {
  EXPECT_EQ(url_scheme("HTTPS://h/x"), "HTTPS");
  EXPECT_EQ(url_scheme("git+ssh://h/x"), "git+ssh");
  EXPECT_EQ(url_scheme("oci://registry.example/site"), "oci");
  EXPECT_EQ(url_scheme("registry.example/ns/name"), "");
  EXPECT_EQ(url_scheme("://h/x"), "");
  EXPECT_EQ(url_scheme("1x://h/x"), "");
  EXPECT_EQ(url_scheme("a b://h/x"), "");
  // A module source's forced getter is not a scheme: "git::https" has colons.
  EXPECT_EQ(url_scheme("git::https://h/r.git"), "");
  EXPECT_FALSE(split_url("git::https://h/r.git"));
  auto oci = split_url("oci://Registry.Example:5000/site/");
  ASSERT_TRUE(oci);
  EXPECT_EQ(oci->scheme, "oci");
  EXPECT_EQ(oci->path, "/site/");
}

// The authority keeps the port as written (git's credential helpers and docker's auth keys
// tell "h:443" from "h"); only the host is folded, and the userinfo never belongs to it.
TEST(Url, TheAuthorityIsHostAndPortAsWritten) {
  EXPECT_EQ(authority(*split_url("https://u:p@Host.Example:443/x")), "host.example:443");
  EXPECT_EQ(authority(*split_url("https://host.example/x")), "host.example");
  EXPECT_EQ(authority(*split_url("oci://[::1]:5000/site")), "[::1]:5000");
  EXPECT_EQ(authority_and_path_as_written("git+https://u:p@Host:8443/Org/Repo.git?ref=v1#x"), "u:p@Host:8443/Org/Repo.git");
  EXPECT_EQ(authority_and_path_as_written("https://h"), "h");
  EXPECT_EQ(authority_and_path_as_written("./modules/x?y"), "./modules/x");
}

TEST(Url, AValidAuthorityIsAPlainHostAndPort) {
  for (const std::string good : {"mirror.site:8443", "127.0.0.1:8080", "[::1]:8443", "[::1]", "mirror", "Mirror.Site",
                                 "h:65535", "[::ffff:10.0.0.1]:1"})
    EXPECT_TRUE(valid_authority(good)) << good;
  for (const std::string bad : {"", "evil\"><script>", "a b", "host:99999", "host:65536", "host:", "[::1", "[zz]:1", "[]:1",
                                "[::1]x", "-x", ".x", "h/p", "user@host", "host:80:80", "h:+1"})
    EXPECT_FALSE(valid_authority(bad)) << bad;
  EXPECT_TRUE(valid_authority(std::string(300, 'a')));
  EXPECT_FALSE(valid_authority(std::string(301, 'a')));
}

// Go's path.Base of the URL's path: what a VM's userdata saves a file as.
TEST(Url, TheBasenameIsGosPathBase) {
  EXPECT_EQ(url_basename("https://h/a/x_SHA256SUMS?y=1#z"), "x_SHA256SUMS");
  EXPECT_EQ(url_basename("https://h/a/dir/"), "dir");
  EXPECT_EQ(url_basename("https://h/"), "/");
  EXPECT_EQ(url_basename("https://h"), ".");
  EXPECT_EQ(url_basename("a/b.zip"), "b.zip");
  EXPECT_EQ(url_basename("b.zip?x"), "b.zip");
}

TEST(Url, HttpSchemesInAnyCase) {
  EXPECT_TRUE(has_http_scheme("HTTPS://x"));
  EXPECT_TRUE(has_http_scheme("http://x"));
  EXPECT_FALSE(has_http_scheme("s3://bucket/x"));
  EXPECT_FALSE(has_http_scheme("httpsx://x"));
  EXPECT_EQ(without_trailing_slashes("https://m:8443///"), "https://m:8443");
}

TEST(Url, PercentEncodingKeepsTheUnreservedAndWhatTheCallerKeeps) {
  EXPECT_EQ(percent_encoded("aZ09-._~"), "aZ09-._~");
  EXPECT_EQ(percent_encoded("repository:a/b:pull,push"), "repository%3Aa%2Fb%3Apull%2Cpush");
  EXPECT_EQ(percent_encoded("v1/a b", "/"), "v1/a%20b");
  EXPECT_EQ(percent_encoded("\x01\xff\xc3\xa9", "", HexCase::lower), "%01%ff%c3%a9");
  EXPECT_EQ(percent_encoded("\xc3\xa9"), "%C3%A9");
}

TEST(Ascii, FoldsOnlyAsciiLetters) {
  EXPECT_EQ(ascii_lower("AbC-Ü\xC3\x9C"), "abc-Ü\xC3\x9C");
  EXPECT_TRUE(ascii_iequals("Content-Type", "content-type"));
  EXPECT_FALSE(ascii_iequals("Content-Type", "content-typ"));
  EXPECT_TRUE(ascii_istarts_with("HTTPS://host", "https://"));
  EXPECT_FALSE(ascii_istarts_with("http", "https://"));
}

}  // namespace
}  // namespace podplane
