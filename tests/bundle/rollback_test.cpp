// Rollback by replay: an older, validly signed bundle imported after a newer one never moves
// the store's selection backwards unless asked (--allow-downgrade); replays and downgrades are
// reported; the newest bundle of each signer is recorded; signed expiry (--expires-in); a
// refused import leaves no store behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.hpp"
#include "bundle/create.hpp"
#include "bundle/import.hpp"
#include "bundle/signing.hpp"
#include "cache/layout.hpp"
#include "cache/maintenance.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

const std::string kAws = "registry.opentofu.org/hashicorp/aws";
const std::string kRandom = "registry.opentofu.org/hashicorp/random";

std::string describe(const ImportReport& report) {
  std::string text;
  for (const auto& v : report.volumes) text += v.file.string() + ": " + (v.error.empty() ? "ok" : v.error) + "\n";
  for (const auto& h : report.held) text += "held " + h + "\n";
  for (const auto& n : report.notes) text += "note " + n + "\n";
  return text;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

std::string selected_version(const cache::Store& store, const std::string& address) {
  auto selection = store.tf_selection();
  if (!selection) return "";
  for (const auto& p : selection->providers)
    if (p.address == address) return p.version;
  return "";
}

// One online store, a bundle of its first state (aws 6.2.0) and one after an upgrade (6.3.0,
// a day later), both signed by the same key.
class Rollback : public ::testing::Test {
 protected:
  void SetUp() override {
    keys = generate_key_pair(dir / "site");
    source.emplace(cache::Store::open(dir / "online"));
    test::fill_store(*source);
    old_bundle = create("old.bundle");
    test::add_provider(*source, "aws", "6.3.0", test::kPlatforms, 20000, "2026-12-01T10:00:00Z");
    select(*source, {{kAws, "6.3.0", "~> 6.0"}, {kRandom, "3.7.1", ">= 3.0.0"}});
    new_bundle = create("new.bundle");
  }

  static void select(cache::Store& store, std::vector<cache::TfSelection::Provider> providers) {
    cache::TfSelection s = *store.tf_selection();
    s.providers = std::move(providers);
    store.set_tf_selection(s);
  }

  std::vector<fs::path> create(const std::string& name, CreateOptions options = {}) {
    options.signing_key = keys.private_key;
    auto plan = plan_bundle(*source, dir / name, options);
    write_bundle(*source, plan, options);
    std::vector<fs::path> files;
    for (const auto& v : plan.volumes) files.push_back(v.file);
    return files;
  }

  VerifyOptions trusted() const {
    VerifyOptions options;
    options.trusted_keys = {keys.public_key};
    return options;
  }

  TempDir dir;
  KeyPairFiles keys;
  std::optional<cache::Store> source;
  std::vector<fs::path> old_bundle, new_bundle;
};

TEST_F(Rollback, AnOlderBundleNeverMovesTheSelectionBack) {
  auto target = cache::Store::open(dir / "offline");
  ASSERT_TRUE(import_bundle(target, old_bundle, trusted()).ok());
  ASSERT_TRUE(import_bundle(target, new_bundle, trusted()).ok());
  ASSERT_EQ(selected_version(target, kAws), "6.3.0");
  const std::string lock = read_file(cache::layout::lock_file(dir / "offline"));

  auto replay = import_bundle(target, old_bundle, trusted());
  EXPECT_FALSE(replay.ok()) << "a held selection is not a silent success\n" << describe(replay);
  EXPECT_TRUE(replay.volumes.at(0).error.empty()) << describe(replay);
  ASSERT_FALSE(replay.held.empty()) << describe(replay);
  EXPECT_THAT(joined(replay.held), HasSubstr("older than bundle")) << describe(replay);
  EXPECT_THAT(joined(replay.held), HasSubstr("--allow-downgrade")) << describe(replay);
  EXPECT_EQ(selected_version(target, kAws), "6.3.0");
  EXPECT_EQ(read_file(cache::layout::lock_file(dir / "offline")), lock) << "the lock view did not move";
  EXPECT_TRUE(cache::verify_store(target).ok());
}

TEST_F(Rollback, OlderVolumesImportedInOneRunDoNotWinEither) {
  auto target = cache::Store::open(dir / "offline");
  std::vector<fs::path> both = new_bundle;
  both.insert(both.end(), old_bundle.begin(), old_bundle.end());
  auto report = import_bundle(target, both, trusted());
  EXPECT_TRUE(report.ok()) << describe(report);
  EXPECT_EQ(selected_version(target, kAws), "6.3.0");
}

TEST_F(Rollback, ASelectionWithLowerVersionsOrFewerProvidersIsHeldEvenFromANewerBundle) {
  auto target = cache::Store::open(dir / "offline");
  ASSERT_TRUE(import_bundle(target, new_bundle, trusted()).ok());

  // Online, later: somebody pins aws back to 6.2.0 and drops random.
  select(*source, {{kAws, "6.2.0", "= 6.2.0"}});
  test::add_provider(*source, "null", "3.2.4", {"linux_amd64"}, 1000, "2026-12-05T10:00:00Z");
  auto pinned = create("pinned.bundle");
  auto report = import_bundle(target, pinned, trusted());
  EXPECT_FALSE(report.ok()) << describe(report);
  EXPECT_THAT(joined(report.held), HasSubstr(kAws + " 6.3.0 -> 6.2.0")) << describe(report);
  EXPECT_THAT(joined(report.held), HasSubstr(kRandom)) << describe(report);
  EXPECT_EQ(selected_version(target, kAws), "6.3.0");
  EXPECT_EQ(selected_version(target, kRandom), "3.7.1");
  // The rows and objects of the bundle were imported all the same: the store is additive.
  EXPECT_FALSE(target.artifacts({.address = "registry.opentofu.org/hashicorp/null"}).empty());

  VerifyOptions allow = trusted();
  allow.downgrades = Downgrades::allow;
  auto allowed = import_bundle(target, pinned, allow);
  EXPECT_TRUE(allowed.ok()) << describe(allowed);
  EXPECT_EQ(selected_version(target, kAws), "6.2.0");
  EXPECT_EQ(selected_version(target, kRandom), "");
  EXPECT_THAT(joined(allowed.notes), HasSubstr("--allow-downgrade")) << describe(allowed);
}

TEST_F(Rollback, AllowDowngradeAppliesAnOlderBundle) {
  auto target = cache::Store::open(dir / "offline");
  ASSERT_TRUE(import_bundle(target, new_bundle, trusted()).ok());
  VerifyOptions allow = trusted();
  allow.downgrades = Downgrades::allow;
  auto report = import_bundle(target, old_bundle, allow);
  EXPECT_TRUE(report.ok()) << describe(report);
  EXPECT_EQ(selected_version(target, kAws), "6.2.0");
  EXPECT_THAT(joined(report.notes), HasSubstr("older than bundle")) << describe(report);
  EXPECT_NE(read_file(cache::layout::lock_file(dir / "offline")).find("\"6.2.0\""), std::string::npos);
}

TEST_F(Rollback, TheNewestBundleOfEachSignerIsRecorded) {
  auto target = cache::Store::open(dir / "offline");
  ASSERT_TRUE(import_bundle(target, new_bundle, trusted()).ok());
  (void)import_bundle(target, old_bundle, trusted());
  const std::string key_id = PublicKey::load(keys.public_key).key_id();
  auto mark = target.bundle_signer(key_id);
  ASSERT_TRUE(mark.has_value());
  EXPECT_EQ(mark->created_at, "2026-12-01T10:00:00Z");
  EXPECT_EQ(mark->bundle_id, verify_bundle(new_bundle, trusted()).volumes.at(0).bundle_id);
  EXPECT_FALSE(target.bundle_signer("sha256:" + std::string(64, '0')).has_value());
}

TEST_F(Rollback, ReimportingTheNewestBundleIsNoReplay) {
  auto target = cache::Store::open(dir / "offline");
  ASSERT_TRUE(import_bundle(target, new_bundle, trusted()).ok());
  auto again = import_bundle(target, new_bundle, trusted());
  EXPECT_TRUE(again.ok()) << describe(again);
  EXPECT_TRUE(again.held.empty());
}

TEST_F(Rollback, ThroughTheBinary) {
  const fs::path offline = dir / "offline";
  podplane::test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = offline.string();
  auto trust = keys.public_key.string();
  ASSERT_EQ(run_podplane({"bundle", "import", new_bundle.at(0).string(), "--trust", trust}, options).exit_code, 0);
  auto replay = run_podplane({"bundle", "import", old_bundle.at(0).string(), "--trust", trust}, options);
  EXPECT_EQ(replay.exit_code, 1) << replay.out << replay.err;
  EXPECT_THAT(replay.out, HasSubstr("held:")) << replay.out;
  EXPECT_THAT(replay.err, HasSubstr("--allow-downgrade")) << replay.err;
  EXPECT_EQ(selected_version(cache::Store::open(offline, cache::Store::Access::read_only), kAws), "6.3.0");
  auto allowed = run_podplane({"bundle", "import", old_bundle.at(0).string(), "--trust", trust, "--allow-downgrade"}, options);
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
  EXPECT_EQ(selected_version(cache::Store::open(offline, cache::Store::Access::read_only), kAws), "6.2.0");
}

// A replay whose selection is the store's already moves nothing: it is noted and the import
// succeeds (exit 0), as docs/bundle-format.md says; only a replay that would move the
// selection back is held (exit 1).
TEST_F(Rollback, AReplayWithTheStoresOwnSelectionIsNotedAndExitsZero) {
  // A newer bundle with the same selection: one more package that nothing selects.
  test::add_provider(*source, "aws", "6.4.0", test::kPlatforms, 20000, "2026-12-05T10:00:00Z");
  auto newest = create("newest.bundle");
  const fs::path offline = dir / "offline";
  podplane::test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = offline.string();
  auto trust = keys.public_key.string();
  ASSERT_EQ(run_podplane({"bundle", "import", newest.at(0).string(), "--trust", trust}, options).exit_code, 0);
  auto replay = run_podplane({"bundle", "import", new_bundle.at(0).string(), "--trust", trust}, options);
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
  EXPECT_THAT(replay.out + replay.err, HasSubstr("its selection is the store's already, nothing moved"))
      << replay.out << replay.err;
  EXPECT_THAT(replay.out, Not(HasSubstr("held:"))) << replay.out;
  EXPECT_EQ(selected_version(cache::Store::open(offline, cache::Store::Access::read_only), kAws), "6.3.0");
}

// ---------------------------------------------------------------------------------------------
// Signed expiry

TEST_F(Rollback, AnExpiredBundleIsRefusedUnlessAllowed) {
  const std::time_t created = 1'800'000'000;
  CreateOptions options;
  options.expires_in = std::chrono::hours(24);
  options.now = [&] { return created; };
  auto expiring = create("expiring.bundle", options);

  VerifyOptions fresh = trusted();
  fresh.now = [&] { return created + 3600; };
  EXPECT_TRUE(verify_bundle(expiring, fresh).ok());

  VerifyOptions late = trusted();
  late.now = [&] { return created + 2 * 86400; };
  auto refused = verify_bundle(expiring, late);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.volumes.at(0).error, HasSubstr("expired")) << refused.volumes.at(0).error;
  EXPECT_THAT(refused.volumes.at(0).error, HasSubstr("--allow-expired"));
  auto store = cache::Store::open(dir / "late");
  EXPECT_FALSE(import_bundle(store, expiring, late).ok());
  EXPECT_TRUE(store.artifacts().empty());

  late.expired = ExpiredBundles::allow;
  EXPECT_TRUE(verify_bundle(expiring, late).ok());
  auto imported = import_bundle(store, expiring, late);
  EXPECT_TRUE(imported.ok()) << describe(imported);

  // The expiry is part of the signed manifest.
  EXPECT_THAT(read_file(expiring.at(0)), HasSubstr("\"expires_at\":\"2027-01-16T08:00:00Z\""));
}

