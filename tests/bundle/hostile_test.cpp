// Hand-crafted hostile tars (written with libarchive here) must be refused by verify and
// import, even under a trusted signature, and must never put a file outside the store.
#include <gtest/gtest.h>

#include <archive.h>
#include <archive_entry.h>
#include <sys/sysmacros.h>

#include "base/digest.hpp"
#include "bundle/create.hpp"
#include "bundle/import.hpp"
#include "bundle/manifest.hpp"
#include "bundle/signing.hpp"
#include "cache/layout.hpp"
#include "cache/views.hpp"
#include "lockfile/hash.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/every_kind.hpp"
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
    for (const auto& content : objects) m.objects.push_back({sha256_hex(content), content.size()});
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

  static std::string object_name(const std::string& content) { return std::string(kObjectPrefix) + sha256_hex(content); }

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

// Import checks several objects at once and publishes them in manifest order: whatever
// stops a volume (a damaged object, the end of a truncated file) keeps exactly the objects
// before it, with nothing after it indexed or on disk, and the first problem in the volume is
// the one reported, however soon the objects after it were found right.
class HostileVolumeOfEight : public HostileBundle {
 protected:
  void SetUp() override {
    HostileBundle::SetUp();
    for (int i = 0; i < 8; ++i) contents.push_back("object " + std::to_string(i) + "\n" + std::string(100000 + i, 'a' + i));
  }

  // The volume with object `damaged` altered (none when negative), cut inside its last object
  // when `truncated`.
  fs::path volume(const std::string& name, int damaged, bool truncated) {
    std::vector<Entry> entries;
    for (const auto& c : contents) entries.push_back({object_name(c), c});
    if (damaged >= 0) entries[static_cast<std::size_t>(damaged)].content[10] ^= 1;
    fs::path file = bundle(name, contents, entries);
    if (truncated) fs::resize_file(file, fs::file_size(file) - 1024 - 50000);
    return file;
  }

  void expect_imported_only_the_first(const fs::path& file, std::size_t kept, const std::string& needle) {
    const fs::path root = dir / ("store-" + file.filename().string());
    auto store = cache::Store::open(root);
    auto report = import_bundle(store, {file}, options);
    ASSERT_FALSE(report.ok()) << file;
    const VolumeReport& v = report.volumes.at(0);
    EXPECT_NE(v.error.find(needle), std::string::npos) << v.error;
    EXPECT_EQ(v.objects_verified, kept) << v.error;
    EXPECT_EQ(v.missing_objects.size(), contents.size() - kept);
    for (std::size_t i = 0; i < contents.size(); ++i) EXPECT_EQ(store.has_object(sha256_hex(contents[i])), i < kept) << i;
    std::size_t files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(cache::layout::objects_dir(root))) files += entry.is_regular_file();
    EXPECT_EQ(files, kept) << "an object after the damage reached the store";
    EXPECT_TRUE(fs::is_empty(cache::layout::temp_dir(root))) << "a temp file was left behind";
    test::expect_objects_intact(root);
  }

  std::vector<std::string> contents;
};

TEST_F(HostileVolumeOfEight, ADamagedObjectKeepsTheObjectsBeforeItAndNoneAfter) {
  expect_imported_only_the_first(volume("damaged", 2, false), 2,
                                 "object in " + (dir / "damaged").string() + " is damaged and was not imported");
}

TEST_F(HostileVolumeOfEight, ATruncatedVolumeKeepsTheObjectsBeforeTheCut) {
  expect_imported_only_the_first(volume("cut", -1, true), 7, "truncated");
}

