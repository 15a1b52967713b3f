// What a VM does at boot, replayed against the site: for every podplane_userdata data source
// of generated stacks (knc and knd × amd64 and arm64), each artifact URL is built exactly as
// Podplane's userdata builds it (<deps_mirror_url>/vmconfig/artifacts/<name>/<version>/
// <basename(url)>, docs/podplane-layout.md §2.5), fetched with `curl --parallel` and checked with
// `sha256sum -c` / `sha512sum -c`, from `mirror serve` and from nginx over `mirror export`.
// kubelet's amd64 and arm64 builds share Podplane's plain path in the fixture as in the real
// manifests: on that path an arm64 VM receives amd64 bytes, which `cluster check` must catch.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <set>

#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"
#include "tests/support/vm_replay.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::FixtureUpstream;
using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;
using podplane::test::replay_vm;
using podplane::test::userdata_of;

// nginx as a site runs it: a master with `worker_processes auto`, sendfile, keep-alive.
std::string production_nginx_config(const fs::path& prefix, const fs::path& root, int port) {
  std::string p = prefix.string();
  return "daemon off;\nworker_processes auto;\npid " + p + "/nginx.pid;\nerror_log " + p +
         "/error.log warn;\nevents { worker_connections 512; }\nhttp {\n  access_log " + p +
         "/access.log;\n  client_body_temp_path " + p + "/tmp/body;\n  proxy_temp_path " + p +
         "/tmp/proxy;\n  fastcgi_temp_path " + p + "/tmp/fastcgi;\n  uwsgi_temp_path " + p +
         "/tmp/uwsgi;\n  scgi_temp_path " + p + "/tmp/scgi;\n"
         "  types { application/json json; application/zip zip; application/gzip gz; }\n"
         "  default_type application/octet-stream;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_timeout 65;\n"
         "  server {\n    listen 127.0.0.1:" + std::to_string(port) + ";\n    root " + root.string() + ";\n" +
         "    location ~ /\\.(?!well-known/) { return 404; }\n  }\n}\n";
}

class VmFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    upstream_ = std::make_unique<FixtureUpstream>();
    upstream_->write_cli_config(temp_ / "upstream.tfrc");
    ProcessOptions online;
    online.env = upstream_->env(deps(), temp_ / "upstream.tfrc");
    auto tf = run_podplane({"deps", "tf", "--platform", "linux_amd64", "--platform", "linux_arm64"}, online);
    ASSERT_EQ(tf.exit_code, 0) << show(tf);
    auto download = run_podplane({"deps", "download", "--arch", "amd64,arm64", "--providers", "aws"}, online);
    ASSERT_EQ(download.exit_code, 0) << show(download);
    upstream_.reset();  // from here on, only the store answers
  }

  fs::path deps() const { return temp_ / "deps"; }

  ProcessOptions offline() const {
    ProcessOptions options;
    options.env["PODPLANE_DEPS_CACHE_DIR"] = deps().string();
    options.unset_env = {"PODPLANE_DEPS_URL", "TF_CLI_CONFIG_FILE", "SSL_CERT_FILE"};
    return options;
  }

  // A stack whose control plane runs on `control_plane_arch` (workers amd64, ingress arm64),
  // so two stacks cover knc and knd × amd64 and arm64.
  fs::path create_stack(const std::string& name, const std::string& control_plane_arch, const std::string& mirror) {
    fs::path dir = temp_ / name;
    fs::create_directories(dir);
    std::string config = read_file(podplane::test::test_data_dir() / "generator" / "aws" / "podplane.cluster.jsonc");
    config.replace(config.find("http://mirror.internal:8080"), 27, mirror);
    const std::string control_plane = R"("control-plane": { "arch": "arm64")";
    config.replace(config.find(control_plane), control_plane.size(), R"("control-plane": { "arch": ")" + control_plane_arch + "\"");
    podplane::test::write_file(dir / "podplane.cluster.jsonc", config);
    auto options = offline();
    options.cwd = dir;
    auto created = run_podplane({"cluster", "create", "--no-apply"}, options);
    EXPECT_EQ(created.exit_code, 0) << show(created);
    return dir;
  }

  ProcessResult check(const fs::path& stack) const {
    auto options = offline();
    options.cwd = stack;
    return run_podplane({"cluster", "check"}, options);
  }

  // Replays every VM flavour of `stacks`, each URL's base passed through `rebase`.
  std::set<std::string> replay_all(const std::vector<fs::path>& stacks, const std::string& tag,
                                   const std::function<std::string(const std::string&)>& rebase) {
    std::set<std::string> replayed;
    for (const auto& stack : stacks) {
      for (const auto& userdata : userdata_of(read_file(stack / "podplane.cluster.main.tf"))) {
        if (!replayed.insert(userdata.label).second) continue;
        json manifest = json::parse(read_file(stack / userdata.manifest_file));
        auto replay = replay_vm(manifest, "aws", rebase(userdata.mirror_url), temp_ / "vm" / tag / userdata.label);
        EXPECT_GT(replay.items, 5u) << userdata.label;
        EXPECT_TRUE(replay.ok()) << tag << " " << userdata.label << " at " << rebase(userdata.mirror_url) << "\n"
                                 << replay.describe();
      }
    }
    return replayed;
  }

  TempDir temp_;
  std::unique_ptr<FixtureUpstream> upstream_;
};

