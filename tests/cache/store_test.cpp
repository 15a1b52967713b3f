// Unit tests of the store: layout, ingest order, index rows, transactions, read-only access.
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "cache/layout.hpp"
#include "cache/row_rules.hpp"
#include "cache/store.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using ::testing::HasSubstr;

constexpr const char* hello_sha256 = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

std::vector<fs::path> temp_files(const fs::path& root) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(layout::temp_dir(root))) files.push_back(entry.path());
  return files;
}

Artifact package(const std::string& digest, const std::string& platform = "linux_amd64") {
  Artifact a = test::provider_package_row(digest, platform);
  a.h1 = "h1:test";
  return a;
}

// add_artifact must refuse `row` with an error that says `fragment`.
void expect_rejected(Store& store, const Artifact& row, const std::string& fragment) {
  try {
    (void)store.add_artifact(row);
    ADD_FAILURE() << "accepted a row that should fail with: " << fragment;
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr(fragment));
  }
}

TEST(Store, OpenCreatesTheLayoutAndRecordsTheMigration) {
  TempDir dir;
  fs::path root = dir / "deps";
  {
    Store store = Store::open(root);
    EXPECT_FALSE(store.read_only());
    EXPECT_EQ(store.root(), root);
  }
  EXPECT_TRUE(fs::is_directory(layout::objects_dir(root)));
  EXPECT_TRUE(fs::is_directory(layout::temp_dir(root)));
  EXPECT_TRUE(fs::is_regular_file(layout::index_db(root)));
  // Reopening applies nothing twice.
  { Store again = Store::open(root); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(layout::index_db(root).c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*), max(version) FROM schema_migrations", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 9)
      << "001_initial, 002_rollback_and_quarantine, 003_store_identity, 004_images_and_seeds, 005_provider_protocols, "
         "006_image_attachments, 007_tool_releases, 008_podplane_releases and 009_git_snapshots, once each";
  EXPECT_EQ(sqlite3_column_int(stmt, 1), 9);
  sqlite3_finalize(stmt);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(Store, AddBytesPublishesAReadOnlyContentAddressedObject) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("hello");
  EXPECT_EQ(digest, hello_sha256);
  fs::path object = store.object_path(digest);
  EXPECT_EQ(object, dir.path() / "store/objects/sha256/2c" / std::string(hello_sha256 + 2));
  EXPECT_EQ(test::read_file(object), "hello");
  struct stat info {};
  ASSERT_EQ(::stat(object.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0444u);
  EXPECT_TRUE(store.has_object(digest));
  EXPECT_EQ(store.read_object(digest), "hello");
  EXPECT_TRUE(temp_files(dir.path()).empty());
  // Adding the same content again keeps the object and its inode.
  EXPECT_EQ(store.add_bytes("hello", std::string_view(hello_sha256)), digest);
  struct stat again {};
  ASSERT_EQ(::stat(object.c_str(), &again), 0);
  EXPECT_EQ(again.st_ino, info.st_ino);
}

TEST(Store, ExpectedDigestMismatchAddsNothing) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string wrong(64, 'a');
  try {
    (void)store.add_bytes("hello", std::string_view(wrong));
    FAIL() << "expected a mismatch";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("hash mismatch"));
    EXPECT_THAT(error.what(), HasSubstr("  expected: sha256:" + wrong));
    EXPECT_THAT(error.what(), HasSubstr("  got:      sha256:" + std::string(hello_sha256)));
  }
  EXPECT_FALSE(store.has_object(hello_sha256));
  EXPECT_FALSE(fs::exists(store.object_path(hello_sha256)));
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

TEST(Store, AddFileStreamsAndNamesTheFileInErrors) {
  TempDir dir;
  Store store = Store::open(dir / "deps");
  std::string big(3 * 65536 + 17, 'x');
  test::write_file(dir / "big.bin", big);
  std::string digest = store.add_file(dir / "big.bin");
  EXPECT_EQ(fs::file_size(store.object_path(digest)), big.size());
  try {
    (void)store.add_file(dir / "big.bin", std::string_view(std::string(64, '0')));
    FAIL();
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("big.bin"));
  }
  EXPECT_THROW((void)store.add_file(dir / "missing.bin"), Error);
}

