// Cross-checks against the real implementations (tests/tools/gocheck): our h1 equals Go's
// dirhash on generated zips and directories, and HashiCorp's HCL parser accepts every lock
// file and CLI config we write.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/lock_file.hpp"
#include "tests/support/zip_fixture.hpp"
#include "tests/support/gocheck.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

namespace fs = std::filesystem;
using Kind = ZipEntry::Kind;

TEST(Gocheck, BinaryIsBuilt) {
  ASSERT_TRUE(fs::exists(gocheck_binary())) << gocheck_binary() << " missing: build the podplane_gocheck target";
  auto usage = run({gocheck_binary().string()});
  EXPECT_EQ(usage.exit_code, 2);
}

struct ZipCase {
  std::string name;
  std::vector<ZipEntry> entries;
};

std::vector<ZipCase> zip_cases() {
  std::string big(300000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 7919) % 251);
  return {
      {"flat_provider", {{"terraform-provider-aws_v6.2.0_x5", "ELF binary"}, {"LICENSE", "MPL\n"}, {"README.md", "# aws\n"}}},
      {"empty_package", {}},
      {"single_empty_file", {{"empty", ""}}},
      {"directory_entries", {{"docs/", "", Kind::directory}, {"docs/x.md", "doc\n"}, {"bin/", "", Kind::directory}}},
      {"only_a_directory", {{"d/", "", Kind::directory}}},
      {"duplicate_names", {{"a", "first"}, {"b", "bee"}, {"a", "second"}}},
      {"duplicate_three_times", {{"x", "1"}, {"x", "2", Kind::file, false}, {"x", "3"}}},
      {"dot_slash_prefix", {{"./a", "x"}, {"a", "y"}, {"./dir/b", "z"}}},
      {"unicode_names", {{"d\xc3\xa9j\xc3\xa0.txt", "utf8"}, {"\xe6\x97\xa5\xe6\x9c\xac/\xe8\xaa\x9e", "ja"}, {"emoji_\xf0\x9f\x98\x80", ""}}},
      {"nested_dirs", {{"a/b/c/d/e/f.txt", "deep"}, {"a/b/g.txt", "mid"}, {"a/h", "top"}}},
      {"sort_order_bytes", {{"B", "1"}, {"a", "2"}, {"_", "3"}, {"a.b", "4"}, {"a/b", "5"}, {"a-b", "6"}, {"\xc3\xa9", "7"}}},
      {"stored_and_deflated", {{"stored", "same content", Kind::file, false}, {"deflated", "same content", Kind::file, true}}},
      {"large_file", {{"big.bin", big}}},
      {"symlink_entry", {{"target", "data"}, {"link", "target", Kind::symlink, false}}},
      // No backslash here: libarchive turns '\' in zip names into '/', Go keeps it (docs/lockfile.md).
      {"spaces_and_specials", {{"with space", "1"}, {"tab\there", "2"}, {"quote\"name", "3"}, {"semi;colon", "4"}}},
      {"trailing_newline_content", {{"a", "line1\nline2\n"}, {"b", "\r\n"}}},
      {"absolute_looking_name", {{"/etc/passwd", "not really"}, {"../up", "dotdot"}}},
  };
}

TEST(Gocheck, H1OfZipsEqualsDirhashHashZip) {
  TempDir dir;
  int compared = 0;
  for (const auto& c : zip_cases()) {
    auto zip = dir / (c.name + ".zip");
    make_zip(zip, c.entries);
    std::string go = gocheck_hashzip(zip);
    EXPECT_EQ(lockfile::h1_hash_of_zip(zip), go) << c.name;
    ++compared;
  }
  EXPECT_GE(compared, 17);
}

