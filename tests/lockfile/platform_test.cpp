#include "lockfile/platform.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::lockfile {
namespace {

TEST(Platform, ParsesOsArch) {
  auto platform = Platform::parse("linux_amd64");
  EXPECT_EQ(platform.os, "linux");
  EXPECT_EQ(platform.arch, "amd64");
  EXPECT_EQ(platform.str(), "linux_amd64");
  EXPECT_LT(Platform::parse("darwin_arm64"), Platform::parse("linux_amd64"));
}

TEST(Platform, RejectsOtherShapesWithAnExample) {
  for (const char* bad : {"", "linux", "linux-amd64", "Linux_amd64", "linux_amd64_v2", "_amd64", "linux_", "linux amd64"}) {
    try {
      (void)Platform::parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("linux_amd64"), std::string::npos) << error.what();
    }
  }
}

TEST(Engine, HostsAndNames) {
  EXPECT_EQ(default_registry_host(Engine::tofu), "registry.opentofu.org");
  EXPECT_EQ(default_registry_host(Engine::terraform), "registry.terraform.io");
  EXPECT_EQ(parse_engine("tofu"), Engine::tofu);
  EXPECT_EQ(parse_engine("terraform"), Engine::terraform);
  EXPECT_THROW(parse_engine("opentofu"), Error);
}

TEST(ProviderAddress, ParsesShortAndFullForms) {
  auto short_form = ProviderAddress::parse("hashicorp/aws", "registry.opentofu.org");
  EXPECT_EQ(short_form.str(), "registry.opentofu.org/hashicorp/aws");
  auto full = ProviderAddress::parse("Registry.Terraform.IO/HashiCorp/AWS", "registry.opentofu.org");
  EXPECT_EQ(full.str(), "registry.terraform.io/hashicorp/aws");
  EXPECT_EQ(ProviderAddress::parse("mirror.local:8443/acme/my-provider_x", "x").str(), "mirror.local:8443/acme/my-provider_x");
}

TEST(ProviderAddress, RejectsBadAddresses) {
  for (const char* bad : {"aws", "", "a/b/c/d", "hashicorp/", "/aws", "-bad/aws", "hashicorp/aws-", "bad host/a/b",
                          "h/a b/c"}) {
    EXPECT_THROW(ProviderAddress::parse(bad, "registry.opentofu.org"), Error) << bad;
  }
}

// Go's GOOS_GOARCH, as the engines name platforms. Two copies of this mapping once disagreed:
// one answered linux_amd64 for every machine it did not know (a FreeBSD host, a 32-bit PC).
TEST(HostPlatform, MapsUnameAsGoNamesPlatforms) {
  struct Case {
    const char* sysname;
    const char* machine;
    const char* platform;
  };
  for (const Case& c : {Case{"Linux", "x86_64", "linux_amd64"}, Case{"Linux", "aarch64", "linux_arm64"},
                        Case{"Darwin", "arm64", "darwin_arm64"}, Case{"Darwin", "x86_64", "darwin_amd64"},
                        Case{"FreeBSD", "amd64", "freebsd_amd64"}, Case{"Linux", "i686", "linux_386"},
                        Case{"Linux", "i386", "linux_386"}, Case{"Linux", "armv7l", "linux_arm"},
                        Case{"Linux", "armv6l", "linux_arm"}, Case{"Linux", "ppc64le", "linux_ppc64le"},
                        Case{"Linux", "s390x", "linux_s390x"}, Case{"OpenBSD", "amd64", "openbsd_amd64"}}) {
    EXPECT_EQ(platform_of_machine(c.sysname, c.machine).str(), c.platform) << c.sysname << " " << c.machine;
  }
  // Whatever uname says, the answer is a platform the rest of podplane accepts.
  EXPECT_EQ(Platform::parse(platform_of_machine("Weird OS", "x86-64 (v2)").str()).str(), "weirdos_x8664v2");
}

// The judge: the platform a real terraform reports on this machine.
TEST(HostPlatform, IsWhatTerraformVersionReports) {
  if (!test::have_program("terraform")) GTEST_SKIP() << "no terraform on PATH";
  test::ProcessOptions options;
  options.env = {{"CHECKPOINT_DISABLE", "1"}, {"TF_CLI_CONFIG_FILE", "/dev/null"}};  // offline, no user config
  auto version = test::run({"terraform", "version", "-json"}, options);
  ASSERT_EQ(version.exit_code, 0) << version.err;
  auto reported = nlohmann::json::parse(version.out).at("platform").get<std::string>();
  EXPECT_EQ(host_platform().str(), reported);
}

}  // namespace
}  // namespace podplane::lockfile