TEST(Store, AddingManyAtOncePublishesEachAsAddBytesAndAddFileWould) {
  TempDir dir;
  Store store = Store::open(dir / "deps");
  // Twenty objects (one already in the store, one twice in the batch): more than the batch's
  // threads, so that some threads seal several.
  std::vector<std::string> texts{"hello"};
  for (int i = 0; i < 18; ++i) texts.push_back("object " + std::to_string(i));
  texts.push_back("object 3");
  const std::string existing = store.add_bytes("hello");
  std::vector<std::string_view> contents(texts.begin(), texts.end());
  auto digests = store.add_all_bytes(contents);
  ASSERT_EQ(digests.size(), texts.size());
  EXPECT_EQ(digests[0], existing);
  EXPECT_EQ(digests[4], digests[19]);
  for (std::size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(digests[i], sha256_hex(texts[i])) << i;
    EXPECT_TRUE(store.has_object(digests[i])) << i;
    EXPECT_EQ(store.read_object(digests[i]), texts[i]) << i;
    struct stat info {};
    ASSERT_EQ(::stat(store.object_path(digests[i]).c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0444u);
  }
  EXPECT_TRUE(temp_files(dir / "deps").empty());

  // Files: digests in order, and a file that cannot be read is an error naming it, with every
  // temp file of the batch removed and nothing of it added.
  test::write_file(dir / "a.tf", "a");
  test::write_file(dir / "b.tf", std::string(3 * 65536 + 5, 'b'));
  auto files = store.add_files({dir / "a.tf", dir / "b.tf"});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(store.read_object(files[1]).size(), 3u * 65536 + 5);
  test::write_file(dir / "c.tf", "c only in a failed batch");
  try {
    (void)store.add_files({dir / "c.tf", dir / "missing.tf"});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("missing.tf"));
  }
  EXPECT_FALSE(store.has_object(sha256_hex("c only in a failed batch")));
  EXPECT_TRUE(temp_files(dir / "deps").empty());
  EXPECT_TRUE(store.add_all_bytes({}).empty());
}

TEST(Store, AnUncommittedWriterLeavesNoTempFile) {
  TempDir dir;
  Store store = Store::open(dir.path());
  {
    ObjectWriter writer = store.new_object();
    writer.write("partial", 7);
    EXPECT_EQ(writer.size(), 7u);
    EXPECT_EQ(temp_files(dir.path()).size(), 1u);
  }
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

// Written on one thread and checked on another (bundle import): seal() hashes the temp file
// back and syncs it on the worker, publish() places it and records its row; a sealed writer
// that is never published, or one whose bytes disagree, leaves nothing behind.
TEST(Store, AWriterHashedAtSealIsCheckedOnAnotherThreadAndPublishedOnTheStoresOwn) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string big(700 * 1024 + 5, 'x');  // more than one read-back block
  ObjectWriter writer = store.new_object_hashed_at_seal();
  writer.write(big.data(), big.size());
  std::thread([&] { writer.seal(sha256_hex(big)); }).join();
  EXPECT_FALSE(store.has_object(sha256_hex(big))) << "sealed is not yet published";
  EXPECT_EQ(writer.publish(), sha256_hex(big));
  EXPECT_TRUE(store.has_object(sha256_hex(big)));
  EXPECT_EQ(test::read_file(store.object_path(sha256_hex(big))), big);
  EXPECT_TRUE(temp_files(dir.path()).empty());

  ObjectWriter damaged = store.new_object_hashed_at_seal();
  damaged.write("hellO", 5);
  try {
    damaged.seal(hello_sha256);
    ADD_FAILURE() << "a digest mismatch was sealed";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("hash mismatch for object (nothing was added to the store)"));
  }
  EXPECT_THROW((void)damaged.publish(), Error);
  EXPECT_FALSE(store.has_object(hello_sha256));
  {
    ObjectWriter abandoned = store.new_object_hashed_at_seal();
    abandoned.write("hello", 5);
    abandoned.seal(hello_sha256);
  }
  EXPECT_FALSE(store.has_object(hello_sha256));
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

