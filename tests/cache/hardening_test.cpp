// A store under attack and accident: rows planted straight into index.db (as an old or
// hostile store holds them) never brick it, the store refuses such rows before they commit,
// `deps verify --repair` quarantines what is bad, a corrupt object can be taken again, views
// are checked against their rows, and gc never trusts an index that is missing, new or empty.
#include <sys/stat.h>
#include <utime.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "cache/layout.hpp"
#include "cache/maintenance.hpp"
#include "cache/store.hpp"
#include "cache/views.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::show;
using test::TempDir;
using ::testing::HasSubstr;

const std::string kNstance = "registry.opentofu.org/nstance-dev/nstance/aws";
const std::string kNull = "registry.opentofu.org/hashicorp/null";

bool any_contains(const std::vector<std::string>& lines, const std::string& fragment) {
  for (const auto& line : lines)
    if (line.find(fragment) != std::string::npos) return true;
  return false;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

// Runs SQL against the store's index with the sqlite3 program, as an old or hostile tool would.
void sqlite(const fs::path& root, const std::string& sql) {
  ASSERT_TRUE(test::have_program("sqlite3")) << "the sqlite3 program is needed (apt-get install sqlite3)";
  auto result = test::run({"sqlite3", layout::index_db(root).string(), sql});
  ASSERT_EQ(result.exit_code, 0) << sql << "\n" << result.err;
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Overwrites a read-only object in place (the kind of damage verify must find).
void damage(const fs::path& object, const std::string& content) {
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(object, std::ios::binary | std::ios::trunc) << content;
}

test::ProcessOptions at(const fs::path& root) { return test::with_deps_root(root); }

// A small, healthy store with built views: one provider package (two platforms), the selected
// module package, a vmconfig manifest and artifact, and the selection.
struct HealthyStore {
  TempDir dir;
  fs::path root = dir / "deps";
  std::string zip_amd64, zip_arm64, kernel, module_main;

  HealthyStore() {
    Store store = Store::open(root);
    for (const std::string platform : {"linux_amd64", "linux_arm64"}) {
      Artifact a = test::provider_package_row(store.add_bytes("PK zip for " + platform), platform, kNull);
      (void)store.add_artifact(a);
      (platform == "linux_amd64" ? zip_amd64 : zip_arm64) = a.digest;
    }
    module_main = store.add_bytes("module cluster\n");
    (void)store.add_module_tree({0, kNstance, "2.0.1", "", "", "", {{"modules/cluster/main.tf", 0644, module_main, 0}}});
    kernel = store.add_bytes("kernel image");
    (void)store.add_artifact(test::vmconfig_artifact_row(kernel, "kernel", "6.12.1", "https://example.com/releases/vmlinuz-6.12.1"));
    TfSelection selection;
    selection.providers = {{kNull, "3.2.4", "~> 3.2"}};
    selection.platforms = {"linux_amd64", "linux_arm64"};
    selection.module_address = kNstance;
    selection.module_version = "2.0.1";
    store.set_tf_selection(selection);
    (void)rebuild_views(store);
  }

  std::string digest_of(const std::string& content) {
    Store store = Store::open(root);
    return store.add_bytes(content);
  }
};

// ---------------------------------------------------------------------------------------------
// Rows planted into index.db that the views cannot lay out.

struct PlantedRow {
  std::string name;
  // SQL run against the index; "$D" is replaced by the digest of a fresh object.
  std::string sql;
  std::string reason;  // a fragment of verify's problem line
};

void PrintTo(const PlantedRow& row, std::ostream* out) { *out << row.name; }

std::string artifact_insert(const std::string& kind, const std::string& address, const std::string& version,
                            const std::string& platform, const std::string& filename, const std::string& url) {
  return "INSERT INTO artifacts (kind, address, version, platform, filename, digest, size, upstream_url, trust, added_at)"
         " VALUES (" + quoted(kind) + "," + quoted(address) + "," + quoted(version) + "," + quoted(platform) + "," +
         quoted(filename) + ", '$D', (SELECT size FROM objects WHERE digest = '$D')," + quoted(url) +
         ", 'checksum', '2026-01-01T00:00:00Z');";
}

std::string tree_insert(const std::string& address, const std::string& version, const std::vector<std::string>& paths) {
  std::string sql = "INSERT INTO module_trees (address, version, h1, added_at) VALUES (" + quoted(address) + "," +
                    quoted(version) + ", 'h1:planted', '2026-01-01T00:00:00Z');";
  for (const auto& path : paths) {
    sql += "INSERT INTO module_files (tree_id, path, mode, digest, size) VALUES ((SELECT id FROM module_trees WHERE address = " +
           quoted(address) + " AND version = " + quoted(version) + ")," + quoted(path) +
           ", 420, '$D', (SELECT size FROM objects WHERE digest = '$D'));";
  }
  return sql;
}

class PlantedRows : public ::testing::TestWithParam<PlantedRow> {};

TEST_P(PlantedRows, NeverBrickTheStoreAndRepairQuarantinesThem) {
  HealthyStore healthy;
  const PlantedRow& row = GetParam();
  std::string digest = healthy.digest_of("planted content of " + row.name);
  std::string sql = row.sql;
  for (auto at = sql.find("$D"); at != std::string::npos; at = sql.find("$D")) sql.replace(at, 2, digest);
  sqlite(healthy.root, sql);
  if (HasFatalFailure()) return;

  {
    Store store = Store::open(healthy.root);
    // Views of every other row are still built; the bad row is skipped, never a reason to fail.
    ViewStats stats;
    ASSERT_NO_THROW(stats = rebuild_views(store)) << row.name;
    EXPECT_TRUE(any_contains(stats.skipped_rows, row.reason)) << joined(stats.skipped_rows);
    auto report = verify_store(store);
    EXPECT_FALSE(report.ok()) << row.name;
    EXPECT_TRUE(any_contains(report.problems, row.reason)) << joined(report.problems);
    EXPECT_TRUE(any_contains(report.problems, "deps verify --repair")) << joined(report.problems);
    // Other writes still work while the row is there.
    Artifact more = test::vmconfig_artifact_row(store.add_bytes("initrd image"), "initrd", "6.12.1", "");
    more.filename = "initrd.img";  // no URL: the view keeps the file's own name
    EXPECT_NO_THROW((void)store.add_artifact(more));
    EXPECT_NO_THROW((void)rebuild_views(store));
    EXPECT_TRUE(fs::exists(layout::vmconfig_artifacts_dir(healthy.root) / "initrd/6.12.1/initrd.img"));
  }
  EXPECT_FALSE(fs::exists(layout::nstance_modules_dir(healthy.root) / "2.0.1/modules/cluster/evil.tf"))
      << "a planted tree must never add files to the selected module version";

  auto plain = test::run_podplane({"deps", "verify"}, at(healthy.root));
  EXPECT_EQ(plain.exit_code, 1) << show(plain);
  auto repair = test::run_podplane({"deps", "verify", "--repair"}, at(healthy.root));
  EXPECT_EQ(repair.exit_code, 0) << show(repair);
  EXPECT_THAT(repair.out, HasSubstr("quarantined")) << show(repair);
  auto after = test::run_podplane({"deps", "verify"}, at(healthy.root));
  EXPECT_EQ(after.exit_code, 0) << show(after);

  Store store = Store::open(healthy.root);
  auto quarantined = store.quarantine();
  ASSERT_FALSE(quarantined.empty());
  EXPECT_TRUE(std::any_of(quarantined.begin(), quarantined.end(), [&](const QuarantineEntry& e) {
    return e.reason.find(row.reason) != std::string::npos;
  })) << "the quarantine records why";
  // The healthy content is untouched.
  EXPECT_EQ(store.artifacts({.kind = ArtifactKind::provider_package}).size(), 2u);
  EXPECT_TRUE(store.find_module_tree(kNstance, "2.0.1").has_value());
  EXPECT_EQ(test::read_file(layout::nstance_modules_dir(healthy.root) / "2.0.1/modules/cluster/main.tf"), "module cluster\n");
  EXPECT_THAT(test::read_file(layout::lock_file(healthy.root)), HasSubstr(kNull));
}

INSTANTIATE_TEST_SUITE_P(
    Store, PlantedRows,
    ::testing::Values(
        PlantedRow{"UrlEndingInSlash",
                   artifact_insert("vmconfig_artifact", "kernel", "7.0.0", "", "vmlinuz", "https://example.com/releases/"),
                   "vmconfig_artifact kernel 7.0.0"},
        PlantedRow{"UrlEndingInDotDot",
                   artifact_insert("vmconfig_artifact", "kernel", "7.0.1", "", "vmlinuz", "https://example.com/releases/.."),
                   "vmconfig_artifact kernel 7.0.1"},
        PlantedRow{"ProviderAddressWithoutType",
                   artifact_insert("provider_package", "registry.opentofu.org/hashicorp", "1.0.0", "linux_amd64",
                                   "terraform-provider-x_1.0.0_linux_amd64.zip", ""),
                   "registry.opentofu.org/hashicorp 1.0.0"},
        PlantedRow{"ProviderPackageWithoutPlatform",
                   artifact_insert("provider_package", kNull, "3.2.5", "", "terraform-provider-null_3.2.5.zip", ""),
                   "provider_package registry.opentofu.org/hashicorp/null 3.2.5"},
        PlantedRow{"ProviderVersionThatIsNoVersion",
                   artifact_insert("provider_package", kNull, "index", "linux_amd64",
                                   "terraform-provider-null_index_linux_amd64.zip", ""),
                   "registry.opentofu.org/hashicorp/null index"},
        PlantedRow{"ModuleWithFileAndDirectoryOfOneName",
                   tree_insert("registry.opentofu.org/acme/net/aws", "1.0.0", {"x", "x/y"}),
                   "module registry.opentofu.org/acme/net/aws 1.0.0"},
        PlantedRow{"ModuleThatLandsInTheSelectedModuleVersion",
                   tree_insert("nstance", "2.0.1", {"modules/cluster/evil.tf"}), "module nstance 2.0.1"},
        PlantedRow{"SelectedProviderThatIsNoAddress",
                   "INSERT INTO tf_selection_providers (address, version, constraints) VALUES ('not an address', '1.0.0', '');",
                   "not an address"}),
    [](const ::testing::TestParamInfo<PlantedRow>& param) { return param.param.name; });

// ---------------------------------------------------------------------------------------------
// The store refuses the same rows before they commit.

TEST(Layout, TheStoreRefusesRowsTheViewsCannotLayOut) {
  HealthyStore healthy;
  Store store = Store::open(healthy.root);
  const auto artifacts_before = store.artifacts().size();
  const std::string digest = store.add_bytes("some bytes");
  auto vm = [&](const std::string& url) {
    Artifact a = test::vmconfig_artifact_row(digest, "kernel", "7.0.0", url);
    a.filename = "vmlinuz";
    return a;
  };
  auto refused = [&](const auto& add, const std::string& fragment) {
    try {
      add();
      ADD_FAILURE() << "accepted a row that should be refused (" << fragment << ")";
    } catch (const Error& error) {
      EXPECT_THAT(error.what(), HasSubstr(fragment));
    }
  };
  refused([&] { (void)store.add_artifact(vm("https://example.com/releases/")); }, "upstream URL");
  refused([&] { (void)store.add_artifact(vm("https://example.com/releases/..")); }, "'..'");
  Artifact package = test::provider_package_row(digest, "linux_amd64", kNull, "1.0.0");
  package.address = "registry.opentofu.org/hashicorp";
  package.filename = "p.zip";
  refused([&] { (void)store.add_artifact(package); }, "HOST/NAMESPACE/TYPE");
  package.address = kNull;
  package.platform = "";
  refused([&] { (void)store.add_artifact(package); }, "platform");
  package.platform = "linux_amd64";
  package.version = "index";
  refused([&] { (void)store.add_artifact(package); }, "version");
  refused([&] { (void)store.add_module_tree({0, "registry.opentofu.org/acme/net/aws", "1.0.0", "", "", "", {{"x", 0644, digest, 0}, {"x/y", 0644, digest, 0}}}); },
          "both a file and a directory");
  refused([&] { (void)store.add_module_tree({0, "nstance", "2.0.1", "", "", "", {{"modules/cluster/evil.tf", 0644, digest, 0}}}); },
          "nstance");
  TfSelection selection = *store.tf_selection();
  selection.providers.push_back({"not an address", "1.0.0", ""});
  refused([&] { store.set_tf_selection(selection); }, "not an address");

  EXPECT_EQ(store.artifacts().size(), artifacts_before) << "nothing was added";
  EXPECT_EQ(store.module_trees().size(), 1u);

  // A second Nstance package of the same version (the other origin) never shares the first's
  // view directory: it is taken, at its own path, and the first keeps Podplane's.
  std::string other_host = "registry.terraform.io/nstance-dev/nstance/aws";
  sqlite(healthy.root, "DELETE FROM tf_selection; DELETE FROM tf_selection_providers; DELETE FROM tf_selection_platforms;");
  (void)store.add_module_tree({0, other_host, "2.0.1", "", "", "", {{"main.tf", 0644, digest, 0}}});
  ASSERT_EQ(store.module_trees().size(), 2u);
  auto trees = store.module_trees();
  for (const auto& tree : trees) {
    auto dir = module_view_dir(healthy.root, tree, trees);
    EXPECT_EQ(dir, tree.address == other_host ? healthy.root / "tf/modules" / other_host / "2.0.1"
                                              : layout::nstance_modules_dir(healthy.root) / "2.0.1");
  }
  EXPECT_TRUE(store.quarantine().empty());
}

TEST(Layout, AModuleVersionsTreeIsImmutable) {
  HealthyStore healthy;
  Store store = Store::open(healthy.root);
  std::string extra = store.add_bytes("resource \"null_resource\" \"x\" {}\n");
  try {
    (void)store.add_module_tree({0, kNstance, "2.0.1", "", "", "",
                                 {{"modules/cluster/main.tf", 0644, healthy.module_main, 0},
                                  {"modules/cluster/extra.tf", 0644, extra, 0}}});
    ADD_FAILURE() << "a second tree for the same module version was accepted";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("expected:"));
    EXPECT_THAT(error.what(), HasSubstr("got:"));
  }
  EXPECT_EQ(store.find_module_tree(kNstance, "2.0.1")->files.size(), 1u);
}

TEST(Migration, AStoreOfSchemaVersionOneIsReadAsItIsAndMigratedByAWritableOpen) {
  HealthyStore healthy;
  // What an older podplane left: no quarantine or bundle_signers table, version 1 recorded.
  sqlite(healthy.root,
         "DROP TABLE store_identity; DROP TABLE quarantine; DROP TABLE bundle_signers;"
         " DROP INDEX artifacts_by_kind_address_filename; ALTER TABLE artifacts DROP COLUMN protocols;"
         " DELETE FROM schema_migrations WHERE version >= 2;");
  {
    Store store = Store::open(healthy.root, Store::Access::read_only);
    EXPECT_TRUE(store.quarantine().empty());
    EXPECT_FALSE(store.bundle_signer("unsigned").has_value());
    auto packages = store.artifacts({.kind = ArtifactKind::provider_package});
    ASSERT_FALSE(packages.empty());
    for (const auto& package : packages) EXPECT_FALSE(package.protocols) << "an index without the column knows none";
    EXPECT_TRUE(verify_store(store).ok()) << joined(verify_store(store).problems);
  }
  auto verify = test::run_podplane({"deps", "verify"}, at(healthy.root));
  EXPECT_EQ(verify.exit_code, 0) << "a read-only open takes an older index\n" << show(verify);
  {
    Store store = Store::open(healthy.root);
    store.record_bundle_signer("unsigned", "2026-01-01T00:00:00Z", std::string(64, 'a'));
    EXPECT_EQ(store.bundle_signer("unsigned")->created_at, "2026-01-01T00:00:00Z");
    store.record_bundle_signer("unsigned", "2025-01-01T00:00:00Z", std::string(64, 'b'));
    EXPECT_EQ(store.bundle_signer("unsigned")->created_at, "2026-01-01T00:00:00Z") << "the mark only moves forward";
  }
  auto versions = test::run({"sqlite3", layout::index_db(healthy.root).string(), "SELECT group_concat(version) FROM schema_migrations"});
  EXPECT_EQ(versions.out, "1,2,3,4,5,6,7,8,9\n");
}

TEST(Migration, AStoreKeepsTheIdentityItsAuditLogHeldBeforeSchemaVersionThree) {
  HealthyStore healthy;
  // What podplane left before migration 003: the id in the oldest "store-identity" audit row
  // (a racing process could add a second one; the oldest always won).
  const std::string old_id = "0123456789abcdef0123456789abcdef";
  sqlite(healthy.root,
         "DROP TABLE store_identity; DROP INDEX artifacts_by_kind_address_filename;"
         " ALTER TABLE artifacts DROP COLUMN protocols; DELETE FROM schema_migrations WHERE version >= 3;"
         " INSERT INTO audit_log (at, action, subject) VALUES"
         " ('2026-01-01T00:00:00Z', 'store-identity', '" + old_id + "'),"
         " ('2026-01-01T00:00:01Z', 'store-identity', 'fedcba9876543210fedcba9876543210');");
  {
    Store store = Store::open(healthy.root, Store::Access::read_only);
    EXPECT_EQ(store.identity(), old_id) << "a read-only open of the older index reads the audit row";
  }
  {
    Store store = Store::open(healthy.root);
    EXPECT_EQ(store.identity(), old_id) << "migration 003 keeps the id";
  }
  auto row = test::run({"sqlite3", layout::index_db(healthy.root).string(), "SELECT store_id FROM store_identity"});
  EXPECT_EQ(row.out, old_id + "\n");
}

TEST(Store, IdentityIsCreatedOnceByAWritableStoreAndNeverChanges) {
  TempDir dir;
  fs::path root = dir / "deps";
  { Store created = Store::open(root); }
  {
    Store read_only = Store::open(root, Store::Access::read_only);
    EXPECT_EQ(read_only.identity(), "") << "a read-only store without an id does not make one";
  }
  std::string id;
  {
    Store store = Store::open(root);
    id = store.identity();
    EXPECT_TRUE(id.size() == 32 && is_lower_hex(id)) << id;
    EXPECT_EQ(store.identity(), id);
  }
  EXPECT_EQ(Store::open(root, Store::Access::read_only).identity(), id);
  EXPECT_EQ(Store::open(root).identity(), id);
  TempDir other_dir;
  EXPECT_NE(Store::open(other_dir / "deps").identity(), id) << "two stores, two ids";
}

// ---------------------------------------------------------------------------------------------
// Views against their rows.

TEST(Verify, ExtraOrMissingFilesInAViewDirectoryAreProblems) {
  HealthyStore healthy;
  Store store = Store::open(healthy.root, Store::Access::read_only);
  ASSERT_TRUE(verify_store(store).ok()) << joined(verify_store(store).problems);
  fs::path module_dir = layout::nstance_modules_dir(healthy.root) / "2.0.1";
  test::write_file(module_dir / "modules/cluster/backdoor.tf", "resource \"x\" \"y\" {}\n");
  auto extra = verify_store(store);
  EXPECT_FALSE(extra.ok());
  EXPECT_TRUE(any_contains(extra.problems, "backdoor.tf")) << joined(extra.problems);

  fs::remove(module_dir / "modules/cluster/backdoor.tf");
  fs::remove(module_dir / "modules/cluster/main.tf");
  auto missing = verify_store(store);
  EXPECT_FALSE(missing.ok());
  EXPECT_TRUE(any_contains(missing.problems, "main.tf")) << joined(missing.problems);

  // The lock file is a view too: without it the store does not agree with its selection.
  Store writable = Store::open(healthy.root);
  (void)rebuild_views(writable);
  ASSERT_TRUE(verify_store(store).ok());
  fs::remove(layout::lock_file(healthy.root));
  auto no_lock = verify_store(store);
  EXPECT_FALSE(no_lock.ok());
  EXPECT_TRUE(any_contains(no_lock.problems, ".terraform.lock.hcl")) << joined(no_lock.problems);
}

TEST(Repair, RemovesFilesThatNoRowPutIntoAViewDirectory) {
  HealthyStore healthy;
  fs::path evil = layout::nstance_modules_dir(healthy.root) / "2.0.1/modules/cluster/backdoor.tf";
  test::write_file(evil, "resource \"x\" \"y\" {}\n");
  Store store = Store::open(healthy.root);
  auto repair = repair_store(store);
  EXPECT_TRUE(repair.after.ok()) << joined(repair.after.problems);
  EXPECT_FALSE(fs::exists(evil));
  EXPECT_TRUE(any_contains(repair.removed_views, "backdoor.tf")) << joined(repair.removed_views);
}

// ---------------------------------------------------------------------------------------------
// Corrupt objects.

TEST(Repair, ACorruptObjectIsQuarantinedAndCanBeTakenAgain) {
  HealthyStore healthy;
  Store store = Store::open(healthy.root);
  fs::path object = store.object_path(healthy.kernel);
  damage(object, "KERNEL IMAGE");  // same size, other bytes
  ASSERT_FALSE(verify_store(store).ok());

  auto repair = repair_store(store);
  EXPECT_TRUE(any_contains(repair.quarantined, healthy.kernel)) << joined(repair.quarantined);
  EXPECT_FALSE(store.has_object(healthy.kernel)) << "a quarantined object is not 'already present'";
  EXPECT_FALSE(fs::exists(layout::vmconfig_artifacts_dir(healthy.root) / "kernel/6.12.1/vmlinuz-6.12.1"))
      << "the view held the corrupt bytes";
  EXPECT_TRUE(any_contains(repair.after.problems, "object missing: " + healthy.kernel)) << joined(repair.after.problems);
  EXPECT_TRUE(any_contains(repair.after.problems, "quarantined")) << joined(repair.after.problems);
  auto entries = store.quarantine();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].what, "object");

  // Taking the object again (a refetch or an import) restores it; the row was kept.
  EXPECT_EQ(store.add_bytes("kernel image"), healthy.kernel);
  EXPECT_TRUE(store.has_object(healthy.kernel));
  (void)rebuild_views(store);
  auto report = verify_store(store);
  EXPECT_TRUE(report.ok()) << joined(report.problems);
  EXPECT_EQ(test::read_file(layout::vmconfig_artifacts_dir(healthy.root) / "kernel/6.12.1/vmlinuz-6.12.1"), "kernel image");
}