// Zips as other tools write them: Info-ZIP with directory entries, stored symlinks (-y), a
// streamed entry with a data descriptor, forced zip64; a prefixed stub and trailing bytes.
TEST(Gocheck, H1OfInfoZipArchivesEqualsDirhash) {
  TempDir dir;
  write_file(dir / "src/terraform-provider-x_v1.0.0", "binary\n");
  write_file(dir / "src/sub/notes.txt", "notes\n");
  write_file(dir / "src/empty", "");
  fs::create_symlink("terraform-provider-x_v1.0.0", dir / "src/link");
  const fs::path src = dir / "src";
  make_zip_with_infozip(src, dir / "recursive.zip", {"-r"}, {"."});
  make_zip_with_infozip(src, dir / "symlinks.zip", {"-r", "-y"}, {"."});
  make_zip_with_infozip(src, dir / "no_dir_entries.zip", {"-r", "-D"}, {"."});
  make_zip_with_infozip(src, dir / "streamed.zip", {}, {"-"}, "streamed content\n");
  make_zip_with_infozip(src, dir / "zip64.zip", {"-fz"}, {"terraform-provider-x_v1.0.0", "sub/notes.txt"});
  std::string plain = read_file(dir / "recursive.zip");
  write_file(dir / "stub_prefix.zip", "#!/bin/sh\nexit 0\n" + plain);
  write_file(dir / "trailing_bytes.zip", plain + "TRAILING");
  for (const char* name : {"recursive.zip", "symlinks.zip", "no_dir_entries.zip", "streamed.zip", "zip64.zip",
                           "stub_prefix.zip", "trailing_bytes.zip"}) {
    EXPECT_EQ(lockfile::h1_hash_of_zip(dir / name), gocheck_hashzip(dir / name)) << name;
  }
  write_file(dir / "truncated.zip", plain.substr(0, plain.size() / 2));
  EXPECT_THROW((void)gocheck_hashzip(dir / "truncated.zip"), std::runtime_error);
  EXPECT_THROW((void)lockfile::h1_hash_of_zip(dir / "truncated.zip"), Error);
}

TEST(Gocheck, NewlineNamesAreRejectedByBoth) {
  TempDir dir;
  make_zip(dir / "nl.zip", {{"a\nb", "x"}});
  EXPECT_THROW((void)gocheck_hashzip(dir / "nl.zip"), std::runtime_error);
  EXPECT_THROW((void)lockfile::h1_hash_of_zip(dir / "nl.zip"), Error);
}

struct DirCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> empty_dirs;
  std::vector<std::pair<std::string, std::string>> symlinks;  // link → target (relative)
};

std::vector<DirCase> dir_cases() {
  return {
      {"flat", {{"terraform-provider-null_v3.2.4_x5", "bin"}, {"LICENSE", "MPL\n"}}, {}, {}},
      {"empty", {}, {}, {}},
      {"only_empty_dirs", {}, {"a", "a/b", "c"}, {}},
      {"empty_files", {{"e1", ""}, {"sub/e2", ""}}, {}, {}},
      {"nested", {{"a/b/c/d.txt", "deep"}, {"a/x", "x"}, {"z", "z"}}, {"a/empty"}, {}},
      {"unicode", {{"d\xc3\xa9j\xc3\xa0/\xe2\x9c\x93", "u"}, {"\xe6\x97\xa5", "j"}}, {}, {}},
      {"symlink_to_file", {{"real", "content"}, {"sub/other", "o"}}, {}, {{"alias", "real"}, {"sub/up", "../real"}}},
      {"sort_order", {{"B", "1"}, {"a", "2"}, {"a.b", "3"}, {"a-b", "4"}, {"a_b/c", "5"}}, {}, {}},
      {"specials", {{"with space", "1"}, {"tab\there", "2"}, {"back\\slash", "3"}}, {}, {}},
  };
}

TEST(Gocheck, H1OfDirectoriesEqualsDirhashHashDir) {
  TempDir dir;
  int compared = 0;
  for (const auto& c : dir_cases()) {
    fs::path root = dir / c.name;
    fs::create_directories(root);
    for (const auto& [name, content] : c.files) write_file(root / name, content);
    for (const auto& empty : c.empty_dirs) fs::create_directories(root / empty);
    for (const auto& [link, target] : c.symlinks) fs::create_symlink(target, root / link);
    EXPECT_EQ(lockfile::h1_hash_of_dir(root), gocheck_hashdir(root)) << c.name;
    ++compared;
  }
  EXPECT_GE(compared, 9);
}