// check() alone (a download's digest, checked on the transfers' thread) syncs nothing and seal()
// later finds it checked; publish_sealed() publishes many sealed writers at once, in order, and
// refuses one that is not sealed before it places any.
TEST(Store, CheckedWritersAreSealedElsewhereAndPublishedTogether) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::vector<std::string> contents{"one", "two", std::string(300 * 1024, 'z')};
  std::vector<ObjectWriter> writers;
  for (const auto& content : contents) {
    writers.push_back(store.new_object());
    writers.back().write(content.data(), content.size());
    EXPECT_EQ(writers.back().check(sha256_hex(content)), sha256_hex(content));
    EXPECT_EQ(test::read_file(writers.back().temp_path()), content);
  }
  std::vector<ObjectWriter*> pointers;
  for (auto& writer : writers) pointers.push_back(&writer);
  try {
    (void)store.publish_sealed(pointers);
    ADD_FAILURE() << "writers that were only checked were published";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("not sealed"));
  }
  for (const auto& content : contents) EXPECT_FALSE(store.has_object(sha256_hex(content)));
  std::thread([&] {
    for (auto& writer : writers) writer.seal(std::nullopt);
  }).join();
  auto digests = store.publish_sealed(pointers);
  ASSERT_EQ(digests.size(), contents.size());
  for (std::size_t i = 0; i < contents.size(); ++i) {
    EXPECT_EQ(digests[i], sha256_hex(contents[i]));
    EXPECT_TRUE(store.has_object(digests[i]));
    EXPECT_EQ(test::read_file(store.object_path(digests[i])), contents[i]);
  }
  EXPECT_TRUE(temp_files(dir.path()).empty());

  ObjectWriter damaged = store.new_object();
  damaged.write("hellO", 5);
  EXPECT_THROW((void)damaged.check(hello_sha256), Error);
  EXPECT_FALSE(store.has_object(hello_sha256));
  EXPECT_TRUE(temp_files(dir.path()).empty()) << "a failed check leaves its temp file";
}

// A file made in the store's temp area (a download's scratch file) becomes its object as it
// is: the same inode, named by the sha256 its writer hashed, safe from a sweep meanwhile.
TEST(Store, AnAdoptedFileBecomesItsObjectWithoutACopy) {
  TempDir dir;
  Store store = Store::open(dir.path());
  const fs::path scratch = store.temp_dir() / "adopt-test";
  fs::create_directories(scratch);
  std::string big(700 * 1024 + 5, 'y');
  test::write_file(scratch / "image", big);
  struct stat before {};
  ASSERT_EQ(::stat((scratch / "image").c_str(), &before), 0);

  ObjectWriter writer = store.adopt_file(scratch / "image", "image from the test", sha256_hex(big));
  EXPECT_FALSE(fs::exists(scratch / "image")) << "moved, not copied";
  EXPECT_EQ(writer.size(), big.size());
  (void)Store::open(dir.path());  // sweeps the temp area at open: the adopted file is held
  std::thread([&] { writer.seal(sha256_hex(big)); }).join();
  EXPECT_EQ(writer.publish(), sha256_hex(big));
  struct stat after {};
  ASSERT_EQ(::stat(store.object_path(sha256_hex(big)).c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mode & 0777, 0444u);
  EXPECT_EQ(test::read_file(store.object_path(sha256_hex(big))), big);
  EXPECT_TRUE(fs::exists(scratch)) << "a directory in the temp area is not swept";

  test::write_file(scratch / "damaged", "hellO");
  ObjectWriter damaged = store.adopt_file(scratch / "damaged", "damaged from the test", sha256_hex("hellO"));
  try {
    damaged.seal(hello_sha256);
    ADD_FAILURE() << "a digest mismatch was sealed";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("hash mismatch for damaged from the test (nothing was added to the store)"));
  }
  EXPECT_FALSE(store.has_object(hello_sha256));
  fs::remove(scratch);
  EXPECT_TRUE(temp_files(dir.path()).empty());

  try {
    (void)store.adopt_file(scratch / "missing", "missing", hello_sha256);
    ADD_FAILURE() << "a missing file was adopted";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot read " + (scratch / "missing").string()));
  }
}