TEST(Repair, AModuleTreeWithACorruptFileIsQuarantinedSoItIsFetchedAgain) {
  HealthyStore healthy;
  Store store = Store::open(healthy.root);
  damage(store.object_path(healthy.module_main), "MODULE CLUSTER\n");
  auto repair = repair_store(store);
  EXPECT_FALSE(store.find_module_tree(kNstance, "2.0.1").has_value())
      << "deps tf decides by the tree row whether to fetch a module again";
  EXPECT_TRUE(repair.after.ok()) << joined(repair.after.problems);
  EXPECT_FALSE(fs::exists(layout::nstance_modules_dir(healthy.root) / "2.0.1/modules/cluster/main.tf"));
  (void)store.add_module_tree({0, kNstance, "2.0.1", "", "", "", {{"modules/cluster/main.tf", 0644, store.add_bytes("module cluster\n"), 0}}});
  (void)rebuild_views(store);
  EXPECT_TRUE(verify_store(store).ok());
  EXPECT_EQ(test::read_file(layout::nstance_modules_dir(healthy.root) / "2.0.1/modules/cluster/main.tf"), "module cluster\n");
}

TEST(Store, AddingBytesOverACorruptObjectOfTheSameSizeReplacesIt) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("kernel image");
  damage(store.object_path(digest), "KERNEL IMAGE");
  EXPECT_EQ(store.add_bytes("kernel image"), digest);
  EXPECT_EQ(file_digest_hex(store.object_path(digest)), digest) << "the corrupt file was kept";
}

