// What mirror serve hands out is what the store holds, and what it says it did is what it did:
// no client receives a complete answer whose bytes do not match the digest they are served
// under. A large object's first whole download streams beside its check and is cut short when
// the check fails; every other request for an object that no longer matches its digest is
// refused (5xx, a log line with the digest and the repair command), never served under its
// ETag. The access log counts the bytes really written to a client that went away.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <regex>
#include <thread>

#include "base/digest.hpp"
#include "mirror/serve_objects.hpp"
#include "mirror/serve_site.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;
using podplane::test::TempDir;
using podplane::test::write_file;
using podplane::mirror::CheckedObjects;
using podplane::mirror::ObjectState;
using podplane::mirror::OpenedObject;

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

  // Damaged on disk under the running server, after it was served once. The file has changed,
  // so its next whole download streams beside a new check, which fails: it is cut short.
  corrupt_in_place(object_of(digest));
  auto cut = http.fetch(url, tls());
  EXPECT_EQ(cut.status, 200);
  EXPECT_FALSE(cut.error.empty()) << "the transfer fails";
  EXPECT_LT(cut.body.size(), contents_.artifact_bytes.size()) << "never the whole body";
  // Every later request, whole, ranged or HEAD, is refused.
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

// ---------------------------------------------------------------------------------------------
// The first download of a large object streams beside its check, its last bytes held back
// until the check has passed. Objects of a realistic provider size, over HTTP and HTTPS, each
// from a freshly started server (the verdicts are per process).

class BesideCheckTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kObjectSize = 32 * 1024 * 1024;

  void SetUp() override {
    contents_ = fill_store(temp_ / "deps", temp_ / "work", 4096, kObjectSize);
    test::write_test_tls(temp_.path());
    digest_ = sha256_hex(contents_.artifact_bytes);
  }
  std::unique_ptr<MirrorServe> start(bool https, const std::string& name) {
    std::vector<std::string> args{"--listen", "127.0.0.1:0", "--plain-http"};
    if (https) args = {"--listen", "127.0.0.1:0", "--tls-cert", (temp_ / "cert.pem").string(), "--tls-key", (temp_ / "key.pem").string()};
    auto server = std::make_unique<MirrorServe>(temp_ / "deps", args, temp_ / (name + (https ? "-https" : "-http") + ".err"));
    EXPECT_TRUE(server->started()) << server->log();
    return server;
  }
  HttpRequest request(bool https) const {
    HttpRequest request;
    if (https) request.ca_file = temp_ / "cert.pem";
    return request;
  }
  std::string metrics(const MirrorServe& server, bool https) {
    auto answer = CurlSession().fetch(server.url() + "/metrics", request(https));
    EXPECT_EQ(answer.status, 200) << answer.error;
    return answer.body;
  }
  fs::path object() const {
    return temp_ / "deps" / "store" / "objects" / "sha256" / digest_.substr(0, 2) / digest_.substr(2);
  }

  TempDir temp_;
  StoreContents contents_;
  std::string digest_;
};

constexpr const char* kPassed = "podplane_mirror_held_back_answers_total{check=\"passed\"}";
constexpr const char* kFailed = "podplane_mirror_held_back_answers_total{check=\"failed\"}";
constexpr const char* kGood = "podplane_mirror_object_checks_total{result=\"good\"}";
constexpr const char* kDamaged = "podplane_mirror_object_checks_total{result=\"damaged\"}";

TEST_F(BesideCheckTest, AGoodObjectsFirstDownloadIsByteExactAndWentOutBesideItsCheck) {
  for (bool https : {false, true}) {
    SCOPED_TRACE(https ? "https" : "http");
    auto server = start(https, "good");
    CurlSession http;
    auto first = http.fetch(server->url() + contents_.artifact_path, request(https));
    ASSERT_EQ(first.status, 200) << first.error;
    EXPECT_EQ(first.error, "");
    EXPECT_EQ(first.body.size(), kObjectSize);
    EXPECT_TRUE(first.body == contents_.artifact_bytes) << "byte for byte";
    EXPECT_EQ(first.header("etag"), "\"" + digest_ + "\"");
    // The answer was made while the object's check ran, and waited for it only at its last bytes.
    auto exposition = metrics(*server, https);
    EXPECT_EQ(sample_value(exposition, kPassed), 1) << exposition;
    EXPECT_EQ(sample_value(exposition, kFailed), 0);
    EXPECT_EQ(sample_value(exposition, kGood), 1);
    EXPECT_EQ(sample_value(exposition, kDamaged), 0);
    // The verdict is kept: the next download is not checked again, and goes out whole.
    auto second = http.fetch(server->url() + contents_.artifact_path, request(https));
    EXPECT_EQ(second.status, 200);
    EXPECT_TRUE(second.body == contents_.artifact_bytes);
    exposition = metrics(*server, https);
    EXPECT_EQ(sample_value(exposition, kPassed), 1);
    EXPECT_EQ(sample_value(exposition, kGood), 1);
  }
}

