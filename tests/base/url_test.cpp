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
