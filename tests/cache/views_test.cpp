// The Podplane-compatible views, rebuilt from the index.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "cache/layout.hpp"
#include "cache/maintenance.hpp"
#include "cache/store.hpp"
#include "cache/provider_documents.hpp"
#include "cache/views.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/lock_file.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using ::testing::HasSubstr;

const std::string null_address = "registry.opentofu.org/hashicorp/null";
const std::string nstance_address = "registry.opentofu.org/nstance-dev/nstance/aws";

struct Fixture {
  TempDir dir;
  fs::path root = dir / "deps";
  std::map<std::string, std::string> zip_digest;  // platform → digest
  std::map<std::string, std::string> zip_h1;
  std::string manifest_old, manifest_new, kernel;

  Fixture() {
    Store store = Store::open(root);
    for (std::string platform : {"linux_amd64", "linux_arm64"}) {
      fs::path work = dir / platform;
      test::write_file(work / "terraform-provider-null_v3.2.4_x5", "binary for " + platform);
      test::ProcessOptions in_work;
      in_work.cwd = work;
      auto zipped = test::run({"zip", "-q", "-X", "p.zip", "terraform-provider-null_v3.2.4_x5"}, in_work);
      if (zipped.exit_code != 0) throw std::runtime_error("zip failed (apt-get install zip): " + zipped.err);
      Artifact a = test::provider_package_row(store.add_file(work / "p.zip"), platform);
      a.h1 = lockfile::h1_hash_of_zip(work / "p.zip");
      (void)store.add_artifact(a);
      zip_digest[platform] = a.digest;
      zip_h1[platform] = a.h1;
    }
    ModuleTree nstance{0, nstance_address, "2.0.1", "", "", "", {}};
    nstance.files = {{"modules/cluster/main.tf", 0644, store.add_bytes("module cluster\n"), 0},
                     {"modules/shard/main.tf", 0644, store.add_bytes("module shard\n"), 0},
                     {"scripts/build.sh", 0755, store.add_bytes("#!/bin/sh\necho hi\n"), 0}};
    (void)store.add_module_tree(nstance);
    (void)store.add_module_tree({0, "registry.opentofu.org/acme/network/aws", "1.0.0", "", "", "", {{"main.tf", 0644, store.add_bytes("net\n"), 0}}});

    TfSelection selection;
    selection.providers = {{null_address, "3.2.4", "~> 3.2"}};
    selection.platforms = {"darwin_arm64", "linux_amd64", "linux_arm64"};  // darwin is not in the store
    selection.module_address = nstance_address;
    selection.module_version = "2.0.1";
    store.set_tf_selection(selection);

    auto manifest = [&](const std::string& version, const std::string& body) {
      Artifact m = test::vmconfig_manifest_row(store.add_bytes(body), "vmconfig_knc_debian-13_arm64", version);
      (void)store.add_artifact(m);
      return m.digest;
    };
    manifest_old = manifest("20260101", "{\"old\": true}\n");
    manifest_new = manifest("20260724", "{\"new\": true}\n");
    kernel = store.add_bytes("kernel image");
    Artifact k = test::vmconfig_artifact_row(kernel, "kernel", "6.12.1", "https://example.com/releases/vmlinuz-6.12.1?x=1");
    k.filename = "kernel";  // the view takes its name from the URL all the same
    (void)store.add_artifact(k);
  }
};

