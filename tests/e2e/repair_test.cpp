// A store is never stuck: a row planted into index.db that the views cannot lay out does not
// stop `deps tf`, `deps download` or `bundle import`, and `deps verify --repair` quarantines
// it; a corrupt object, once quarantined, is fetched again by `deps tf`/`deps download`.
#include <gtest/gtest.h>

#include "base/digest.hpp"
#include "cache/layout.hpp"
#include "cache/store.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::e2e {
namespace {

namespace fs = std::filesystem;
using test::ProcessOptions;
using test::ProcessResult;
using test::run;
using test::run_podplane;
using test::show;
using test::TempDir;

void damage(const fs::path& object) {
  std::string bytes = test::read_file(object);
  bytes[bytes.size() / 2] ^= 0x5a;  // same size, other content
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  test::write_file(object, bytes);
}

class StoreRepair : public ::testing::Test {
 protected:
  void SetUp() override {
    upstream.emplace();
    online.env = upstream->env(root, upstream->write_cli_config(dir / "cli.tfrc"));
    online.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    ASSERT_EQ(podplane({"deps", "tf", "--platform", "linux_amd64"}).exit_code, 0);
    ASSERT_EQ(podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"}).exit_code, 0);
  }

  ProcessResult podplane(const std::vector<std::string>& args) {
    std::vector<std::string> quiet{"--quiet"};
    quiet.insert(quiet.end(), args.begin(), args.end());
    auto result = run_podplane(quiet, online);
    if (args.size() < 2 || args[1] != "verify") {
      EXPECT_EQ(result.exit_code, 0) << show(result);
    }
    return result;
  }

  cache::Artifact first(cache::ArtifactKind kind) {
    auto rows = cache::Store::open(root, cache::Store::Access::read_only).artifacts({.kind = kind});
    EXPECT_FALSE(rows.empty());
    return rows.at(0);
  }

  TempDir dir;
  fs::path root = dir / "deps";
  std::optional<test::FixtureUpstream> upstream;
  ProcessOptions online;
};

TEST_F(StoreRepair, ACorruptObjectIsFetchedAgainAfterRepair) {
  auto package = first(cache::ArtifactKind::provider_package);
  auto artifact = first(cache::ArtifactKind::vmconfig_artifact);
  fs::path package_object = cache::layout::objects_dir(root) / package.digest.substr(0, 2) / package.digest.substr(2);
  fs::path artifact_object = cache::layout::objects_dir(root) / artifact.digest.substr(0, 2) / artifact.digest.substr(2);
  damage(package_object);
  damage(artifact_object);
  EXPECT_EQ(podplane({"deps", "verify"}).exit_code, 1);

  auto repair = podplane({"deps", "verify", "--repair"});
  EXPECT_EQ(repair.exit_code, 1) << "objects are missing until fetched again\n" << show(repair);
  EXPECT_NE(repair.out.find("quarantined object " + package.digest), std::string::npos) << show(repair);

  (void)podplane({"deps", "tf", "--platform", "linux_amd64"});
  (void)podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"});
  EXPECT_EQ(file_digest_hex(package_object), package.digest) << "deps tf took the package again";
  EXPECT_EQ(file_digest_hex(artifact_object), artifact.digest) << "deps download took the artifact again";
  auto verify = podplane({"deps", "verify"});
  EXPECT_EQ(verify.exit_code, 0) << show(verify);
}

TEST_F(StoreRepair, APlantedRowNeverStopsTheOtherCommands) {
  ASSERT_TRUE(test::have_program("sqlite3"));
  auto kernel = first(cache::ArtifactKind::vmconfig_artifact);
  auto planted = run({"sqlite3", cache::layout::index_db(root).string(),
                      "INSERT INTO artifacts (kind, address, version, platform, filename, digest, size, upstream_url, trust,"
                      " added_at) VALUES ('vmconfig_artifact', 'kernel', '9.9.9', '', 'vmlinuz', '" + kernel.digest + "', " +
                          std::to_string(kernel.size) + ", 'https://example.com/releases/', 'checksum', '2026-01-01T00:00:00Z');"});
  ASSERT_EQ(planted.exit_code, 0) << show(planted);

  (void)podplane({"deps", "tf", "--platform", "linux_amd64", "--platform", "linux_arm64"});
  (void)podplane({"deps", "download", "--arch", "amd64", "--kind", "knd"});
  {
    // A bundle from a second store imports into this one.
    TempDir other;
    ProcessOptions second = online;
    second.env["PODPLANE_DEPS_CACHE_DIR"] = (other / "deps").string();
    ASSERT_EQ(run_podplane({"--quiet", "deps", "download", "--arch", "arm64", "--kind", "knc"}, second).exit_code, 0);
    ASSERT_EQ(run_podplane({"bundle", "create", (other / "b.bundle").string()}, second).exit_code, 0);
    (void)podplane({"bundle", "import", (other / "b.bundle").string(), "--allow-unsigned"});
  }
  EXPECT_EQ(podplane({"deps", "verify"}).exit_code, 1);
  auto repair = podplane({"deps", "verify", "--repair"});
  EXPECT_EQ(repair.exit_code, 0) << show(repair);
  EXPECT_EQ(podplane({"deps", "verify"}).exit_code, 0);
  (void)podplane({"deps", "tf", "--platform", "linux_amd64"});
}

}  // namespace
}  // namespace podplane::e2e
