// Every row of the table of kinds (cache/kinds.hpp) goes through the stages of cache/ the table
// gives it, with a stored example of each (tests/support/every_kind.hpp): the views, the content
// check, deps verify's message naming the command that takes it again, the rechecks, prune. A
// kind whose row names a stage that then ignores it fails here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "cache/kinds.hpp"
#include "cache/maintenance.hpp"
#include "cache/prune.hpp"
#include "cache/recheck.hpp"
#include "cache/row_rules.hpp"
#include "cache/views.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using ::testing::HasSubstr;

std::string label(const KindInfo& kind) {
  return std::string(kind.name) + (kind.address.empty() ? "" : " @" + std::string(kind.address));
}

struct EveryKindStore {
  TempDir dir;
  Store store = Store::open(dir / "deps");
  test::EveryKind every = test::add_every_kind(store, dir / "work");
  test::ScopedEnv keyring{"PODPLANE_TOOLS_KEYRING_FOR_TESTS", every.keyring.string()};
};

// Where the views put a row of each View, relative to the deps root.
std::vector<std::string> expected_views(View view, const Artifact& a) {
  switch (view) {
    case View::unset: ADD_FAILURE() << "view undecided"; return {};
    case View::none:
    case View::module_tree: return {};
    case View::provider_zip: return {"tf/providers/" + a.address + "/" + a.filename};
    case View::vmconfig_manifest_newest: return {"vmconfig/manifests/" + a.address + ".json"};
    case View::vmconfig_artifact: {
      const std::string tail = "vmconfig/artifacts/" + a.address + "/" + a.version + "/" + vmconfig_view_name(a);
      return {tail, "arch/amd64/" + tail};
    }
    case View::vmconfig_boot_file: {
      const std::string tail = "vmconfig/artifacts/os-image/" + a.version + "/boot/" + a.filename;
      return {tail, "arch/amd64/" + tail};
    }
    case View::seeds_manifest_newest: return {"seeds/manifests/seeds.json"};
    case View::seed_snapshot: return {"seeds/snapshots/" + a.address + "/" + a.version + "/" + a.filename};
  }
  return {};
}

TEST(EveryKind, EachKindWithAViewIsLaidOutThereAndNoneOtherIs) {
  EveryKindStore s;
  auto plan = plan_views(s.store);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.unplaced.front().reason;
  std::map<std::string, std::string> held;  // relative path → object digest
  for (const auto& file : plan.files)
    if (!file.object_digest.empty()) held[fs::path(file.path).lexically_relative(s.store.root()).generic_string()] = file.object_digest;
  for (const auto& kind : kinds()) {
    if (!s.every.has(kind)) continue;
    const Artifact& row = s.every.of(kind);
    const auto paths = expected_views(kind.view, row);
    for (const auto& path : paths) EXPECT_EQ(held[path], row.digest) << label(kind) << " has no view at " << path;
    std::size_t holding = 0;
    for (const auto& [path, digest] : held) holding += digest == row.digest ? 1 : 0;
    EXPECT_EQ(holding, paths.size()) << label(kind) << ": views hold its object elsewhere too, or it has none";
  }
  for (const auto& file : s.every.module.files)
    EXPECT_EQ(held["tf/modules/" + s.every.module.address + "/" + s.every.module.version + "/" + file.path], file.digest);
}

TEST(EveryKind, EachKindsContentIsCheckedAgainstItsObject) {
  EveryKindStore s;
  auto report = verify_store(s.store);
  EXPECT_TRUE(report.ok()) << to_json(report).dump(2);
  for (const auto& kind : kinds()) {
    if (!s.every.has(kind)) continue;
    Artifact row = s.every.of(kind);
    EXPECT_TRUE(artifact_content_problems(s.store, row).empty()) << label(kind);
    row.size += 1;
    EXPECT_THAT(artifact_content_problems(s.store, row), ::testing::Contains(HasSubstr("records another size"))) << label(kind);
    row = s.every.of(kind);
    switch (kind.content) {
      case ContentCheck::unset:
      case ContentCheck::module_tree: ADD_FAILURE() << label(kind); break;
      case ContentCheck::object:
        if (!row.upstream_digest.empty()) {
          row.upstream_digest = row.upstream_digest.substr(0, row.upstream_digest.find(':') + 1) +
                                std::string(row.upstream_digest.size() - row.upstream_digest.find(':') - 1, '0');
          EXPECT_THAT(artifact_content_problems(s.store, row), ::testing::Contains(HasSubstr("does not match its upstream digest")))
              << label(kind);
        }
        break;
      case ContentCheck::provider_zip:
        row.zh = "zh:" + std::string(64, '0');
        EXPECT_THAT(artifact_content_problems(s.store, row), ::testing::Contains(HasSubstr("has the wrong zh"))) << label(kind);
        row = s.every.of(kind);
        row.h1 = "h1:" + std::string(43, 'A') + "=";
        EXPECT_THAT(artifact_content_problems(s.store, row), ::testing::Contains(HasSubstr("has the wrong h1"))) << label(kind);
        break;
    }
  }
}

