// A site's fleet through HAProxy (Debian's haproxy, docs/haproxy/podplane-mirror.cfg) in front
// of three `mirror serve` replicas, each on a store of its own fed by the same signed bundles
// (docs/operations.md "Replicas", shared-nothing). While a fleet of clients runs — VMs fetching
// their vmconfig artifacts with the generated node-init script's own fetch (its retry and Range
// resume, replayed from generator/proxmox_node_init.sh), `terraform init` of a stack through
// the mirror's registry protocols, and nodes pulling container images with Debian's containerd
// through the catalogue's hosts.toml — one replica is SIGKILLed, and later a delta bundle is
// imported replica by replica while HAProxy drains the ones that lag behind the generation the
// operator names. No client fails, and every byte is checked (the manifest's digests for the
// VMs, the signed SHA256SUMS for terraform, the stored digests of each image's index, manifest,
// config and layers for the pulls). Loopback only, bounded: a few dozen clients.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "cache/store.hpp"
#include "tests/mirror/containerd_fixture.hpp"
#include "tests/mirror/haproxy_fixture.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/node_init_fetch.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

constexpr int kReplicas = 3;
constexpr int kVmClients = 12;
constexpr int kTerraformClients = 2;
// The VMs' downloads are slowed (curl's own --limit-rate, from a .curlrc) so that they are in
// flight when a replica dies.
constexpr const char* kVmRate = "512K";
// Nodes pulling images: each puller pulls again and again, into a namespace of its own each
// time (a node that has none of the image yet), while the other clients of its phase run; at
// most this many times, so the loop is bounded whatever the machine's speed.
constexpr int kImagePullers = 3;
constexpr int kMaxPullsPerPuller = 40;
// Each image: a 4 MiB base layer that both share (as images built FROM one base do) and a
// 32 MiB layer of its own, for amd64 and arm64; the nodes are amd64.
constexpr const char* kBaseLayerBytes = "4194304";
constexpr const char* kOwnLayerBytes = "33554432";

// An image the nodes pull, and what the store holds of it for linux/amd64.
struct FleetImage {
  std::string reference;        // <registry>/<repository>:<tag>, as a node names it
  std::string index_digest;     // the stored image index: what `ctr image ls` must list
  std::set<std::string> blobs;  // the index, the amd64 manifest, its config and layers: what a pull must hold
};

