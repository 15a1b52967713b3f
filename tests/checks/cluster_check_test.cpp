// `podplane cluster check` where the two checks meet: a package the lock accepts by any one of
// its hashes passes (as the engines accept it), and a config that cannot be read next to a
// generated stack gives one failing row, not an aborted check.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/generator/cluster_env.hpp"

namespace podplane::test {
namespace {

// The table row for one platform and check, "" when absent.
std::string row(const std::string& table, const std::string& platform, const std::string& check) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(platform + " ", 0) == 0 && line.find(" " + check + " ") != std::string::npos) return line;
  return "";
}

bool row_ok(const std::string& line) { return line.ends_with("  ok"); }

const std::string kAws = "provider registry.opentofu.org/hashicorp/aws 6.2.0";

TEST(ClusterCheckRules, ALockWithOnlyThePackagesZhAcceptsIt) {
  // A lock written by `init` on another machine has the h1 of that machine's platform only;
  // the engines accept every other platform's package by its zh. Until both checks shared one
  // rule, cluster check demanded every hash of the store's package in the lock.
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  std::istringstream lines(read_file(env.stack / ".terraform.lock.hcl"));
  std::string without_h1;
  std::size_t dropped = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"h1:") != std::string::npos) {
      ++dropped;
      continue;
    }
    without_h1 += line + "\n";
  }
  ASSERT_GT(dropped, 0u);
  write_file(env.stack / ".terraform.lock.hcl", without_h1);
  auto result = env.cluster({"check"});
  for (const char* platform : {"darwin_arm64", "linux_amd64", "linux_arm64"})
    EXPECT_TRUE(row_ok(row(result.out, platform, kAws))) << result.out;
  EXPECT_EQ(result.out.find("LOCK: the lock has no hash"), std::string::npos) << result.out;
}

TEST(ClusterCheckRules, ALockWithNoHashOfThePackageRefusesIt) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  std::istringstream lines(read_file(env.stack / ".terraform.lock.hcl"));
  std::string without_hashes;
  for (std::string line; std::getline(lines, line);) {
    // Every hash of every entry replaced by one no package has.
    if (line.find("\"h1:") != std::string::npos || line.find("\"zh:") != std::string::npos) continue;
    if (line.find("hashes = [") != std::string::npos) line += "\n    \"zh:0000000000000000000000000000000000000000000000000000000000000000\",";
    without_hashes += line + "\n";
  }
  write_file(env.stack / ".terraform.lock.hcl", without_hashes);
  auto result = env.cluster({"check", "--platform", "linux_amd64"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(row(result.out, "linux_amd64", kAws).find("LOCK: the lock has no hash of the store's package"),
            std::string::npos)
      << result.out;
}

TEST(ClusterCheckConfig, AMalformedConfigNextToAStackGivesItsRowAndTheRestIsChecked) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  write_file(env.config(), "{ \"cluster\": ");
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  const std::string config_row = row(result.out, "-", "config podplane.cluster.jsonc");
  EXPECT_NE(config_row.find("UNREADABLE: "), std::string::npos) << result.out;
  EXPECT_NE(config_row.find("every vmconfig item counts"), std::string::npos) << result.out;
  // What init needs is still checked, from the stack's own files.
  EXPECT_TRUE(row_ok(row(result.out, "linux_amd64", kAws))) << result.out;
  EXPECT_NE(result.out.find("module registry.opentofu.org/nstance-dev/nstance/aws 2.0.1"), std::string::npos)
      << result.out;
  EXPECT_NE(result.err.find("cluster check failed; to fix:"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("podplane cluster create --no-apply"), std::string::npos) << result.err;
}

TEST(ClusterCheckConfig, AMissingConfigNextToAStackGivesItsRow) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  fs::remove(env.config());
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(row(result.out, "-", "config podplane.cluster.jsonc").find("UNREADABLE: "), std::string::npos) << result.out;
  EXPECT_TRUE(row_ok(row(result.out, "linux_amd64", kAws))) << result.out;
}

}  // namespace
}  // namespace podplane::test