// From another file system the file cannot be moved: it is copied and hashed as it is (the
// digest its caller gave is not trusted for bytes the store wrote itself), and removed.
TEST(Store, AFileAdoptedFromAnotherFileSystemIsCopied) {
  TempDir dir;
  Store store = Store::open(dir.path());
  const fs::path shm = "/dev/shm";
  struct stat store_fs {}, shm_fs {};
  if (::stat(shm.c_str(), &shm_fs) != 0 || ::stat(store.temp_dir().c_str(), &store_fs) != 0 ||
      shm_fs.st_dev == store_fs.st_dev) {
    GTEST_SKIP() << "needs /dev/shm on another file system than " << dir.path();
  }
  const fs::path file = shm / ("podplane-adopt-test-" + std::to_string(::getpid()));
  test::write_file(file, "hellO");
  ObjectWriter damaged = store.adopt_file(file, "hellO from /dev/shm", hello_sha256);
  EXPECT_FALSE(fs::exists(file));
  EXPECT_THROW(damaged.seal(hello_sha256), Error) << "the copy's own digest is checked";
  test::write_file(file, "hello");
  ObjectWriter writer = store.adopt_file(file, "hello from /dev/shm", hello_sha256);
  writer.seal(hello_sha256);
  EXPECT_EQ(writer.publish(), hello_sha256);
  EXPECT_EQ(test::read_file(store.object_path(hello_sha256)), "hello");
  EXPECT_TRUE(temp_files(dir.path()).empty());
}

TEST(Store, ArtifactRowsAreAdditive) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("zip bytes");
  std::int64_t id = store.add_artifact(package(digest));
  EXPECT_GT(id, 0);
  EXPECT_EQ(store.add_artifact(package(digest)), id) << "the same row again is a no-op";

  auto found = store.find_artifact(ArtifactKind::provider_package, "registry.opentofu.org/hashicorp/null", "3.2.4",
                                   "linux_amd64", "terraform-provider-null_3.2.4_linux_amd64.zip");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, id);
  EXPECT_EQ(found->digest, digest);
  EXPECT_EQ(found->size, 9);
  EXPECT_EQ(found->zh, "zh:" + digest);
  EXPECT_EQ(found->trust, Trust::signed_upstream);
  EXPECT_FALSE(found->added_at.empty());

  std::string other = store.add_bytes("other zip bytes");
  try {
    (void)store.add_artifact(package(other));
    FAIL() << "a key cannot change its digest";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("expected: sha256:" + digest));
    EXPECT_THAT(error.what(), HasSubstr("got:      sha256:" + other));
  }
  EXPECT_EQ(store.find_artifact(ArtifactKind::provider_package, "registry.opentofu.org/hashicorp/null", "3.2.4",
                                "linux_amd64", "terraform-provider-null_3.2.4_linux_amd64.zip")->digest,
            digest);
}

TEST(Store, BadArtifactsAreRejectedWithAReason) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("zip bytes");
  auto expect_error = [&](const Artifact& a, const std::string& fragment) { expect_rejected(store, a, fragment); };
  expect_error(package(std::string(64, 'f')), "not in the store");
  expect_error(package("xyz"), "not a sha256 digest");
  expect_error(package(digest, "linux-amd64"), "not of the form os_arch");
  Artifact with_credentials = package(digest);
  with_credentials.upstream_url = "https://user:token@example.com/x.zip";
  expect_error(with_credentials, "credentials");
  Artifact bad_name = package(digest);
  bad_name.filename = "../evil.zip";
  expect_error(bad_name, "not a plain path segment");
  Artifact bad_size = package(digest);
  bad_size.size = 3;
  expect_error(bad_size, "size differs");
  Artifact bad_zh = package(digest);
  bad_zh.zh = "zh:" + std::string(64, '0');
  expect_error(bad_zh, "zh hash does not match");
  EXPECT_TRUE(store.artifacts().empty());
}