TEST(Store, HasObjectDoesNotTrustAFileOfTheWrongSize) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("kernel image");
  damage(store.object_path(digest), "short");
  EXPECT_FALSE(store.has_object(digest));
}

TEST(Cli, DepsVerifyRepairThenAVerifyThatOnlyAsksForTheRefetch) {
  HealthyStore healthy;
  {
    Store store = Store::open(healthy.root);
    damage(store.object_path(healthy.kernel), "KERNEL IMAGE");
  }
  auto repair = test::run_podplane({"deps", "verify", "--repair"}, at(healthy.root));
  EXPECT_EQ(repair.exit_code, 1) << "the object is still missing until it is fetched again\n" << show(repair);
  EXPECT_THAT(repair.out, HasSubstr("quarantined object " + healthy.kernel)) << show(repair);
  EXPECT_THAT(repair.out, HasSubstr("deps download")) << show(repair);
  EXPECT_TRUE(fs::is_directory(healthy.root / "store" / "quarantine"));
}

// ---------------------------------------------------------------------------------------------
// gc and the index it may trust.

std::size_t object_files(const fs::path& root) {
  std::size_t n = 0;
  if (!fs::exists(layout::objects_dir(root))) return 0;
  for (const auto& entry : fs::recursive_directory_iterator(layout::objects_dir(root))) n += entry.is_regular_file() ? 1 : 0;
  return n;
}