// One `ctr image pull` of a puller, and how its checks went.
struct ImagePull {
  std::chrono::steady_clock::time_point started, ended;
  std::string failure;  // "" when the pull succeeded and holds every stored blob
};

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* program : {"curl", "sha512sum", "bash"})
      ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";
    ASSERT_TRUE(fs::exists("/usr/sbin/haproxy")) << "haproxy is missing: scripts/setup installs it (apt-get install haproxy)";
    if (!podplane::test::have_program("terraform"))
      GTEST_SKIP() << "no terraform on PATH: the machine image provides it at /usr/local/bin/terraform, Debian does not";
    if (auto why = containerd_unavailable(); !why.empty()) GTEST_SKIP() << why;
    for (const char* program : {"docker-registry", "skopeo", "python3"})
      ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";

    // Online: one fill, one signed bundle for every replica.
    {
      // VM images of 8 MiB: each VM's image is still streaming when a replica dies.
      podplane::test::FixtureOptions fixture;
      fixture.os_image_mib = 8;
      podplane::test::FixtureUpstream upstream(fixture);
      ProcessOptions online;
      online.env = upstream.env(online_root(), upstream.write_cli_config(temp_ / "upstream.tfrc"));
      online.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
      auto tf = run_podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--platform", "linux_amd64"}, online);
      ASSERT_EQ(tf.exit_code, 0) << show(tf);
      auto download = run_podplane({"--quiet", "deps", "download", "--arch", "amd64", "--providers", "aws"}, online);
      ASSERT_EQ(download.exit_code, 0) << show(download);
    }
    ASSERT_NO_FATAL_FAILURE(fill_images());
    ASSERT_EQ(run_podplane({"bundle", "keygen", (temp_ / "site").string()}, at(online_root())).exit_code, 0);
    auto created = run_podplane({"bundle", "create", (temp_ / "full.bundle").string(), "--sign", (temp_ / "site.key").string()},
                                at(online_root()));
    ASSERT_EQ(created.exit_code, 0) << show(created);

    tls_ = podplane::test::write_test_tls(temp_ / "tls");
    write_file(temp_ / "tls" / "haproxy.pem", read_file(tls_.cert) + read_file(tls_.key));
    for (int i = 0; i < kReplicas; ++i) {
      auto imported = run_podplane({"bundle", "import", (temp_ / "full.bundle").string(), "--trust", (temp_ / "site.pub").string()},
                                   at(replica_root(i)));
      ASSERT_EQ(imported.exit_code, 0) << show(imported);
      ports_[i] = free_port();
      start_replica(i);
    }
    start_haproxy();
    base_ = balancer_.url();
    vm_artifacts_ = artifacts_of_a_vm();
    ASSERT_GT(vm_artifacts_.size(), 5u);
    write_file(temp_ / "curlhome" / ".curlrc", std::string("limit-rate = ") + kVmRate + "\n");
    for (const std::string repository : {"fixture/app", "fixture/worker"}) images_.push_back(stored_image(repository));
    ASSERT_NO_FATAL_FAILURE(write_hosts_toml());
    containerd_ = std::make_unique<Containerd>(temp_ / "containerd");
    ASSERT_TRUE(containerd_->ready()) << containerd_->log();
  }

  // Online: two images from an upstream registry on loopback into the online store. Then that
  // registry goes away, as upstream is unreachable on the site: containerd falls back to a
  // hosts.toml's `server` when the mirror fails, and this way that fallback fails too.
  void fill_images() {
    DockerRegistry registry(temp_ / "registry");
    registry_ = registry.host();
    std::string list;
    for (const std::string name : {"app", "worker"}) {
      pushed_["fixture/" + name] = push_image(temp_ / "images", registry, "fixture/" + name, "1.0", {"linux/amd64", "linux/arm64"},
                                              name, {"--shared-size", kBaseLayerBytes, "--own-size", kOwnLayerBytes});
      list += registry_ + "/fixture/" + name + ":1.0\n";
    }
    write_file(temp_ / "images.txt", list);
    ProcessOptions online = at(online_root());
    online.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_;
    online.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    auto fetched = run_podplane({"--quiet", "deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", "amd64,arm64"}, online);
    ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  }

  // What replica 1's store holds of `repository`:1.0 for amd64 (the index names the manifest,
  // the manifest its config and layers), checked against what was pushed upstream.
  FleetImage stored_image(const std::string& repository) const {
    auto store = cache::Store::open(replica_root(0), cache::Store::Access::read_only);
    FleetImage image{registry_ + "/" + repository + ":1.0", "", {}};
    for (const auto& row : store.artifacts({.kind = cache::ArtifactKind::image_index}))
      if (row.address == registry_ + "/" + repository && row.version == "1.0") image.index_digest = row.filename;
    EXPECT_EQ(image.index_digest, pushed_.at(repository).at("index").get<std::string>()) << repository;
    if (image.index_digest.empty()) return image;
    auto object = [&](const std::string& digest) {
      EXPECT_TRUE(store.has_object(digest.substr(7))) << repository << ": " << digest << " is not in the store";
      image.blobs.insert(digest);
      return store.has_object(digest.substr(7)) ? store.read_object(digest.substr(7)) : std::string();
    };
    const json index = json::parse(object(image.index_digest));
    for (const auto& entry : index.at("manifests")) {
      if (entry.at("platform").value("architecture", "") != "amd64") continue;
      EXPECT_EQ(entry.at("digest"), pushed_.at(repository).at("manifests").at("linux/amd64").at("digest"));
      const json manifest = json::parse(object(entry.at("digest").get<std::string>()));
      (void)object(manifest.at("config").at("digest").get<std::string>());
      for (const auto& layer : manifest.at("layers")) image.blobs.insert(layer.at("digest").get<std::string>());
    }
    EXPECT_EQ(image.blobs.size(), 5u) << repository << ": index, manifest, config and two layers";
    for (const auto& blob : image.blobs) EXPECT_TRUE(store.has_object(blob.substr(7))) << repository << ": " << blob;
    return image;
  }

  // The hosts.toml the catalogue prints for the images' registry, read through the balancer as a
  // node's operator would read it: it names the balancer's address. Only its `ca` is the test's.
  void write_hosts_toml() const {
    const std::string hosts_toml = catalogue_hosts_toml(base_, tls_.cert, registry_);
    ASSERT_NE(hosts_toml.find("[host.\"" + base_ + "/v2/mirror/"), std::string::npos) << hosts_toml;
    write_file(hosts_dir() / registry_ / "hosts.toml", hosts_toml);
  }
  fs::path hosts_dir() const { return temp_ / "certs.d"; }

  fs::path online_root() const { return temp_ / "online"; }
  fs::path replica_root(int i) const { return temp_ / ("replica" + std::to_string(i + 1)); }
  std::string replica_url(int i) const { return "https://127.0.0.1:" + std::to_string(ports_[i]); }

  static ProcessOptions at(const fs::path& root) {
    ProcessOptions options;
    options.env["PODPLANE_DEPS_CACHE_DIR"] = root.string();
    return options;
  }

  void start_replica(int i) {
    replicas_[i].reset();
    replicas_[i] = std::make_unique<Background>(
        std::vector<std::string>{podplane::test::podplane_binary().string(), "mirror", "serve", "--listen",
                                 "127.0.0.1:" + std::to_string(ports_[i]), "--tls-cert", tls_.cert.string(), "--tls-key",
                                 tls_.key.string(), "--watch-interval", "100"},
        std::map<std::string, std::string>{{"PODPLANE_DEPS_CACHE_DIR", replica_root(i).string()}},
        temp_ / ("replica" + std::to_string(i + 1) + ".err"));
    ASSERT_FALSE(replicas_[i]->first_line().empty()) << read_file(temp_ / ("replica" + std::to_string(i + 1) + ".err"));
  }

  // docs/haproxy/podplane-mirror.cfg with the site values of this test (haproxy_fixture.hpp),
  // and small receive buffers towards the replicas: the loopback's grow to 32 MiB (tcp_rmem),
  // which take a VM image or a layer whole from a replica at once, so that its death would cut
  // nothing; with these, a replica is still writing a file for much of its transfer.
  void start_haproxy() {
    BalancerSite site{temp_.path(), temp_ / "tls" / "haproxy.pem", tls_.cert, {}, {"tune.rcvbuf.server 131072"}};
    site.replica_ports.assign(ports_.begin(), ports_.end());
    balancer_.start(site);
  }

  // Bytes replica i has written since it started (its sockets and its log): /proc/PID/io's
  // wchar. Not HAProxy's count of bytes sent on: the loopback's socket buffers (tcp_rmem up to
  // 32 MiB) take a whole file from the replica long before the client has read it.
  long long bytes_written_by(int i) const {
    std::ifstream io("/proc/" + std::to_string(replicas_[i]->pid()) + "/io");
    std::string key;
    long long value = 0;
    while (io >> key >> value)
      if (key == "wchar:") return value;
    return 0;
  }

  std::string generation_at(const std::string& url) const {
    HttpRequest request;
    request.ca_file = tls_.cert;
    CurlSession http;
    auto answer = http.fetch(url + "/healthz", request);
    if (answer.status != 200) return "";
    return json::parse(answer.body).value("generation", "");
  }

  // The artifacts an amd64 knc VM on AWS fetches, at the arch base its userdata is given.
  std::vector<podplane::test::NodeInitFile> artifacts_of_a_vm() const {
    HttpRequest request;
    request.ca_file = tls_.cert;
    CurlSession http;
    auto answer = http.fetch(base_ + "/vmconfig/manifests/vmconfig_knc_debian-13_amd64.json", request);
    EXPECT_EQ(answer.status, 200) << answer.body;
    if (answer.status != 200) return {};
    const json vm = json::parse(answer.body).at("vmconfig");
    std::vector<std::pair<std::string, json>> items{{"os-image", vm.at("os").at("image")}};
    for (const auto& [name, item] : vm.at("dependencies").items()) items.push_back({name, item});
    std::vector<podplane::test::NodeInitFile> artifacts;
    for (const auto& [name, item] : items) {
      const std::string url = item.value("url", ""), digest = item.value("digest", "");
      if (url.empty() || digest.empty()) continue;
      if (item.contains("providers")) {
        auto providers = item["providers"].get<std::vector<std::string>>();
        if (std::find(providers.begin(), providers.end(), "aws") == providers.end()) continue;
      }
      artifacts.push_back({"arch/amd64/vmconfig/artifacts/" + name + "/" + item.at("version").get<std::string>() + "/" +
                               url.substr(url.rfind('/') + 1),
                           digest, name});
    }
    return artifacts;
  }

  // One VM boot: the generated script's own log, fatal, digest_ok and fetch (sourced from the
  // template, so the replay is the code VMs run), fetching every artifact through HAProxy.
  ProcessResult boot_vm(const fs::path& dir) const {
    podplane::test::NodeInitFetchOptions options;
    options.mirrors = {base_};
    options.work_dir = dir / "work";
    options.ca_file = tls_.cert;
    options.curl_home = temp_ / "curlhome";
    return podplane::test::run_node_init_fetch(dir / "boot.sh", vm_artifacts_, options);
  }

  // `terraform init` of a stack needing two providers and a registry module, through HAProxy.
  ProcessResult terraform_init(const fs::path& dir) const {
    write_file(dir / "terraform.tfrc", podplane::test::mirror_serve_host_blocks(base_ + "/") + "disable_checkpoint = true\n");
    write_file(dir / "stack" / "main.tf", R"(terraform {
  required_providers {
    aws      = { source = "hashicorp/aws", version = ">= 6.0" }
    podplane = { source = "podplane/podplane", version = ">= 1.2.0" }
  }
}

module "account" {
  source  = "nstance-dev/nstance/aws//modules/account"
  version = "~> 2.0"
}
)");
    ProcessOptions options;
    options.cwd = dir / "stack";
    options.env = {{"TF_CLI_CONFIG_FILE", (dir / "terraform.tfrc").string()},
                   {"SSL_CERT_FILE", tls_.cert.string()},
                   {"HOME", dir.string()},
                   {"CHECKPOINT_DISABLE", "1"},
                   {"HTTPS_PROXY", "http://127.0.0.1:9"},
                   {"https_proxy", "http://127.0.0.1:9"},
                   {"NO_PROXY", "127.0.0.1"},
                   {"no_proxy", "127.0.0.1"}};
    options.unset_env = {"TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR"};
    return podplane::test::run({"terraform", "init", "-backend=false", "-input=false", "-no-color"}, options);
  }

  // One node pulling `image` into `name_space` (a namespace no pull used before, so it holds
  // none of the image yet) through the balancer, with the catalogue's hosts.toml. Checked: the
  // image is the stored index, and the namespace holds exactly the stored blobs of its amd64
  // manifest (containerd commits a blob only once its digest and size match the descriptor's).
  ImagePull pull_image(const FleetImage& image, const std::string& name_space) {
    ImagePull pull;
    ++pulls_in_flight_;
    pull.started = std::chrono::steady_clock::now();
    auto pulled = containerd_->ctr({"--namespace", name_space, "image", "pull", "--snapshotter", "native", "--platform",
                                    "linux/amd64", "--hosts-dir", hosts_dir().string(), image.reference});
    pull.ended = std::chrono::steady_clock::now();
    --pulls_in_flight_;
    if (pulled.exit_code != 0) {
      pull.failure = name_space + ": ctr image pull " + image.reference + ":\n" + show(pulled);
      return pull;
    }
    auto listed = containerd_->ctr({"--namespace", name_space, "image", "ls"});
    if (listed_digest(listed, image.reference) != image.index_digest) {
      pull.failure = name_space + ": " + image.reference + " is not the stored index " + image.index_digest + "\n" + show(listed);
      return pull;
    }
    auto content = containerd_->ctr({"--namespace", name_space, "content", "ls", "-q"});
    if (listed_content(content) != image.blobs) {
      pull.failure = name_space + ": the blobs pulled are not the stored blobs of " + image.reference + "\n" + show(content);
      return pull;
    }
    // The disk as it was: the image goes, and a synchronous collection takes its blobs and snapshot.
    auto removed = containerd_->ctr({"--namespace", name_space, "image", "rm", "--sync", image.reference});
    if (removed.exit_code != 0) pull.failure = name_space + ": " + show(removed);
    return pull;
  }

  // A node's pulls, the images in turn, each into a new namespace: at least one, and more while
  // the other clients of the phase run (until `stop`), at most kMaxPullsPerPuller.
  std::vector<ImagePull> pull_images(const std::string& phase, int puller, const std::atomic<bool>& stop) {
    std::vector<ImagePull> pulls;
    for (int n = 0; n < kMaxPullsPerPuller && (n == 0 || !stop); ++n)
      pulls.push_back(pull_image(images_[static_cast<std::size_t>(puller + n) % images_.size()],
                                 phase + "-node" + std::to_string(puller) + "-" + std::to_string(n)));
    return pulls;
  }

  // The fleet, started now on threads; `during` runs while it does. Every client must succeed.
  // Returns the image pulls made.
  std::vector<ImagePull> run_fleet(const std::string& phase, const std::function<void()>& during) {
    std::atomic<bool> others_done{false};
    std::vector<std::future<std::vector<ImagePull>>> pullers;
    for (int i = 0; i < kImagePullers; ++i)
      pullers.push_back(std::async(std::launch::async, [this, phase, i, &others_done] { return pull_images(phase, i, others_done); }));
    std::vector<std::future<std::string>> clients;  // "" when the client succeeded, else why not
    for (int i = 0; i < kVmClients; ++i) {
      clients.push_back(std::async(std::launch::async, [this, phase, i]() -> std::string {
        fs::path dir = temp_ / phase / ("vm" + std::to_string(i));
        auto boot = boot_vm(dir);
        if (boot.exit_code != 0) return "vm" + std::to_string(i) + ": " + show(boot);
        // Every byte: the script checked each digest; the files are also the stored objects.
        for (const auto& artifact : vm_artifacts_) {
          auto bytes = read_file(dir / "work" / artifact.file);
          if (artifact.digest.rfind("sha256:", 0) == 0 && sha256_hex(bytes) != artifact.digest.substr(7))
            return "vm" + std::to_string(i) + ": " + artifact.file + " differs";
        }
        return "";
      }));
    }
    for (int i = 0; i < kTerraformClients; ++i) {
      clients.push_back(std::async(std::launch::async, [this, phase, i]() -> std::string {
        auto init = terraform_init(temp_ / phase / ("terraform" + std::to_string(i)));
        if (init.exit_code != 0) return "terraform" + std::to_string(i) + ": " + show(init);
        if (init.out.find("Installed hashicorp/aws v6.2.0 (self-signed") == std::string::npos)
          return "terraform" + std::to_string(i) + ": aws not verified\n" + init.out;
        return "";
      }));
    }
    during();
    for (auto& client : clients) {
      std::string failure = client.get();
      EXPECT_EQ(failure, "") << phase << "\nhaproxy:\n" << balancer_.log();
    }
    others_done = true;
    std::vector<ImagePull> pulls;
    for (auto& puller : pullers) {
      for (const auto& pull : puller.get()) {
        EXPECT_EQ(pull.failure, "") << phase << "\nhaproxy:\n" << balancer_.log();
        pulls.push_back(pull);
      }
    }
    std::cout << "[ INFO ] " << phase << ": " << pulls.size() << " image pulls by " << kImagePullers << " nodes\n";
    return pulls;
  }

  // Access-log lines of the replicas (their stderr since each last started) for a request target
  // that starts with `target`, answered with `status`.
  std::size_t answered(const std::string& target, const std::string& status, std::optional<int> only_replica = std::nullopt) const {
    std::size_t count = 0;
    for (int i = 0; i < kReplicas; ++i) {
      if (only_replica && *only_replica != i) continue;
      std::istringstream lines(read_file(temp_ / ("replica" + std::to_string(i + 1) + ".err")));
      for (std::string line; std::getline(lines, line);)
        if (line.find(" " + target) != std::string::npos && line.find("\" " + status + " ") != std::string::npos) ++count;
    }
    return count;
  }

  TempDir temp_;
  podplane::test::TestTls tls_;
  std::array<int, kReplicas> ports_{};
  std::array<std::unique_ptr<Background>, kReplicas> replicas_;
  Balancer balancer_;
  std::string base_;
  std::vector<podplane::test::NodeInitFile> vm_artifacts_;
  std::string registry_;  // the images' upstream registry, host:port (gone once the store has them)
  std::map<std::string, json> pushed_;  // per repository, what make_image.py said it made
  std::vector<FleetImage> images_;
  std::unique_ptr<Containerd> containerd_;
  std::atomic<int> pulls_in_flight_{0};
};

