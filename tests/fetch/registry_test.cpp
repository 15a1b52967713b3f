// Registry protocol answers (docs/protocols.md §1, §2, §6.1): parsing and the client rules.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "fetch/registry.hpp"

namespace podplane::fetch {
namespace {

using lockfile::Platform;

const char* kAnswer = R"({
  "protocols": ["5.0"], "os": "linux", "arch": "amd64",
  "filename": "terraform-provider-aws_6.2.0_linux_amd64.zip",
  "download_url": "/releases/aws/6.2.0/terraform-provider-aws_6.2.0_linux_amd64.zip",
  "shasums_url": "../../../SHA256SUMS",
  "shasums_signature_url": "https://other.example/SHA256SUMS.sig",
  "shasum": "5F9C7AA76B7C34D722FC9123208E26B22D60440CB47150DD04733B9B94F4541A",
  "signing_keys": {"gpg_public_keys": [{"key_id": "X", "ascii_armor": "-----BEGIN PGP PUBLIC KEY BLOCK-----"}]}
})";
const std::string kUrl = "https://reg.example/v1/providers/hashicorp/aws/6.2.0/download/linux/amd64";

TEST(RegistryParse, DownloadAnswerResolvesRelativeUrlsAndNormalisesShasum) {
  auto answer = parse_provider_download(kAnswer, kUrl, Platform::parse("linux_amd64"));
  EXPECT_EQ(answer.download_url, "https://reg.example/releases/aws/6.2.0/terraform-provider-aws_6.2.0_linux_amd64.zip");
  EXPECT_EQ(answer.shasums_url, "https://reg.example/v1/providers/hashicorp/aws/SHA256SUMS");
  EXPECT_EQ(answer.shasums_signature_url, "https://other.example/SHA256SUMS.sig");
  EXPECT_EQ(answer.shasum, "5f9c7aa76b7c34d722fc9123208e26b22d60440cb47150dd04733b9b94f4541a");
  ASSERT_EQ(answer.signing_keys.size(), 1u);
  EXPECT_NE(answer.signing_keys_json.find("gpg_public_keys"), std::string::npos);
}

TEST(RegistryParse, DownloadAnswerForAnotherPlatformIsAnIncorrectTarget) {
  try {
    (void)parse_provider_download(kAnswer, kUrl, Platform::parse("linux_arm64"));
    FAIL() << "accepted an answer for the wrong platform";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("incorrect target"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("expected: linux_arm64"), std::string::npos) << error.what();
  }
}

TEST(RegistryParse, DownloadAnswerRules) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string text = kAnswer;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  auto platform = Platform::parse("linux_amd64");
  EXPECT_THROW((void)parse_provider_download(with("5F9C7AA7", "5F9C7AA"), kUrl, platform), Error);  // 63 hex
  EXPECT_THROW((void)parse_provider_download(with("\"5.0\"", "\"4.0\""), kUrl, platform), Error);   // protocol
  EXPECT_THROW((void)parse_provider_download(with("https://other.example", "ftp://other.example"), kUrl, platform), Error);
  EXPECT_THROW((void)parse_provider_download(with("terraform-provider-aws_6.2.0_linux_amd64.zip\",\n  \"download_url",
                                                  "../evil.zip\",\n  \"download_url"),
                                             kUrl, platform),
               Error);
  EXPECT_THROW((void)parse_provider_download("{not json", kUrl, platform), Error);
  // Protocol 6 and a mix with an old one are fine.
  EXPECT_NO_THROW((void)parse_provider_download(with("\"5.0\"", "\"4.0\", \"6.0\""), kUrl, platform));
}

TEST(RegistryParse, OpenTofuPackagesMustAgreeWithShasum) {
  std::string text = kAnswer;
  text.insert(text.rfind('}'), R"(, "packages": {"linux_amd64": {"hashes": ["zh:0000000000000000000000000000000000000000000000000000000000000000"], "package_size": 10}})");
  EXPECT_THROW((void)parse_provider_download(text, kUrl, Platform::parse("linux_amd64")), Error);
}

TEST(RegistryParse, VersionsSkipUnparsableAndKeepProtocols) {
  auto versions = parse_provider_versions(
      R"({"versions":[{"version":"6.2.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"}]},
                      {"version":"v1"},{"version":"6.0.0","protocols":["4.0"]}]})",
      "https://x/versions");
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].version.str(), "6.2.0");
  EXPECT_EQ(versions[0].platforms.at(0).str(), "linux_amd64");
  EXPECT_TRUE(protocols_supported(versions[0].protocols));
  EXPECT_FALSE(protocols_supported(versions[1].protocols));
  EXPECT_TRUE(protocols_supported({}));
  EXPECT_THROW((void)parse_provider_versions(R"({"nothing":1})", "https://x/versions"), Error);
}

TEST(RegistryParse, ModuleVersionsUseOnlyTheFirstModule) {
  auto versions = parse_module_versions(
      R"({"modules":[{"versions":[{"version":"2.0.1"},{"version":"2.1.0"}]},{"versions":[{"version":"9.0.0"}]}]})",
      "https://x/versions");
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[1].str(), "2.1.0");
}

TEST(RegistryParse, NetworkMirrorDocuments) {
  auto versions = parse_mirror_index(R"({"versions":{"2.0.0":{},"not-a-version":{},"2.0.1":{}}})", "https://m/x/index.json");
  EXPECT_EQ(versions.size(), 2u);
  auto archives = parse_mirror_version(
      R"({"archives":{"linux_amd64":{"url":"terraform-provider-random_2.0.0_linux_amd64.zip","hashes":["h1:abc","zh:def","md5:x"]}}})",
      "https://m/mirror/registry.opentofu.org/hashicorp/random/2.0.0.json");
  ASSERT_EQ(archives.count("linux_amd64"), 1u);
  EXPECT_EQ(archives["linux_amd64"].url,
            "https://m/mirror/registry.opentofu.org/hashicorp/random/terraform-provider-random_2.0.0_linux_amd64.zip");
  EXPECT_EQ(archives["linux_amd64"].hashes, (std::vector<std::string>{"h1:abc", "zh:def"}));
}

TEST(RegistryParse, DiscoveryKeepsStringServices) {
  auto services = parse_discovery(R"({"providers.v1":"/v1/providers/","modules.v1":"https://m/v1/","x":3})", "https://h/");
  EXPECT_EQ(services.size(), 2u);
  EXPECT_EQ(services["providers.v1"], "/v1/providers/");
}

}  // namespace
}  // namespace podplane::fetch
