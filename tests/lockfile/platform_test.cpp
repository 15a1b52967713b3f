#include "lockfile/platform.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"

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

}  // namespace
}  // namespace podplane::lockfile