TEST_F(FleetTest, NoClientFailsWhileAReplicaIsKilledAndWhileADeltaIsImportedReplicaByReplica) {
  // 1. A replica dies while the fleet's downloads are in flight.
  std::chrono::steady_clock::time_point killed_at;
  int pulls_at_kill = 0;
  bool layer_at_kill = false;
  auto pulls = run_fleet("kill", [&] {
    // Killed while it streams VM images to several VMs at once: sessions that last a second
    // are image downloads (8 MiB at 512 KiB/s) with bytes received, not the small requests
    // that come and go, so each client holds part of a file to resume. And while nodes pull.
    auto streaming_images = [&] {
      if (balancer_.sessions_at(2) < 2) return false;
      std::this_thread::sleep_for(std::chrono::seconds(1));
      return balancer_.sessions_at(2) >= 2 && pulls_in_flight_ > 0;
    };
    ASSERT_TRUE(wait_for(streaming_images)) << balancer_.command("show stat");
    // Better still while it writes an image layer: faster than the VMs take bytes (at most
    // 512 KiB/s each) and than terraform's 16 KiB packages come. Waited for a few seconds
    // only: the kill does not depend on it.
    auto streaming_a_layer = [&] {
      const long long before = bytes_written_by(2);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return bytes_written_by(2) - before > (1 << 20);
    };
    layer_at_kill = wait_for(streaming_a_layer, std::chrono::seconds(5));
    pulls_at_kill = pulls_in_flight_;
    killed_at = std::chrono::steady_clock::now();
    ::kill(replicas_[2]->pid(), SIGKILL);
    (void)replicas_[2]->stop();
    EXPECT_TRUE(wait_for([&] { return !balancer_.server_up(2); })) << "HAProxy takes the dead replica out";
  });
  // Whether a cut download resumed here depends on where the kill fell in its transfer (the
  // node-init script's resume itself is asserted by
  // generator.ProxmoxNodeInit.FirstMirrorDownTheNextServesAndAPartialDownloadResumes; a cut
  // blob, containerd resumes from the offset it had, with a Range request); said, not asserted,
  // so that a busy machine does not fail the fleet for a timing it cannot control.
  const auto overlapping = std::count_if(pulls.begin(), pulls.end(), [&](const ImagePull& pull) {
    return pull.started < killed_at && pull.ended > killed_at;
  });
  std::cout << "[ INFO ] VM downloads resumed with a Range request after the kill: " << answered("/arch/", "206") << "\n"
            << "[ INFO ] image pulls in flight when the replica died: " << pulls_at_kill << " (" << overlapping
            << " began before the kill and ended after it); a layer streaming from it: " << (layer_at_kill ? "yes" : "no")
            << "; image requests the killed replica had answered: "
            << answered("/v2/", "200", 2) + answered("/v2/", "206", 2) << "; image blobs resumed with a Range request: "
            << answered("/v2/", "206") << "\n";
  start_replica(2);  // as its service manager would
  ASSERT_TRUE(wait_for([&] { return balancer_.servers_up() == kReplicas; }));

  // 2. A delta, imported replica by replica. Once the first has it, the operator names its
  // generation: HAProxy drains the replicas that lag until each has imported it too.
  add_null_release(online_root(), temp_ / "work", "3.9.0", {"linux_amd64"});
  auto inventory = run_podplane({"bundle", "inventory", "-o", (temp_ / "replica1.inventory").string()}, at(replica_root(0)));
  ASSERT_EQ(inventory.exit_code, 0) << show(inventory);
  auto delta = run_podplane({"bundle", "create", (temp_ / "delta.bundle").string(), "--since", (temp_ / "replica1.inventory").string(),
                             "--sign", (temp_ / "site.key").string()},
                            at(online_root()));
  ASSERT_EQ(delta.exit_code, 0) << show(delta);
  const std::string before = generation_at(replica_url(0));
  std::string after;
  bool drained = false;
  run_fleet("rolling-import", [&] {
    for (int i = 0; i < kReplicas; ++i) {
      auto imported = run_podplane({"bundle", "import", (temp_ / "delta.bundle").string(), "--trust", (temp_ / "site.pub").string()},
                                   at(replica_root(i)));
      ASSERT_EQ(imported.exit_code, 0) << show(imported);
      if (i == 0) {
        ASSERT_TRUE(wait_for([&] { return (after = generation_at(replica_url(0))) != before; }));
        write_file(balancer_.generation_map(), "generation " + after + "\n");  // for a restart of HAProxy
        EXPECT_EQ(balancer_.command("clear map " + balancer_.generation_map().string()), "\n");
        EXPECT_EQ(balancer_.command("add map " + balancer_.generation_map().string() + " generation " + after), "\n");
        drained = wait_for([&] { return balancer_.servers_up() == 1 && balancer_.server_up(0); });
      }
      ASSERT_TRUE(wait_for([&] { return balancer_.server_up(i); })) << "replica " << i + 1 << " is back once it has the generation";
    }
  });
  EXPECT_TRUE(drained) << "the lagging replicas were out while they lagged";
  EXPECT_EQ(balancer_.servers_up(), kReplicas);
  for (int i = 0; i < kReplicas; ++i) EXPECT_EQ(generation_at(replica_url(i)), after) << "replica " << i + 1;
  EXPECT_EQ(generation_at(base_), after);
  HttpRequest request;
  request.ca_file = tls_.cert;
  CurlSession http;
  auto index = http.fetch(base_ + "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json", request);
  EXPECT_NE(index.body.find("\"3.9.0\""), std::string::npos) << index.body;
}

}  // namespace
}  // namespace podplane::serve_test
