// A full disk: commands that write fail with the error named ("No space left on device"),
// remove their temp files and leave the store as it was. The store lives on a small tmpfs
// the test mounts (and unmounts), filled up by a file beside it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cache/layout.hpp"
#include "cache/maintenance.hpp"
#include "cache/store.hpp"
#include "tests/support/small_disk.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::SmallDisk;
using test::TempDir;
using ::testing::HasSubstr;

fs::path stress_binary() { return test::build_dir() / "tests/tools/store-stress/store-stress"; }

std::set<std::string> rows_of(const fs::path& root) {
  Store store = Store::open(root, Store::Access::read_only);
  std::set<std::string> rows;
  for (const auto& a : store.artifacts()) rows.insert(a.address + " " + a.version + " " + a.digest);
  return rows;
}

std::vector<fs::path> temp_files(const fs::path& root) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(layout::temp_dir(root), ec), end; !ec && it != end; it.increment(ec)) files.push_back(it->path());
  return files;
}

class DiskFull : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(stress_binary())) << "build the store-stress helper first: " << stress_binary();
    disk_.emplace(dir_ / "disk", "3m");
    if (!disk_->mounted()) GTEST_SKIP() << "mounting a tmpfs needs root (CAP_SYS_ADMIN): " << disk_->error();
    root_ = disk_->path() / "deps";
    auto filled = test::run({stress_binary().string(), root_.string(), "--worker", "a", "--unique", "4", "--size", "1000"});
    ASSERT_EQ(filled.exit_code, 0) << filled.err;
    before_ = rows_of(root_);
  }
  void TearDown() override { disk_.reset(); }

  void expect_store_as_it_was() {
    EXPECT_EQ(rows_of(root_), before_);
    EXPECT_TRUE(temp_files(root_).empty());
    Store store = Store::open(root_, Store::Access::read_only);
    auto verify = verify_store(store);
    EXPECT_TRUE(verify.ok()) << to_json(verify).dump(2);
  }

  TempDir dir_;
  std::optional<SmallDisk> disk_;
  fs::path root_;
  std::set<std::string> before_;
};

TEST_F(DiskFull, AnObjectThatDoesNotFitFailsNamingTheFullDiskAndLeavesNoTempFile) {
  ASSERT_TRUE(disk_->fill_leaving(64 * 1024)) << disk_->error();
  auto ingest = test::run({stress_binary().string(), root_.string(), "--worker", "b", "--unique", "1", "--size", "400000"});
  EXPECT_EQ(ingest.exit_code, 1) << ingest.out;
  EXPECT_THAT(ingest.err, HasSubstr("No space left on device"));
  expect_store_as_it_was();
}

TEST_F(DiskFull, ABundleImportThatDoesNotFitFailsAndLeavesTheStoreAsItWas) {
  // The bundle comes from a store on the ordinary disk, with more bytes than the small one has.
  const fs::path online = dir_ / "online";
  auto filled = test::run({stress_binary().string(), online.string(), "--worker", "big", "--unique", "6", "--size", "300000"});
  ASSERT_EQ(filled.exit_code, 0) << filled.err;
  auto created = test::run_podplane({"bundle", "create", (dir_ / "big.bundle").string()}, test::with_deps_root(online));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  ASSERT_TRUE(disk_->fill_leaving(256 * 1024)) << disk_->error();
  auto imported = test::run_podplane({"bundle", "import", (dir_ / "big.bundle").string(), "--allow-unsigned"},
                                     test::with_deps_root(root_));
  EXPECT_EQ(imported.exit_code, 1) << imported.out;
  EXPECT_THAT(imported.err + imported.out, HasSubstr("No space left on device"));
  expect_store_as_it_was();
}

TEST_F(DiskFull, PruneAndGcOnAFullDiskFinishOrFailCleanly) {
  ASSERT_TRUE(disk_->fill_leaving(0)) << disk_->error();
  auto prune = test::run_podplane({"deps", "prune", "--keep", "1"}, test::with_deps_root(root_));
  // Deleting needs a little room for the index's log: either it fits, or the error says why.
  if (prune.exit_code != 0) {
    EXPECT_THAT(prune.err, HasSubstr("full"));
    expect_store_as_it_was();
  }
  disk_->empty_filler();
  auto again = test::run_podplane({"deps", "prune", "--keep", "1"}, test::with_deps_root(root_));
  EXPECT_EQ(again.exit_code, 0) << again.err;
  Store store = Store::open(root_, Store::Access::read_only);
  EXPECT_TRUE(verify_store(store).ok());
}

// Files below `dir` whose name says they are a temp file (".tmp-" of a bundle volume or an
// export's staging dir), anywhere on the small disk.
std::vector<std::string> temp_names_below(const fs::path& dir) {
  std::vector<std::string> found;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it)
    if (it->path().filename().string().find(".tmp") != std::string::npos) found.push_back(it->path().string());
  return found;
}

