// The table of kinds (cache/kinds.hpp): a row for every kind, every stage decided, names as
// stored, the migration that marks each kind, and decisions that agree with one another.
// kinds.cpp's static_asserts say the first two at compile time; these say it by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "cache/kinds.hpp"
#include "cache/podplane_releases.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr std::size_t kKindCount = static_cast<std::size_t>(ArtifactKind::count_);

std::string label(const KindInfo& kind) {
  return std::string(kind.name) + (kind.address.empty() ? "" : " @" + std::string(kind.address));
}

// The stages a row leaves undecided, by field name.
std::vector<std::string> undecided(const KindInfo& k, bool artifact_row) {
  std::vector<std::string> fields;
  if (k.name.empty()) fields.push_back("name");
  if (k.since_schema < 1) fields.push_back("since_schema");
  if (artifact_row && k.check_layout == nullptr) fields.push_back("check_layout");
  if (k.protocols == Protocols::unset) fields.push_back("protocols");
  if (k.content == ContentCheck::unset) fields.push_back("content");
  if (k.fetch_check == FetchCheck::unset) fields.push_back("fetch_check");
  if (k.recheck == Recheck::unset) fields.push_back("recheck");
  if (k.refetch == Refetch::unset) fields.push_back("refetch");
  if (!k.family) fields.push_back("family");
  if (k.prune_role == PruneRole::unset) fields.push_back("prune_role");
  if (artifact_row && k.bundle_rank < 0) fields.push_back("bundle_rank");
  if (k.bundle_platforms == BundlePlatforms::unset) fields.push_back("bundle_platforms");
  if (k.view == View::unset) fields.push_back("view");
  if (k.served == Served::unset) fields.push_back("served");
  if (k.pushed == Pushed::unset) fields.push_back("pushed");
  if (k.listed == Listed::unset) fields.push_back("listed");
  if (k.signer == Signer::unset) fields.push_back("signer");
  if (k.reported == Reported::unset) fields.push_back("reported");
  if (k.report_title.empty()) fields.push_back("report_title");
  return fields;
}

TEST(Kinds, EveryKindHasOneRowInEnumOrderAndItsNameReadsBack) {
  const auto all = kinds();
  ASSERT_GE(all.size(), kKindCount);
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kKindCount; ++i) {
    const auto kind = static_cast<ArtifactKind>(i);
    ASSERT_TRUE(all[i].kind.has_value());
    EXPECT_EQ(*all[i].kind, kind) << i;
    EXPECT_EQ(all[i].address, "") << label(all[i]);
    EXPECT_EQ(&kind_info(kind), &all[i]);
    EXPECT_EQ(to_string(kind), all[i].name);
    EXPECT_EQ(parse_artifact_kind(all[i].name), kind);
    EXPECT_TRUE(names.insert(all[i].name).second) << "two kinds are stored as " << all[i].name;
  }
  for (std::size_t i = kKindCount; i < all.size(); ++i) {
    ASSERT_TRUE(all[i].kind.has_value());
    EXPECT_FALSE(all[i].address.empty()) << "a second row of " << label(all[i]) << " must name its address";
  }
}

TEST(Kinds, AnUnknownNameIsRefusedNamingEveryKind) {
  try {
    (void)parse_artifact_kind("provider_zip");
    FAIL() << "parsed an unknown kind";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "unknown artifact kind 'provider_zip' (expected provider_package, provider_shasums, provider_signature, "
                 "provider_keys, vmconfig_manifest, vmconfig_artifact, vmconfig_boot_file, image_index, image_manifest, "
                 "image_blob, image_attachment, seed_manifest, seed_snapshot, tool_archive, tool_shasums, tool_signature, git_pack or git_refs)");
  }
}

TEST(Kinds, NoStageIsUndecided) {
  for (const auto& kind : kinds()) EXPECT_THAT(undecided(kind, true), ::testing::IsEmpty()) << label(kind);
  EXPECT_THAT(undecided(kModuleTrees, false), ::testing::IsEmpty()) << "module trees";
}

// The check above fails for a row that leaves a stage out: a row as a new kind's might be written.
TEST(Kinds, TheUndecidedCheckNamesAFieldLeftOut) {
  KindInfo row = kinds()[0];
  row.served = Served::unset;
  row.family.reset();
  EXPECT_THAT(undecided(row, true), ::testing::ElementsAre("family", "served"));
}

TEST(Kinds, AVariantIsItsKindsRowForItsAddressOnly) {
  for (const auto& kind : kinds()) {
    if (kind.address.empty()) continue;
    const KindInfo& base = kind_info(*kind.kind);
    EXPECT_EQ(kind.name, base.name) << label(kind);
    EXPECT_EQ(kind.family, base.family) << label(kind);
    EXPECT_EQ(&kind_info(*kind.kind, kind.address), &kind) << label(kind);
    EXPECT_EQ(&kind_info(*kind.kind, "another-address"), &base) << label(kind);
    Artifact row;
    row.kind = *kind.kind;
    row.address = std::string(kind.address);
    EXPECT_EQ(&kind_info(row), &kind) << label(kind);
  }
  EXPECT_EQ(kind_info(ArtifactKind::tool_archive, kPodplaneReleaseAddress).listed, Listed::podplane_releases);
  EXPECT_EQ(kind_info(ArtifactKind::tool_archive, "terraform").listed, Listed::engines);
}

