// Every row of the table of kinds (cache/kinds.hpp) travels in a bundle and imports, with the
// stored example of each (tests/support/every_kind.hpp): `--platform` leaves out only the kinds
// the table says, and import rechecks each kind where the table says (and no other).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "bundle/create.hpp"
#include "bundle/import.hpp"
#include "bundle/signing.hpp"
#include "cache/kinds.hpp"
#include "cache/podplane_releases.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/gpg_keys.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::TempDir;

std::string label(const cache::KindInfo& kind) {
  return std::string(kind.name) + (kind.address.empty() ? "" : " @" + std::string(kind.address));
}

struct EveryKindBundle {
  TempDir dir;
  cache::Store source = cache::Store::open(dir / "online");
  test::EveryKind every = test::add_every_kind(source, dir / "work");
  KeyPairFiles keys = generate_key_pair(dir / "site");

  std::vector<fs::path> create(const std::string& name, CreateOptions options = {}) {
    options.signing_key = keys.private_key;
    auto plan = plan_bundle(source, dir / name, options);
    write_bundle(source, plan, options);
    std::vector<fs::path> files;
    for (const auto& volume : plan.volumes) files.push_back(volume.file);
    return files;
  }
  VerifyOptions trusted() const {
    VerifyOptions options;
    options.trusted_keys = {keys.public_key};
    return options;
  }
};

std::string errors(const ImportReport& report) {
  std::string text;
  for (const auto& volume : report.volumes) text += volume.error + "\n";
  for (const auto& row : report.waiting_rows) text += "waiting " + row + "\n";
  return text;
}

TEST(EveryKind, EachKindTravelsInABundleAndImportsWithItsProvenance) {
  EveryKindBundle b;
  test::ScopedEnv keyring("PODPLANE_TOOLS_KEYRING_FOR_TESTS", b.every.keyring.string());
  auto files = b.create("all.bundle");
  auto target = cache::Store::open(b.dir / "offline");
  auto report = import_bundle(target, files, b.trusted());
  ASSERT_TRUE(report.ok()) << errors(report);
  for (const auto& kind : cache::kinds()) {
    if (!b.every.has(kind)) continue;
    const auto& row = b.every.of(kind);
    auto imported = target.find_artifact(row.kind, row.address, row.version, row.platform, row.filename);
    ASSERT_TRUE(imported) << label(kind);
    EXPECT_EQ(imported->digest, row.digest) << label(kind);
    EXPECT_EQ(imported->protocols, row.protocols) << label(kind);
    EXPECT_EQ(target.provenance_of(imported->id).size(), b.source.provenance_of(row.id).size()) << label(kind);
  }
  auto tree = target.find_module_tree(b.every.module.address, b.every.module.version);
  ASSERT_TRUE(tree);
  EXPECT_EQ(tree->h1, b.every.module.h1);
}

// `bundle show` counts the rows of every kind it carries, in its text and its --json: a kind
// left out of its counts would be left out of what the user is shown a bundle holds.
TEST(EveryKind, BundleShowCountsTheRowsOfEveryKind) {
  EveryKindBundle b;
  const auto files = b.create("all.bundle");
  std::map<std::string, std::size_t> expected;  // stored name → rows (an address variant counts with its kind)
  for (const auto& kind : cache::kinds())
    if (b.every.has(kind)) ++expected[std::string(kind.name)];
  expected["module_tree"] = 1;
  ASSERT_GT(expected.size(), 10u);

  std::vector<std::string> args{"bundle", "show", "--json"};
  for (const auto& file : files) args.push_back(file.string());
  auto shown = test::run_podplane(args, test::with_deps_root(b.dir / "no-store"));
  ASSERT_EQ(shown.exit_code, 0) << shown.out << shown.err;
  const auto out = nlohmann::json::parse(shown.out);
  ASSERT_EQ(out["bundles"].size(), 1u) << shown.out;
  EXPECT_EQ(out["bundles"][0]["rows_by_kind"].get<decltype(expected)>(), expected) << out["bundles"][0]["rows_by_kind"].dump();

  args.erase(args.begin() + 2);  // the text
  auto text = test::run_podplane(args, test::with_deps_root(b.dir / "no-store"));
  ASSERT_EQ(text.exit_code, 0) << text.out << text.err;
  for (const auto& [name, count] : expected)
    EXPECT_THAT(text.out, HasSubstr("\n    " + name + " (" + std::to_string(count) + ")\n")) << name;
}