TEST_F(DiskFull, DepsTfThatDoesNotFitFailsNamingTheFullDiskAndLeavesTheStoreAsItWas) {
  test::FixtureUpstream upstream;
  const fs::path cli_config = dir_ / "cli.tfrc";
  upstream.write_cli_config(cli_config);
  test::ProcessOptions options;
  options.env = upstream.env(root_, cli_config);
  options.env["PATH"] = "/usr/bin:/bin";  // no engine on PATH: deps tf takes its default
  options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
  ASSERT_TRUE(disk_->fill_leaving(0)) << disk_->error();
  auto tf = test::run_podplane({"deps", "tf", "--platform", "linux_amd64"}, options);
  EXPECT_EQ(tf.exit_code, 1) << tf.out << tf.err;
  EXPECT_THAT(tf.err + tf.out, HasSubstr("No space left on device"));
  expect_store_as_it_was();
  EXPECT_THAT(temp_names_below(disk_->path()), ::testing::IsEmpty());
  auto verify = test::run_podplane({"deps", "verify"}, test::with_deps_root(root_));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

// deps download and deps images on a disk with room for the index but not for what they
// fetch. A reader holds the index open meanwhile (as `mirror serve` does), so the index's
// shared-memory file already exists and the run fails on the objects it writes, not on
// opening the index (which AnIndexThatCannotMapItsSharedMemoryNamesTheFullDisk covers).
class DiskFullFetch : public DiskFull {
 protected:
  void SetUp() override {
    DiskFull::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    upstream_.emplace();
    options_.env = upstream_->env(root_, upstream_->write_cli_config(dir_ / "cli.tfrc"));
    options_.env["PODPLANE_HTTP_RETRIES"] = "1";
    options_.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "PODPLANE_ARCH"};
    reader_.emplace(Store::open(root_, Store::Access::read_only));
  }
  void TearDown() override {
    reader_.reset();
    upstream_.reset();
    DiskFull::TearDown();
  }

  // The command failed naming the full disk and left the store and the small disk as they were.
  void expect_failed_on_full_disk(const test::ProcessResult& run) {
    EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
    EXPECT_THAT(run.err, HasSubstr("No space left on device"));
    EXPECT_THAT(temp_names_below(disk_->path()), ::testing::IsEmpty());
    reader_.reset();
    disk_->empty_filler();  // room for verify's own index files
    expect_store_as_it_was();
    auto verify = test::run_podplane({"deps", "verify"}, test::with_deps_root(root_));
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  }

  std::optional<test::FixtureUpstream> upstream_;
  test::ProcessOptions options_;
  std::optional<Store> reader_;
};

TEST_F(DiskFullFetch, DepsDownloadThatDoesNotFitFailsNamingTheFullDiskAndLeavesTheStoreAsItWas) {
  // Room for a few of the arch's small files, not for all of them (its os image alone is 768 KiB).
  ASSERT_TRUE(disk_->fill_leaving(128 * 1024)) << disk_->error();
  expect_failed_on_full_disk(test::run_podplane({"deps", "download", "--arch", "amd64"}, options_));
}

TEST_F(DiskFullFetch, DepsImagesThatDoesNotFitFailsNamingTheFullDiskAndLeavesTheStoreAsItWas) {
  const std::string registry = upstream_->base_url().substr(upstream_->base_url().find("://") + 3);
  test::write_file(dir_ / "images.txt", registry + "/podplane-fixture/pause:3.10.2\n");
  // Room for what opening the index writes, not for the image's manifests and blobs.
  ASSERT_TRUE(disk_->fill_leaving(16 * 1024)) << disk_->error();
  expect_failed_on_full_disk(
      test::run_podplane({"deps", "images", "-f", (dir_ / "images.txt").string(), "--arch", "amd64,arm64"}, options_));
}

TEST_F(DiskFull, ABundleThatDoesNotFitFailsNamingTheFullDiskAndLeavesNoTempFile) {
  ASSERT_TRUE(disk_->fill_leaving(0)) << disk_->error();
  const fs::path bundle = disk_->path() / "site.bundle";
  auto created = test::run_podplane({"bundle", "create", bundle.string()}, test::with_deps_root(root_));
  EXPECT_EQ(created.exit_code, 1) << created.out;
  EXPECT_THAT(created.err, HasSubstr("No space left on device"));
  EXPECT_FALSE(fs::exists(bundle));
  EXPECT_THAT(temp_names_below(disk_->path()), ::testing::IsEmpty());
  expect_store_as_it_was();
  auto verify = test::run_podplane({"deps", "verify"}, test::with_deps_root(root_));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

TEST_F(DiskFull, AnExportThatDoesNotFitFailsNamingTheFullDiskAndLeavesNoStagingDir) {
  ASSERT_TRUE(disk_->fill_leaving(0)) << disk_->error();
  const fs::path out = disk_->path() / "site";
  auto exported = test::run_podplane({"mirror", "export", out.string()}, test::with_deps_root(root_));
  EXPECT_EQ(exported.exit_code, 1) << exported.out;
  EXPECT_THAT(exported.err, HasSubstr("No space left on device"));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_THAT(temp_names_below(disk_->path()), ::testing::IsEmpty());
  expect_store_as_it_was();
  auto verify = test::run_podplane({"deps", "verify"}, test::with_deps_root(root_));
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

TEST_F(DiskFull, AnIndexThatCannotMapItsSharedMemoryNamesTheFullDisk) {
  // The last writer to close removes the index's -shm and -wal files: the next process must
  // create them, which a full tmpfs refuses. SQLite says "disk I/O error"; the error names why.
  { Store store = Store::open(root_); }
  ASSERT_FALSE(fs::exists(layout::index_db(root_).string() + "-shm"));
  ASSERT_TRUE(disk_->fill_leaving(0)) << disk_->error();
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"mirror", "export", (disk_->path() / "site").string()},
        std::vector<std::string>{"bundle", "create", (disk_->path() / "site.bundle").string()}}) {
    auto run = test::run_podplane(command, test::with_deps_root(root_));
    EXPECT_EQ(run.exit_code, 1) << command[0] << " " << command[1];
    EXPECT_THAT(run.err, HasSubstr("No space left on device")) << command[0] << " " << command[1];
  }
  EXPECT_THAT(temp_names_below(disk_->path()), ::testing::IsEmpty());
  disk_->empty_filler();
  expect_store_as_it_was();
}

}  // namespace
}  // namespace podplane::cache
