// Golden stacks: the sample AWS and Google configs under tests/data/generator/<sample>/
// generate exactly the files in <sample>/expected/ (tests/support/golden.hpp: PODPLANE_UPDATE_GOLDEN=1
// rewrites them).
// Lock hashes depend on the bytes `zip` wrote, so the lock is compared with every hash
// replaced by a label naming its package.
#include <gtest/gtest.h>

#include "base/digest.hpp"
#include "tests/generator/cluster_env.hpp"
#include "tests/support/golden.hpp"

namespace podplane::test {
namespace {

void compare_with_golden(const std::string& sample, const ClusterEnv& env) {
  auto files = env.snapshot();
  files.erase("podplane.cluster.jsonc");
  // The lock's bytes (so the state's record of them) depend on the bytes `zip` wrote.
  std::string lock_sha256 = sha256_hex(files[".terraform.lock.hcl"]);
  std::string& state = files[".podplane.cluster.state.json"];
  ASSERT_NE(state.find(lock_sha256), std::string::npos);
  state.replace(state.find(lock_sha256), lock_sha256.size(), "<sha256 of .terraform.lock.hcl>");
  files[".terraform.lock.hcl"] = env.fixture->label_hashes(files[".terraform.lock.hcl"]);
  expect_golden_dir(fs::path("generator") / sample / "expected", files);
}

TEST(GoldenStack, Aws) {
  ClusterEnv env("aws");
  auto result = env.cluster({"create", "--no-apply"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  compare_with_golden("aws", env);
}

TEST(GoldenStack, Google) {
  StoreFixtureOptions options;
  options.selection_module = "google";
  ClusterEnv env("google", options);
  auto result = env.cluster({"create", "--no-apply"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  // No deps_mirror_url in this config: $PODPLANE_DEPS_URL is written in.
  EXPECT_NE(read_file(env.stack / "podplane.cluster.main.tf").find("\"http://deps-from-env.internal:8080/arch/"),
            std::string::npos);
  compare_with_golden("google", env);
}

// A Google stack from a store whose current selection is the AWS package: the generator takes
// the newest Google package the store holds and computes the lock from the store's packages.
TEST(GoldenStack, GoogleFromAStoreSelectedForAws) {
  ClusterEnv env("google");
  auto result = env.cluster({"create", "--no-apply"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  EXPECT_NE(result.err.find("took the newest nstance-dev/nstance/google in the store, 2.0.1"), std::string::npos)
      << result.err;
  std::string lock = read_file(env.stack / ".terraform.lock.hcl");
  EXPECT_NE(lock.find("provider \"registry.opentofu.org/hashicorp/google\""), std::string::npos) << lock;
  EXPECT_EQ(lock.find("hashicorp/aws"), std::string::npos) << lock;
  auto check = env.cluster({"check"});
  EXPECT_EQ(check.exit_code, 0) << show(check);
}

}  // namespace
}  // namespace podplane::test