TEST(Store, ProtocolsAreKeptAsGivenLearntWhenUnknownAndNeverChanged) {
  TempDir dir;
  Store store = Store::open(dir.path());
  auto find = [&](const std::string& platform) {
    return store.find_artifact(ArtifactKind::provider_package, "registry.opentofu.org/hashicorp/null", "3.2.4", platform,
                               "terraform-provider-null_3.2.4_" + platform + ".zip");
  };
  // Listed, listed as none, and not known: three different rows.
  Artifact listed = package(store.add_bytes("amd64 zip"));
  listed.protocols = std::vector<std::string>{"5.0", "6.0"};
  (void)store.add_artifact(listed);
  Artifact none = package(store.add_bytes("arm64 zip"), "linux_arm64");
  none.protocols = std::vector<std::string>{};
  (void)store.add_artifact(none);
  Artifact unknown = package(store.add_bytes("darwin zip"), "darwin_arm64");
  auto unknown_id = store.add_artifact(unknown);
  EXPECT_EQ(find("linux_amd64")->protocols, listed.protocols);
  ASSERT_TRUE(find("linux_arm64")->protocols.has_value()) << "an empty list is known, not unknown";
  EXPECT_TRUE(find("linux_arm64")->protocols->empty());
  EXPECT_FALSE(find("darwin_arm64")->protocols.has_value());

  // The same row again, now with its protocols (a later fetch, a newer bundle): learnt.
  unknown.protocols = std::vector<std::string>{"6.0"};
  EXPECT_EQ(store.add_artifact(unknown), unknown_id);
  EXPECT_EQ(find("darwin_arm64")->protocols, unknown.protocols);
  // Known ones never change (the store is additive).
  listed.protocols = std::vector<std::string>{"4.0"};
  (void)store.add_artifact(listed);
  EXPECT_EQ(find("linux_amd64")->protocols, (std::vector<std::string>{"5.0", "6.0"}));
  unknown.protocols.reset();
  (void)store.add_artifact(unknown);
  EXPECT_EQ(find("darwin_arm64")->protocols, (std::vector<std::string>{"6.0"})) << "nothing known is forgotten";
}

TEST(Store, ProtocolsFollowTheRowRules) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("zip bytes");
  auto expect_error = [&](const Artifact& a, const std::string& fragment) { expect_rejected(store, a, fragment); };
  Artifact spaced = package(digest);
  spaced.protocols = std::vector<std::string>{"6.0\n\"}"};
  expect_error(spaced, "is not a short printable word");
  Artifact empty = package(digest);
  empty.protocols = std::vector<std::string>{""};
  expect_error(empty, "is not a short printable word");
  Artifact many = package(digest);
  many.protocols = std::vector<std::string>(17, "5.0");
  expect_error(many, "more than 16 plugin protocols");
  Artifact keys = test::provider_document_row(ArtifactKind::provider_keys, digest);
  keys.protocols = std::vector<std::string>{"6.0"};
  expect_error(keys, "only a provider package has plugin protocols");
  EXPECT_TRUE(store.artifacts().empty());
  // The column's text is checked when read back, too.
  EXPECT_THROW((void)parse_protocols_column("{\"6.0\": 1}"), Error);
  EXPECT_THROW((void)parse_protocols_column("[6.0]"), Error);
  EXPECT_FALSE(parse_protocols_column("").has_value());
  EXPECT_EQ(protocols_column(std::vector<std::string>{}), "[]");
}

TEST(Store, ArtifactQueriesFilter) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string amd = store.add_bytes("amd64");
  std::string arm = store.add_bytes("arm64");
  (void)store.add_artifact(package(amd, "linux_amd64"));
  (void)store.add_artifact(package(arm, "linux_arm64"));
  (void)store.add_artifact(test::vmconfig_manifest_row(store.add_bytes("{}"), "vmconfig_knc_debian-13_arm64", "20260724"));

  EXPECT_EQ(store.artifacts().size(), 3u);
  EXPECT_EQ(store.artifacts({.kind = ArtifactKind::provider_package}).size(), 2u);
  auto arm_only = store.artifacts({.platform = "linux_arm64"});
  ASSERT_EQ(arm_only.size(), 1u);
  EXPECT_EQ(arm_only[0].digest, arm);
  EXPECT_EQ(store.artifacts({.kind = ArtifactKind::vmconfig_manifest, .address = "vmconfig_knc_debian-13_arm64"}).size(), 1u);
  EXPECT_TRUE(store.artifacts({.version = "9.9.9"}).empty());
}

TEST(Store, ProvenanceIsRecordedOnce) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string zip = store.add_bytes("zip");
  std::string sums = store.add_bytes("sums");
  std::string sig = store.add_bytes("sig");
  std::int64_t id = store.add_artifact(package(zip));
  Provenance p{id, sums, sig, "", "0C0AF313E5FD9F80", "signed", ""};
  store.add_provenance(p);
  store.add_provenance(p);
  auto recorded = store.provenance_of(id);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].shasums_digest, sums);
  EXPECT_EQ(recorded[0].key_fingerprint, "0C0AF313E5FD9F80");
  EXPECT_FALSE(recorded[0].checked_at.empty());
  EXPECT_THROW(store.add_provenance({id + 100, sums, sig, "", "", "signed", ""}), Error);
  EXPECT_THROW(store.add_provenance({id, std::string(64, 'e'), "", "", "", "signed", ""}), Error);
}