TEST(Gc, RefusesWhenTheIndexIsMissing) {
  HealthyStore healthy;
  const auto before = object_files(healthy.root);
  ASSERT_GT(before, 3u);
  fs::remove(layout::index_db(healthy.root));
  auto gc = test::run_podplane({"deps", "gc"}, at(healthy.root));
  EXPECT_EQ(gc.exit_code, 1) << show(gc);
  EXPECT_THAT(gc.err, HasSubstr("index")) << show(gc);
  EXPECT_EQ(object_files(healthy.root), before);
  EXPECT_FALSE(fs::exists(layout::index_db(healthy.root))) << "gc must not create an index";
}

TEST(Gc, RefusesAnEmptyIndex) {
  HealthyStore healthy;
  {
    Store store = Store::open(healthy.root);
    store.audit("fetch", "deps tf", nlohmann::json::object());  // what every command that adds rows records
  }
  const auto before = object_files(healthy.root);
  sqlite(healthy.root,
         "DELETE FROM provenance; DELETE FROM module_files; DELETE FROM module_trees; DELETE FROM artifacts;");
  auto gc = test::run_podplane({"deps", "gc"}, at(healthy.root));
  EXPECT_EQ(gc.exit_code, 1) << show(gc);
  EXPECT_THAT(gc.err, HasSubstr("empty")) << show(gc);
  EXPECT_EQ(object_files(healthy.root), before);
}

