// The two rules both checks judge a lock by: it covers what the root requires, and it accepts a
// package when ANY one of the package's hashes is in it (as Terraform and OpenTofu verify).
#include "lockfile/lock_rules.hpp"

#include <gtest/gtest.h>

namespace podplane::lockfile {
namespace {

const std::string kAws = "registry.opentofu.org/hashicorp/aws";
const std::string kTls = "registry.opentofu.org/hashicorp/tls";

RequiredProvider wants(const std::vector<std::string>& constraints, const std::string& declared_in = "main.tf") {
  RequiredProvider required;
  for (const auto& text : constraints) required.constraints.push_back(Constraints::parse(text));
  required.declared_in = declared_in;
  return required;
}

LockFile lock_of(const std::vector<std::pair<std::string, std::string>>& entries) {
  LockFile lock;
  for (const auto& [address, version] : entries) lock.providers.push_back({address, version, "", {}});
  return lock;
}

TEST(LockGaps, ALockWithAnAllowedVersionOfEveryRequiredProviderHasNone) {
  std::map<std::string, RequiredProvider> required{{kAws, wants({">= 6.0", "< 7.0"})}, {kTls, wants({})}};
  EXPECT_TRUE(lock_gaps(required, lock_of({{kAws, "6.2.0"}, {kTls, "4.1.0"}})).empty());
}

TEST(LockGaps, AMissingEntryNamesWhereTheProviderIsRequired) {
  std::map<std::string, RequiredProvider> required{{kAws, wants({">= 6.0"}, "modules/net/versions.tf")}};
  auto gaps = lock_gaps(required, lock_of({{kTls, "4.1.0"}}));
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].kind, LockGap::Kind::no_entry);
  EXPECT_EQ(gaps[0].address, kAws);
  EXPECT_EQ(gaps[0].declared_in, "modules/net/versions.tf");
}

TEST(LockGaps, AVersionTheMergedConstraintsRefuseIsAGap) {
  // Each declaration alone allows 6.2.0 or 5.9.0; together only 6.x below 6.1 would do.
  std::map<std::string, RequiredProvider> required{{kAws, wants({">= 6.0", "< 6.1"})}};
  auto gaps = lock_gaps(required, lock_of({{kAws, "6.2.0"}}));
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].kind, LockGap::Kind::version_not_allowed);
  EXPECT_EQ(gaps[0].locked_version, "6.2.0");
  EXPECT_EQ(gaps[0].constraints, Constraints::merge(required[kAws].constraints).canonical());
}

TEST(LockGaps, AnEntryWhoseVersionDoesNotParseIsAllowedByNothing) {
  std::map<std::string, RequiredProvider> required{{kAws, wants({})}};
  auto gaps = lock_gaps(required, lock_of({{kAws, "not-a-version"}}));
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].kind, LockGap::Kind::version_not_allowed);
}

TEST(PackageMatchesLock, AnyOneOfThePackagesHashesInTheLockIsEnough) {
  // `init` on linux_amd64 records that platform's h1 and the zh of every platform: another
  // platform's package is accepted by its zh alone.
  const std::vector<std::string> lock = {"h1:amd64", "zh:amd64", "zh:arm64"};
  EXPECT_TRUE(package_matches_lock({"h1:arm64", "zh:arm64"}, lock));
  EXPECT_TRUE(package_matches_lock({"h1:amd64", "zh:amd64"}, lock));
  EXPECT_TRUE(package_matches_lock({"h1:amd64", "zh:other"}, lock));
}

TEST(PackageMatchesLock, NoneOfThePackagesHashesInTheLockIsRefused) {
  EXPECT_FALSE(package_matches_lock({"h1:arm64", "zh:arm64"}, {"h1:amd64", "zh:amd64"}));
  EXPECT_FALSE(package_matches_lock({}, {"h1:amd64"}));
}

TEST(PackageMatchesLock, ALockEntryWithoutHashesVerifiesNothing) {
  EXPECT_TRUE(package_matches_lock({"h1:arm64", "zh:arm64"}, {}));
}

}  // namespace
}  // namespace podplane::lockfile