TEST(Gocheck, SymlinkToDirectoryFailsInBoth) {
  TempDir dir;
  write_file(dir / "pkg/f", "x");
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / "pkg/linked");
  EXPECT_THROW((void)gocheck_hashdir(dir / "pkg"), std::runtime_error);
  EXPECT_THROW((void)lockfile::h1_hash_of_dir(dir / "pkg"), Error);
}

TEST(Gocheck, FlatZipEqualsItsExtractedDirectory) {
  TempDir dir;
  make_zip(dir / "p.zip", {{"terraform-provider-x_v1", "bin"}, {"LICENSE", "text"}});
  write_file(dir / "p/terraform-provider-x_v1", "bin");
  write_file(dir / "p/LICENSE", "text");
  EXPECT_EQ(gocheck_hashzip(dir / "p.zip"), gocheck_hashdir(dir / "p"));
  EXPECT_EQ(lockfile::h1_hash_of_zip(dir / "p.zip"), lockfile::h1_hash_of_dir(dir / "p"));
}

lockfile::LockFile sample_lock() {
  lockfile::LockFile lock;
  lock.providers.push_back({"registry.opentofu.org/hashicorp/aws", "6.2.0", ">= 6.0.0, < 7.0.0",
                            {"h1:mC2y7VgNBWb3wR/bC2X7ADvSGaJNwBCOxIEiDbCt16U=",
                             "zh:4fb39849f2e138eb16a18ba0c682635d781cb8c3b25901dd5a792ade9711f501"}});
  lock.providers.push_back({"registry.opentofu.org/hashicorp/null", "3.2.4", "", {}});
  lock.providers.push_back({"mirror.local:8443/acme/x", "0.1.0-rc.1+build", "0.1.0-rc.1+build", {"h1:abc"}});
  return lock;
}

TEST(Gocheck, HclparseAcceptsEveryLockFileWeWrite) {
  TempDir dir;
  for (auto engine : {lockfile::Engine::tofu, lockfile::Engine::terraform}) {
    auto result = gocheck_hclparse_text(dir.path(), "lock.hcl", lockfile::render_lock_file(sample_lock(), engine));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    auto empty = gocheck_hclparse_text(dir.path(), "empty.hcl", lockfile::render_lock_file({}, engine));
    EXPECT_EQ(empty.exit_code, 0) << empty.err;
  }
  std::vector<fs::path> golden;
  for (const auto& entry : fs::directory_iterator(test_data_dir() / "lockfile")) golden.push_back(entry.path());
  ASSERT_FALSE(golden.empty());
  auto result = gocheck_hclparse(golden);
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST(Gocheck, HclparseAcceptsEveryTfrcWeWrite) {
  TempDir dir;
  for (std::string path : {"/home/u/.cache/podplane/deps/tf/providers", "/tmp/with space/and \"quote\"/\xc3\xa9",
                           "/odd/${not_interpolated}/%{x}"}) {
    std::string tfrc = lockfile::render_filesystem_mirror_tfrc(path);
    auto result = gocheck_hclparse_text(dir.path(), "podplane.tfrc", tfrc);
    EXPECT_EQ(result.exit_code, 0) << path << "\n" << result.err;
    EXPECT_EQ(lockfile::parse_cli_config(tfrc, "tfrc").provider_installation.at(0).location, path);
  }
}

TEST(Gocheck, HclparseRejectsWhatOurReaderRejects) {
  TempDir dir;
  for (std::string bad : {"a = \"unterminated\n", "block {\n  a = 1\n", "a = 1\n}\n", "a = f(1, [2)\n", "/* open\n"}) {
    EXPECT_NE(gocheck_hclparse_text(dir.path(), "bad.hcl", bad).exit_code, 0) << bad;
    EXPECT_THROW((void)lockfile::parse_lock_file(bad, "bad.hcl"), Error) << bad;
  }
}

}  // namespace
}  // namespace podplane::test