TEST(Store, ModuleTreesCarryTheirH1) {
  TempDir dir;
  Store store = Store::open(dir.path());
  ModuleTree tree;
  tree.address = "registry.opentofu.org/nstance-dev/nstance/aws";
  tree.version = "2.0.1";
  tree.files = {{"modules/cluster/main.tf", 0644, store.add_bytes("resource {}\n"), 0},
                {"README.md", 0644, store.add_bytes("# nstance\n"), 0},
                {"scripts/run.sh", 0755, store.add_bytes("#!/bin/sh\n"), 0}};
  std::int64_t id = store.add_module_tree(tree);
  auto found = store.find_module_tree(tree.address, "2.0.1");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, id);
  ASSERT_EQ(found->files.size(), 3u);
  EXPECT_EQ(found->files[0].path, "README.md");
  EXPECT_EQ(found->files[2].mode, 0755u);
  EXPECT_EQ(found->files[2].size, 10);
  EXPECT_THAT(found->h1, ::testing::StartsWith("h1:"));
  EXPECT_EQ(store.add_module_tree(tree), id);
  EXPECT_EQ(store.module_trees().size(), 1u);
  EXPECT_EQ(store.module_trees(std::string_view("other")).size(), 0u);

  ModuleTree wrong_h1 = tree;
  wrong_h1.version = "2.0.2";
  wrong_h1.h1 = "h1:AAAA";
  EXPECT_THROW(store.add_module_tree(wrong_h1), Error);
  ModuleTree changed = tree;
  changed.files[0].digest = store.add_bytes("changed");
  changed.files[0].size = 0;
  EXPECT_THROW(store.add_module_tree(changed), Error);
  for (std::string bad : {"../x", "/etc/passwd", "a//b", "a/./b", ""}) {
    ModuleTree unsafe = tree;
    unsafe.version = "3.0.0";
    unsafe.files[0].path = bad;
    EXPECT_THROW(store.add_module_tree(unsafe), Error) << bad;
  }
  EXPECT_FALSE(store.find_module_tree(tree.address, "3.0.0"));
}

TEST(Store, TfSelectionIsReplacedAsAWhole) {
  TempDir dir;
  Store store = Store::open(dir.path());
  EXPECT_FALSE(store.tf_selection());
  TfSelection selection;
  selection.providers = {{"registry.opentofu.org/hashicorp/aws", "6.2.0", "~> 6.0"},
                         {"registry.opentofu.org/hashicorp/null", "3.2.4", ""}};
  selection.platforms = {"linux_arm64", "linux_amd64", "linux_arm64"};
  selection.module_address = "registry.opentofu.org/nstance-dev/nstance/aws";
  selection.module_version = "2.0.1";
  store.set_tf_selection(selection);
  auto read = store.tf_selection();
  ASSERT_TRUE(read);
  EXPECT_EQ(read->platforms, (std::vector<std::string>{"linux_amd64", "linux_arm64"}));
  ASSERT_EQ(read->providers.size(), 2u);
  EXPECT_EQ(read->providers[0].constraints, "~> 6.0");
  EXPECT_EQ(read->engine, "tofu");
  EXPECT_EQ(read->module_version, "2.0.1");

  selection.providers.resize(1);
  selection.engine = "terraform";
  store.set_tf_selection(selection);
  EXPECT_EQ(store.tf_selection()->providers.size(), 1u);
  EXPECT_EQ(store.tf_selection()->engine, "terraform");
  selection.engine = "pulumi";
  EXPECT_THROW(store.set_tf_selection(selection), Error);
  EXPECT_EQ(store.tf_selection()->engine, "terraform");
}

TEST(Store, AuditLogKeepsEntriesInOrder) {
  TempDir dir;
  Store store = Store::open(dir.path());
  store.audit("fetch", "registry.opentofu.org/hashicorp/aws 6.2.0", {{"platforms", {"linux_amd64"}}});
  store.audit("bundle-create", "out.bundle", nlohmann::json::object());
  auto log = store.audit_log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].action, "fetch");
  EXPECT_EQ(nlohmann::json::parse(log[0].detail)["platforms"][0], "linux_amd64");
  EXPECT_EQ(log[1].subject, "out.bundle");
  EXPECT_LT(log[0].id, log[1].id);
}

