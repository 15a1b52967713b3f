// Hand-crafted hostile tars (written with libarchive here) must be refused by verify and
// import, even under a trusted signature, and must never put a file outside the store.
#include <gtest/gtest.h>

#include <archive.h>
#include <archive_entry.h>
#include <sys/sysmacros.h>

#include "bundle/import.hpp"
#include "bundle/manifest.hpp"
#include "bundle/signing.hpp"
#include "cache/layout.hpp"
#include "lockfile/hash.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

using podplane::test::TempDir;
namespace fs = std::filesystem;

struct Entry {
  std::string name;
  std::string content{};
  mode_t type = AE_IFREG;
  std::string link{};                       // symlink target or hardlink source
  std::optional<std::int64_t> declared_size{};  // header size when it should lie
};

void write_tar(const fs::path& file, const std::vector<Entry>& entries) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, file.c_str()), ARCHIVE_OK);
  for (const auto& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_copy_pathname(entry, e.name.c_str());
    archive_entry_set_filetype(entry, e.type);
    archive_entry_set_perm(entry, 0644);
    if (e.type == AE_IFLNK) archive_entry_copy_symlink(entry, e.link.c_str());
    if (e.type == AE_IFREG && !e.link.empty()) archive_entry_copy_hardlink(entry, e.link.c_str());
    if (e.type == AE_IFCHR) archive_entry_set_rdev(entry, makedev(1, 3));
    archive_entry_set_size(entry, e.type == AE_IFREG && e.link.empty() ? e.declared_size.value_or(static_cast<std::int64_t>(e.content.size())) : 0);
    archive_write_header(a, entry);
    if (e.type == AE_IFREG && e.link.empty() && !e.content.empty()) archive_write_data(a, e.content.data(), e.content.size());
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
}

class HostileBundle : public ::testing::Test {
 protected:
  void SetUp() override {
    auto files = generate_key_pair(dir / "site");
    key.emplace(SigningKey::load(files.private_key));
    options.trusted_keys = {files.public_key};
  }

  // A correctly signed manifest listing `objects`, followed by `entries`.
  fs::path bundle(const std::string& name, const std::vector<std::string>& objects, const std::vector<Entry>& entries,
                  const std::function<void(BundleManifest&)>& tweak = {}) {
    BundleManifest m;
    m.tool_version = "test";
    m.created_at = "2026-11-01T00:00:00Z";
    m.bundle_id = std::string(64, '1');
    for (const auto& content : objects) m.objects.push_back({lockfile::sha256_hex(content), content.size()});
    m.total_objects = m.objects.size();
    if (tweak) tweak(m);
    std::string manifest = m.serialize();
    SignatureBlock sig{"ed25519", key->public_key().raw_hex(), key->public_key().key_id(), key->sign_hex(manifest)};
    std::vector<Entry> all = {{std::string(kManifestEntry), manifest}, {std::string(kSignatureEntry), sig.serialize()}};
    all.insert(all.end(), entries.begin(), entries.end());
    fs::path file = dir / name;
    write_tar(file, all);
    return file;
  }

  void expect_refused(const fs::path& file, const std::string& needle) {
    auto verified = verify_bundle({file}, options);
    ASSERT_FALSE(verified.ok()) << file;
    EXPECT_NE(verified.volumes.at(0).error.find(needle), std::string::npos) << verified.volumes.at(0).error;
    fs::path root = dir / ("store-" + file.filename().string());
    auto store = cache::Store::open(root);
    auto imported = import_bundle(store, {file}, options);
    ASSERT_FALSE(imported.ok()) << file;
    EXPECT_NE(imported.volumes.at(0).error.find(needle), std::string::npos) << imported.volumes.at(0).error;
    test::expect_objects_intact(root);
    EXPECT_FALSE(fs::exists(dir / "evil")) << "an entry escaped the store";
    EXPECT_TRUE(store.artifacts().empty());
  }

  static std::string object_name(const std::string& content) { return std::string(kObjectPrefix) + lockfile::sha256_hex(content); }