// What deps verify prints for a damaged object of each kind names the command that takes it
// again (never the generic fallback).
std::string refetch_words(Refetch refetch) {
  switch (refetch) {
    case Refetch::unset: return "(unset)";
    case Refetch::deps_tf_provider_package: return "`podplane deps tf --engine tofu --platform linux_amd64 --stack";
    case Refetch::deps_tf_provider_document: return "`podplane deps tf --engine tofu --stack";
    case Refetch::deps_tf_module: return "then `podplane deps tf` online";
    case Refetch::deps_download_vmconfig: return "`podplane deps download --providers all --arch amd64`";
    case Refetch::deps_download_seeds: return "then `podplane deps download` online";
    case Refetch::deps_images: return "`podplane deps images -f <a list naming registry.example.invalid/team/app>`";
    case Refetch::deps_tools_engine: return "`podplane deps tools --engine terraform --version 1.9.8";
    case Refetch::deps_tools_podplane: return "`podplane deps tools --podplane-release <the directory of podplane 0.1.0's";
  }
  return "";
}

void damage(const fs::path& object) {
  const auto size = fs::file_size(object);
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(object, std::ios::binary | std::ios::trunc) << std::string(size, '!');
}

TEST(EveryKind, DepsVerifyNamesTheCommandThatTakesEachKindAgain) {
  EveryKindStore s;
  for (const auto& kind : kinds())
    if (s.every.has(kind)) damage(s.store.object_path(s.every.of(kind).digest));
  damage(s.store.object_path(s.every.module.files.front().digest));
  auto report = verify_store(s.store);
  auto line_of = [&](const std::string& digest) {
    for (const auto& line : report.problems)
      if (line.find("is corrupt") != std::string::npos && line.find(digest) != std::string::npos) return line;
    return std::string("(no line for " + digest + ")");
  };
  for (const auto& kind : kinds()) {
    if (!s.every.has(kind)) continue;
    const std::string line = line_of(s.every.of(kind).digest);
    EXPECT_THAT(line, HasSubstr(refetch_words(kind.refetch))) << label(kind);
    EXPECT_THAT(line, ::testing::Not(HasSubstr("`podplane deps tf` or `podplane deps download`"))) << label(kind);
  }
  EXPECT_THAT(line_of(s.every.module.files.front().digest), HasSubstr(refetch_words(kModuleTrees.refetch)));
}

TEST(EveryKind, EachKindIsRecheckedWhereTheTableSays) {
  EveryKindStore s;
  EXPECT_FALSE(recheck_store(s.store).first_refusal());
  for (const auto& kind : kinds()) {
    if (!s.every.has(kind)) continue;
    const Artifact& row = s.every.of(kind);
    for (auto at : {RecheckAt::verify, RecheckAt::import}) {
      auto recheck = recheck_rows(s.store, {row}, at);
      if (!rechecked_at(kind.recheck, at) || kind.recheck == Recheck::cosign_under_policy) {
        EXPECT_TRUE(recheck.results.empty()) << label(kind);
        continue;
      }
      EXPECT_EQ(recheck.of(kind.recheck).rows_checked, 1u) << label(kind);
      EXPECT_TRUE(recheck.of(kind.recheck).problems.empty()) << label(kind) << ": " << recheck.of(kind.recheck).problems.front();
    }
  }
  // Import checks each image against the cosign keys its policy names for it: the example's
  // signature is no cosign signature, so every image the policy covers is refused by name.
  TempDir keys;
  auto made = test::run({"openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", (keys / "k.pem").string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  made = test::run({"openssl", "ec", "-in", (keys / "k.pem").string(), "-pubout", "-out", (keys / "k.pub").string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto policy = cosign_policy_of({keys / "k.pub"}, std::nullopt);
  for (const auto& kind : kinds()) {
    if (kind.recheck != Recheck::cosign_under_policy || !s.every.has(kind)) continue;
    const Artifact& row = s.every.of(kind);
    auto recheck = recheck_rows(s.store, {row}, RecheckAt::import, &policy);
    auto refusal = recheck.first_refusal();
    if (kind.listed == Listed::image_manifests) {
      // A manifest under an index is covered by the index's signature.
      EXPECT_FALSE(refusal) << label(kind);
      continue;
    }
    ASSERT_TRUE(refusal) << label(kind);
    EXPECT_THAT(*refusal, HasSubstr("image " + row.address + ":" + row.version)) << label(kind);
  }
}

TEST(EveryKind, EachKindBelongsToAnItemOfItsFamily) {
  EveryKindStore s;
  PrunePolicy newest;
  newest.keep = 1;
  auto plan = plan_prune(s.store, newest);
  for (const auto& kind : kinds()) {
    if (!s.every.has(kind)) continue;
    const Artifact& row = s.every.of(kind);
    const bool own = own_family(*kind.family);
    auto item = std::find_if(plan.items.begin(), plan.items.end(), [&](const StoreItem& i) {
      return i.family == *kind.family && i.name == row.address && i.version == row.version && i.platform == (own ? "" : row.platform);
    });
    ASSERT_NE(item, plan.items.end()) << label(kind);
    EXPECT_FALSE(item->kept_because.empty()) << label(kind) << ": a store of one of each keeps everything";
  }
  // What only exists because another item needs it goes when none does.
  const std::string stray = s.store.add_bytes("a file no manifest lists");
  (void)s.store.add_artifact(test::vmconfig_artifact_row(stray, "stray", "1.0", "https://example.invalid/stray.bin"));
  plan = plan_prune(s.store, newest);
  auto gone = std::find_if(plan.items.begin(), plan.items.end(), [](const StoreItem& i) { return i.name == "stray"; });
  ASSERT_NE(gone, plan.items.end());
  EXPECT_EQ(gone->kept_because, "");
}

}  // namespace
}  // namespace podplane::cache
