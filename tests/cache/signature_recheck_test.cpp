// `deps verify` re-checks provider packages offline against the upstream SHA256SUMS, signature
// and keys kept in the store, and names the package when that evidence does not hold.
#include <gtest/gtest.h>

#include "cache/recheck.hpp"
#include "cache/store.hpp"
#include "cache/store_check.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

struct FilledStore {
  TempDir dir;
  fs::path root() const { return dir.path() / "deps"; }

  explicit FilledStore(const FixtureUpstream& upstream) {
    upstream.write_cli_config(dir.path() / "cli.tfrc");
    ProcessOptions options;
    options.env = upstream.env(root(), dir.path() / "cli.tfrc");
    auto fill = run_podplane({"--quiet", "deps", "tf", "--platform", "linux_amd64"}, options);
    if (fill.exit_code != 0) throw std::runtime_error("deps tf failed: " + fill.err);
  }
  ProcessResult verify() const {
    ProcessOptions options;
    options.env = {{"PODPLANE_DEPS_CACHE_DIR", root().string()}};
    // Offline: any connection attempt would go to a closed port.
    options.env["https_proxy"] = options.env["http_proxy"] = options.env["ALL_PROXY"] = "http://127.0.0.1:9";
    return run_podplane({"deps", "verify"}, options);
  }
  void sql(const std::string& statement) const {
    auto result = run({"sqlite3", (root() / "store" / "index.db").string(), statement});
    if (result.exit_code != 0) throw std::runtime_error("sqlite3: " + result.err);
  }
};

TEST(SignatureRecheck, EveryFetchedPackageVerifiesOfflineFromStoredMaterial) {
  FixtureUpstream upstream;
  FilledStore filled(upstream);
  auto store = cache::Store::open(filled.root(), cache::Store::Access::read_only);
  auto recheck = cache::recheck_provider_packages(store, store.artifacts({.kind = cache::ArtifactKind::provider_package}));
  EXPECT_TRUE(recheck.problems.empty()) << recheck.problems.front();
  EXPECT_EQ(recheck.rows_checked, store.artifacts({.kind = cache::ArtifactKind::provider_package}).size());
  // One signature per provider release (6 providers), not one per package.
  EXPECT_EQ(recheck.signatures_checked, 6u);

  auto verify = filled.verify();
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("6 upstream signatures: ok"), std::string::npos) << verify.out;
}

TEST(SignatureRecheck, WrongRecordedKeyAndBrokenSignatureAreProblems) {
  FixtureUpstream upstream;
  FilledStore filled(upstream);
  // A provenance row claiming another signer: the signature verifies, but not by that key.
  filled.sql(
      "UPDATE provenance SET key_fingerprint = '0000000000000000000000000000000000000000' WHERE artifact_id = "
      "(SELECT id FROM artifacts WHERE kind = 'provider_package' AND address LIKE '%/aws' LIMIT 1)");
  auto verify = filled.verify();
  EXPECT_EQ(verify.exit_code, 1) << verify.out;
  EXPECT_NE(verify.out.find("signed by another key than recorded"), std::string::npos) << verify.out;
  EXPECT_NE(verify.out.find("expected: 0000000000000000000000000000000000000000"), std::string::npos) << verify.out;

  // Evidence swapped for a document that is no signature at all.
  filled.sql(
      "UPDATE provenance SET signature_digest = shasums_digest WHERE artifact_id = "
      "(SELECT id FROM artifacts WHERE kind = 'provider_package' AND address LIKE '%/null' LIMIT 1)");
  verify = filled.verify();
  EXPECT_EQ(verify.exit_code, 1) << verify.out;
  EXPECT_NE(verify.out.find("upstream signature does not verify offline"), std::string::npos) << verify.out;
}

// check_store, what `deps verify` prints: the store's own check (or its repair) with every
// recheck's problems in the same report, and the counts of each recheck beside it.
TEST(SignatureRecheck, CheckStoreReportsTheRechecksWithTheStoresOwnCheck) {
  FixtureUpstream upstream;
  FilledStore filled(upstream);
  {
    auto store = cache::Store::open(filled.root(), cache::Store::Access::read_only);
    const auto clean = cache::check_store(store, cache::VerifyDepth::quick, cache::Repair::no);
    EXPECT_TRUE(clean.report.ok()) << clean.report.problems.front();
    EXPECT_EQ(clean.report.depth, cache::VerifyDepth::quick);
    EXPECT_FALSE(clean.repaired);
    EXPECT_EQ(clean.recheck.of(cache::Recheck::provider_signed_sums).signatures_checked, 6u);
  }
  filled.sql(
      "UPDATE provenance SET key_fingerprint = '0000000000000000000000000000000000000000' WHERE artifact_id = "
      "(SELECT id FROM artifacts WHERE kind = 'provider_package' AND address LIKE '%/aws' LIMIT 1)");
  auto store = cache::Store::open(filled.root());
  for (const auto repair : {cache::Repair::no, cache::Repair::yes}) {
    const auto check = cache::check_store(store, cache::VerifyDepth::full, repair);
    EXPECT_EQ(check.repaired.has_value(), repair == cache::Repair::yes);
    ASSERT_EQ(check.report.problems.size(), 1u);
    EXPECT_NE(check.report.problems.front().find("signed by another key than recorded"), std::string::npos)
        << check.report.problems.front();
    EXPECT_EQ(check.report.problems, check.recheck.of(cache::Recheck::provider_signed_sums).problems);
  }
}

}  // namespace
}  // namespace podplane::test