// A store that may hold a kind says so by its schema version, so that an older podplane refuses
// it instead of failing on an unknown name: the migration the table names marks the kind.
TEST(Kinds, TheMigrationOfEachKindNamesIt) {
  const fs::path schema = test::source_dir() / "cache" / "schema";
  for (const auto& kind : kinds()) {
    if (kind.since_schema == 1) continue;  // 001_initial: every kind of the first schema
    if (kind.name == "vmconfig_boot_file") {
      // Boot files came with schema 5 and no migration names them; 006 is the first marker
      // after them, which every store a current podplane wrote them into has.
      EXPECT_EQ(kind.since_schema, 6);
      continue;
    }
    char prefix[8];
    std::snprintf(prefix, sizeof prefix, "%03d_", kind.since_schema);
    std::string text;
    for (const auto& entry : fs::directory_iterator(schema))
      if (entry.path().filename().string().rfind(prefix, 0) == 0) text = test::read_file(entry.path());
    ASSERT_FALSE(text.empty()) << label(kind) << ": no migration " << prefix << "*.sql";
    const std::string named = kind.address.empty() ? std::string(kind.name) : "\"" + std::string(kind.address) + "\"";
    EXPECT_THAT(text, HasSubstr(named)) << label(kind) << " is not named by migration " << kind.since_schema;
  }
}

// Decisions of different stages that only make sense together.
TEST(Kinds, TheStagesOfARowAgree) {
  auto check = [](const KindInfo& k, const std::string& what) {
    switch (k.pushed) {
      case Pushed::unset:
      case Pushed::none: break;
      case Pushed::provider_oci_mirror: EXPECT_EQ(k.served, Served::provider_package) << what; break;
      case Pushed::module_package: EXPECT_EQ(k.served, Served::module_package) << what; break;
      case Pushed::image_as_stored:
        EXPECT_TRUE(k.served == Served::oci_index || k.served == Served::oci_manifest || k.served == Served::oci_attachment ||
                    k.served == Served::oci_blob)
            << what;
        break;
    }
    if (k.view == View::vmconfig_artifact || k.view == View::vmconfig_boot_file) {
      EXPECT_EQ(k.served, Served::vmconfig_file) << what;
    }
    if (k.served == Served::vmconfig_file) {
      EXPECT_TRUE(k.view == View::vmconfig_artifact || k.view == View::vmconfig_boot_file) << what;
    }
    if (k.signer == Signer::openpgp_keys_document) {
      EXPECT_EQ(k.recheck, Recheck::provider_signed_sums) << what;
    }
    if (k.signer == Signer::pinned_release_key) {
      EXPECT_EQ(k.recheck, Recheck::engine_signed_sums) << what;
    }
    if (k.recheck == Recheck::cosign_under_policy) {
      EXPECT_EQ(k.signer, Signer::cosign_key) << what;
    }
    if (k.content == ContentCheck::provider_zip) {
      EXPECT_EQ(k.protocols, Protocols::registry_listed) << what;
    }
    if (k.fetch_check == FetchCheck::refused) {
      EXPECT_EQ(k.listed, Listed::not_listed) << what;
    }
    if (k.kind) {
      EXPECT_NE(k.content, ContentCheck::module_tree) << what;
    }
  };
  for (const auto& kind : kinds()) check(kind, label(kind));
  check(kModuleTrees, "module trees");
}

// The family names are `deps du --json` and catalogue.json keys: a contract.
TEST(Kinds, FamiliesKeepTheirNamesAndWhetherTheyAreItemsOfTheirOwn) {
  const std::vector<std::pair<ItemFamily, std::string>> names = {
      {ItemFamily::provider, "provider"},         {ItemFamily::module, "module"},
      {ItemFamily::vmconfig_manifest, "vmconfig_manifest"}, {ItemFamily::image, "image"},
      {ItemFamily::seeds, "seeds"},               {ItemFamily::seed_snapshot, "seed_snapshot"},
      {ItemFamily::vmconfig_artifact, "vmconfig_artifact"}, {ItemFamily::vmconfig_boot_file, "vmconfig_boot_file"},
      {ItemFamily::image_blobs, "image_blobs"},   {ItemFamily::image_signature, "image_signature"},
      {ItemFamily::tool, "tool"}};
  for (const auto& [family, name] : names) EXPECT_EQ(to_string(family), name);
  std::set<std::string> needed;
  for (const auto& [family, name] : names)
    if (!own_family(family)) needed.insert(name);
  EXPECT_EQ(needed, (std::set<std::string>{"image_blobs", "image_signature", "vmconfig_artifact", "vmconfig_boot_file"}));
}

TEST(Kinds, OnlyAProviderZipTakesItsZhFromItsDigest) {
  for (const auto& kind : kinds()) {
    Artifact row;
    row.kind = *kind.kind;
    row.address = std::string(kind.address);
    row.digest = std::string(64, 'a');
    EXPECT_EQ(zh_of(row), kind.content == ContentCheck::provider_zip ? "zh:" + row.digest : "") << label(kind);
    row.zh = "zh:" + row.digest;
    EXPECT_EQ(zh_of(row), row.zh) << label(kind);
  }
}

// docs/store.md lists every kind as stored (the artifacts table's kind column).
TEST(Kinds, TheStoreDocumentNamesEveryKind) {
  const std::string doc = test::read_file(test::source_dir() / "docs" / "store.md");
  for (std::size_t i = 0; i < kKindCount; ++i)
    EXPECT_NE(doc.find("`" + std::string(kinds()[i].name) + "`"), std::string::npos) << "docs/store.md does not name " << kinds()[i].name;
  const std::string architecture = test::read_file(test::source_dir() / "docs" / "architecture.md");
  EXPECT_NE(architecture.find("## Adding an artifact kind"), std::string::npos) << "docs/architecture.md has no checklist";
}

}  // namespace
}  // namespace podplane::cache