TEST(BundleExpiry, DurationsParse) {
  EXPECT_EQ(parse_duration("90d"), std::chrono::seconds(90 * 86400));
  EXPECT_EQ(parse_duration("12h"), std::chrono::seconds(12 * 3600));
  EXPECT_EQ(parse_duration("30m"), std::chrono::seconds(1800));
  EXPECT_EQ(parse_duration("45s"), std::chrono::seconds(45));
  for (const char* bad : {"", "d", "0d", "-1d", "5", "5w", "99999999999999999999d"}) {
    EXPECT_THROW((void)parse_duration(bad), UsageError) << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// A refused import leaves nothing behind.

TEST_F(Rollback, ARefusedImportCreatesNoStore) {
  auto other = generate_key_pair(dir / "other");
  auto expect_no_store = [&](const std::vector<std::string>& args, const std::string& needle) {
    const fs::path root = dir / "never-created";
    podplane::test::ProcessOptions options;
    options.env["PODPLANE_DEPS_CACHE_DIR"] = root.string();
    auto result = run_podplane(args, options);
    EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
    EXPECT_THAT(result.out + result.err, HasSubstr(needle));
    EXPECT_FALSE(fs::exists(root)) << "a refused import created " << root;
  };
  expect_no_store({"bundle", "import", (dir / "no-such.bundle").string(), "--trust", keys.public_key.string()},
                  "cannot open bundle");
  expect_no_store({"bundle", "import", new_bundle.at(0).string(), "--trust", other.public_key.string()}, "untrusted key");
  expect_no_store({"bundle", "import", new_bundle.at(0).string()}, "untrusted key");
  std::string bytes = read_file(new_bundle.at(0));
  auto at = bytes.find("6.3.0");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = '7';
  podplane::test::write_file(dir / "forged.bundle", bytes);
  expect_no_store({"bundle", "import", (dir / "forged.bundle").string(), "--trust", keys.public_key.string()},
                  "bad signature");
}

}  // namespace
}  // namespace podplane::bundle
