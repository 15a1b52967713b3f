// A real terraform as the client of `mirror serve`: with only a CLI-config host block pointing
// registry.terraform.io at the mirror, `terraform init` installs providers through the
// registry protocol and verifies their upstream signatures itself (not "unauthenticated"),
// and fetches a registry module through the module protocol. Terraform is not a Debian
// package; the machine image ships one, and this test runs wherever it exists.
#include <gtest/gtest.h>

#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

TEST(RealTerraform, InitThroughMirrorServeVerifiesUpstreamSignatures) {
  if (!podplane::test::have_program("terraform")) {
    GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
  }
  TempDir dir;
  std::string aws_arm64_sha256;
  {
    podplane::test::FixtureUpstream upstream;
    podplane::test::ProcessOptions options;
    options.env = upstream.env(dir / "deps", upstream.write_cli_config(dir / "upstream.tfrc"));
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    auto filled = run_podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--platform", "linux_amd64",
                                "--platform", "linux_arm64"},
                               options);
    ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;
    for (const auto& provider : upstream.fixture()["providers"]) {
      if (provider["type"] != "aws") continue;
      for (const auto& release : provider["versions"]) {
        if (release["version"] == "6.2.0") aws_arm64_sha256 = release["packages"]["linux_arm64"]["sha256"];
      }
    }
  }  // the upstream is gone: only the mirror answers from here on
  ASSERT_EQ(aws_arm64_sha256.size(), 64u) << "fixture.json lists aws 6.2.0 linux_arm64";

  test::write_test_tls(dir.path());
  Background serve({podplane::test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0",
                    "--tls-cert", (dir / "cert.pem").string(), "--tls-key", (dir / "key.pem").string()},
                   {{"PODPLANE_DEPS_CACHE_DIR", (dir / "deps").string()}}, dir / "serve.err");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << read_file(dir / "serve.err");

  write_file(dir / "terraform.tfrc",
             podplane::test::mirror_serve_host_blocks(base) + "disable_checkpoint = true\n");
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
  podplane::test::ProcessOptions options;
  options.cwd = dir / "stack";
  // Only loopback is reachable: every proxy points at a closed port, except for 127.0.0.1.
  options.env = {{"TF_CLI_CONFIG_FILE", (dir / "terraform.tfrc").string()},
                 {"SSL_CERT_FILE", (dir / "cert.pem").string()},
                 {"HOME", dir.path().string()},
                 {"CHECKPOINT_DISABLE", "1"},
                 {"HTTPS_PROXY", "http://127.0.0.1:9"},
                 {"https_proxy", "http://127.0.0.1:9"},
                 {"NO_PROXY", "127.0.0.1"},
                 {"no_proxy", "127.0.0.1"}};
  options.unset_env = {"TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR"};
  auto init = podplane::test::run({"terraform", "init", "-backend=false", "-input=false", "-no-color"}, options);
  ASSERT_EQ(init.exit_code, 0) << init.out << init.err << "\nserver log:\n" << read_file(dir / "serve.err");

  // Terraform checked the upstream signature over the served SHA256SUMS itself.
  EXPECT_NE(init.out.find("Installed hashicorp/aws v6.2.0 (self-signed, key ID"), std::string::npos) << init.out;
  EXPECT_NE(init.out.find("Installed podplane/podplane v1.3.0 (self-signed, key ID"), std::string::npos) << init.out;
  EXPECT_EQ(init.out.find("unauthenticated"), std::string::npos) << init.out;
  // Signed answers let terraform record the zh of every platform, not only this machine's.
  std::string lock = read_file(dir / "stack" / ".terraform.lock.hcl");
  EXPECT_NE(lock.find("zh:" + aws_arm64_sha256), std::string::npos) << lock;
  // The module came through the module registry protocol, as a tarball the mirror built.
  EXPECT_TRUE(fs::exists(dir / "stack" / ".terraform" / "modules" / "account")) << init.out;
  std::string log = read_file(dir / "serve.err");
  EXPECT_NE(log.find("/download HTTP/1.1\" 204"), std::string::npos) << log;
}

}  // namespace
}  // namespace podplane::serve_test