TEST_F(HostileVolumeOfEight, DamageBeforeTheCutIsTheErrorAndStopsThere) {
  expect_imported_only_the_first(volume("damaged-and-cut", 2, true), 2, "is damaged and was not imported");
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

// Rows that pass the manifest's name checks but that the views could not lay out: refused by
// verify and import with the store's own rules, before any row commits.
cache::Artifact vm_row(const std::string& digest, const std::string& url) {
  cache::Artifact a = podplane::test::vmconfig_artifact_row(digest, "kernel", "6.12.1", url);
  a.filename = "vmlinuz";
  a.upstream_digest.clear();  // as such rows came in bundles: no digest to check them against
  a.size = static_cast<std::int64_t>(kX.size());
  a.added_at = "2026-11-01T00:00:00Z";
  return a;
}

TEST_F(HostileBundle, RowsTheViewsCannotLayOutAreRefused) {
  auto with = [&](const std::string& name, const std::function<void(BundleManifest&)>& tweak) {
    return bundle(name, {kX}, {{object_name(kX), kX}}, tweak);
  };
  expect_refused(with("url-slash", [](BundleManifest& m) {
                   m.artifacts.push_back({vm_row(m.objects[0].digest, "https://example.com/releases/"), {}});
                 }),
                 "upstream URL");
  expect_refused(with("url-dotdot", [](BundleManifest& m) {
                   m.artifacts.push_back({vm_row(m.objects[0].digest, "https://example.com/releases/.."), {}});
                 }),
                 "upstream URL");
  expect_refused(with("provider-address", [](BundleManifest& m) {
                   cache::Artifact a = vm_row(m.objects[0].digest, "");
                   a.kind = cache::ArtifactKind::provider_package;
                   a.address = "registry.opentofu.org/hashicorp";
                   a.version = "1.0.0";
                   a.platform = "linux_amd64";
                   a.filename = "terraform-provider-x_1.0.0_linux_amd64.zip";
                   m.artifacts.push_back({a, {}});
                 }),
                 "HOST/NAMESPACE/TYPE");
  expect_refused(with("provider-platform", [](BundleManifest& m) {
                   cache::Artifact a = vm_row(m.objects[0].digest, "");
                   a.kind = cache::ArtifactKind::provider_package;
                   a.address = "registry.opentofu.org/hashicorp/null";
                   a.version = "1.0.0";
                   a.filename = "terraform-provider-null_1.0.0.zip";
                   m.artifacts.push_back({a, {}});
                 }),
                 "platform");
  expect_refused(with("file-and-dir", [](BundleManifest& m) {
                   cache::ModuleTree tree{0, "registry.opentofu.org/acme/net/aws", "1.0.0", "", "", "2026-11-01T00:00:00Z", {}};
                   tree.files = {{"x", 0644, m.objects[0].digest, static_cast<std::int64_t>(kX.size())},
                                 {"x/y", 0644, m.objects[0].digest, static_cast<std::int64_t>(kX.size())}};
                   m.module_trees.push_back(tree);
                 }),
                 "both a file and a directory");
  expect_refused(with("reserved", [](BundleManifest& m) {
                   cache::ModuleTree tree{0, "nstance", "2.0.1", "", "", "2026-11-01T00:00:00Z", {}};
                   tree.files = {{"modules/cluster/evil.tf", 0644, m.objects[0].digest, static_cast<std::int64_t>(kX.size())}};
                   m.module_trees.push_back(tree);
                 }),
                 "nstance");
  // Image rows: a digest that is not the object's (serving other bytes under an OCI digest),
  // and names that are not OCI names.
  expect_refused(with("image-digest", [](BundleManifest& m) {
                   cache::Artifact a = vm_row(m.objects[0].digest, "");
                   a.kind = cache::ArtifactKind::image_blob;
                   a.address = "registry.k8s.io/pause";
                   a.version = "sha256:" + std::string(64, 'a');
                   a.filename = "sha256:" + std::string(64, 'b');
                   a.upstream_digest = a.filename;
                   m.artifacts.push_back({a, {}});
                 }),
                 "OCI digest");
  expect_refused(with("image-name", [](BundleManifest& m) {
                   cache::Artifact a = vm_row(m.objects[0].digest, "");
                   a.kind = cache::ArtifactKind::image_index;
                   a.address = "registry.k8s.io/Upper_Case";
                   a.version = "latest";
                   a.filename = "sha256:" + m.objects[0].digest;
                   a.upstream_digest = a.filename;
                   m.artifacts.push_back({a, {}});
                 }),
                 "OCI repository name");
  expect_refused(with("selection", [](BundleManifest& m) {
                   cache::TfSelection s;
                   s.providers = {{"registry.opentofu.org/hashicorp", "1.0.0", ""}};
                   m.tf_selection = s;
                 }),
                 "HOST/NAMESPACE/TYPE");
}

// A volume whose rows pass the header checks but whose module tree is refused inside the rows'
// transaction (its h1 is not that of its files): the artifact row counted before it is rolled
// back with it, so neither the report nor `bundle import`'s output says any row was added.
TEST_F(HostileBundle, ARowRefusedInsideTheTransactionLeavesNoRowAddedInTheReportOrTheOutput) {
  auto file = bundle("rolled-back", {kX, kY}, {{object_name(kX), kX}, {object_name(kY), kY}}, [](BundleManifest& m) {
    cache::Artifact kernel = vm_row(m.objects[0].digest, "https://example.com/vmlinuz");
    kernel.upstream_digest = "sha256:" + m.objects[0].digest;
    m.artifacts.push_back({kernel, {}});
    cache::ModuleTree tree;
    tree.address = "registry.opentofu.org/acme/network/aws";
    tree.version = "1.0.0";
    tree.files = {{"main.tf", 0644, m.objects[1].digest, static_cast<std::int64_t>(kY.size())}};
    tree.h1 = lockfile::h1_hash({{"main.tf", m.objects[0].digest}});  // well formed, of other files
    m.module_trees.push_back(tree);
  });

  auto store = cache::Store::open(dir / "library-store");
  auto report = import_bundle(store, {file}, options);
  ASSERT_FALSE(report.ok());
  const VolumeReport& volume = report.volumes.at(0);
  EXPECT_NE(volume.error.find("index rows not recorded"), std::string::npos) << volume.error;
  EXPECT_EQ(volume.artifacts_added, 0u) << "the rolled-back row is counted as added";
  EXPECT_EQ(volume.module_trees_added, 0u);
  EXPECT_TRUE(store.artifacts().empty());

  const fs::path root = dir / "cli-store";
  auto imported = podplane::test::run_podplane({"bundle", "import", file.string(), "--trust", (dir / "site.pub").string()},
                                     podplane::test::with_deps_root(root));
  EXPECT_EQ(imported.exit_code, 1) << imported.out << imported.err;
  EXPECT_NE(imported.out.find("error: index rows not recorded"), std::string::npos) << imported.out;
  EXPECT_EQ(imported.out.find("rows:"), std::string::npos) << "a refused volume added no row:\n" << imported.out;
  EXPECT_EQ(imported.out.find(" added"), std::string::npos) << imported.out;
  EXPECT_TRUE(cache::Store::open(root, cache::Store::Access::read_only).artifacts().empty());
}

TEST_F(HostileBundle, AModuleTreeCannotAddFilesToAStoredModuleVersion) {
  fs::path root = dir / "store";
  auto store = cache::Store::open(root);
  test::fill_store(store);
  (void)cache::rebuild_views(store);
  auto stored = *store.find_module_tree("registry.opentofu.org/nstance-dev/nstance/aws", "2.0.1");
  const std::string evil = "resource \"null_resource\" \"backdoor\" {}\n";
  auto file = bundle("grow", {evil}, {{object_name(evil), evil}}, [&](BundleManifest& m) {
    cache::ModuleTree grown = stored;
    grown.id = 0;
    grown.h1.clear();
    grown.files.push_back({"modules/cluster/backdoor.tf", 0644, m.objects[0].digest, static_cast<std::int64_t>(evil.size())});
    m.module_trees.push_back(grown);
  });
  auto report = import_bundle(store, {file}, options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.volumes.at(0).error.find("expected:"), std::string::npos) << report.volumes.at(0).error;
  EXPECT_NE(report.volumes.at(0).error.find("got:"), std::string::npos) << report.volumes.at(0).error;
  EXPECT_EQ(store.find_module_tree(stored.address, stored.version)->files.size(), stored.files.size());
  EXPECT_FALSE(fs::exists(cache::layout::nstance_modules_dir(root) / "2.0.1/modules/cluster/backdoor.tf"));
}

TEST_F(HostileBundle, RowHashesAreCheckedAgainstTheirObjectsBeforeCommit) {
  ASSERT_TRUE(podplane::test::have_program("zip")) << "the zip program is needed (apt-get install zip)";
  podplane::test::write_file(dir / "zipdir" / "terraform-provider-null_v3.2.4_x5", "provider binary");
  podplane::test::ProcessOptions in_dir;
  in_dir.cwd = dir / "zipdir";
  ASSERT_EQ(podplane::test::run({"zip", "-q", "-X", "p.zip", "terraform-provider-null_v3.2.4_x5"}, in_dir).exit_code, 0);
  const std::string zip = podplane::test::read_file(dir / "zipdir" / "p.zip");
  const std::string right_h1 = lockfile::h1_hash_of_zip(dir / "zipdir" / "p.zip");
  auto package = [&](const std::string& digest, const std::string& h1) {
    cache::Artifact a = podplane::test::provider_package_row(digest);
    a.size = static_cast<std::int64_t>(zip.size());
    a.h1 = h1;
    a.zh = cache::zh_of(a);
    a.added_at = "2026-11-01T00:00:00Z";
    return a;
  };
  auto wrong_h1 = bundle("h1", {zip}, {{object_name(zip), zip}}, [&](BundleManifest& m) {
    m.artifacts.push_back({package(m.objects[0].digest, "h1:" + std::string(43, 'A') + "="), {}});
  });
  auto store = cache::Store::open(dir / "h1-store");
  auto report = import_bundle(store, {wrong_h1}, options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.volumes.at(0).error.find("h1"), std::string::npos) << report.volumes.at(0).error;
  EXPECT_NE(report.volumes.at(0).error.find(right_h1), std::string::npos) << report.volumes.at(0).error;
  EXPECT_TRUE(store.artifacts().empty());

  auto wrong_digest = bundle("sha512", {kX}, {{object_name(kX), kX}}, [&](BundleManifest& m) {
    cache::Artifact a = vm_row(m.objects[0].digest, "https://example.com/vmlinuz");
    a.upstream_digest = "sha512:" + std::string(128, 'a');
    m.artifacts.push_back({a, {}});
  });
  auto other = cache::Store::open(dir / "sha512-store");
  auto refused = import_bundle(other, {wrong_digest}, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.volumes.at(0).error.find("upstream digest"), std::string::npos) << refused.volumes.at(0).error;
  EXPECT_TRUE(other.artifacts().empty());

  auto right = bundle("right", {zip}, {{object_name(zip), zip}}, [&](BundleManifest& m) {
    m.artifacts.push_back({package(m.objects[0].digest, right_h1), {}});
  });
  auto good = cache::Store::open(dir / "right-store");
  auto accepted = import_bundle(good, {right}, options);
  EXPECT_TRUE(accepted.ok()) << accepted.volumes.at(0).error;
  EXPECT_EQ(good.artifacts().size(), 1u);
}

// A manifest near the 64 MiB limit is parsed as a stream into rows: peak memory stays far
// below the ten times its size that a JSON document tree takes.
TEST_F(HostileBundle, AHugeManifestIsReadWithBoundedMemory) {
  if (!fs::exists("/usr/bin/time")) GTEST_SKIP() << "/usr/bin/time (GNU time) is needed to measure peak memory";
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "built with AddressSanitizer (scripts/test-sanitize): its shadow memory and allocator quarantine "
                  "make a peak RSS bound meaningless";
#endif
  BundleManifest m;
  m.tool_version = "test";
  m.created_at = "2026-11-01T00:00:00Z";
  m.bundle_id = std::string(64, '1');
  cache::Artifact row = vm_row(std::string(64, 'a'), "");
  std::string manifest;
  {
    // Serialise one row and repeat it textually with distinct file names (building 200 000
    // rows through BundleManifest would itself take the memory under test).
    BundleManifest one = m;
    one.artifacts.push_back({row, {}});
    std::string text = one.serialize();
    auto start = text.find("[{\"added_at\"");
    auto end = text.find("}]", start) + 1;
    std::string item = text.substr(start + 1, end - start - 1);
    std::string rows;
    for (int i = 0; rows.size() < (60u << 20); ++i) {
      std::string copy = item;
      auto name = copy.find("\"filename\":\"vmlinuz\"");
      copy.replace(name, 20, "\"filename\":\"vmlinuz-" + std::to_string(i) + "\"");
      rows += (rows.empty() ? "" : ",") + copy;
    }
    manifest = text.substr(0, start + 1) + rows + text.substr(end);
  }
  SignatureBlock none;
  fs::path file = dir / "huge.bundle";
  write_tar(file, {{std::string(kManifestEntry), manifest}, {std::string(kSignatureEntry), none.serialize()}});
  manifest.clear();
  manifest.shrink_to_fit();
  auto result = podplane::test::run({"/usr/bin/time", "-v", podplane::test::podplane_binary().string(), "bundle", "verify",
                                     file.string(), "--allow-unsigned"});
  auto at = result.err.find("Maximum resident set size (kbytes): ");
  ASSERT_NE(at, std::string::npos) << result.err;
  long kib = std::stol(result.err.substr(at + 36));
  std::cout << "[  MEMORY  ] bundle verify of a " << fs::file_size(file) / (1 << 20) << " MiB manifest: peak RSS "
            << kib / 1024 << " MiB\n";
  EXPECT_LT(kib, 256 * 1024) << result.out << result.err;
  EXPECT_NE(result.out.find("volume 1 of 1"), std::string::npos) << "the manifest was read through, not refused early\n"
                                                                 << result.out << result.err;
}

}  // namespace
}  // namespace podplane::bundle
