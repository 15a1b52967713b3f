// verify and gc at the library level, and `deps ls/verify` on a store mounted read-only.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cache/layout.hpp"
#include "cache/maintenance.hpp"
#include "cache/store.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using ::testing::HasSubstr;

Artifact vm_artifact(const std::string& name, const std::string& digest) {
  return test::vmconfig_artifact_row(digest, name, "1.0.0", "https://example.com/" + name + ".bin");
}

bool any_contains(const std::vector<std::string>& lines, const std::string& fragment) {
  for (const auto& line : lines) {
    if (line.find(fragment) != std::string::npos) return true;
  }
  return false;
}

// Overwrites a read-only object in place (the kind of damage verify must find).
void damage(const fs::path& object, const std::string& content) {
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(object, std::ios::binary | std::ios::trunc) << content;
}

TEST(Verify, ACleanStoreIsOk) {
  TempDir dir;
  Store store = Store::open(dir.path());
  (void)store.add_artifact(vm_artifact("kernel", store.add_bytes("kernel bytes")));
  auto report = verify_store(store);
  EXPECT_TRUE(report.ok()) << to_json(report).dump(2);
  EXPECT_EQ(report.objects_checked, 1u);
  EXPECT_EQ(report.artifacts_checked, 1u);
  EXPECT_TRUE(report.garbage.empty());
}

TEST(Verify, FindsCorruptAndMissingObjectsAndWrongUpstreamDigests) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string corrupt = store.add_bytes("kernel bytes");
  std::string missing = store.add_bytes("initrd bytes");
  std::string resized = store.add_bytes("rootfs bytes");
  (void)store.add_artifact(vm_artifact("kernel", corrupt));
  (void)store.add_artifact(vm_artifact("initrd", missing));
  (void)store.add_artifact(vm_artifact("rootfs", resized));
  Artifact wrong = vm_artifact("other", store.add_bytes("other bytes"));
  wrong.upstream_digest = "sha256:" + std::string(64, '1');
  (void)store.add_artifact(wrong);

  damage(store.object_path(corrupt), "KERNEL BYTES");  // same size, other content
  fs::remove(store.object_path(missing));
  damage(store.object_path(resized), "short");
  auto report = verify_store(store);
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(any_contains(report.problems, "is corrupt")) << to_json(report).dump(2);
  EXPECT_TRUE(any_contains(report.problems, "expected: sha256:" + corrupt));
  EXPECT_TRUE(any_contains(report.problems, "object missing: " + missing));
  EXPECT_TRUE(any_contains(report.problems, "wrong size"));
  EXPECT_TRUE(any_contains(report.problems, "does not match its upstream digest"));
  EXPECT_EQ(report.problems.size(), 4u) << to_json(report).dump(2);
}

TEST(Verify, ReportsUnindexedObjectsAsGarbage) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("kept");
  (void)store.add_artifact(vm_artifact("kept", digest));
  std::string stray(64, 'a');
  test::write_file(layout::objects_dir(dir.path()) / "aa" / stray.substr(2), "not really");
  auto report = verify_store(store);
  EXPECT_TRUE(report.ok());
  ASSERT_EQ(report.garbage.size(), 1u);
  EXPECT_THAT(report.garbage[0], HasSubstr("unindexed object"));
}

TEST(Gc, RemovesOnlyWhatNoRowReferences) {
  TempDir dir;
  Store store = Store::open(dir.path(), Store::Access::read_write, Store::TempSweep::none);
  std::string kept = store.add_bytes("kept");
  std::string dropped = store.add_bytes("dropped");
  std::string module_file = store.add_bytes("module file");
  std::string sums = store.add_bytes("sums");
  std::int64_t id = store.add_artifact(vm_artifact("kept", kept));
  store.add_provenance({id, sums, "", "", "", "checked", ""});
  (void)store.add_module_tree({0, "registry.opentofu.org/a/b/c", "1.0.0", "", "", "", {{"main.tf", 0644, module_file, 0}}});

  auto dry = collect_garbage(store, DryRun::yes);
  EXPECT_EQ(dry.objects, std::vector<std::string>{dropped});
  EXPECT_TRUE(fs::exists(store.object_path(dropped)));

  auto report = collect_garbage(store, DryRun::no);
  EXPECT_EQ(report.objects, std::vector<std::string>{dropped});
  EXPECT_EQ(report.bytes, 7u);
  EXPECT_FALSE(fs::exists(store.object_path(dropped)));
  for (const auto& digest : {kept, module_file, sums}) EXPECT_TRUE(store.has_object(digest)) << digest;
  EXPECT_EQ(store.audit_log().back().action, "gc");
  EXPECT_TRUE(verify_store(store).ok());
  EXPECT_TRUE(collect_garbage(store, DryRun::no).objects.empty());
}

