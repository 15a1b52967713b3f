// `podplane cluster check`: passes on a fresh stack, fails with the remedy on a missing
// platform, a tampered view zip, a modified module tree and a moved store.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/generator/cluster_env.hpp"

namespace podplane::test {
namespace {

// The table row for one platform and check, "" when absent.
std::string row(const std::string& table, const std::string& platform, const std::string& check) {
  std::size_t start = 0;
  while (start < table.size()) {
    std::size_t end = table.find('\n', start);
    if (end == std::string::npos) end = table.size();
    std::string line = table.substr(start, end - start);
    if (line.rfind(platform + " ", 0) == 0 && line.find(" " + check + " ") != std::string::npos) return line;
    start = end + 1;
  }
  return "";
}

bool row_ok(const std::string& line) { return line.size() > 3 && line.ends_with("  ok"); }

TEST(ClusterCheck, PassesForEveryPlatformOfTheStore) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  auto result = env.cluster({"check"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  for (const char* platform : {"darwin_arm64", "linux_amd64", "linux_arm64"})
    EXPECT_TRUE(row_ok(row(result.out, platform, "provider registry.opentofu.org/hashicorp/aws 6.2.0"))) << result.out;
  EXPECT_NE(result.out.find("module registry.opentofu.org/nstance-dev/nstance/aws 2.0.1"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("vmconfig_knc_debian-13_arm64 (5 artifacts)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("tfrc → " + (env.deps() / "tf" / "providers").string()), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("MISSING"), std::string::npos);
  auto one = env.cluster({"check", "--platform", "linux_arm64"});
  ASSERT_EQ(one.exit_code, 0) << show(one);
  EXPECT_EQ(one.out.find("linux_amd64"), std::string::npos) << one.out;
}

TEST(ClusterCheck, FailsOnAPlatformTheStoreLacks) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  auto result = env.cluster({"check", "--platform", "linux_amd64", "--platform", "windows_amd64"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(row(result.out, "windows_amd64", "provider registry.opentofu.org/hashicorp/aws 6.2.0")
                .find("MISSING: no package in the store"),
            std::string::npos)
      << result.out;
  EXPECT_TRUE(row_ok(row(result.out, "linux_amd64", "provider registry.opentofu.org/hashicorp/aws 6.2.0")));
  EXPECT_NE(result.err.find("podplane deps tf --engine tofu --platform windows_amd64 (online), or import a bundle"), std::string::npos)
      << result.err;
}

TEST(ClusterCheck, FailsOnATamperedViewZip) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  fs::path zip = env.deps() / "tf" / "providers" / "registry.opentofu.org" / "hashicorp" / "aws" /
                 "terraform-provider-aws_6.2.0_linux_arm64.zip";
  ASSERT_TRUE(fs::exists(zip));
  // The view is a hard link into the objects: replace the link, never the object.
  std::string bytes = read_file(zip);
  bytes[bytes.size() / 2] ^= 0x5a;
  fs::remove(zip);
  write_file(zip, bytes);
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(row(result.out, "linux_arm64", "provider registry.opentofu.org/hashicorp/aws 6.2.0")
                .find("CORRUPT: terraform-provider-aws_6.2.0_linux_arm64.zip hashes to zh:"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.err.find("podplane deps verify"), std::string::npos) << result.err;
  // The other platforms still pass.
  EXPECT_TRUE(row_ok(row(result.out, "linux_amd64", "provider registry.opentofu.org/hashicorp/aws 6.2.0"))) << result.out;
}

TEST(ClusterCheck, FailsOnAModifiedModuleTreeAndAMissingArtifact) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  fs::path versions = env.deps() / "tf" / "modules" / "nstance" / "2.0.1" / "modules" / "shard" / "versions.tf";
  std::string text = read_file(versions);
  fs::remove(versions);
  write_file(versions, text + "# changed\n");
  // A manifest pinned in the stack that names an artifact the store never had.
  fs::path manifest = env.stack / "podplane.cluster.vmconfig_knc_debian-13_arm64.json";
  std::string json = read_file(manifest);
  json.replace(json.find("\"version\": \"1.36.1\""), 19, "\"version\": \"1.99.0\"");
  write_file(manifest, json);
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(result.out.find("module registry.opentofu.org/nstance-dev/nstance/aws 2.0.1"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("CORRUPT: tree hashes to"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("MISSING 1 of 5: kube-apiserver 1.99.0"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("podplane deps download --kind knc --arch arm64"), std::string::npos) << result.err;
}

TEST(ClusterCheck, NeedsAGeneratedStack) {
  ClusterEnv env;
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("run `podplane cluster create` first"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace podplane::test

namespace podplane::test {
namespace {

// Provider-specific vmconfig items count only for the cluster's own provider.
TEST(ClusterCheck, IgnoresVmconfigItemsOfOtherProviders) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  fs::path manifest = env.stack / "podplane.cluster.vmconfig_knc_debian-13_arm64.json";
  auto json = nlohmann::json::parse(read_file(manifest));
  auto item = [](const std::string& provider) {
    return nlohmann::json{{"version", "1.0.0"}, {"url", "https://example.invalid/x.tar.gz"}, {"type", "tar.gz"},
                          {"digest", "sha256:" + std::string(64, 'a')}, {"size", 1}, {"providers", {provider}}};
  };
  json["vmconfig"]["dependencies"]["openbao"] = item("proxmox");
  json["vmconfig"]["dependencies"]["google-guest-agent"] = item("gcp");
  write_file(manifest, json.dump(2) + "\n");
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 0) << show(result);
  EXPECT_NE(result.out.find("vmconfig_knc_debian-13_arm64 (5 artifacts)"), std::string::npos) << result.out;

  json["vmconfig"]["dependencies"]["nstance-agent"] = item("aws");
  write_file(manifest, json.dump(2) + "\n");
  result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(result.out.find("MISSING 1 of 6: nstance-agent 1.0.0"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace podplane::test

namespace podplane::test {
namespace {

// The fixture's kube-apiserver has one file name for both arches, like kubelet upstream: on
// Podplane's plain path an arm64 VM would receive the amd64 build.
TEST(ClusterCheck, ReplaysEveryVmFetchAndCatchesAnotherArchsBytes) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  auto result = env.cluster({"check"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  EXPECT_NE(result.out.find("ok: 5 artifacts of vmconfig_knc_debian-13_arm64 from http://mirror.internal:8080/arch/arm64 "
                            "match the manifest's digests"),
            std::string::npos)
      << result.out;

  fs::path main_file = env.stack / "podplane.cluster.main.tf";
  std::string main = read_file(main_file);
  for (auto at = main.find("/arch/arm64\""); at != std::string::npos; at = main.find("/arch/arm64\""))
    main.replace(at, 12, "\"");
  write_file(main_file, main);
  result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(result.out.find("kube-apiserver 1.36.1: http://mirror.internal:8080/vmconfig/artifacts/kube-apiserver/1.36.1/"
                            "kube-apiserver answers linux_amd64's kube-apiserver"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("VM knd_amd64 fetches its artifacts"), std::string::npos);
  EXPECT_NE(result.err.find("each VM flavour needs the mirror base of its own arch"), std::string::npos) << result.err;
}

TEST(ClusterCheck, FailsWhenVmsFetchFromThePublicHost) {
  ClusterEnv env;
  std::string config = read_file(env.config());
  const std::string mirror = "\"deps_mirror_url\": \"http://mirror.internal:8080\",";
  config.erase(config.find(mirror), mirror.size());
  write_file(env.config(), config);
  auto options = env.options();
  options.unset_env.push_back("PODPLANE_DEPS_URL");
  options.env.erase("PODPLANE_DEPS_URL");
  ASSERT_EQ(env.cluster({"create", "--no-apply"}, options).exit_code, 0);
  auto result = env.cluster({"check"}, options);
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(result.out.find("UPSTREAM: podplane.cluster.main.tf:"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("set cluster.deps_mirror_url"), std::string::npos) << result.err;
}

TEST(ClusterCheck, ReportsModuleArgumentsTheModuleDoesNotDeclareAndRequiredOnesLeftOut) {
  StoreFixtureOptions options;
  options.edit_module = [](const std::string&, std::map<std::string, std::string>& files) {
    auto& shard = files.at("modules/shard/main.tf");
    const std::string zone = "variable \"zone\" {\n  default = null\n}\n";
    shard.replace(shard.find(zone), zone.size(), "variable \"zone\" {\n  type = string\n}\n");
  };
  ClusterEnv env("aws", options);
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  ASSERT_EQ(env.cluster({"check"}).exit_code, 0);
  fs::path main_file = env.stack / "podplane.cluster.main.tf";
  std::string main = read_file(main_file);
  main.replace(main.find("  zone    = \"us-east-1a\"\n"), 25, "");
  main.replace(main.find("  name_prefix = local.name_prefix\n"), 34, "  name_prefix = local.name_prefix\n  colour = \"blue\"\n");
  write_file(main_file, main);
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(result.out.find("UNDECLARED: podplane.cluster.main.tf:"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("module \"cluster\" passes \"colour\", which registry.opentofu.org/nstance-dev/nstance/aws 2.0.1 "
                            "modules/cluster does not declare"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("REQUIRED: podplane.cluster.main.tf:"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("module \"shard_us_east_1a\" leaves out \"zone\", which registry.opentofu.org/nstance-dev/nstance/aws "
                            "2.0.1 modules/shard requires (modules/shard/main.tf:"),
            std::string::npos)
      << result.out;
}

}  // namespace
}  // namespace podplane::test