TEST_F(VmFetchTest, EveryVmGetsItsOwnArchBytesFromMirrorServeAndNginxOverAnExport) {
  ASSERT_TRUE(podplane::test::have_program("curl") && podplane::test::have_program("sha512sum"));
  MirrorServe serve(deps(), {"--plain-http", "--listen", "127.0.0.1:0"}, temp_ / "serve.err");
  ASSERT_TRUE(serve.started()) << serve.log();
  const std::string served = serve.url();

  std::vector<fs::path> stacks{create_stack("stack-arm64-control-plane", "arm64", served),
                               create_stack("stack-amd64-control-plane", "amd64", served)};
  for (const auto& stack : stacks) {
    auto checked = check(stack);
    EXPECT_EQ(checked.exit_code, 0) << show(checked);
    EXPECT_NE(checked.out.find("VM knd_arm64 fetches its artifacts"), std::string::npos) << checked.out;
  }

  // 1. mirror serve, at the base each data source names.
  auto replayed = replay_all(stacks, "serve", [](const std::string& base) { return base; });
  EXPECT_EQ(replayed, (std::set<std::string>{"knc_amd64", "knc_arm64", "knd_amd64", "knd_arm64"}));

  // 2. nginx over `mirror export`, the same bases on another host.
  ASSERT_TRUE(podplane::test::have_program("nginx") || fs::exists("/usr/sbin/nginx"))
      << "nginx is missing: apt-get install nginx-light";
  fs::path exported = temp_ / "export";
  ProcessOptions at_root = offline();
  auto written = run_podplane({"mirror", "export", exported.string()}, at_root);
  ASSERT_EQ(written.exit_code, 0) << show(written);
  // nginx's workers run as an unprivileged user (nobody) when the master runs as root: the
  // export is world-readable, and the test's temp dir lets them through.
  fs::permissions(temp_.path(), fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
  fs::path prefix = temp_ / "nginx";
  fs::create_directories(prefix / "tmp");
  int port = free_port();
  podplane::test::write_file(prefix / "nginx.conf", production_nginx_config(prefix, exported, port));
  std::string nginx = fs::exists("/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx";
  Background web({nginx, "-e", (prefix / "error.log").string(), "-p", prefix.string(), "-c", (prefix / "nginx.conf").string()},
                 {}, prefix / "stderr.log");
  ASSERT_TRUE(wait_for_port(port)) << read_file(prefix / "stderr.log");
  struct ShowErrors {
    fs::path log;
    ~ShowErrors() {
      if (::testing::Test::HasFailure() && fs::exists(log)) std::cout << "nginx error.log:\n" << read_file(log);
    }
  } show_errors{prefix / "error.log"};
  const std::string hosted = "http://127.0.0.1:" + std::to_string(port);
  replayed = replay_all(stacks, "nginx", [&](const std::string& base) { return hosted + base.substr(served.size()); });
  EXPECT_EQ(replayed.size(), 4u);

  // 3. Podplane's plain path, the only one before arch bases: an arm64 VM gets amd64's kubelet.
  json manifest = json::parse(read_file(stacks[0] / "podplane.cluster.vmconfig_knd_debian-13_arm64.json"));
  auto plain = replay_vm(manifest, "aws", served, temp_ / "vm" / "plain-arm64");
  EXPECT_EQ(plain.curl.exit_code, 0) << plain.describe();
  EXPECT_NE(plain.sha256.exit_code, 0) << plain.describe();
  EXPECT_NE(plain.sha256.out.find("kubelet: FAILED"), std::string::npos) << plain.describe();

  // … and `cluster check` refuses a stack that sends arm64 VMs there.
  std::string main_tf = read_file(stacks[0] / "podplane.cluster.main.tf");
  const std::string arm64_base = served + "/arch/arm64\"";
  for (auto at = main_tf.find(arm64_base); at != std::string::npos; at = main_tf.find(arm64_base))
    main_tf.replace(at, arm64_base.size(), served + "\"");
  podplane::test::write_file(stacks[0] / "podplane.cluster.main.tf", main_tf);
  auto refused = check(stacks[0]);
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_NE(refused.out.find("/vmconfig/artifacts/kubelet/1.36.1/kubelet answers linux_amd64's kubelet"), std::string::npos)
      << refused.out;
  EXPECT_NE(refused.err.find("rerun `podplane cluster create`"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace podplane::serve_test
