// A delta after the receiver pruned: bundle create says how much of it is versions older than
// the receiver's newest, and a prune of the online side with the same policy stops sending them.
#include <gtest/gtest.h>

#include "bundle/create.hpp"
#include "bundle/import.hpp"
#include "bundle/signing.hpp"
#include "cache/prune.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

using podplane::test::TempDir;
using podplane::test::write_file;

TEST(PruneAndDelta, ADeltaSaysHowMuchOfItIsOlderThanTheReceiversNewest) {
  TempDir dir;
  auto keys = generate_key_pair(dir / "site");
  auto online = cache::Store::open(dir / "online", cache::Store::Access::read_write, cache::Store::TempSweep::none);
  test::fill_store(online);
  (void)test::add_provider(online, "aws", "6.3.0", test::kPlatforms, 20000);
  test::set_selection(online, "6.3.0");
  CreateOptions full;
  full.signing_key = keys.private_key;
  auto plan = plan_bundle(online, dir / "full.bundle", full);
  write_bundle(online, plan, full);
  VerifyOptions trusted;
  trusted.trusted_keys = {keys.public_key};
  {
    auto offline = cache::Store::open(dir / "offline");
    std::vector<std::filesystem::path> files;
    for (const auto& v : plan.volumes) files.push_back(v.file);
    ASSERT_TRUE(import_bundle(offline, files, trusted).ok());
    EXPECT_EQ(plan.older_than_receiver_items, 0u);  // a full bundle has no receiver
  }
  cache::PrunePolicy keep_one;
  keep_one.keep = 1;
  {
    auto offline = cache::Store::open(dir / "offline", cache::Store::Access::read_write, cache::Store::TempSweep::none);
    auto pruned = cache::prune_store(offline, keep_one);
    ASSERT_GT(pruned.rows_removed, 0u);
    write_file(dir / "inventory.json", make_inventory(offline).serialize());
  }

  CreateOptions delta;
  delta.since = dir / "inventory.json";
  auto again = plan_bundle(online, dir / "delta.bundle", delta);
  // aws 6.2.0 comes back: the receiver pruned it and holds 6.3.0.
  EXPECT_EQ(again.older_than_receiver_items, 1u);
  EXPECT_GT(again.older_than_receiver_bytes, 3u * 20000u);
  EXPECT_GT(again.artifacts, 0u);

  // The same policy online: nothing old is left to send.
  (void)cache::prune_store(online, keep_one);
  auto after = plan_bundle(online, dir / "delta2.bundle", delta);
  EXPECT_EQ(after.older_than_receiver_items, 0u);
  EXPECT_EQ(after.older_than_receiver_bytes, 0u);
  EXPECT_EQ(after.objects, 0u);
}

}  // namespace
}  // namespace podplane::bundle