// curl(1) downloading `url` to `out`: its exit code, and the status and byte count it reports.
struct CurlDownload {
  int exit_code = -1;
  int status = 0;
  std::string body;
  std::string err;
};

CurlDownload curl_download(const std::string& url, const std::optional<fs::path>& ca, const fs::path& out) {
  std::vector<std::string> argv{"curl", "-sS", "-o", out.string(), "-w", "%{http_code}", url};
  if (ca) argv.insert(argv.begin() + 1, {"--cacert", ca->string()});
  auto run = podplane::test::run(argv);
  CurlDownload result;
  result.exit_code = run.exit_code;
  result.status = run.out.empty() ? 0 : std::stoi(run.out);
  result.body = fs::exists(out) ? read_file(out) : "";
  result.err = run.err;
  return result;
}

TEST_F(BesideCheckTest, ACorruptObjectsFirstDownloadIsCutShortAndLaterOnesRefused) {
  corrupt_in_place(object());
  const std::string on_disk = read_file(object());
  for (bool https : {false, true}) {
    SCOPED_TRACE(https ? "https" : "http");
    auto server = start(https, "corrupt");
    const std::string url = server->url() + contents_.artifact_path;
    const auto ca = https ? std::optional<fs::path>(temp_ / "cert.pem") : std::nullopt;
    auto first = curl_download(url, ca, temp_ / "first.bin");
    // 200 and bytes of the object went out before its check had ended: what a check before
    // the first byte never sends. The check then failed, and the answer stopped short.
    EXPECT_EQ(first.status, 200) << first.err;
    EXPECT_EQ(first.exit_code, 18) << "curl: partial file\n" << first.err;
    EXPECT_GT(first.body.size(), 0u);
    EXPECT_LT(first.body.size(), kObjectSize) << "never the whole body";
    EXPECT_TRUE(first.body == on_disk.substr(0, first.body.size()));

    // Every later request is refused, whole, ranged or HEAD.
    auto later = curl_download(url, ca, temp_ / "later.bin");
    EXPECT_EQ(later.exit_code, 0) << later.err;
    EXPECT_EQ(later.status, 500);
    EXPECT_NE(later.body.find("podplane deps verify --repair"), std::string::npos) << later.body;
    CurlSession http;
    auto ranged = request(https);
    ranged.headers = {"Range: bytes=0-99"};
    EXPECT_EQ(http.fetch(url, ranged).status, 500);
    auto head = request(https);
    head.method = "HEAD";
    EXPECT_EQ(http.fetch(url, head).status, 500);

    auto exposition = metrics(*server, https);
    EXPECT_EQ(sample_value(exposition, kFailed), 1) << exposition;
    EXPECT_EQ(sample_value(exposition, kPassed), 0);
    EXPECT_EQ(sample_value(exposition, kDamaged), 1);
    server->stop();
    // The log says the answer was cut, how far it got, and why; the access log counts what left.
    const std::string log = server->log();
    const std::string cut = "cut GET " + contents_.artifact_path + " short after " + std::to_string(first.body.size()) + " of " +
                            std::to_string(kObjectSize) + " bytes: object " + digest_;
    EXPECT_NE(log.find(cut), std::string::npos) << log;
    EXPECT_NE(log.find("\"GET " + contents_.artifact_path + " HTTP/1.1\" 200 " + std::to_string(first.body.size()) + "\n"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("podplane deps verify --repair"), std::string::npos);
  }
}

// Downloads `url` from `count` threads at once (each its own connection); the answers.
std::vector<HttpAnswer> at_once(const std::string& url, const HttpRequest& request, std::size_t count) {
  std::vector<HttpAnswer> answers(count);
  std::vector<std::thread> threads;
  std::atomic<std::size_t> ready{0};
  for (std::size_t i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      CurlSession http;
      ++ready;
      while (ready < count) std::this_thread::yield();
      answers[i] = http.fetch(url, request);
    });
  }
  for (auto& thread : threads) thread.join();
  return answers;
}