// A store's first fill killed after some objects, before its rows: no command ever committed to
// the index, and it lists every object file. Those objects are garbage on its word. With one
// object file it does not list (an old empty index restored over a filled store lists none),
// it is refused as empty.
TEST(Gc, TrustsTheIndexOfAFirstFillStoppedBeforeItsRows) {
  TempDir dir;
  const fs::path root = dir / "deps";
  {
    Store store = Store::open(root);
    (void)store.add_bytes("a zip that arrived");
    (void)store.add_bytes("another one");
  }
  const fs::path unlisted = layout::objects_dir(root) / "ab" / std::string(62, 'c');
  fs::create_directories(unlisted.parent_path());
  test::write_file(unlisted, "listed by no index");
  auto refused = test::run_podplane({"deps", "gc"}, at(root));
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_THAT(refused.err, HasSubstr("empty")) << show(refused);
  EXPECT_EQ(object_files(root), 3u);

  fs::remove(unlisted);
  auto gc = test::run_podplane({"deps", "gc"}, at(root));
  EXPECT_EQ(gc.exit_code, 0) << show(gc);
  EXPECT_THAT(gc.out, HasSubstr("removed 2 object(s)")) << show(gc);
  EXPECT_EQ(object_files(root), 0u);
}

TEST(Gc, RefusesAnIndexNewerThanTheObjectsItWouldDelete) {
  HealthyStore healthy;
  const auto before = object_files(healthy.root);
  // Objects from an earlier life of the store, then a fresh index that knows only one new row.
  for (const auto& entry : fs::recursive_directory_iterator(layout::objects_dir(healthy.root))) {
    if (!entry.is_regular_file()) continue;
    struct utimbuf old_times {1700000000, 1700000000};
    ASSERT_EQ(::utime(entry.path().c_str(), &old_times), 0);
  }
  fs::remove(layout::index_db(healthy.root));
  {
    Store store = Store::open(healthy.root);
    Artifact a = test::vmconfig_artifact_row(store.add_bytes("initrd"), "initrd", "1.0.0", "");
    a.filename = "initrd.img";
    (void)store.add_artifact(a);
  }
  auto gc = test::run_podplane({"deps", "gc"}, at(healthy.root));
  EXPECT_EQ(gc.exit_code, 1) << show(gc);
  EXPECT_THAT(gc.err, HasSubstr("older than the index")) << show(gc);
  EXPECT_EQ(object_files(healthy.root), before + 1);
  auto dry = test::run_podplane({"deps", "gc", "--dry-run"}, at(healthy.root));
  EXPECT_EQ(dry.exit_code, 1) << show(dry);
}

