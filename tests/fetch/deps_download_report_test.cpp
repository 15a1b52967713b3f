// What `deps download` takes without --providers, and how it reports it: the providers (and
// why), per manifest what it needed and how much of that an earlier manifest shared, and a
// total that adds up, by kind.
#include <gtest/gtest.h>

#include <regex>

#include "cache/store.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

class DepsDownloadReport : public ::testing::Test {
 protected:
  void SetUp() override {
    online.env = upstream.env(root, upstream.write_cli_config(dir / "cli.tfrc"));
    online.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    online.cwd = dir.path();
  }
  std::size_t stored(const std::string& name) {
    return cache::Store::open(root, cache::Store::Access::read_only)
        .artifacts({.kind = cache::ArtifactKind::vmconfig_artifact, .address = name})
        .size();
  }
  FixtureUpstream upstream;
  TempDir dir;
  fs::path root = dir / "deps";
  ProcessOptions online;
};

TEST_F(DepsDownloadReport, WithNoClusterConfigEveryProvidersItemsAndATotalThatAddsUp) {
  auto result = run_podplane({"--quiet", "deps", "download", "--arch", "amd64,arm64"}, online);
  ASSERT_EQ(result.exit_code, 0) << show(result);
  EXPECT_NE(result.out.find("Providers: all (no cluster config here or -f; --providers to choose)\n"), std::string::npos)
      << result.out;
  for (const char* name : {"nstance-agent", "google-guest-agent", "openbao"}) EXPECT_EQ(stored(name), 2u) << name;

  // Each manifest's fetched count, less what it shared with an earlier one, adds up to the
  // artifacts and boot files of the total.
  std::size_t fetched = 0, shared = 0, lines = 0;
  const std::regex line("vmconfig (\\S+): fetched (\\d+), present (\\d+)(?: \\((\\d+) of them also listed by an earlier "
                        "manifest: downloaded once\\))?\\.");
  for (std::sregex_iterator it(result.out.begin(), result.out.end(), line), end; it != end; ++it) {
    ++lines;
    fetched += std::stoul((*it)[2]);
    if ((*it)[4].matched) shared += std::stoul((*it)[4]);
  }
  EXPECT_EQ(lines, 4u) << result.out;
  EXPECT_GT(shared, 0u) << "knc and knd share artifacts, and the later line should say so\n" << result.out;
  std::smatch total;
  ASSERT_TRUE(std::regex_search(result.out, total,
                                std::regex("Fetched (\\d+) vmconfig artifacts, (\\d+) boot files read out of os images, "
                                           "(\\d+) seed snapshots and (\\d+) container images \\(\\d+ bytes\\)\\.")))
      << result.out;
  EXPECT_EQ(std::stoul(total[1]) + std::stoul(total[2]), fetched - shared) << result.out;
}

TEST_F(DepsDownloadReport, AClusterConfigHereOrGivenWithFSelectsItsProvider) {
  ASSERT_EQ(run_podplane({"cluster", "init", "--provider", "aws"}, online).exit_code, 0);
  auto here = run_podplane({"--quiet", "deps", "download", "--arch", "amd64", "--kind", "knc"}, online);
  ASSERT_EQ(here.exit_code, 0) << show(here);
  EXPECT_NE(here.out.find("Providers: aws (the provider of podplane.cluster.jsonc; --providers to choose)"), std::string::npos)
      << here.out;
  EXPECT_EQ(stored("nstance-agent"), 1u);
  EXPECT_EQ(stored("google-guest-agent"), 0u);

  ASSERT_EQ(run_podplane({"cluster", "init", "--provider", "google", "-f", (dir / "gcp.jsonc").string()}, online).exit_code, 0);
  auto given = run_podplane({"--quiet", "deps", "download", "--arch", "amd64", "--kind", "knc", "-f", (dir / "gcp.jsonc").string()},
                            online);
  ASSERT_EQ(given.exit_code, 0) << show(given);
  EXPECT_NE(given.out.find("Providers: google (the provider of " + (dir / "gcp.jsonc").string()), std::string::npos) << given.out;
  EXPECT_EQ(stored("google-guest-agent"), 1u);
  EXPECT_EQ(stored("openbao"), 0u);

  auto both = run_podplane({"deps", "download", "--providers", "all", "-f", (dir / "gcp.jsonc").string()}, online);
  EXPECT_EQ(both.exit_code, 2) << show(both);
}

}  // namespace
}  // namespace podplane::test