TEST(Gc, RefusesAReadOnlyStore) {
  TempDir dir;
  { Store store = Store::open(dir.path()); }
  Store store = Store::open(dir.path(), Store::Access::read_only);
  EXPECT_THROW((void)collect_garbage(store, DryRun::no), Error);
  EXPECT_TRUE(verify_store(store).ok());
}

TEST(Cli, DepsLsListsByKindAddressVersionPlatformAndSize) {
  TempDir dir;
  {
    Store store = Store::open(dir.path());
    (void)store.add_artifact(vm_artifact("kernel", store.add_bytes(std::string(2048, 'k'))));
  }
  test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = dir.path().string();
  auto table = test::run_podplane({"deps", "ls"}, options);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("KIND"));
  EXPECT_THAT(table.out, HasSubstr("vmconfig_artifact  kernel"));
  EXPECT_THAT(table.out, HasSubstr("2.0 KiB"));
  auto json = test::run_podplane({"deps", "ls", "--json"}, options);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto list = nlohmann::json::parse(json.out);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["kind"], "vmconfig_artifact");
  EXPECT_EQ(list[0]["size"], 2048);
}

TEST(Cli, DepsVerifyExitsOneWithTheProblems) {
  TempDir dir;
  std::string digest;
  {
    Store store = Store::open(dir.path());
    digest = store.add_bytes("kernel bytes");
    (void)store.add_artifact(vm_artifact("kernel", digest));
    damage(store.object_path(digest), "KERNEL BYTES");
  }
  test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = dir.path().string();
  auto result = test::run_podplane({"deps", "verify"}, options);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("problem: object"));
  EXPECT_THAT(result.out, HasSubstr("expected: sha256:" + digest));
  EXPECT_THAT(result.err, HasSubstr("1 problem(s)"));
}

// `deps verify --quick` reads no object: a truncated object fails it, a same-size corrupted one
// passes it (and says the check was quick) and fails the full verify.
TEST(Cli, VerifyQuickFindsTruncationButNotSameSizeCorruption) {
  TempDir dir;
  std::string truncated, corrupted;
  {
    Store store = Store::open(dir.path());
    truncated = store.add_bytes("initrd bytes");
    corrupted = store.add_bytes("kernel bytes");
    (void)store.add_artifact(vm_artifact("initrd", truncated));
    (void)store.add_artifact(vm_artifact("kernel", corrupted));
  }
  test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = dir.path().string();

  damage(Store::open(dir.path()).object_path(corrupted), "KERNEL BYTES");  // same size, other bytes
  auto quick_same_size = test::run_podplane({"deps", "verify", "--quick", "--json"}, options);
  ASSERT_EQ(quick_same_size.exit_code, 0) << quick_same_size.out << quick_same_size.err;
  auto report = nlohmann::json::parse(quick_same_size.out);
  EXPECT_TRUE(report["quick"].get<bool>());
  EXPECT_EQ(report["objects_checked"], 2);
  auto quick_text = test::run_podplane({"deps", "verify", "--quick"}, options);
  EXPECT_EQ(quick_text.exit_code, 0) << quick_text.err;
  EXPECT_THAT(quick_text.out, HasSubstr("quick check"));
  auto full = test::run_podplane({"deps", "verify", "--json"}, options);
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_FALSE(nlohmann::json::parse(full.out)["quick"].get<bool>());
  EXPECT_THAT(full.out, HasSubstr("is corrupt"));

  damage(Store::open(dir.path()).object_path(truncated), "init");
  auto quick_truncated = test::run_podplane({"deps", "verify", "--quick"}, options);
  EXPECT_EQ(quick_truncated.exit_code, 1);
  EXPECT_THAT(quick_truncated.out, HasSubstr("object " + truncated + " has the wrong size"));
  EXPECT_THAT(quick_truncated.out, ::testing::Not(HasSubstr("is corrupt")));
  EXPECT_THAT(quick_truncated.err, HasSubstr("1 problem(s)"));

  auto refused = test::run_podplane({"deps", "verify", "--quick", "--repair"}, options);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("excludes"));
}

