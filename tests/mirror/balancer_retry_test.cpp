// What the balancer does for a client when one replica's copy of an object is damaged: two
// `mirror serve` replicas fed by one signed bundle behind Debian's HAProxy with
// docs/haproxy/podplane-mirror.cfg (haproxy_fixture.hpp), and one object damaged on replica 1's
// disk (same size, bytes flipped). A request that waits for the object's check before its
// first byte (an object under 1 MiB, a Range, HEAD) meets a clean 500 there, which the
// config's `retry-on … 500` sends to replica 2: the client gets the right bytes every time. A
// whole GET of a large object streams beside its check on its first way out: replica 1's first
// answer is cut short, which HAProxy cannot retry (its head has gone to the client), and is
// never completed with wrong bytes; every later answer is whole and right. The node-init
// script's own fetch, which resumes such a cut download, gets the object right in one run: the
// resumed file fails its digest (its first bytes are the damaged copy's), and it downloads the
// file whole again. Loopback only: a few dozen requests.
#include <gtest/gtest.h>

#include <array>
#include <iostream>
#include <memory>
#include <sstream>

#include "cache/store.hpp"
#include "tests/mirror/haproxy_fixture.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/node_init_fetch.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::ProcessOptions;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

constexpr int kReplicas = 2;
constexpr int kDamagedReplica = 0;  // replica1 holds the damaged copy
constexpr int kGoodReplica = 1;     // replica2 a good one
// Sequential requests for each object: with `balance leastconn` and nothing else in flight,
// HAProxy takes the replicas in turn, so several of them meet the damaged replica first.
constexpr int kRequests = 6;
// Streams beside its check on its first way out (1 MiB and more, docs/mirror.md).
constexpr std::size_t kLargeObject = 4 * 1024 * 1024;

// curl(1) downloading `url`, as a client of the mirror does: its exit code, the status it
// reports and the bytes it wrote to `out`. `resume`: continue the bytes already in `out`
// (`--continue-at -`, a Range request), as the node-init script's fetch and `curl -C -` do.
struct CurlDownload {
  int exit_code = -1;
  int status = 0;
  std::string body;
  std::string err;
};

enum class Resume { no, yes };

CurlDownload curl_download(const std::string& url, const fs::path& ca, const fs::path& out, Resume resume = Resume::no) {
  std::vector<std::string> argv{"curl", "-sS", "--cacert", ca.string(), "-o", out.string(), "-w", "%{http_code}"};
  if (resume == Resume::yes) argv.insert(argv.end(), {"--continue-at", "-"});
  argv.push_back(url);
  ProcessOptions options;
  options.unset_env = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "CURL_HOME"};
  auto run = podplane::test::run(argv, options);
  CurlDownload result;
  result.exit_code = run.exit_code;
  result.status = run.out.empty() ? 0 : std::stoi(run.out);
  result.body = fs::exists(out) ? read_file(out) : "";
  result.err = run.err;
  return result;
}

class BalancerRetryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(podplane::test::have_program("curl")) << "curl is needed (scripts/setup installs it)";
    ASSERT_TRUE(fs::exists("/usr/sbin/haproxy")) << "haproxy is missing: scripts/setup installs it (apt-get install haproxy)";
    // Online: one store, one signed bundle for every replica (docs/operations.md, shared-nothing).
    contents_ = fill_store(online_root(), temp_ / "work", 4096, kLargeObject);
    ASSERT_EQ(run_podplane({"bundle", "keygen", (temp_ / "site").string()}, at(online_root())).exit_code, 0);
    auto created = run_podplane({"bundle", "create", (temp_ / "full.bundle").string(), "--sign", (temp_ / "site.key").string()},
                                at(online_root()));
    ASSERT_EQ(created.exit_code, 0) << show(created);
    for (int i = 0; i < kReplicas; ++i) {
      auto imported = run_podplane({"bundle", "import", (temp_ / "full.bundle").string(), "--trust", (temp_ / "site.pub").string()},
                                   at(replica_root(i)));
      ASSERT_EQ(imported.exit_code, 0) << show(imported);
    }
    tls_ = podplane::test::write_test_tls(temp_ / "tls");
    write_file(temp_ / "tls" / "haproxy.pem", read_file(tls_.cert) + read_file(tls_.key));
  }

  // Damages the object `digest` in the damaged replica's store, then starts the replicas and
  // HAProxy in front of them. Returns the damaged copy's bytes.
  std::string start_with_damaged_copy(const std::string& digest) {
    const fs::path object = cache::Store::open(replica_root(kDamagedReplica), cache::Store::Access::read_only).object_path(digest);
    corrupt_in_place(object);
    const std::string damaged = read_file(object);
    EXPECT_NE(sha256_hex(damaged), digest);
    for (int i = 0; i < kReplicas; ++i) {
      replicas_[i] = std::make_unique<MirrorServe>(
          replica_root(i),
          std::vector<std::string>{"--listen", "127.0.0.1:0", "--tls-cert", tls_.cert.string(), "--tls-key", tls_.key.string()},
          replica_log(i));
      EXPECT_TRUE(replicas_[i]->started()) << replicas_[i]->log();
      if (!replicas_[i]->started()) return damaged;
    }
    BalancerSite site{temp_.path(), temp_ / "tls" / "haproxy.pem", tls_.cert, {}, {}};
    for (const auto& replica : replicas_) site.replica_ports.push_back(port_of(replica->url()));
    balancer_.start(site);
    return damaged;
  }

  fs::path online_root() const { return temp_ / "online"; }
  fs::path replica_root(int i) const { return temp_ / ("replica" + std::to_string(i + 1)); }
  fs::path replica_log(int i) const { return temp_ / ("replica" + std::to_string(i + 1) + ".err"); }
  static ProcessOptions at(const fs::path& root) {
    ProcessOptions options;
    options.env["PODPLANE_DEPS_CACHE_DIR"] = root.string();
    return options;
  }
  HttpRequest tls(std::vector<std::string> headers = {}, std::string method = "GET") const {
    HttpRequest request;
    request.ca_file = tls_.cert;
    request.headers = std::move(headers);
    request.method = std::move(method);
    return request;
  }

  // Access-log lines of replica i for `request` ("GET /path") answered with `status`.
  std::size_t answered(int i, const std::string& request, int status) const {
    std::size_t count = 0;
    std::istringstream lines(read_file(replica_log(i)));
    const std::string wanted = "\"" + request + " HTTP/1.1\" " + std::to_string(status) + " ";
    for (std::string line; std::getline(lines, line);)
      if (line.find(wanted) != std::string::npos) ++count;
    return count;
  }
  // The replicas' logs and HAProxy's, for a failure message.
  std::string logs() const {
    return "replica1:\n" + read_file(replica_log(0)) + "replica2:\n" + read_file(replica_log(1)) + "haproxy:\n" + balancer_.log();
  }

  TempDir temp_;
  StoreContents contents_;
  podplane::test::TestTls tls_;
  std::array<std::unique_ptr<MirrorServe>, kReplicas> replicas_;
  Balancer balancer_;
};

TEST_F(BalancerRetryTest, ASmallObjectDamagedOnOneReplicaIsServedWholeFromTheOther) {
  const auto& null = contents_.providers[0];
  const std::string digest = null.zip_digest.at("linux_amd64");
  const std::string bytes = read_file(null.zip_file.at("linux_amd64"));
  ASSERT_LT(bytes.size(), std::size_t{1} << 20) << "an object that waits for its check";
  (void)start_with_damaged_copy(digest);
  ASSERT_FALSE(HasFailure()) << "the replicas and HAProxy did not start";
  const std::string path = "/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip";

  // Each request a client of its own, as VMs and terraform runs are.
  for (int n = 0; n < kRequests; ++n) {
    auto answer = CurlSession().fetch(balancer_.url() + path, tls());
    EXPECT_EQ(answer.status, 200) << "GET " << n << ": " << answer.error << "\n" << logs();
    EXPECT_EQ(answer.error, "");
    EXPECT_EQ(sha256_hex(answer.body), digest) << "GET " << n << ": the right bytes, whole";
    EXPECT_EQ(answer.header("etag"), "\"" + digest + "\"");
  }
  // A range and HEAD wait for the check too: retried the same way.
  for (int n = 0; n < 2; ++n) {
    auto range = CurlSession().fetch(balancer_.url() + path, tls({"Range: bytes=100-199"}));
    EXPECT_EQ(range.status, 206) << range.error << "\n" << logs();
    EXPECT_TRUE(range.body == bytes.substr(100, 100));
    auto head = CurlSession().fetch(balancer_.url() + path, tls({}, "HEAD"));
    EXPECT_EQ(head.status, 200) << logs();
    EXPECT_EQ(head.header("content-length"), std::to_string(bytes.size()));
  }

  // The damaged replica was asked, refused (500), and never served the object: what the
  // clients got came from the other replica, to which HAProxy sent the request again.
  const std::size_t refused_gets = answered(kDamagedReplica, "GET " + path, 500);
  const std::size_t refused = refused_gets + answered(kDamagedReplica, "HEAD " + path, 500);
  EXPECT_GE(refused_gets, 1u) << "the damaged replica was never asked for the object\n" << logs();
  EXPECT_EQ(answered(kDamagedReplica, "GET " + path, 200) + answered(kDamagedReplica, "GET " + path, 206) +
                answered(kDamagedReplica, "HEAD " + path, 200),
            0u)
      << logs();
  EXPECT_EQ(answered(kGoodReplica, "GET " + path, 200), static_cast<std::size_t>(kRequests)) << logs();
  // And HAProxy says so: each of those 500s was sent again to the other replica.
  EXPECT_EQ(balancer_.retried_away_from(kDamagedReplica), static_cast<int>(refused)) << balancer_.command("show stat");
  std::cout << "[ INFO ] requests for the damaged small object refused by replica1 and retried on replica2: " << refused
            << " of " << kRequests + 4 << "\n";
}