TEST(Store, AFailedTransactionLeavesNoRows) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("zip");
  EXPECT_THROW(store.in_transaction([&] {
    (void)store.add_artifact(package(digest));
    store.audit("fetch", "x", nlohmann::json::object());
    throw Error("interrupted");
  }),
               Error);
  EXPECT_TRUE(store.artifacts().empty());
  EXPECT_TRUE(store.audit_log().empty());
  store.in_transaction([&] { (void)store.add_artifact(package(digest)); });
  EXPECT_EQ(store.artifacts().size(), 1u);
}

TEST(Store, ReadOnlyAccessAnswersQueriesAndRefusesWrites) {
  TempDir dir;
  std::string digest;
  {
    Store store = Store::open(dir.path());
    digest = store.add_bytes("zip");
    (void)store.add_artifact(package(digest));
  }
  Store store = Store::open(dir.path(), Store::Access::read_only);
  EXPECT_TRUE(store.read_only());
  EXPECT_EQ(store.artifacts().size(), 1u);
  EXPECT_TRUE(store.has_object(digest));
  EXPECT_EQ(store.read_object(digest), "zip");
  try {
    (void)store.add_bytes("more");
    FAIL();
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("read-only"));
  }
  EXPECT_THROW(store.audit("fetch", "x", nlohmann::json::object()), Error);
  EXPECT_THROW(Store::open(dir / "nothing-here", Store::Access::read_only), Error);
}

TEST(Store, DefaultDepsRootFollowsTheEnvironment) {
  // Put the environment back afterwards: later tests in this process start programs with it.
  struct Saved {
    std::vector<std::pair<std::string, std::optional<std::string>>> values;
    Saved() {
      for (const char* name : {"PODPLANE_DEPS_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
        const char* value = std::getenv(name);
        values.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      }
    }
    ~Saved() {
      for (const auto& [name, value] : values) {
        if (value) ::setenv(name.c_str(), value->c_str(), 1);
        else ::unsetenv(name.c_str());
      }
    }
  } saved;
  ::setenv("PODPLANE_DEPS_CACHE_DIR", "/x/deps", 1);
  EXPECT_EQ(default_deps_root(), fs::path("/x/deps"));
  ::unsetenv("PODPLANE_DEPS_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(default_deps_root(), fs::path("/xdg/podplane/deps"));
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_deps_root(), fs::path("/home/u/.cache/podplane/deps"));
}

TEST(Store, KindAndTrustRoundTripAsText) {
  for (auto kind : {ArtifactKind::provider_package, ArtifactKind::provider_shasums, ArtifactKind::provider_signature,
                    ArtifactKind::provider_keys, ArtifactKind::vmconfig_manifest, ArtifactKind::vmconfig_artifact}) {
    EXPECT_EQ(parse_artifact_kind(to_string(kind)), kind);
  }
  for (auto trust : {Trust::signed_upstream, Trust::checksum, Trust::unverified}) EXPECT_EQ(parse_trust(to_string(trust)), trust);
  EXPECT_THROW(parse_artifact_kind("zip"), Error);
  EXPECT_THROW(parse_trust("maybe"), Error);
}

// Image and seed rows: the OCI digest is the object's own, names are OCI names, nothing can
// climb out of a view or serve another object under a digest.
TEST(Store, ImageAndSeedRowsFollowTheirRules) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("layer bytes");
  auto image = [&](ArtifactKind kind) {
    return image_row(kind, "registry.k8s.io/pause", kind == ArtifactKind::image_blob ? "sha256:" + std::string(64, 'a') : "3.10.2",
                     kind == ArtifactKind::image_index ? "" : "linux_arm64", "sha256:" + digest, 11, "");
  };
  auto expect_error = [&](const Artifact& a, const std::string& fragment) { expect_rejected(store, a, fragment); };
  Artifact other_digest = image(ArtifactKind::image_blob);
  other_digest.filename = "sha256:" + std::string(64, 'b');
  expect_error(other_digest, "not the object's OCI digest");
  Artifact climbing = image(ArtifactKind::image_manifest);
  climbing.address = "registry.k8s.io/../../etc";
  expect_error(climbing, "not an OCI repository name");
  Artifact no_repository = image(ArtifactKind::image_index);
  no_repository.address = "registry.k8s.io";
  expect_error(no_repository, "not <registry>/<repository>");
  Artifact upper = image(ArtifactKind::image_index);
  upper.address = "Registry.k8s.io/Pause";
  expect_error(upper, "lower-case");
  Artifact bad_tag = image(ArtifactKind::image_manifest);
  bad_tag.version = "../x";
  expect_error(bad_tag, "neither an OCI tag");
  Artifact no_platform = image(ArtifactKind::image_manifest);
  no_platform.platform = "";
  expect_error(no_platform, "not os_arch");
  Artifact seed = test::seed_snapshot_row(digest, "netsy", "1.0.0", "../netsy.netsy", "");
  seed.size = 11;
  seed.upstream_digest = "sha256:" + digest;  // not the sha512 seeds.json gives
  expect_error(seed, "not a plain path segment");
  seed.filename = "netsy.netsy";
  expect_error(seed, "sha512");
  EXPECT_TRUE(store.artifacts().empty());

  for (auto kind : {ArtifactKind::image_index, ArtifactKind::image_manifest, ArtifactKind::image_blob})
    EXPECT_GT(store.add_artifact(image(kind)), 0);
  EXPECT_EQ(store.artifacts().size(), 3u);
  EXPECT_EQ(parse_artifact_kind("image_blob"), ArtifactKind::image_blob);
  EXPECT_EQ(parse_artifact_kind("seed_snapshot"), ArtifactKind::seed_snapshot);
}