TEST_F(BesideCheckTest, ConcurrentFirstDownloadsShareOneCheckAndAllSucceed) {
  for (bool https : {false, true}) {
    SCOPED_TRACE(https ? "https" : "http");
    auto server = start(https, "concurrent");
    for (const auto& answer : at_once(server->url() + contents_.artifact_path, request(https), 4)) {
      EXPECT_EQ(answer.status, 200) << answer.error;
      EXPECT_EQ(answer.error, "");
      EXPECT_TRUE(answer.body == contents_.artifact_bytes) << "byte for byte (" << answer.body.size() << " bytes)";
    }
    auto exposition = metrics(*server, https);
    EXPECT_EQ(sample_value(exposition, kGood), 1) << "one hashing for all\n" << exposition;
    // The first always streams beside the check; the others did when they found it running.
    EXPECT_GE(sample_value(exposition, kPassed), 1);
    EXPECT_LE(sample_value(exposition, kPassed), 4);
    EXPECT_EQ(sample_value(exposition, kFailed), 0);
  }
}

TEST_F(BesideCheckTest, ConcurrentFirstDownloadsOfACorruptObjectNeverComplete) {
  corrupt_in_place(object());
  for (bool https : {false, true}) {
    SCOPED_TRACE(https ? "https" : "http");
    auto server = start(https, "concurrent-corrupt");
    std::size_t cut = 0;
    for (const auto& answer : at_once(server->url() + contents_.artifact_path, request(https), 4)) {
      if (answer.status == 200) {
        ++cut;
        EXPECT_FALSE(answer.error.empty()) << "the transfer fails";
        EXPECT_LT(answer.body.size(), kObjectSize) << "never the whole body";
      } else {
        EXPECT_EQ(answer.status, 500) << answer.error;
        EXPECT_NE(answer.body.find("podplane deps verify --repair"), std::string::npos);
      }
    }
    auto exposition = metrics(*server, https);
    EXPECT_EQ(sample_value(exposition, kDamaged), 1) << "one hashing for all\n" << exposition;
    EXPECT_GE(cut, 1u) << "the first streams beside the check";
    EXPECT_EQ(sample_value(exposition, kFailed), static_cast<double>(cut));
  }
}

// Each distinct object a request names starts a hashing beside its answer, but never more than
// CheckedObjects::kMostHashingsBeside at once: past the bound, open() hashes on the caller's
// thread, so requests for every object of a large store cannot start a thread each.
TEST(CheckedObjectsTest, NoMoreHashingsRunBesideTheirAnswersThanTheBound) {
  TempDir dir;
  constexpr int kObjects = 24;
  std::string bytes(std::size_t{8} << 20, 'x');  // 8 MiB: a few milliseconds of hashing each
  std::vector<std::pair<fs::path, std::string>> files;
  for (int i = 0; i < kObjects; ++i) {
    bytes.front() = static_cast<char>('a' + i);
    files.emplace_back(dir / ("object" + std::to_string(i)), sha256_hex(bytes));
    write_file(files.back().first, bytes);
  }
  auto threads_now = [] { return std::distance(fs::directory_iterator("/proc/self/task"), fs::directory_iterator{}); };
  const auto before = threads_now();
  std::ptrdiff_t most_beside = 0;
  CheckedObjects checked;
  std::vector<OpenedObject> opened;
  for (const auto& [file, digest] : files) {
    opened.push_back(checked.open(file, digest, static_cast<std::int64_t>(bytes.size())));
    most_beside = std::max(most_beside, threads_now() - before);
  }
  for (auto& object : opened) {
    CheckedObjects::await(object);
    EXPECT_EQ(object.state, ObjectState::good) << object.problem;
  }
  EXPECT_GT(most_beside, 0) << "no hashing ran beside its answer";
  EXPECT_LE(most_beside, static_cast<std::ptrdiff_t>(CheckedObjects::kMostHashingsBeside));
}

}  // namespace
}  // namespace podplane::serve_test
