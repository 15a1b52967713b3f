// `podplane cluster check` and the stack's lock: a lock that is empty or lost a provider fails
// the check (offline `init -lockfile=readonly` would fail too), naming each provider the stack
// requires (root required_providers and every called module's) and the command that fixes it.
#include <gtest/gtest.h>

#include "tests/generator/cluster_env.hpp"

namespace podplane::test {
namespace {

// The provider block of `address` removed from a lock file's text.
std::string without_provider(std::string lock, const std::string& address) {
  auto start = lock.find("provider \"" + address + "\" {");
  if (start == std::string::npos) return lock;
  auto end = lock.find("\n}\n", start);
  lock.erase(start, end + 3 - start);
  return lock;
}

TEST(ClusterCheckLock, AnEmptyLockFailsNamingEveryRequiredProviderAndTheFix) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  write_file(env.stack / ".terraform.lock.hcl", "");
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  // aws and podplane from the root's required_providers; random, tls, cloudinit from modules.
  for (const char* provider : {"hashicorp/aws", "podplane/podplane", "hashicorp/random", "hashicorp/tls",
                               "hashicorp/cloudinit"}) {
    EXPECT_NE(result.out.find("LOCK: the stack requires registry.opentofu.org/" + std::string(provider) + " ("),
              std::string::npos)
        << provider << "\n" << result.out;
  }
  EXPECT_NE(result.out.find("the lock has no entry"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("podplane cluster upgrade"), std::string::npos) << result.err;

  // The fix named is the fix.
  auto fixed = env.cluster({"upgrade", "--no-apply"});
  ASSERT_EQ(fixed.exit_code, 0) << show(fixed);
  auto again = env.cluster({"check"});
  EXPECT_EQ(again.exit_code, 0) << show(again);
}

TEST(ClusterCheckLock, ALockThatLostOneProviderFailsForThatOneOnly) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  std::string lock = read_file(env.stack / ".terraform.lock.hcl");
  std::string trimmed = without_provider(lock, "registry.opentofu.org/hashicorp/random");
  ASSERT_NE(trimmed, lock);
  write_file(env.stack / ".terraform.lock.hcl", trimmed);
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(result.out.find("LOCK: the stack requires registry.opentofu.org/hashicorp/random ("), std::string::npos)
      << result.out;
  EXPECT_EQ(result.out.find("LOCK: the stack requires registry.opentofu.org/hashicorp/aws"), std::string::npos)
      << result.out;
  // Where the requirement comes from: a versions.tf of the module package in the store.
  EXPECT_NE(result.out.find("versions.tf"), std::string::npos) << result.out;
}

TEST(ClusterCheckLock, ALockedVersionOutsideTheConstraintsFails) {
  ClusterEnv env;
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  std::string lock = read_file(env.stack / ".terraform.lock.hcl");
  auto at = lock.find("version     = \"6.2.0\"");
  ASSERT_NE(at, std::string::npos) << lock;
  lock.replace(at, std::string("version     = \"6.2.0\"").size(), "version     = \"4.0.0\"");
  write_file(env.stack / ".terraform.lock.hcl", lock);
  auto result = env.cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(result.out.find("LOCK: the lock has registry.opentofu.org/hashicorp/aws 4.0.0, which \""), std::string::npos)
      << result.out;
}

}  // namespace
}  // namespace podplane::test