// A referrer (an SBOM, an attestation) is an attachment under the digest its subject names;
// anything else that is neither that nor a signature tag is refused.
TEST(Store, ImageAttachmentRowsOfReferrersSitUnderTheirSubjectsDigest) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("referrer manifest bytes");
  Artifact a = image_row(ArtifactKind::image_attachment, "registry.k8s.io/pause", "sha256:" + std::string(64, 'd'), "",
                         "sha256:" + digest, 23, "");
  Artifact short_digest = a;
  short_digest.version = "sha256:" + std::string(63, 'd');
  expect_rejected(store, short_digest, "neither an OCI tag nor a sha256: digest");
  Artifact tag_schema = a;
  tag_schema.version = "sha256-" + std::string(64, 'd');  // the tag schema's index tag, never a row
  expect_rejected(store, tag_schema, "not an attachment tag");
  EXPECT_TRUE(store.artifacts().empty());
  EXPECT_GT(store.add_artifact(a), 0);
  EXPECT_EQ(store.artifacts({.kind = ArtifactKind::image_attachment, .version = a.version}).size(), 1u);
}

// A cosign signature beside its image: at the tag sha256-<hex>.sig only, without a platform.
TEST(Store, ImageAttachmentRowsSitAtTheirSignatureTag) {
  TempDir dir;
  Store store = Store::open(dir.path());
  std::string digest = store.add_bytes("signature manifest bytes");
  Artifact a = image_row(ArtifactKind::image_attachment, "registry.k8s.io/pause", image_signature_tag("sha256:" + std::string(64, 'c')),
                         "", "sha256:" + digest, 24, "");
  EXPECT_EQ(a.version, "sha256-" + std::string(64, 'c') + ".sig");
  EXPECT_EQ(image_attachment_tag(a.version), "sha256:" + std::string(64, 'c'));
  Artifact tag = a;
  tag.version = "3.10.2";
  expect_rejected(store, tag, "not an attachment tag");
  Artifact upper = a;
  upper.version = "sha256-" + std::string(64, 'C') + ".sig";
  expect_rejected(store, upper, "not an attachment tag");
  Artifact platform = a;
  platform.platform = "linux_amd64";
  expect_rejected(store, platform, "has no platform");
  EXPECT_TRUE(store.artifacts().empty());
  EXPECT_GT(store.add_artifact(a), 0);
  EXPECT_EQ(parse_artifact_kind("image_attachment"), ArtifactKind::image_attachment);
  EXPECT_EQ(store.artifacts({.kind = ArtifactKind::image_attachment}).size(), 1u);
}

}  // namespace
}  // namespace podplane::cache
