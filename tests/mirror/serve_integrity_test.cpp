// What mirror serve hands out is what the store holds, and what it says it did is what it did:
// an object whose bytes on disk no longer match its digest is refused (5xx, a log line with
// the digest and the repair command), never served under its ETag; the access log counts the
// bytes really written to a client that went away.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "mirror/serve_site.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;
using podplane::test::TempDir;

// Overwrites `count` bytes in the middle of a read-only store object, keeping its size and
// mtime: only the bytes (and the inode's ctime) change.
void corrupt_in_place(const fs::path& object, std::size_t count = 16) {
  struct stat before {};
  ASSERT_EQ(::stat(object.c_str(), &before), 0);
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  {
    std::fstream file(object, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(before.st_size / 2));
    std::string junk(count, '\x5a');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::remove);
  timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, object.c_str(), times, 0), 0);
}

class IntegrityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    contents_ = fill_store(temp_ / "deps", temp_ / "work", 4096, 2 * 1024 * 1024);
    test::write_test_tls(temp_.path());
  }
  std::vector<std::string> https() const {
    return {"--listen", "127.0.0.1:0", "--tls-cert", (temp_ / "cert.pem").string(), "--tls-key", (temp_ / "key.pem").string()};
  }
  HttpRequest tls() const {
    HttpRequest request;
    request.ca_file = temp_ / "cert.pem";
    return request;
  }
  fs::path object_of(const std::string& digest) const {
    return temp_ / "deps" / "store" / "objects" / "sha256" / digest.substr(0, 2) / digest.substr(2);
  }
  std::string artifact_digest() const { return sha256_hex(contents_.artifact_bytes); }

  TempDir temp_;
  StoreContents contents_;
};

TEST_F(IntegrityTest, ACorruptObjectIsRefusedNeverServedUnderItsEtag) {
  MirrorServe server(temp_ / "deps", https(), temp_ / "serve.err");
  ASSERT_TRUE(server.started()) << server.log();
  CurlSession http;
  const std::string url = server.url() + contents_.artifact_path;
  const std::string digest = artifact_digest();

  auto good = http.fetch(url, tls());
  ASSERT_EQ(good.status, 200);
  EXPECT_EQ(good.header("etag"), "\"" + digest + "\"");
  EXPECT_TRUE(good.body == contents_.artifact_bytes);

  // Damaged on disk under the running server, after it was served once.
  corrupt_in_place(object_of(digest));
  for (const std::vector<std::string>& headers :
       {std::vector<std::string>{}, std::vector<std::string>{"Range: bytes=0-99"}, std::vector<std::string>{"Range: bytes=-10"}}) {
    auto request = tls();
    request.headers = headers;
    auto bad = http.fetch(url, request);
    EXPECT_GE(bad.status, 500) << (headers.empty() ? "GET" : headers[0]);
    EXPECT_LT(bad.status, 600);
    EXPECT_NE(bad.header("etag"), "\"" + digest + "\"") << "no ETag for bytes that do not match it";
    EXPECT_EQ(bad.body.find(contents_.artifact_bytes.substr(0, 64)), std::string::npos);
    EXPECT_EQ(bad.body.find(contents_.artifact_bytes.substr(contents_.artifact_bytes.size() - 10)), std::string::npos);
  }
  auto head = tls();
  head.method = "HEAD";
  EXPECT_GE(http.fetch(url, head).status, 500);
  // Other objects are still served.
  EXPECT_NE(http.fetch(server.url() + "/healthz", tls()).body.find("\"status\": \"ok\""), std::string::npos);
  auto zip = http.fetch(server.url() + "/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip", tls());
  EXPECT_EQ(zip.status, 200);

  // Repaired the way the store publishes (a new file renamed over the damaged one): served again.
  fs::path repaired = object_of(digest).string() + ".repair";
  podplane::test::write_file(repaired, contents_.artifact_bytes);
  fs::rename(repaired, object_of(digest));
  auto again = http.fetch(url, tls());
  EXPECT_EQ(again.status, 200);
  EXPECT_TRUE(again.body == contents_.artifact_bytes);

  server.stop();
  std::string log = server.log();
  std::regex line(".*" + digest + ".*podplane deps verify --repair.*");
  bool named = false;
  std::istringstream lines(log);
  for (std::string text; std::getline(lines, text);) named = named || std::regex_match(text, line);
  EXPECT_TRUE(named) << "one log line names the digest and the fix:\n" << log;
}

