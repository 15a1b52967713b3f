// Round trips between two real stores: full, delta, platforms, volumes, reproducibility,
// trust decisions, tampering and truncation.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "base/error.hpp"
#include "bundle/create.hpp"
#include "bundle/import.hpp"
#include "bundle/signing.hpp"
#include "cache/layout.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

using podplane::test::read_file;
using podplane::test::TempDir;
using podplane::test::write_file;
namespace fs = std::filesystem;

class BundleRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    keys = generate_key_pair(dir / "site");
    source.emplace(cache::Store::open(dir / "online"));
    test::fill_store(*source);
  }

  std::vector<fs::path> create(const std::string& name, CreateOptions options = {}) {
    if (!options.signing_key) options.signing_key = keys.private_key;
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

  cache::Store fresh_store(const std::string& name) { return cache::Store::open(dir / name); }

  TempDir dir;
  KeyPairFiles keys;
  std::optional<cache::Store> source;
};

std::size_t count_objects(const fs::path& root) {
  std::error_code ec;
  std::size_t n = 0;
  fs::path objects = cache::layout::objects_dir(root);
  if (!fs::exists(objects)) return 0;
  for (auto it = fs::recursive_directory_iterator(objects, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    n += it->is_regular_file() ? 1 : 0;
  return n;
}

std::string describe(const ImportReport& report) {
  std::string text;
  for (const auto& v : report.volumes) text += v.file.string() + ": " + (v.error.empty() ? "ok" : v.error) + "\n";
  for (const auto& m : report.missing_volumes) text += "missing " + m + "\n";
  for (const auto& w : report.waiting_rows) text += "waiting " + w + "\n";
  return text;
}

TEST_F(BundleRoundTrip, FullBundleCarriesEveryRowObjectAndSelection) {
  auto files = create("full.bundle");
  ASSERT_EQ(files.size(), 1u);
  auto target = fresh_store("offline");
  auto report = import_bundle(target, files, trusted());
  ASSERT_TRUE(report.ok()) << describe(report);
  EXPECT_TRUE(report.volumes.at(0).trusted_signer);
  EXPECT_EQ(test::artifact_lines(target), test::artifact_lines(*source));
  EXPECT_EQ(test::module_lines(target), test::module_lines(*source));
  ASSERT_TRUE(target.tf_selection().has_value());
  EXPECT_EQ(target.tf_selection()->providers.size(), 2u);
  EXPECT_EQ(target.tf_selection()->platforms, test::kPlatforms);
  test::expect_objects_intact(dir / "offline");
  // The views reflect the import: provider zips, the lock file, the module's current version.
  EXPECT_TRUE(fs::exists(cache::layout::providers_dir(dir / "offline") / "registry.opentofu.org/hashicorp/aws" /
                         "terraform-provider-aws_6.2.0_linux_arm64.zip"));
  ASSERT_TRUE(fs::exists(cache::layout::lock_file(dir / "offline")));
  EXPECT_NE(read_file(cache::layout::lock_file(dir / "offline")).find("6.2.0"), std::string::npos);
  EXPECT_EQ(read_file(cache::layout::current_version_file(dir / "offline")), "2.0.1\n");
  auto audit = target.audit_log();
  EXPECT_TRUE(std::any_of(audit.begin(), audit.end(), [](const auto& e) { return e.action == "bundle-import"; }));

  // A rerun finds everything present and changes nothing.
  auto again = import_bundle(target, files, trusted());
  ASSERT_TRUE(again.ok()) << describe(again);
  EXPECT_EQ(again.volumes.at(0).objects_verified, 0u);
  EXPECT_EQ(again.volumes.at(0).objects_present, again.volumes.at(0).objects);
  EXPECT_EQ(test::artifact_lines(target), test::artifact_lines(*source));
}

TEST_F(BundleRoundTrip, SameStoreAndOptionsGiveIdenticalBytes) {
  auto a = create("one.bundle");
  auto b = create("two.bundle");
  EXPECT_EQ(read_file(a.at(0)), read_file(b.at(0)));
  CreateOptions volumes;
  volumes.volume_size = 40 * 1024;
  auto va = create("v1.bundle", volumes);
  auto vb = create("v2.bundle", volumes);
  ASSERT_EQ(va.size(), vb.size());
  ASSERT_GT(va.size(), 2u);
  for (std::size_t i = 0; i < va.size(); ++i) EXPECT_EQ(read_file(va[i]), read_file(vb[i])) << i;
}

TEST_F(BundleRoundTrip, DeltaCarriesOnlyWhatTheInventoryLacks) {
  auto target = fresh_store("offline");
  ASSERT_TRUE(import_bundle(target, create("full.bundle"), trusted()).ok());

  // Online: a provider upgrade.
  auto new_digests = test::add_provider(*source, "aws", "6.3.0", test::kPlatforms, 20000);
  test::set_selection(*source, "6.3.0");
  write_file(dir / "inventory.json", make_inventory(target).serialize());
  CreateOptions options;
  options.since = dir / "inventory.json";
  auto plan = plan_bundle(*source, dir / "delta.bundle", options);
  // Three zips plus the release's SHA256SUMS and signature; the keys document is the same
  // bytes as the previous release's, which the inventory already holds.
  EXPECT_EQ(plan.objects, 5u);
  std::uint64_t new_bytes = 0;
  for (const auto& o : plan.volumes.at(0).manifest.objects) new_bytes += o.size;
  EXPECT_EQ(plan.object_bytes, new_bytes);
  EXPECT_LE(plan.total_bytes, new_bytes * 102 / 100 + 64 * 1024);
  for (const auto& d : new_digests) {
    auto& objects = plan.volumes.at(0).manifest.objects;
    EXPECT_TRUE(std::any_of(objects.begin(), objects.end(), [&](const auto& o) { return o.digest == d; }));
  }
  ASSERT_TRUE(plan.volumes.at(0).manifest.since.has_value());
  EXPECT_EQ(plan.volumes.at(0).manifest.since->store_id, target.identity());

  auto files = create("delta.bundle", options);
  auto report = import_bundle(target, files, trusted());
  ASSERT_TRUE(report.ok()) << describe(report);
  EXPECT_TRUE(report.notes.empty()) << report.notes.at(0);
  EXPECT_EQ(test::artifact_lines(target), test::artifact_lines(*source));
  EXPECT_EQ(target.tf_selection()->providers.at(0).version, "6.3.0");
  EXPECT_NE(read_file(cache::layout::lock_file(dir / "offline")).find("6.3.0"), std::string::npos)
      << "the lock file did not follow the delta";

  // Nothing new: the next delta holds no objects at all.
  write_file(dir / "inventory2.json", make_inventory(target).serialize());
  options.since = dir / "inventory2.json";
  auto empty = plan_bundle(*source, dir / "empty.bundle", options);
  EXPECT_EQ(empty.objects, 0u);
  EXPECT_EQ(empty.artifacts, 0u);
}

TEST_F(BundleRoundTrip, PlatformFilterDropsOtherPackagesKeepsTheRest) {
  CreateOptions options;
  options.platforms = {"linux_amd64"};
  auto target = fresh_store("offline");
  auto report = import_bundle(target, create("amd64.bundle", options), trusted());
  ASSERT_TRUE(report.ok()) << describe(report);
  cache::ArtifactQuery packages;
  packages.kind = cache::ArtifactKind::provider_package;
  auto zips = target.artifacts(packages);
  ASSERT_EQ(zips.size(), 2u);  // aws and random for linux_amd64
  for (const auto& z : zips) EXPECT_EQ(z.platform, "linux_amd64");
  cache::ArtifactQuery sums;
  sums.kind = cache::ArtifactKind::provider_shasums;
  EXPECT_EQ(target.artifacts(sums).size(), 2u);
  EXPECT_EQ(target.module_trees().size(), 1u);
  cache::ArtifactQuery vm;
  vm.kind = cache::ArtifactKind::vmconfig_artifact;
  EXPECT_EQ(target.artifacts(vm).size(), 1u);
  EXPECT_EQ(target.tf_selection()->platforms, std::vector<std::string>{"linux_amd64"});
  for (const auto& z : zips) EXPECT_EQ(target.provenance_of(z.id).size(), 1u);
}

TEST_F(BundleRoundTrip, VolumesImportOutOfOrderAndAMissingOneCostsOnlyItsObjects) {
  CreateOptions options;
  options.volume_size = 40 * 1024;
  auto files = create("vol.bundle", options);
  ASSERT_GE(files.size(), 4u);
  for (const auto& f : files) {
    EXPECT_LE(fs::file_size(f), 40u * 1024) << f;
    EXPECT_NE(f.string().find("-of-"), std::string::npos);
  }
  auto target = fresh_store("offline");
  // Every volume but the second, last first.
  std::vector<fs::path> given(files.rbegin(), files.rend());
  given.erase(std::find(given.begin(), given.end(), files[1]));
  auto report = import_bundle(target, given, trusted());
  EXPECT_FALSE(report.ok());
  ASSERT_EQ(report.missing_volumes.size(), 1u) << describe(report);
  EXPECT_NE(report.missing_volumes[0].find("volume 2 of " + std::to_string(files.size())), std::string::npos);
  for (const auto& v : report.volumes) EXPECT_TRUE(v.error.empty()) << v.error;
  EXPECT_FALSE(report.waiting_rows.empty());
  EXPECT_LT(test::artifact_lines(target).size(), test::artifact_lines(*source).size());
  EXPECT_GT(test::artifact_lines(target).size(), 0u);
  test::expect_objects_intact(dir / "offline");

  // The missing volume alone completes the store.
  auto rest = import_bundle(target, {files[1]}, trusted());
  EXPECT_TRUE(rest.volumes.at(0).error.empty()) << describe(rest);
  EXPECT_TRUE(rest.waiting_rows.empty()) << describe(rest);
  EXPECT_EQ(test::artifact_lines(target), test::artifact_lines(*source));
  EXPECT_EQ(test::module_lines(target), test::module_lines(*source));
  EXPECT_TRUE(target.tf_selection().has_value());
}

TEST_F(BundleRoundTrip, TinyVolumeSizeIsAUsageError) {
  CreateOptions options;
  options.volume_size = 1024;
  options.signing_key = keys.private_key;
  EXPECT_THROW(plan_bundle(*source, dir / "x", options), UsageError);
}

TEST_F(BundleRoundTrip, RefusesWhenTheTargetLacksSpace) {
  CreateOptions options;
  options.signing_key = keys.private_key;
  options.free_space = [](const fs::path&) { return std::uint64_t{4096}; };
  auto plan = plan_bundle(*source, dir / "nospace.bundle", options);
  try {
    write_bundle(*source, plan, options);
    FAIL() << "wrote a bundle without the space for it";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not enough free space"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "nospace.bundle"));
}

TEST_F(BundleRoundTrip, TrustDecisions) {
  auto files = create("signed.bundle");
  auto other = generate_key_pair(dir / "other");

  VerifyOptions wrong;
  wrong.trusted_keys = {other.public_key};
  auto store_a = fresh_store("a");
  auto refused = import_bundle(store_a, files, wrong);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.volumes[0].error.find("untrusted key"), std::string::npos) << refused.volumes[0].error;
  EXPECT_EQ(count_objects(dir / "a"), 0u) << "objects were read before the signature was judged";

  VerifyOptions none;  // no --trust at all
  EXPECT_FALSE(verify_bundle(files, none).ok());
  none.unsigned_bundles = UnsignedBundles::allow;  // an untrusted but valid signature passes with the flag
  EXPECT_TRUE(verify_bundle(files, none).ok());

  CreateOptions unsigned_options;
  auto plan = plan_bundle(*source, dir / "unsigned.bundle", unsigned_options);
  write_bundle(*source, plan, unsigned_options);
  auto unsigned_report = verify_bundle({dir / "unsigned.bundle"}, trusted());
  ASSERT_FALSE(unsigned_report.ok());
  EXPECT_NE(unsigned_report.volumes[0].error.find("unsigned"), std::string::npos);
  VerifyOptions allow = trusted();
  allow.unsigned_bundles = UnsignedBundles::allow;
  auto store = fresh_store("b");
  auto accepted = import_bundle(store, {dir / "unsigned.bundle"}, allow);
  EXPECT_TRUE(accepted.ok()) << describe(accepted);
  EXPECT_EQ(accepted.volumes[0].signer, "unsigned");
}

// Offsets of each region of a single-volume bundle, from its own manifest.
struct Layout {
  std::uint64_t manifest_header = 0, manifest_data = 512, signature_header = 0, signature_data = 0, first_object_header = 0,
                first_object_data = 0, end = 0;
};
Layout layout_of(const std::string& bytes) {
  auto size_at = [&](std::uint64_t header) { return std::stoull(bytes.substr(header + 124, 11), nullptr, 8); };
  auto pad = [](std::uint64_t n) { return (n + 511) / 512 * 512; };
  Layout l;
  l.signature_header = 512 + pad(size_at(0));
  l.signature_data = l.signature_header + 512;
  l.first_object_header = l.signature_data + pad(size_at(l.signature_header));
  l.first_object_data = l.first_object_header + 512;
  l.end = bytes.size();
  return l;
}

TEST_F(BundleRoundTrip, TamperMatrixIsAlwaysRefused) {
  auto files = create("t.bundle");
  const std::string original = read_file(files[0]);
  Layout l = layout_of(original);
  struct Case {
    const char* what;
    std::uint64_t offset;
  };
  std::vector<Case> cases = {
      {"manifest header name", l.manifest_header + 3},
      {"manifest header size", l.manifest_header + 130},
      {"manifest data", l.manifest_data + 40},
      {"manifest data late", l.signature_header - 600},
      {"signature header", l.signature_header + 10},
      {"signature data", l.signature_data + 30},
      {"signature hex", l.signature_data + 250},
      {"object header name", l.first_object_header + 20},
      {"object header mode", l.first_object_header + 101},
      {"object data", l.first_object_data + 7},
      {"last object data", l.end - 1024 - 700},
  };
  int index = 0;
  for (const auto& c : cases) {
    std::string bytes = original;
    ASSERT_LT(c.offset, bytes.size()) << c.what;
    bytes[c.offset] = static_cast<char>(bytes[c.offset] ^ 0x5a);
    fs::path file = dir / ("tampered-" + std::to_string(index) + ".bundle");
    write_file(file, bytes);
    auto verified = verify_bundle({file}, trusted());
    EXPECT_FALSE(verified.ok()) << c.what << " at " << c.offset;
    std::string root = "tamper-" + std::to_string(index++);
    auto store = fresh_store(root);
    auto imported = import_bundle(store, {file}, trusted());
    EXPECT_FALSE(imported.ok()) << c.what << " at " << c.offset;
    test::expect_objects_intact(dir / root);
  }
}

TEST_F(BundleRoundTrip, TruncationNeverLetsUnverifiedBytesInAndResumes) {
  auto files = create("trunc.bundle");
  const std::string original = read_file(files[0]);
  auto store = fresh_store("offline");
  // One store for all cuts: every rerun must resume from what earlier runs verified.
  constexpr int kCuts = 24;
  for (int i = 0; i < kCuts; ++i) {
    std::uint64_t cut = (original.size() - 1025) * static_cast<std::uint64_t>(i) / kCuts + static_cast<std::uint64_t>(i * 37);
    fs::path file = dir / "cut.bundle";
    write_file(file, original.substr(0, cut));
    auto report = import_bundle(store, {file}, trusted());
    EXPECT_FALSE(report.ok()) << "cut at " << cut << " of " << original.size();
    test::expect_objects_intact(dir / "offline");
  }
  auto final_report = import_bundle(store, files, trusted());
  ASSERT_TRUE(final_report.ok()) << describe(final_report);
  EXPECT_LT(final_report.volumes[0].objects_verified, final_report.volumes[0].objects) << "earlier runs imported nothing";
  EXPECT_EQ(test::artifact_lines(store), test::artifact_lines(*source));
}

}  // namespace
}  // namespace podplane::bundle
