// Cross-checks against HashiCorp's and Go's own code (tests/tools/gocheck): every generated
// .tf, the lock and the store's tfrc parse with HashiCorp's HCL parser; for each platform the
// lock's h1 equals Go's dirhash of the view zip; the module tree h1 equals Go's HashDir.
#include <gtest/gtest.h>

#include <algorithm>

#include "lockfile/hash.hpp"
#include "lockfile/lock_file.hpp"
#include "tests/generator/cluster_env.hpp"
#include "tests/support/gocheck.hpp"

namespace podplane::test {
namespace {

TEST(GoCrossCheck, GeneratedFilesParseWithHashiCorpsParser) {
  for (const std::string sample : {"aws", "google"}) {
    StoreFixtureOptions options;
    options.selection_module = sample;
    ClusterEnv env(sample, options);
    auto result = env.cluster({"create", "--no-apply"});
    ASSERT_EQ(result.exit_code, 0) << show(result);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(env.stack)) {
      std::string name = entry.path().filename().string();
      if (name.ends_with(".tf") || name == ".terraform.lock.hcl") files.push_back(entry.path());
    }
    ASSERT_EQ(files.size(), 9u);
    files.push_back(env.deps() / "tf" / "podplane.tfrc");
    auto parsed = gocheck_hclparse(files);
    EXPECT_EQ(parsed.exit_code, 0) << sample << ": " << parsed.out << parsed.err;
  }
}

TEST(GoCrossCheck, LockHashesMatchGoDirhashOfEachViewZip) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  auto lock = lockfile::read_lock_file(env.stack / ".terraform.lock.hcl");
  int checked = 0;
  for (const auto& provider : lock.providers) {
    std::string type = provider.address.substr(provider.address.rfind('/') + 1);
    for (const char* platform : {"darwin_arm64", "linux_amd64", "linux_arm64"}) {
      fs::path zip = env.deps() / "tf" / "providers" / provider.address /
                     ("terraform-provider-" + type + "_" + provider.version + "_" + platform + ".zip");
      std::string h1 = gocheck_hashzip(zip);
      EXPECT_NE(std::find(provider.hashes.begin(), provider.hashes.end(), h1), provider.hashes.end())
          << provider.address << " " << platform << ": Go's dirhash says " << h1;
      EXPECT_NE(std::find(provider.hashes.begin(), provider.hashes.end(), lockfile::zh_hash_of_file(zip)),
                provider.hashes.end());
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6 * 3);  // aws, cloudinit, null, random, tls, podplane × 3 platforms
  // The module package `cluster check` verifies, hashed by Go's HashDir.
  auto store_tree = env.fixture->store().find_module_tree("registry.opentofu.org/nstance-dev/nstance/aws", "2.0.1");
  ASSERT_TRUE(store_tree.has_value());
  EXPECT_EQ(gocheck_hashdir(env.deps() / "tf" / "modules" / "nstance" / "2.0.1"), store_tree->h1);
}

}  // namespace
}  // namespace podplane::test