TEST(Verify, QuickChecksSizesAndRowsWithoutRehashing) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string corrupt = store.add_bytes("kernel bytes");
  std::string missing = store.add_bytes("initrd bytes");
  (void)store.add_artifact(vm_artifact("kernel", corrupt));
  (void)store.add_artifact(vm_artifact("initrd", missing));
  Artifact wrong = vm_artifact("other", store.add_bytes("other bytes"));
  wrong.upstream_digest = "sha256:" + std::string(64, '1');  // caught without reading the object
  (void)store.add_artifact(wrong);
  damage(store.object_path(corrupt), "KERNEL BYTES");
  fs::remove(store.object_path(missing));

  auto quick = verify_store(store, VerifyDepth::quick);
  EXPECT_EQ(quick.depth, VerifyDepth::quick);
  EXPECT_TRUE(any_contains(quick.problems, "object missing: " + missing)) << to_json(quick).dump(2);
  EXPECT_TRUE(any_contains(quick.problems, "does not match its upstream digest"));
  EXPECT_FALSE(any_contains(quick.problems, "is corrupt"));
  EXPECT_EQ(quick.problems.size(), 2u) << to_json(quick).dump(2);
  EXPECT_TRUE(any_contains(verify_store(store).problems, "is corrupt"));
}

// A store on read-only media. Tests run as root, for whom chmod stops nothing, so the store
// is bind-mounted read-only in a private mount namespace. If the kernel refuses unshare, the
// test says so and checks Access::read_only with SQLite's immutable mode instead.
TEST(Cli, AStoreOnAReadOnlyMountStillAnswersLsAndVerify) {
  TempDir dir;
  fs::path root = dir / "deps";
  {
    Store store = Store::open(root);
    (void)store.add_artifact(vm_artifact("kernel", store.add_bytes("kernel bytes")));
  }
  ASSERT_FALSE(fs::exists(root / "store/index.db-wal")) << "the last writer checkpoints the WAL";
  ASSERT_TRUE(test::have_program("unshare")) << "unshare (util-linux) is needed";
  std::string r = root.string();
  std::string script = "mount --bind '" + r + "' '" + r + "' && mount -o remount,bind,ro '" + r + "' || exit 97\n" +
                       "if touch '" + r + "/probe' 2>/dev/null; then echo WRITABLE; exit 98; fi\n" + "'" +
                       test::podplane_binary().string() + "' deps ls --json && echo '-----' && '" +
                       test::podplane_binary().string() + "' deps verify --json\n";
  test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = r;
  auto result = test::run({"unshare", "-m", "sh", "-c", script}, options);
  if (result.exit_code == 97 || (result.exit_code != 0 && result.err.find("unshare") != std::string::npos)) {
    std::cout << "[ FALLBACK ] read-only bind mount unavailable (" << result.err
              << "); checking Access::read_only with the index opened immutable instead\n";
    Store store = Store::open(root, Store::Access::read_only);
    EXPECT_EQ(store.artifacts().size(), 1u);
    EXPECT_TRUE(verify_store(store).ok());
    return;
  }
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto split = result.out.find("-----\n");
  ASSERT_NE(split, std::string::npos) << result.out;
  auto list = nlohmann::json::parse(result.out.substr(0, split));
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["address"], "kernel");
  auto report = nlohmann::json::parse(result.out.substr(split + 6));
  EXPECT_TRUE(report["ok"].get<bool>()) << report.dump(2);
  EXPECT_TRUE(report["read_only"].get<bool>());
  EXPECT_THAT(report["read_only_reason"].get<std::string>(), HasSubstr("immutable"))
      << "no -shm can be created on read-only media, so the index is read with immutable=1";
  EXPECT_EQ(report["objects_checked"], 1);
  EXPECT_FALSE(fs::exists(root / "probe"));
}

}  // namespace
}  // namespace podplane::cache
