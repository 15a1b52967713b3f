// The catalogue's containerd snippet, run by its real consumer: Debian's containerd on a private
// socket, root and state under the test's temp dir (native snapshotter, no CRI, no task
// runtime, nothing written outside that dir), and `ctr image pull --hosts-dir` configured with
// the hosts.toml exactly as the page of `mirror serve` prints it for the image's registry (only
// its `ca` path replaced by the test CA). The upstream registry is stopped before the pull, so
// only the mirror can answer; ctr's proxies point at a closed loopback port, so nothing it tries
// leaves the machine.
#include <gtest/gtest.h>

#include <regex>

#include "cache/store.hpp"
#include "net/oci_reference.hpp"
#include "tests/mirror/containerd_fixture.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;
using podplane::test::write_file;

TEST(Containerd, PullsThroughTheMirrorWithTheHostsTomlTheCataloguePrints) {
  if (auto why = containerd_unavailable(); !why.empty()) GTEST_SKIP() << why;
  for (const char* program : {"docker-registry", "skopeo", "python3", "openssl"})
    ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";
  TempDir temp;

  // The store holds fixture/app:1.0 (amd64 and arm64) from a registry on loopback; then that
  // registry goes away, as upstream is unreachable in the air gap.
  auto registry = std::make_unique<DockerRegistry>(temp / "registry");
  const std::string upstream = registry->host();
  const json app = push_image(temp / "work", *registry, "fixture/app", "1.0", {"linux/amd64", "linux/arm64"}, "app");
  const fs::path root = temp / "deps";
  write_file(temp / "images.txt", upstream + "/fixture/app:1.0\n");
  ProcessOptions options = podplane::test::with_deps_root(root);
  options.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = upstream;
  options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
  auto fetched = run_podplane({"deps", "images", "-f", (temp / "images.txt").string(), "--arch", "amd64,arm64"}, options);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  std::string stored_index;
  {
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    for (const auto& row : store.artifacts({.kind = cache::ArtifactKind::image_index}))
      if (row.address == upstream + "/fixture/app" && row.version == "1.0") stored_index = row.filename;
  }
  ASSERT_EQ(stored_index, app["index"].get<std::string>());
  registry.reset();

  fs::create_directories(temp / "tls");
  test::write_test_tls(temp / "tls");
  const fs::path ca = temp / "tls" / "cert.pem";
  MirrorServe serve(root, {"--listen", "127.0.0.1:0", "--tls-cert", ca.string(), "--tls-key", (temp / "tls" / "key.pem").string()},
                    temp / "serve.log");
  ASSERT_TRUE(serve.started()) << serve.log();
  CurlSession http;
  HttpRequest request;
  request.ca_file = ca;
  auto page = http.fetch(serve.url() + "/", request);
  ASSERT_EQ(page.status, 200) << page.error;
  std::string hosts_toml = hosts_toml_for(page.body, upstream);
  ASSERT_FALSE(hosts_toml.empty()) << "the catalogue prints no hosts.toml for " << upstream << ":\n" << text_of(page.body);
  EXPECT_NE(hosts_toml.find("server = \"https://" + upstream + "\""), std::string::npos) << hosts_toml;
  // The page names where to put the CA; here it is the test's.
  const std::string ca_line = "ca = \"/etc/ssl/certs/podplane-mirror-ca.pem\"";
  ASSERT_NE(hosts_toml.find(ca_line), std::string::npos) << hosts_toml;
  hosts_toml.replace(hosts_toml.find(ca_line), ca_line.size(), "ca = \"" + ca.string() + "\"");
  write_file(temp / "certs.d" / upstream / "hosts.toml", hosts_toml);

  Containerd containerd(temp / "ctd");
  if (!containerd.ready()) GTEST_SKIP() << "containerd did not start here:\n" << containerd.log();
  const std::string reference = upstream + "/fixture/app:1.0";
  auto pull = containerd.ctr({"image", "pull", "--snapshotter", "native", "--platform", "linux/amd64", "--hosts-dir",
                              (temp / "certs.d").string(), reference});
  ASSERT_EQ(pull.exit_code, 0) << "ctr image pull with the catalogue's hosts.toml:\n" << hosts_toml << "\n" << show(pull)
                               << "\nmirror log:\n" << serve.log();
  auto listed = containerd.ctr({"image", "ls"});
  ASSERT_EQ(listed.exit_code, 0) << show(listed);
  EXPECT_EQ(listed_digest(listed, reference), stored_index) << listed.out;
  EXPECT_NE(serve.log().find("/v2/" + net::mirror_registry_prefix(upstream) + "/fixture/app/manifests/"), std::string::npos)
      << "the pull did not go through the mirror:\n" << serve.log();

  // The snippet the page printed before (docker.io, the bare mirror URL, no override_path):
  // containerd asks the mirror for /v2/fixture/app/…, which is no mirror path, and fails.
  write_file(temp / "old.d" / upstream / "hosts.toml", "server = \"https://docker.io\"\n\n[host.\"" + serve.url() +
                                                           "\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"" +
                                                           ca.string() + "\"\n");
  auto old = containerd.ctr({"--namespace", "old", "image", "pull", "--snapshotter", "native", "--platform", "linux/amd64",
                             "--hosts-dir", (temp / "old.d").string(), reference});
  EXPECT_NE(old.exit_code, 0) << "the old snippet pulled:\n" << show(old);
  EXPECT_TRUE(std::regex_search(serve.log(), std::regex(" /v2/fixture/app/manifests/1\\.0[^\"]*\" 404 ")))
      << "the mirror never answered the old snippet's path with a 404:\n" << serve.log();
}

}  // namespace
}  // namespace podplane::serve_test