bool same_inode(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

TEST(Views, RebuildWritesThePodplaneLayoutFromTheIndex) {
  Fixture f;
  Store store = Store::open(f.root);
  auto stats = rebuild_views(store);
  EXPECT_GT(stats.files_written, 10u);
  EXPECT_EQ(stats.files_present, 0u);

  fs::path providers = layout::providers_dir(f.root) / "registry.opentofu.org/hashicorp/null";
  for (const auto& [platform, digest] : f.zip_digest) {
    fs::path zip = providers / ("terraform-provider-null_3.2.4_" + platform + ".zip");
    EXPECT_TRUE(same_inode(zip, store.object_path(digest))) << zip << " is a hard link to its object";
  }
  EXPECT_EQ(test::read_file(providers / "index.json"), "{\n  \"versions\": {\n    \"3.2.4\": {}\n  }\n}");
  auto listing = nlohmann::json::parse(test::read_file(providers / "3.2.4.json"));
  ASSERT_EQ(listing["archives"].size(), 2u);
  EXPECT_EQ(listing["archives"]["linux_arm64"]["url"], "terraform-provider-null_3.2.4_linux_arm64.zip");
  EXPECT_EQ(listing["archives"]["linux_arm64"]["hashes"],
            nlohmann::json::array({f.zip_h1["linux_arm64"], "zh:" + f.zip_digest["linux_arm64"]}));

  fs::path nstance = layout::nstance_modules_dir(f.root) / "2.0.1";
  EXPECT_EQ(test::read_file(nstance / "modules/cluster/main.tf"), "module cluster\n");
  EXPECT_EQ(test::read_file(nstance / "modules/shard/main.tf"), "module shard\n");
  struct stat script {};
  ASSERT_EQ(::stat((nstance / "scripts/build.sh").c_str(), &script), 0);
  EXPECT_EQ(script.st_mode & 07777, 0755u) << "an executable module file keeps its mode (a copy)";
  EXPECT_EQ(test::read_file(f.root / "tf/modules/registry.opentofu.org/acme/network/aws/1.0.0/main.tf"), "net\n");
  EXPECT_EQ(test::read_file(layout::current_version_file(f.root)), "2.0.1\n");
  EXPECT_EQ(test::read_file(layout::platforms_file(f.root)), "darwin_arm64\nlinux_amd64\nlinux_arm64\n");

  std::string lock_text = test::read_file(layout::lock_file(f.root));
  EXPECT_THAT(lock_text, HasSubstr("tofu init"));
  auto lock = lockfile::parse_lock_file(lock_text, "tf/.terraform.lock.hcl");
  const auto* entry = lock.find(null_address);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->version, "3.2.4");
  EXPECT_EQ(entry->constraints, "~> 3.2");
  std::set<std::string> hashes(entry->hashes.begin(), entry->hashes.end());
  EXPECT_EQ(hashes, (std::set<std::string>{f.zip_h1["linux_amd64"], f.zip_h1["linux_arm64"], "zh:" + f.zip_digest["linux_amd64"],
                                           "zh:" + f.zip_digest["linux_arm64"]}));

  std::string tfrc = test::read_file(layout::tfrc_file(f.root));
  EXPECT_THAT(tfrc, HasSubstr("filesystem_mirror"));
  EXPECT_THAT(tfrc, HasSubstr("\"" + layout::providers_dir(f.root).string() + "\""));
  EXPECT_THAT(tfrc, ::testing::Not(HasSubstr("direct")));

  EXPECT_EQ(test::read_file(layout::vmconfig_manifests_dir(f.root) / "vmconfig_knc_debian-13_arm64.json"), "{\"new\": true}\n");
  fs::path kernel = layout::vmconfig_artifacts_dir(f.root) / "kernel/6.12.1/vmlinuz-6.12.1";
  EXPECT_TRUE(same_inode(kernel, store.object_path(f.kernel)));

  std::set<std::string> top;
  for (const auto& entry_ : fs::directory_iterator(f.root)) top.insert(entry_.path().filename().string());
  EXPECT_EQ(top, (std::set<std::string>{"store", "tf", "vmconfig"})) << "views stay inside tf/ and vmconfig/";
}

TEST(Views, ASecondRebuildChangesNothingAndVerifyChecksEveryView) {
  Fixture f;
  Store store = Store::open(f.root);
  auto first = rebuild_views(store);
  struct stat tfrc_before {};
  ASSERT_EQ(::stat(layout::tfrc_file(f.root).c_str(), &tfrc_before), 0);
  auto second = rebuild_views(store);
  EXPECT_EQ(second.files_written, 0u);
  EXPECT_EQ(second.files_present, first.files_written);
  struct stat tfrc_after {};
  ASSERT_EQ(::stat(layout::tfrc_file(f.root).c_str(), &tfrc_after), 0);
  EXPECT_EQ(tfrc_before.st_ino, tfrc_after.st_ino) << "the tfrc is rewritten only when its content changes";

  auto report = verify_store(store);
  EXPECT_TRUE(report.ok()) << to_json(report).dump(2);
  EXPECT_EQ(report.views_checked, first.files_written);

  // A view that no longer holds its object is a problem; rebuilding repairs it.
  fs::path zip = layout::providers_dir(f.root) / "registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip";
  fs::remove(zip);
  test::write_file(zip, "not the zip");
  fs::path current = layout::current_version_file(f.root);
  test::write_file(current, "9.9.9\n");
  auto damaged = verify_store(store);
  EXPECT_EQ(damaged.problems.size(), 2u) << to_json(damaged).dump(2);
  EXPECT_EQ(rebuild_views(store).files_written, 2u);
  EXPECT_TRUE(verify_store(store).ok());
  EXPECT_EQ(test::read_file(current), "2.0.1\n");
}