TEST_F(BalancerRetryTest, ALargeObjectsFirstAnswerFromTheDamagedReplicaIsCutShortAndLaterOnesAreWhole) {
  const std::string good = contents_.artifact_bytes;
  const std::string digest = sha256_hex(good);
  const std::string damaged = start_with_damaged_copy(digest);
  ASSERT_FALSE(HasFailure()) << "the replicas and HAProxy did not start";
  const std::string url = balancer_.url() + contents_.artifact_path;

  // Never a complete answer with wrong bytes. The one answer that fails is replica 1's first
  // (it streamed beside its check, which failed): a 200 whose body stops short of its length
  // (curl exit 18), with the damaged copy's bytes up to there. Every answer after it is whole.
  std::size_t cut_at = 0;
  int cut = 0;
  for (int n = 0; n < kRequests; ++n) {
    SCOPED_TRACE("GET " + std::to_string(n));
    auto answer = curl_download(url, tls_.cert, temp_ / ("large-" + std::to_string(n) + ".bin"));
    if (answer.exit_code == 0) {
      EXPECT_EQ(answer.status, 200) << answer.err;
      EXPECT_EQ(sha256_hex(answer.body), digest) << "a complete answer has the right bytes (" << answer.body.size() << " bytes)";
      continue;
    }
    ++cut;
    EXPECT_EQ(cut, 1) << "only the first answer from the damaged replica fails\n" << answer.err << logs();
    EXPECT_EQ(answer.exit_code, 18) << "curl: partial file\n" << answer.err;
    EXPECT_EQ(answer.status, 200) << "its head went out before the check ended";
    EXPECT_LT(answer.body.size(), kLargeObject) << "never the whole body";
    EXPECT_TRUE(answer.body == damaged.substr(0, answer.body.size())) << "the damaged copy's bytes, up to the cut";
    if (cut == 1) {
      cut_at = answer.body.size();
      fs::copy_file(temp_ / ("large-" + std::to_string(n) + ".bin"), temp_ / "cut.bin");
    }
  }
  EXPECT_EQ(cut, 1) << "the damaged replica's first answer is cut short\n" << logs();
  const std::string cut_line = "cut GET " + contents_.artifact_path + " short after ";
  EXPECT_NE(read_file(replica_log(kDamagedReplica)).find(cut_line), std::string::npos) << logs();
  EXPECT_EQ(read_file(replica_log(kGoodReplica)).find(cut_line), std::string::npos) << logs();
  // After its cut answer, the damaged replica refuses the object: those requests went on to
  // replica 2, as a small object's did.
  const std::size_t refused = answered(kDamagedReplica, "GET " + contents_.artifact_path, 500);
  EXPECT_GE(refused, 1u) << logs();
  EXPECT_EQ(balancer_.retried_away_from(kDamagedReplica), static_cast<int>(refused)) << "the cut answer was not retried\n"
                                                                                     << balancer_.command("show stat");
  if (cut != 1) return;

  // The client resumes the cut download with a Range request (node-init's fetch, curl -C -):
  // the rest comes whole from a good copy, but the bytes it already holds came from the
  // damaged one. Where those include the damage, only the client's digest check tells.
  auto resumed = curl_download(url, tls_.cert, temp_ / "cut.bin", Resume::yes);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err << logs();
  EXPECT_EQ(resumed.status, 206);
  EXPECT_TRUE(resumed.body == damaged.substr(0, cut_at) + good.substr(cut_at)) << "the damaged prefix, then good bytes";
  const bool damage_received = cut_at > kLargeObject / 2;  // corrupt_in_place flips bytes from the middle on
  EXPECT_EQ(sha256_hex(resumed.body) == digest, !damage_received);
  std::cout << "[ INFO ] the damaged replica's first answer was cut after " << cut_at << " of " << kLargeObject
            << " bytes; resuming it gave " << (damage_received ? "a file that fails its digest check" : "the right file")
            << "\n";
}