TEST(EveryKind, PlatformsLeaveOutOnlyTheRowsOfKindsTheTableFilters) {
  EveryKindBundle b;
  CreateOptions options;
  options.platforms = {"linux_arm64"};
  auto plan = plan_bundle(b.source, b.dir / "arm.bundle", options);
  ASSERT_FALSE(plan.volumes.empty());
  const auto& travelling = plan.volumes.front().manifest.artifacts;
  for (const auto& kind : cache::kinds()) {
    if (!b.every.has(kind)) continue;
    const auto& row = b.every.of(kind);
    const bool travels = std::any_of(travelling.begin(), travelling.end(), [&](const auto& t) { return t.artifact.digest == row.digest; });
    const bool left_out = kind.bundle_platforms == cache::BundlePlatforms::selected_platforms && !row.platform.empty() &&
                          row.platform != "linux_arm64";
    EXPECT_EQ(travels, !left_out) << label(kind) << " (" << row.platform << ")";
  }
}

TEST(EveryKind, ImportRechecksAnEngineReleaseAgainstItsSigningKey) {
  EveryKindBundle b;
  auto files = b.create("all.bundle");
  // Another key than the one that signed the example's SHA256SUMS.
  TempDir other;
  test::write_file(other / "keyring.asc", test::gpg_keys().armor("wrong"));
  test::ScopedEnv keyring("PODPLANE_TOOLS_KEYRING_FOR_TESTS", (other / "keyring.asc").string());
  auto target = cache::Store::open(b.dir / "offline");
  auto report = import_bundle(target, files, b.trusted());
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.volumes.front().error,
              HasSubstr("index rows not recorded: engine release not verified: terraform 1.9.8 terraform_1.9.8_linux_amd64.zip: "
                        "release signature does not verify"));
  EXPECT_TRUE(target.artifacts().empty());
}

TEST(EveryKind, ImportRechecksAPodplaneReleaseAgainstItsSha256sums) {
  EveryKindBundle b;
  // A release file whose version has no SHA256SUMS in the store.
  const std::string tarball = cache::podplane_tarball_name("0.2.0", "linux_amd64");
  (void)b.source.add_artifact(
      test::podplane_release_row(cache::ArtifactKind::tool_archive, b.source.add_bytes("podplane 0.2.0\n"), "0.2.0", tarball, "linux_amd64"));
  test::ScopedEnv keyring("PODPLANE_TOOLS_KEYRING_FOR_TESTS", b.every.keyring.string());
  auto files = b.create("all.bundle");
  auto target = cache::Store::open(b.dir / "offline");
  auto report = import_bundle(target, files, b.trusted());
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.volumes.front().error,
              HasSubstr("podplane release not verified: podplane 0.2.0 " + tarball + ": the store holds no podplane_0.2.0_SHA256SUMS for it"));
}

// The provider packages' OpenPGP recheck runs at deps verify, not at import (the table's
// rechecked_at): a bundle whose provider signature is no signature still imports.
TEST(EveryKind, ImportDoesNotRecheckProviderSignatures) {
  EveryKindBundle b;
  const std::string zip = b.source.add_bytes("PK\x03\x04 another null");
  auto package = test::provider_package_row(zip, "linux_amd64", test::kNullProvider, "3.2.5");
  auto sums = b.source.add_bytes(zip + "  " + package.filename + "\n");
  auto id = b.source.add_artifact(package);
  (void)b.source.add_artifact(test::provider_document_row(cache::ArtifactKind::provider_shasums, sums, test::kNullProvider, "3.2.5"));
  cache::Provenance provenance;
  provenance.artifact_id = id;
  provenance.shasums_digest = sums;
  provenance.signature_digest = sums;  // not a signature
  provenance.keys_digest = b.every.of(cache::kind_info(cache::ArtifactKind::provider_keys)).digest;
  provenance.result = "signed";
  b.source.add_provenance(provenance);
  test::ScopedEnv keyring("PODPLANE_TOOLS_KEYRING_FOR_TESTS", b.every.keyring.string());
  auto files = b.create("all.bundle");
  auto target = cache::Store::open(b.dir / "offline");
  auto report = import_bundle(target, files, b.trusted());
  EXPECT_TRUE(report.ok()) << errors(report);
  EXPECT_TRUE(target.find_artifact(cache::ArtifactKind::provider_package, test::kNullProvider, "3.2.5", "linux_amd64", package.filename));
}

TEST(EveryKind, ImportRechecksEachImageAgainstTheCosignKeysItsPolicyNames) {
  EveryKindBundle b;
  test::ScopedEnv keyring("PODPLANE_TOOLS_KEYRING_FOR_TESTS", b.every.keyring.string());
  auto files = b.create("all.bundle");
  auto made = test::run({"openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", (b.dir / "k.pem").string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  made = test::run({"openssl", "ec", "-in", (b.dir / "k.pem").string(), "-pubout", "-out", (b.dir / "k.pub").string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto options = b.trusted();
  options.cosign_keys = {b.dir / "k.pub"};
  auto target = cache::Store::open(b.dir / "offline");
  auto report = import_bundle(target, files, options);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.volumes.front().error, HasSubstr("index rows not recorded: image registry.example.invalid/team/app:1.0 (sha256:"));
}

}  // namespace
}  // namespace podplane::bundle