TEST(Views, ConcurrentRebuildsAgree) {
  Fixture f;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      try {
        Store store = Store::open(f.root);  // one handle per thread
        for (int round = 0; round < 3; ++round) (void)rebuild_views(store);
      } catch (const std::exception& error) {
        ++failures;
        ADD_FAILURE() << error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  Store store = Store::open(f.root);
  EXPECT_TRUE(verify_store(store).ok());
  // No temp files of the rebuilds are left beside the views.
  for (const auto& entry : fs::recursive_directory_iterator(f.root / "tf")) {
    EXPECT_THAT(entry.path().filename().string(), ::testing::Not(HasSubstr(".tmp-"))) << entry.path();
  }
}

TEST(Views, AReadOnlyStoreRebuildsNothing) {
  Fixture f;
  Store store = Store::open(f.root, Store::Access::read_only);
  auto stats = rebuild_views(store);
  EXPECT_EQ(stats.files_written + stats.files_present, 0u);
  EXPECT_FALSE(fs::exists(f.root / "tf"));
  EXPECT_FALSE(planned_views(store).empty());
}

// Every lock the store writes (the lock view, the stacks) is built by selection_lock: the
// selected version's packages for the given platforms, the h1 where the row has one, the zh
// always (the digest's when the row has none): never an empty hash.
TEST(Views, SelectionLockNeverCarriesAnEmptyHash) {
  auto package = [](const std::string& version, const std::string& platform, const std::string& h1, char digit) {
    Artifact a = test::provider_package_row(std::string(64, digit), platform, null_address, version);
    a.h1 = h1;
    a.zh = h1.empty() ? "" : "zh:" + a.digest;  // a row of an older store may have neither
    return a;
  };
  std::vector<Artifact> packages = {package("3.2.4", "linux_amd64", "h1:amd64=", 'a'),
                                    package("3.2.4", "linux_arm64", "", 'b'),
                                    package("3.2.4", "darwin_arm64", "h1:darwin=", 'c'),  // not a platform asked for
                                    package("3.2.3", "linux_amd64", "h1:older=", 'd')};   // not the selected version
  TempDir dir;
  Store store = Store::open(dir / "deps");
  auto lock = selection_lock(store, {{null_address, "3.2.4", "~> 3.2"}}, {"linux_amd64", "linux_arm64"}, packages);
  ASSERT_EQ(lock.providers.size(), 1u);
  EXPECT_EQ(lock.providers[0].constraints, "~> 3.2");
  std::set<std::string> hashes(lock.providers[0].hashes.begin(), lock.providers[0].hashes.end());
  EXPECT_EQ(hashes, (std::set<std::string>{"h1:amd64=", "zh:" + std::string(64, 'a'), "zh:" + std::string(64, 'b')}));
  std::string text = lockfile::render_lock_file(lock, lockfile::Engine::tofu);
  EXPECT_EQ(text.find("\"\""), std::string::npos) << text;
  EXPECT_EQ(package_lock_hashes(packages[1]), std::vector<std::string>{"zh:" + std::string(64, 'b')});
}

// `providers lock` records, for a release checked against a signed SHA256SUMS, the zh of every
// line of that document (platforms the store does not hold and the _manifest.json line too),
// sorted and deduplicated; a package with no signed document keeps its own hashes only.
TEST(Views, SelectionLockCarriesEveryLineOfTheSignedShasums) {
  TempDir dir;
  Store store = Store::open(dir / "deps");
  const std::string other_platform(64, 'e'), manifest(64, 'f');
  auto add_package = [&](const std::string& platform, const std::string& bytes, Trust trust, const std::string& result,
                         const std::string& shasums_digest) {
    Artifact a = test::provider_package_row(store.add_bytes(bytes), platform);
    a.h1 = "h1:" + platform + "=";
    a.zh = "zh:" + a.digest;
    a.trust = trust;
    a.id = store.add_artifact(a);
    store.add_provenance({a.id, shasums_digest, "", "", "", result, ""});
    return a;
  };
  std::string amd64_bytes = "zip amd64", arm64_bytes = "zip arm64";
  std::string sums = sha256_hex(amd64_bytes) + "  terraform-provider-null_3.2.4_linux_amd64.zip\n" +
                     sha256_hex(arm64_bytes) + "  terraform-provider-null_3.2.4_linux_arm64.zip\n" +
                     other_platform + "  terraform-provider-null_3.2.4_windows_amd64.zip\n" + manifest +
                     "  terraform-provider-null_3.2.4_manifest.json\n";
  std::string sums_digest = store.add_bytes(sums);
  std::vector<Artifact> packages = {
      add_package("linux_amd64", amd64_bytes, Trust::signed_upstream, "signed", sums_digest),
      add_package("linux_arm64", arm64_bytes, Trust::signed_upstream, "signed", sums_digest)};
  auto lock = selection_lock(store, {{null_address, "3.2.4", "~> 3.2"}}, {"linux_amd64", "linux_arm64"}, packages);
  ASSERT_EQ(lock.providers.size(), 1u);
  std::vector<std::string> want{"h1:linux_amd64=", "h1:linux_arm64=", "zh:" + sha256_hex(amd64_bytes),
                                "zh:" + sha256_hex(arm64_bytes), "zh:" + other_platform, "zh:" + manifest};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(lock.providers[0].hashes, want);

  // A package from a network mirror (no signed document) keeps its own two hashes.
  Artifact mirrored = add_package("darwin_arm64", "zip darwin", Trust::checksum, "network mirror hashes matched", "");
  EXPECT_EQ(release_lock_hashes(store, mirrored), package_lock_hashes(mirrored));
}

}  // namespace
}  // namespace podplane::cache