TEST(Gc, RefusesAnUnreadableIndex) {
  HealthyStore healthy;
  const auto before = object_files(healthy.root);
  test::write_file(layout::index_db(healthy.root), std::string(8192, 'x'));
  auto gc = test::run_podplane({"deps", "gc"}, at(healthy.root));
  EXPECT_EQ(gc.exit_code, 1) << show(gc);
  EXPECT_EQ(object_files(healthy.root), before);
}

// The objects table only checks a digest's length: a planted row of 64 characters that are not
// lower-case hex names no file. verify reports it and goes on with every other check.
const std::string kNotADigest = std::string(63, 'Z') + "!";

TEST(Verify, AnObjectRowWhoseDigestIsNotASha256IsAProblemNotAnError) {
  HealthyStore healthy;
  sqlite(healthy.root, "INSERT INTO objects (digest, size, added_at) VALUES (" + quoted(kNotADigest) +
                           ", 5, '2026-01-01T00:00:00Z');");
  auto verify = test::run_podplane({"deps", "verify", "--quick", "--json"}, at(healthy.root));
  ASSERT_EQ(verify.exit_code, 1) << show(verify);
  auto report = nlohmann::json::parse(verify.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << show(verify);
  auto problems = report["problems"].get<std::vector<std::string>>();
  EXPECT_TRUE(any_contains(problems, "'" + kNotADigest + "', which is not a sha256 digest")) << show(verify);
  EXPECT_FALSE(any_contains(problems, "object missing")) << show(verify);
  // Every other check still ran.
  EXPECT_EQ(report["objects_checked"], 4) << show(verify);
  EXPECT_GT(report["views_checked"].get<int>(), 0) << show(verify);
}

TEST(Gc, RefusesAnIndexThatNamesAnObjectByAnythingButASha256) {
  HealthyStore healthy;
  const std::string orphan = healthy.digest_of("nobody references this");
  sqlite(healthy.root, "INSERT INTO objects (digest, size, added_at) VALUES (" + quoted(kNotADigest) +
                           ", 5, '2026-01-01T00:00:00Z');");
  const auto before = object_files(healthy.root);
  auto gc = test::run_podplane({"deps", "gc"}, at(healthy.root));
  EXPECT_EQ(gc.exit_code, 1) << show(gc);
  EXPECT_THAT(gc.err, HasSubstr("not a sha256 digest")) << show(gc);
  EXPECT_THAT(gc.err, HasSubstr("Nothing was deleted")) << show(gc);
  EXPECT_EQ(object_files(healthy.root), before);
  auto rows = test::run({"sqlite3", layout::index_db(healthy.root).string(), "SELECT count(*) FROM objects WHERE digest IN (" +
                                                                                quoted(kNotADigest) + "," + quoted(orphan) + ")"});
  EXPECT_EQ(rows.out, "2\n") << "gc must leave the index as it was";
}

TEST(Gc, StillRemovesTheGarbageOfAHealthyStore) {
  HealthyStore healthy;
  std::string orphan = healthy.digest_of("nobody references this");
  auto gc = test::run_podplane({"deps", "gc"}, at(healthy.root));
  ASSERT_EQ(gc.exit_code, 0) << show(gc);
  EXPECT_THAT(gc.out, HasSubstr("removed 1 object(s)"));
  Store store = Store::open(healthy.root);
  EXPECT_FALSE(fs::exists(store.object_path(orphan)));
  EXPECT_TRUE(store.has_object(healthy.kernel));
}

}  // namespace
}  // namespace podplane::cache