// A Proxmox node fetching the damaged large object through the balancer with the node-init
// script's own fetch (generator/proxmox_node_init.sh): its first attempt meets the damaged
// replica (with nothing in flight, leastconn takes replica 1 first) and is cut short; its second
// resumes the cut file from the good replica, and the file, damaged bytes then good ones, fails
// its digest; its third downloads the file whole, from the good replica. The node has the right
// file in one run: no boot fails. (A script that refused the resumed file outright stopped the
// boot there, and only a second run got the file.)
TEST_F(BalancerRetryTest, NodeInitFetchDownloadsALargeObjectWholeAgainWhenItsResumeFailsTheDigest) {
  const std::string good = contents_.artifact_bytes;
  const std::string digest = sha256_hex(good);
  (void)start_with_damaged_copy(digest);
  ASSERT_FALSE(HasFailure()) << "the replicas and HAProxy did not start";
  ASSERT_EQ(contents_.artifact_path.front(), '/');
  const std::string path = contents_.artifact_path.substr(1);
  const std::string request = "GET " + contents_.artifact_path;

  podplane::test::NodeInitFetchOptions options;
  options.mirrors = {balancer_.url()};
  options.work_dir = temp_ / "node" / "work";
  options.ca_file = tls_.cert;
  auto fetched = podplane::test::run_node_init_fetch(temp_ / "node" / "fetch.sh", {{path, "sha256:" + digest, "object.bin"}}, options);

  ASSERT_EQ(fetched.exit_code, 0) << show(fetched) << logs();
  EXPECT_TRUE(read_file(options.work_dir / "object.bin") == good) << "the right bytes, whole";
  EXPECT_FALSE(fs::exists(options.work_dir / "object.bin.part"));
  // Three attempts, and the log says what each did.
  const std::string& log = fetched.out;
  const std::string attempt = "downloading " + balancer_.url() + "/" + path + "\n";
  std::size_t attempts = 0;
  for (auto at = log.find(attempt); at != std::string::npos; at = log.find(attempt, at + 1)) ++attempts;
  EXPECT_EQ(attempts, 3u) << log;
  const auto cut = log.find("download from " + balancer_.url() + " failed (curl exit 18)");
  const auto whole_again = log.find("resumed download of object.bin failed its sha256 check; downloading it whole again");
  const auto done = log.find("downloaded object.bin (sha256 checked)");
  EXPECT_NE(cut, std::string::npos) << "the first attempt is cut short\n" << log << logs();
  EXPECT_NE(whole_again, std::string::npos) << log;
  EXPECT_NE(done, std::string::npos) << log;
  EXPECT_TRUE(cut < whole_again && whole_again < done) << log;

  // The replicas say the same: replica 1 cut its first answer short, replica 2 sent the rest
  // (the resume, a 206 from the cut on) and then the whole file (a 200).
  EXPECT_NE(read_file(replica_log(kDamagedReplica)).find("cut " + request + " short after "), std::string::npos) << logs();
  EXPECT_EQ(answered(kGoodReplica, request, 206), 1u) << logs();
  EXPECT_EQ(answered(kGoodReplica, request, 200), 1u) << logs();
  EXPECT_EQ(answered(kDamagedReplica, request, 206), 0u) << logs();
  std::cout << "[ INFO ] node-init fetch of the damaged large object: " << attempts
            << " attempts (cut short by replica1, resumed to a wrong digest, downloaded whole)\n";
}

}  // namespace
}  // namespace podplane::serve_test
