// Hostile registry answers: nesting far deeper than any real answer, and numbers beyond a
// double, fail with the URL and position instead of crashing the reader (nlohmann's dump of
// the signing keys recursed once per level).
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "fetch/registry.hpp"
#include "fetch/vmconfig.hpp"

namespace podplane::fetch {
namespace {

const std::string kUrl = "https://registry.example/v1/providers/hashicorp/aws/6.2.0/download/linux/amd64";

std::string deep(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(RegistryLimits, DeepSigningKeysFailWithTheUrlAndPosition) {
  std::string body = R"({"os":"linux","arch":"amd64","filename":"terraform-provider-aws_6.2.0_linux_amd64.zip",)"
                     R"("download_url":"x.zip","shasums_url":"s","shasums_signature_url":"s.sig",)"
                     R"("shasum":"0000000000000000000000000000000000000000000000000000000000000000",)"
                     R"("signing_keys":{"gpg_public_keys":)" + deep(100000) + "}}";
  try {
    (void)parse_provider_download(body, kUrl, lockfile::Platform{"linux", "amd64"});
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("provider download answer from " + kUrl + ":1:"), std::string::npos) << message;
    EXPECT_NE(message.find("nested deeper than 128 levels"), std::string::npos) << message;
  }
}

TEST(RegistryLimits, VersionsAndManifestsRefuseDepthAndHugeNumbers) {
  EXPECT_THROW((void)parse_provider_versions("{\"versions\":" + deep(100000) + "}", kUrl), Error);
  try {
    (void)parse_vmconfig_manifest("{\"vmconfig\": {\"size\": 1e999}}", "vmconfig_knc_debian-13_amd64");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("number out of range: 1e999"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace podplane::fetch
