// PODPLANE_DEPS_URL may point at `mirror serve`: `deps download` and `deps status` ask for
// <base>/manifests/<name>.json (deps.podplane.dev's layout), and the mirror serves each stored
// manifest there and at /vmconfig/manifests/<name>.json (the cache's layout), under the plain
// name, newest first, byte for byte as fetched.
#include <gtest/gtest.h>

#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::FixtureOptions;
using podplane::test::FixtureUpstream;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

const std::vector<std::string> kManifests = {"vmconfig_knc_debian-13_amd64", "vmconfig_knd_debian-13_amd64"};

TEST(DepsFromMirror, DepsDownloadAndStatusWithPodplaneDepsUrlAtMirrorServe) {
  TempDir dir;
  FixtureOptions fixture;
  fixture.sharing = FixtureOptions::Sharing::private_copy;
  auto upstream = std::make_unique<FixtureUpstream>(fixture);
  upstream->write_cli_config(dir / "cli.tfrc");
  podplane::test::ProcessOptions first;
  first.env = upstream->env(dir / "first", dir / "cli.tfrc");
  first.unset_env = {"PODPLANE_ARCH"};
  auto filled = run_podplane({"deps", "download", "--arch", "amd64"}, first);
  ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;
  // A newer knc manifest upstream: the store then holds two rows of that name.
  upstream->rebuild({"--add-version", "vmconfig=1.0.0"});
  filled = run_podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"}, first);
  ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;

  test::write_test_tls(dir.path());
  podplane::test::write_file(dir / "trust.pem", read_file(upstream->ca_file()) + read_file(dir / "cert.pem"));
  MirrorServe mirror(dir / "first",
                     {"--listen", "127.0.0.1:0", "--tls-cert", (dir / "cert.pem").string(), "--tls-key", (dir / "key.pem").string()},
                     dir / "serve.err");
  ASSERT_TRUE(mirror.started()) << mirror.log();

  // The plain names serve the newest manifest, exactly as the first root's view holds it.
  CurlSession http;
  HttpRequest tls;
  tls.ca_file = dir / "cert.pem";
  for (const auto& name : kManifests) {
    std::string view = read_file(dir / "first" / "vmconfig" / "manifests" / (name + ".json"));
    for (const std::string prefix : {"/manifests/", "/vmconfig/manifests/"}) {
      auto answer = http.fetch(mirror.url() + prefix + name + ".json", tls);
      EXPECT_EQ(answer.status, 200) << prefix << name;
      EXPECT_EQ(answer.header("content-type"), "application/json") << prefix << name;
      EXPECT_EQ(answer.body, view) << prefix << name;
    }
  }
  EXPECT_NE(http.fetch(mirror.url() + "/manifests/vmconfig_knc_debian-13_amd64.json", tls).body.find("\"1.0.0\""),
            std::string::npos)
      << "the newest of two stored manifests";

  // A second root, with PODPLANE_DEPS_URL at the mirror: manifests come from the mirror only.
  auto upstream_manifests = upstream->requests("^/manifests/").size();
  podplane::test::ProcessOptions second;
  second.env = {{"PODPLANE_DEPS_URL", mirror.url()},
                {"SSL_CERT_FILE", (dir / "trust.pem").string()},
                {"PODPLANE_DEPS_CACHE_DIR", (dir / "second").string()},
                {"TF_CLI_CONFIG_FILE", (dir / "cli.tfrc").string()}};
  second.unset_env = {"PODPLANE_ARCH"};
  auto dry = run_podplane({"deps", "download", "--arch", "amd64", "--kind", "knc", "--dry-run"}, second);
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("VMConfig manifest: " + mirror.url() + "/manifests/vmconfig_knc_debian-13_amd64.json"),
            std::string::npos)
      << dry.out;
  auto fetched = run_podplane({"deps", "download", "--arch", "amd64"}, second);
  ASSERT_EQ(fetched.exit_code, 0) << fetched.out << fetched.err;
  EXPECT_EQ(upstream->requests("^/manifests/").size(), upstream_manifests) << "no manifest came from upstream";
  for (const auto& name : kManifests)
    EXPECT_EQ(read_file(dir / "second" / "vmconfig" / "manifests" / (name + ".json")),
              read_file(dir / "first" / "vmconfig" / "manifests" / (name + ".json")))
        << name;

  // In the air gap (no upstream at all), the mirror alone answers status and download.
  upstream.reset();
  auto status = run_podplane({"deps", "status", "--arch", "amd64", "--kind", "knc"}, second);
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out, "No new packages available.\n") << status.err;
  auto again = run_podplane({"deps", "download", "--arch", "amd64"}, second);
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("No new artifacts"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace podplane::serve_test