TEST_F(IntegrityTest, AnObjectCorruptBeforeItsFirstRequestIsNeverServed) {
  const auto& null = contents_.providers[0];
  const std::string digest = null.zip_digest.at("linux_arm64");
  corrupt_in_place(object_of(digest), 1);
  // A module file too: the package must not be built from it.
  std::string module_digest = sha256_hex(contents_.module_files.at("modules/cluster/main.tf"));
  corrupt_in_place(object_of(module_digest), 1);

  MirrorServe server(temp_ / "deps", https(), temp_ / "serve.err");
  ASSERT_TRUE(server.started()) << server.log();
  CurlSession http;
  auto zip = http.fetch(server.url() + "/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_arm64.zip", tls());
  EXPECT_GE(zip.status, 500);
  EXPECT_NE(zip.body.substr(0, 2), "PK") << "no zip bytes";
  auto package = http.fetch(server.url() + "/v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/2.0.1/package.tar.gz", tls());
  EXPECT_GE(package.status, 500);
  EXPECT_NE(package.body.substr(0, 2), "\x1f\x8b") << "no gzip bytes";
  // Undamaged neighbours are fine.
  auto amd64 = http.fetch(server.url() + "/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip", tls());
  EXPECT_EQ(amd64.status, 200);
  EXPECT_EQ(sha256_hex(amd64.body), null.zip_digest.at("linux_amd64"));
  server.stop();
  EXPECT_NE(server.log().find(digest), std::string::npos) << server.log();
  EXPECT_NE(server.log().find(module_digest), std::string::npos) << server.log();
}

TEST_F(IntegrityTest, ExportRefusesACorruptObject) {
  const std::string digest = artifact_digest();
  corrupt_in_place(object_of(digest));
  podplane::test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
  auto exported = podplane::test::run_podplane({"mirror", "export", (temp_ / "www").string()}, options);
  EXPECT_EQ(exported.exit_code, 1) << exported.err;
  EXPECT_NE(exported.err.find(digest), std::string::npos) << exported.err;
  EXPECT_NE(exported.err.find("podplane deps verify --repair"), std::string::npos) << exported.err;
  EXPECT_FALSE(fs::exists(temp_ / "www")) << "nothing half-exported";
}

// The access log's byte count is what was written, not the file size.
TEST_F(IntegrityTest, AccessLogCountsTheBytesReallySent) {
  // A file much larger than what loopback socket buffers can absorb.
  TempDir big;
  auto contents = fill_store(big / "deps", big / "work", 1024, 48 * 1024 * 1024);
  MirrorServe server(big / "deps", {"--listen", "127.0.0.1:0", "--plain-http"}, big / "serve.err");
  ASSERT_TRUE(server.started()) << server.log();

  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int small = 64 * 1024;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  remote.sin_port = htons(static_cast<uint16_t>(port_of(server.url())));
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote), 0);
  std::string get = "GET " + contents.artifact_path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  std::size_t received = 0;
  char buffer[65536];
  while (received < 1024 * 1024) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    ASSERT_GT(n, 0);
    received += static_cast<std::size_t>(n);
  }
  linger reset{1, 0};  // go away abruptly, as a killed client does
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd);

  // Bounded wait for the log line of that request.
  const std::string request = "\"GET " + contents.artifact_path + " HTTP/1.1\" 200 ";
  std::string log;
  for (int i = 0; i < 600 && log.find(request) == std::string::npos; ++i) {
    log = server.log();
    if (log.find(request) == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto at = log.find(request);
  ASSERT_NE(at, std::string::npos) << log;
  std::uint64_t logged = std::stoull(log.substr(at + request.size()));
  EXPECT_GE(logged, received - 1024) << "at least the body the client read";  // minus the header bytes
  EXPECT_LT(logged, 24u * 1024 * 1024) << "not the file size (" << contents.artifact_bytes.size() << ")";

  // A whole download logs the whole size.
  CurlSession http;
  auto whole = http.fetch(server.url() + contents.artifact_path);
  ASSERT_EQ(whole.status, 200);
  server.stop();
  EXPECT_NE(server.log().find(request + std::to_string(contents.artifact_bytes.size())), std::string::npos) << server.log();
}

}  // namespace
}  // namespace podplane::serve_test