  TempDir dir;
  std::optional<SigningKey> key;
  VerifyOptions options;
};

const std::string kX = "object x\n";
const std::string kY = "object y\n";

TEST_F(HostileBundle, AWellFormedCraftedBundleIsAccepted) {
  // The control case: the crafting itself yields something import takes.
  auto file = bundle("good", {kX, kY}, {{object_name(kX), kX}, {object_name(kY), kY}});
  auto report = verify_bundle({file}, options);
  EXPECT_TRUE(report.ok()) << report.volumes.at(0).error;
}

TEST_F(HostileBundle, DotDotNames) {
  expect_refused(bundle("dotdot", {kX}, {{"objects/sha256/../../../evil", kX}}), "'..'");
}

TEST_F(HostileBundle, AbsoluteNames) { expect_refused(bundle("absolute", {kX}, {{(dir / "evil").string(), kX}}), "absolute"); }

TEST_F(HostileBundle, SymbolicLinks) {
  expect_refused(bundle("symlink", {kX}, {{object_name(kX), "", AE_IFLNK, "/etc/passwd"}}), "symbolic link");
}

TEST_F(HostileBundle, HardLinks) {
  expect_refused(bundle("hardlink", {kX}, {{object_name(kX), "", AE_IFREG, "manifest.json"}}), "hard link");
}

TEST_F(HostileBundle, Devices) { expect_refused(bundle("device", {kX}, {{object_name(kX), "", AE_IFCHR}}), "device"); }

TEST_F(HostileBundle, Directories) { expect_refused(bundle("dir", {kX}, {{object_name(kX), "", AE_IFDIR}}), "directory"); }

TEST_F(HostileBundle, DuplicateEntries) {
  expect_refused(bundle("dup", {kX, kY}, {{object_name(kX), kX}, {object_name(kX), kX}}), "duplicate");
}

TEST_F(HostileBundle, EntriesNotInTheManifest) {
  expect_refused(bundle("extra", {kX}, {{object_name(kX), kX}, {object_name(kY), kY}}), "not in the manifest");
  expect_refused(bundle("other", {kX}, {{"notes.txt", "hello"}}), "not in the manifest");
}

TEST_F(HostileBundle, SizesThatDisagreeWithTheManifest) {
  expect_refused(bundle("size", {kX}, {{object_name(kX), kX + "more"}}), "size disagrees");
}

TEST_F(HostileBundle, ContentThatDisagreesWithTheDigest) {
  std::string forged = kX;
  forged[0] = 'O';
  expect_refused(bundle("content", {kX}, {{object_name(kX), forged}}), "damaged");
}

TEST_F(HostileBundle, OutOfOrderEntries) {
  expect_refused(bundle("order", {kX, kY}, {{object_name(kY), kY}, {object_name(kX), kX}}), "order");
}

TEST_F(HostileBundle, ManifestNotFirst) {
  fs::path file = dir / "nomanifest";
  write_tar(file, {{object_name(kX), kX}});
  expect_refused(file, "does not start like a podplane bundle");
}

TEST_F(HostileBundle, HostileRowNamesInASignedManifest) {
  auto file = bundle("rows", {kX}, {{object_name(kX), kX}}, [](BundleManifest& m) {
    TravellingArtifact a;
    a.artifact.kind = cache::ArtifactKind::vmconfig_artifact;
    a.artifact.address = "kernel";
    a.artifact.version = "1";
    a.artifact.filename = "../../evil";
    a.artifact.digest = m.objects[0].digest;
    m.artifacts.push_back(a);
  });
  expect_refused(file, "unsafe artifact filename");
}

TEST_F(HostileBundle, CompressedOrForeignArchivesAreRefused) {
  fs::path file = dir / "gz";
  podplane::test::write_file(file, std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8) + std::string(100, 'x'));
  auto report = verify_bundle({file}, options);
  EXPECT_FALSE(report.ok());
}

}  // namespace
}  // namespace podplane::bundle
