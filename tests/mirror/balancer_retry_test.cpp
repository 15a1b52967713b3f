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
// file whole again. And a rolling import caught half way: what only the replica that has
// imported a delta holds (a new image tag, a provider version, a VM file) is a 404 on the other,
// which the config's `retry-on … 404` sends on, so that GETs and a containerd pull of the new
// tag all succeed. Loopback only: a few dozen requests.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "cache/store.hpp"
#include "net/oci_reference.hpp"
#include "tests/mirror/containerd_fixture.hpp"
#include "tests/mirror/haproxy_fixture.hpp"
#include "tests/mirror/registry_fixture.hpp"
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
constexpr int kUpToDate = 0;        // in a rolling import, replica1 has imported the delta
constexpr int kLagging = 1;         // and replica2 has not yet
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
    start_replicas_and_balancer();
    return damaged;
  }

  // Starts the replicas (each watching its index, so that an import shows within 100 ms) and
  // HAProxy in front of them. Fails the test when one does not start.
  void start_replicas_and_balancer() {
    for (int i = 0; i < kReplicas; ++i) {
      replicas_[i] = std::make_unique<MirrorServe>(replica_root(i),
                                                   std::vector<std::string>{"--listen", "127.0.0.1:0", "--tls-cert", tls_.cert.string(),
                                                                            "--tls-key", tls_.key.string(), "--watch-interval", "100"},
                                                   replica_log(i));
      EXPECT_TRUE(replicas_[i]->started()) << replicas_[i]->log();
      if (!replicas_[i]->started()) return;
    }
    BalancerSite site{temp_.path(), temp_ / "tls" / "haproxy.pem", tls_.cert, {}, {}};
    for (const auto& replica : replicas_) site.replica_ports.push_back(port_of(replica->url()));
    balancer_.start(site);
  }

  // A delta bundle of what the online store holds beyond replica 1's inventory, signed, at `bundle`.
  void create_delta(const fs::path& bundle) const {
    const fs::path inventory = bundle.string() + ".inventory";
    auto listed = run_podplane({"bundle", "inventory", "-o", inventory.string()}, at(replica_root(0)));
    ASSERT_EQ(listed.exit_code, 0) << show(listed);
    auto created = run_podplane(
        {"bundle", "create", bundle.string(), "--since", inventory.string(), "--sign", (temp_ / "site.key").string()}, at(online_root()));
    ASSERT_EQ(created.exit_code, 0) << show(created);
  }
  void import_into(int i, const fs::path& bundle) const {
    auto imported = run_podplane({"bundle", "import", bundle.string(), "--trust", (temp_ / "site.pub").string()}, at(replica_root(i)));
    ASSERT_EQ(imported.exit_code, 0) << show(imported);
  }
  // The generation /healthz of the mirror at `url` reports, or "" when it does not answer.
  std::string generation_at(const std::string& url) const {
    auto answer = CurlSession().fetch(url + "/healthz", tls());
    return answer.status == 200 ? nlohmann::json::parse(answer.body).value("generation", "") : "";
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

  // Access-log lines of replica i for `request` ("GET /path"; "" for any) answered with `status`.
  std::size_t answered(int i, const std::string& request, int status) const {
    std::size_t count = 0;
    std::istringstream lines(read_file(replica_log(i)));
    const std::string wanted = (request.empty() ? "" : "\"" + request) + " HTTP/1.1\" " + std::to_string(status) + " ";
    for (std::string line; std::getline(lines, line);)
      if (line.find(wanted) != std::string::npos) ++count;
    return count;
  }
  // A replica writes a request's access-log line once the answer has gone: the client, and
  // HAProxy's count of retries, can be ahead of the log for a moment. answered(), once the log
  // holds `expected` such lines or 5 s have passed.
  std::size_t answered_eventually(int i, const std::string& request, int status, std::size_t expected) const {
    (void)wait_for([&] { return answered(i, request, status) >= expected; }, std::chrono::seconds(5));
    return answered(i, request, status);
  }
  // The refusals (`status`: 404 or 500) replica i has answered, once its log shows as many as
  // HAProxy retried away from it (failing the test when the two still differ after 5 s): each
  // was sent on to another replica.
  std::size_t refusals_retried(int i, int status = 404) const {
    const bool settled = wait_for(
        [&] { return answered(i, "", status) == static_cast<std::size_t>(balancer_.retried_away_from(i)); },
        std::chrono::seconds(5));
    EXPECT_TRUE(settled) << status << "s of replica" << i + 1 << ": " << answered(i, "", status)
                         << ", retried by HAProxy: " << balancer_.retried_away_from(i) << "\n"
                         << balancer_.command("show stat") << logs();
    return answered(i, "", status);
  }
  // Whether replica i's log holds `text`, once it does or 5 s have passed.
  bool logged_eventually(int i, const std::string& text) const {
    return wait_for([&] { return read_file(replica_log(i)).find(text) != std::string::npos; }, std::chrono::seconds(5));
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
  // HAProxy says so too: each of those 500s was sent again to the other replica.
  const std::size_t refused = refusals_retried(kDamagedReplica, 500);
  const std::size_t refused_gets = answered(kDamagedReplica, "GET " + path, 500);
  EXPECT_EQ(refused, refused_gets + answered(kDamagedReplica, "HEAD " + path, 500)) << logs();
  EXPECT_GE(refused_gets, 1u) << "the damaged replica was never asked for the object\n" << logs();
  EXPECT_EQ(answered(kDamagedReplica, "GET " + path, 200) + answered(kDamagedReplica, "GET " + path, 206) +
                answered(kDamagedReplica, "HEAD " + path, 200),
            0u)
      << logs();
  EXPECT_EQ(answered_eventually(kGoodReplica, "GET " + path, 200, kRequests), static_cast<std::size_t>(kRequests)) << logs();
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
  EXPECT_TRUE(logged_eventually(kDamagedReplica, cut_line)) << logs();
  EXPECT_EQ(read_file(replica_log(kGoodReplica)).find(cut_line), std::string::npos) << logs();
  // After its cut answer, the damaged replica refuses the object: those requests went on to
  // replica 2, as a small object's did, and the cut answer itself was not retried.
  const std::size_t refused = refusals_retried(kDamagedReplica, 500);
  EXPECT_GE(refused, 1u) << logs();
  EXPECT_EQ(answered(kDamagedReplica, "GET " + contents_.artifact_path, 500), refused) << logs();
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
  EXPECT_TRUE(logged_eventually(kDamagedReplica, "cut " + request + " short after ")) << logs();
  EXPECT_EQ(answered_eventually(kGoodReplica, request, 206, 1), 1u) << logs();
  EXPECT_EQ(answered_eventually(kGoodReplica, request, 200, 1), 1u) << logs();
  EXPECT_EQ(answered(kDamagedReplica, request, 206), 0u) << logs();
  std::cout << "[ INFO ] node-init fetch of the damaged large object: " << attempts
            << " attempts (cut short by replica1, resumed to a wrong digest, downloaded whole)\n";
}

// A rolling import (docs/operations.md "HAProxy in front"), caught between two replicas:
// replica 1 has imported a delta bundle that adds a tag to an image both replicas hold
// (fixture/app:2.0, whose index, manifest, config and own layer are new, beside the base layer
// it shares with 1.0), a provider version and a VM file; replica 2 has not yet, and answers 404
// for each. No generation is named, so HAProxy keeps both in: the config's `retry-on … 404`
// sends what replica 2 refuses on to replica 1, and every client gets it, containerd's pull of
// the new tag (through the catalogue's hosts.toml) included. Without 404 in `retry-on`,
// replica 2's 404 reaches the client of each request it is offered.
TEST_F(BalancerRetryTest, WhatOnlyTheReplicaThatImportedADeltaHoldsIsServedToEveryClientWhileTheOtherLags) {
  for (const char* program : {"docker-registry", "skopeo", "python3"})
    ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";
  // Online: fixture/app from a registry on loopback, tag by tag (each tag: a layer of its own on
  // the same base layer). 1.0 goes to both replicas; 2.0, with the provider version and the VM
  // file, is the delta of the rolling import.
  auto registry = std::make_unique<DockerRegistry>(temp_ / "registry");
  const std::string upstream = registry->host();
  const std::string repository = upstream + "/fixture/app";
  auto fill_tag = [&](const std::string& tag) {
    json pushed = push_image(temp_ / "images", *registry, "fixture/app", tag, {"linux/amd64"}, "app-" + tag);
    write_file(temp_ / ("images-" + tag + ".txt"), repository + ":" + tag + "\n");
    ProcessOptions online = at(online_root());
    online.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = upstream;
    online.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    auto fetched =
        run_podplane({"--quiet", "deps", "images", "-f", (temp_ / ("images-" + tag + ".txt")).string(), "--arch", "amd64"}, online);
    EXPECT_EQ(fetched.exit_code, 0) << show(fetched);
    return pushed;
  };
  (void)fill_tag("1.0");
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(create_delta(temp_ / "app-1.0.bundle"));
  for (int i = 0; i < kReplicas; ++i) ASSERT_NO_FATAL_FAILURE(import_into(i, temp_ / "app-1.0.bundle"));

  const json app2 = fill_tag("2.0");
  ASSERT_FALSE(HasFailure());
  registry.reset();  // upstream is unreachable on the site: containerd cannot fall back to it
  add_null_release(online_root(), temp_ / "work", "3.9.0", {"linux_amd64"});
  const std::string vm_file = random_bytes(64 * 1024, 11);
  std::string zip_digest;
  {
    auto store = cache::Store::open(online_root());
    auto row = podplane::test::vmconfig_artifact_row(
        store.add_bytes(vm_file), "containerd", "2.3.2",
        "https://github.com/containerd/containerd/releases/download/v2.3.2/containerd-2.3.2-linux-amd64.tar.gz");
    row.size = static_cast<std::int64_t>(vm_file.size());
    (void)store.add_artifact(row);
    for (const auto& zip : store.artifacts({.kind = cache::ArtifactKind::provider_package}))
      if (zip.version == "3.9.0") zip_digest = zip.digest;
  }
  ASSERT_NO_FATAL_FAILURE(create_delta(temp_ / "delta.bundle"));

  // Replica 1 imports the delta while both serve; replica 2 lags behind.
  start_replicas_and_balancer();
  ASSERT_FALSE(HasFailure()) << "the replicas and HAProxy did not start";
  const std::string before = generation_at(replicas_[kUpToDate]->url());
  ASSERT_NO_FATAL_FAILURE(import_into(kUpToDate, temp_ / "delta.bundle"));
  ASSERT_TRUE(wait_for([&] { return generation_at(replicas_[kUpToDate]->url()) != before; })) << "replica 1 serves the delta";
  ASSERT_EQ(generation_at(replicas_[kLagging]->url()), before) << "replica 2 lags";
  ASSERT_EQ(balancer_.servers_up(), kReplicas) << "no generation is named: both replicas are in";

  // Each new path, one client after another, as `docker manifest inspect`, terraform and VMs ask.
  const std::string tag_path = "/v2/" + net::mirror_repository(repository) + "/manifests/2.0";
  const std::string index_digest = app2.at("index");
  struct NewPath {
    std::string path, digest;
    std::vector<std::string> headers;
  };
  const std::vector<NewPath> new_paths{
      {tag_path, index_digest.substr(7),
       {"Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "
        "application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"}},
      {"/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.9.0_linux_amd64.zip", zip_digest, {}},
      {"/vmconfig/artifacts/containerd/2.3.2/containerd-2.3.2-linux-amd64.tar.gz", sha256_hex(vm_file), {}}};
  for (const auto& [path, digest, headers] : new_paths) {
    for (int n = 0; n < kRequests; ++n) {
      auto answer = CurlSession().fetch(balancer_.url() + path, tls(headers));
      EXPECT_EQ(answer.status, 200) << "GET " << path << " " << n << ": " << answer.error << "\n" << logs();
      EXPECT_EQ(sha256_hex(answer.body), digest) << "GET " << path << " " << n;
      if (path == tag_path) {
        EXPECT_EQ(answer.header("docker-content-digest"), index_digest);
        EXPECT_EQ(answer.header("content-type"), "application/vnd.oci.image.index.v1+json");
      }
    }
  }
  // The lagging replica was asked for each and refused; every answer came from replica 1.
  const std::size_t refused_gets = refusals_retried(kLagging);
  for (const auto& new_path : new_paths) {
    EXPECT_GE(answered(kLagging, "GET " + new_path.path, 404), 1u) << "replica 2 was never asked for " << new_path.path << "\n"
                                                                   << logs();
    EXPECT_EQ(answered_eventually(kUpToDate, "GET " + new_path.path, 200, kRequests), static_cast<std::size_t>(kRequests)) << logs();
  }

  // A node pulls the new tag with containerd, through the catalogue's hosts.toml read via HAProxy:
  // twice, into a namespace of its own each time, so that each pull downloads every blob.
  if (auto why = containerd_unavailable(); !why.empty()) GTEST_SKIP() << why;
  const std::string hosts_toml = catalogue_hosts_toml(balancer_.url(), tls_.cert, upstream);
  ASSERT_NE(hosts_toml.find("[host.\"" + balancer_.url() + "/v2/mirror/"), std::string::npos) << hosts_toml;
  write_file(temp_ / "certs.d" / upstream / "hosts.toml", hosts_toml);
  Containerd containerd(temp_ / "containerd");
  ASSERT_TRUE(containerd.ready()) << containerd.log();
  std::set<std::string> blobs{index_digest, app2.at("manifests").at("linux/amd64").at("digest").get<std::string>()};
  for (const auto& blob : app2.at("blobs")) blobs.insert(blob.get<std::string>());  // config, base and own layer
  for (int n = 0; n < 2; ++n) {
    const std::string name_space = "node" + std::to_string(n);
    auto pulled = containerd.ctr({"--namespace", name_space, "image", "pull", "--snapshotter", "native", "--platform", "linux/amd64",
                                  "--hosts-dir", (temp_ / "certs.d").string(), repository + ":2.0"});
    ASSERT_EQ(pulled.exit_code, 0) << show(pulled) << logs();
    EXPECT_EQ(listed_digest(containerd.ctr({"--namespace", name_space, "image", "ls"}), repository + ":2.0"), index_digest);
    EXPECT_EQ(listed_content(containerd.ctr({"--namespace", name_space, "content", "ls", "-q"})), blobs)
        << "the index, manifest, config and layers of amd64";
  }
  // Every 404 of the lagging replica was sent on to replica 1, the pulls' too; nothing else was retried.
  const std::size_t refused = refusals_retried(kLagging);
  const std::size_t refused_pull_requests = refused - refused_gets;
  EXPECT_GE(refused_pull_requests, 1u) << "replica 2 was never asked for the new image by the pulls\n" << logs();
  EXPECT_EQ(balancer_.retried_away_from(kUpToDate), 0) << balancer_.command("show stat");
  std::cout << "[ INFO ] requests for what only replica1 held, refused by replica2 with a 404 and retried on replica1: "
            << refused << " (" << refused_pull_requests << " of them by 2 containerd pulls)\n";
}

}  // namespace
}  // namespace podplane::serve_test
