// Module source addresses (docs/protocols.md §6.2) and unpacking hostile archives.
#include <gtest/gtest.h>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "lockfile/hash.hpp"
#include "fetch/module_archive.hpp"
#include "fetch/module_source.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using Kind = ModuleSource::Kind;

constexpr const char* kHost = "registry.opentofu.org";

TEST(ModuleSourceParse, RegistryAddresses) {
  auto source = ModuleSource::parse("nstance-dev/nstance/aws//modules/cluster", kHost);
  EXPECT_EQ(source.kind, Kind::registry);
  EXPECT_EQ(source.registry.str(), "registry.opentofu.org/nstance-dev/nstance/aws");
  EXPECT_EQ(source.subdir, "modules/cluster");
  auto hosted = ModuleSource::parse("Example.COM:8443/ns/name/aws", kHost);
  EXPECT_EQ(hosted.registry.host, "example.com:8443");
  EXPECT_EQ(hosted.subdir, "");
}

TEST(ModuleSourceParse, LocalPaths) {
  EXPECT_EQ(ModuleSource::parse("./modules/x", kHost).kind, Kind::local);
  EXPECT_EQ(ModuleSource::parse("../x", kHost).kind, Kind::local);
  EXPECT_THROW((void)ModuleSource::parse("/abs/dir", kHost), Error);
}

TEST(ModuleSourceParse, GitOverHttpsWithRefAndSubdir) {
  auto source = ModuleSource::parse("git::https://host/org/repo.git//modules/vpc?ref=v1.2.0&depth=1", kHost);
  EXPECT_EQ(source.kind, Kind::git);
  EXPECT_EQ(source.url, "https://host/org/repo.git");
  EXPECT_EQ(source.ref, "v1.2.0");
  EXPECT_EQ(source.subdir, "modules/vpc");
  EXPECT_EQ(source.package_address(), "git::https://host/org/repo.git?ref=v1.2.0");
  auto github = ModuleSource::parse("github.com/org/repo//sub?ref=v1", kHost);
  EXPECT_EQ(github.kind, Kind::git);
  EXPECT_EQ(github.url, "https://github.com/org/repo.git");
  EXPECT_EQ(github.subdir, "sub");
  EXPECT_THROW((void)ModuleSource::parse("git::ssh://git@host/repo.git", kHost), Error);
  EXPECT_THROW((void)ModuleSource::parse("git@github.com:org/repo.git", kHost), Error);
}

TEST(ModuleSourceParse, ArchivesAndForcedArchives) {
  auto tgz = ModuleSource::parse("https://host/pkg/module-1.0.tar.gz//*", kHost);
  EXPECT_EQ(tgz.kind, Kind::archive);
  EXPECT_EQ(tgz.archive_format, "tar.gz");
  EXPECT_EQ(tgz.subdir, "*");
  EXPECT_EQ(tgz.url, "https://host/pkg/module-1.0.tar.gz");
  auto zip = ModuleSource::parse("https://host/x.zip?token=abc", kHost);
  EXPECT_EQ(zip.archive_format, "zip");
  EXPECT_EQ(zip.url, "https://host/x.zip?token=abc");
  auto forced = ModuleSource::parse("https://host/download?id=7&archive=tgz", kHost);
  EXPECT_EQ(forced.kind, Kind::archive);
  EXPECT_EQ(forced.archive_format, "tar.gz");
  EXPECT_EQ(forced.url, "https://host/download?id=7");
  EXPECT_EQ(ModuleSource::parse("https://host/module", kHost).kind, Kind::http);
}

TEST(ModuleSourceParse, StoreAddressIsAPlainRelativePath) {
  EXPECT_EQ(ModuleSource::parse("git::https://u:p@Host:8443/org/repo.git//sub?ref=v1", kHost).store_address(),
            "Host:8443/org/repo");
  EXPECT_EQ(ModuleSource::parse("https://h/a/../pkg-1.0.tar.gz//*", kHost).store_address(), "h/a/_/pkg-1.0");
  EXPECT_EQ(ModuleSource::parse("ns/name/aws//x", kHost).store_address(), "registry.opentofu.org/ns/name/aws");
}

TEST(ModuleSourceParse, UnsupportedGettersSaySo) {
  for (const char* text : {"s3::https://s3.amazonaws.com/b/k.zip", "hg::http://h/r", "oci://h/r?tag=1", "ftp://h/x.zip",
                           "not a source"}) {
    EXPECT_THROW((void)ModuleSource::parse(text, kHost), Error) << text;
  }
}

TEST(ModuleSourceParse, RedactsCredentials) {
  EXPECT_EQ(net::redact_url("git::https://user:s3cret@host/r.git?ref=v1"), "git::https://host/r.git?ref=v1");
  EXPECT_EQ(net::redact_url("fatal: https://tok@host/r failed"), "fatal: https://host/r failed");
  auto source = ModuleSource::parse("git::https://user:s3cret@host/r.git?ref=v1", kHost);
  EXPECT_EQ(source.package_address().find("s3cret"), std::string::npos);
  EXPECT_EQ(join_subdir("a/", "/b"), "a/b");
  EXPECT_EQ(join_subdir("", "b"), "b");
}

fs::path make_archive(const TempDir& dir, const std::string& name, const std::string& script) {
  return test::make_archive(dir / name, script);
}

TEST(ModuleArchive, ExtractsAPackageAndHashesItLikeHashDir) {
  TempDir dir;
  auto archive = make_archive(dir, "ok.tar.gz",
                              "add('top/README.md', b'hi\\n')\n"
                              "add('top/modules/a/main.tf', b'# a\\n')\n"
                              "add('top/run.sh', b'#!/bin/sh\\n', mode=0o755)\n"
                              "add('top/link.tf', kind=tarfile.SYMTYPE, link='modules/a/main.tf')\n");
  auto out = dir / "out";
  extract_archive(archive, out, "ok.tar.gz");
  auto root = resolve_subdir(out, "*");
  EXPECT_EQ(root.filename(), "top");
  auto files = list_package_files(root);
  ASSERT_EQ(files.size(), 4u);
  EXPECT_EQ(files[0].path, "README.md");
  EXPECT_EQ(files[1].path, "link.tf");  // a link to a file counts as that file, as HashDir does
  EXPECT_EQ(files[3].path, "run.sh");
  EXPECT_EQ(files[3].mode, 0755u);
  EXPECT_EQ(files[0].mode, 0644u);
  std::vector<std::pair<std::string, std::string>> hashed;
  for (const auto& file : files) hashed.emplace_back(file.path, file_digest_hex(file.file));
  EXPECT_EQ(lockfile::h1_hash(hashed), lockfile::h1_hash_of_dir(root));
}

TEST(ModuleArchive, GlobSubdirMustMatchExactlyOneDirectory) {
  TempDir dir;
  fs::create_directories(dir / "a" / "x");
  fs::create_directories(dir / "b");
  EXPECT_THROW((void)resolve_subdir(dir.path(), "*"), Error);
  EXPECT_EQ(resolve_subdir(dir.path(), "a/*"), dir / "a" / "x");
  EXPECT_THROW((void)resolve_subdir(dir.path(), "../etc"), Error);
  EXPECT_THROW((void)resolve_subdir(dir.path(), "missing"), Error);
}

// A zip whose entry "l" is a symbolic link (Unix mode in the external attributes) to "../..".
constexpr const char* kZipLinkOut =
    "i=zipfile.ZipInfo('l'); i.create_system=3; i.external_attr=0o120777<<16\n"
    "z.writestr(i, '../..')";
// A stored zip entry of 5 bytes whose headers (local and central) declare 2 GiB.
constexpr const char* kZipDeclaring2GiB =
    "z.writestr('big.tf', 'hello')\n"
    "z.close()\n"
    "b=bytearray(open(path,'rb').read())\n"
    "import struct\n"
    "struct.pack_into('<I', b, 22, 2<<30)\n"
    "c=b.find(b'PK\\x01\\x02'); struct.pack_into('<I', b, c+24, 2<<30)\n"
    "open(path,'wb').write(bytes(b))\n"
    "z=zipfile.ZipFile(io.BytesIO(), 'w')";

struct Hostile {
  const char* name;
  const char* script;
  const char* message;
};

class HostileArchive : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileArchive, IsRefusedAndLeavesNothing) {
  TempDir dir;
  auto archive = make_archive(dir, GetParam().name, GetParam().script);
  auto out = dir / "out";
  try {
    extract_archive(archive, out, GetParam().name);
    FAIL() << "extracted a hostile archive";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(GetParam().message), std::string::npos) << error.what();
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir / "escaped"));
  EXPECT_FALSE(fs::exists(dir.path().parent_path() / "escaped"));
}

INSTANTIATE_TEST_SUITE_P(
    Entries, HostileArchive,
    ::testing::Values(
        Hostile{"dotdot.tar.gz", "add('ok.tf')\nadd('../escaped')", "'..' component"},
        Hostile{"nested-dotdot.tar.gz", "add('a/../../escaped')", "'..' component"},
        Hostile{"absolute.tar.gz", "add('/tmp/escaped')", "absolute path"},
        Hostile{"link-out.tar.gz", "add('l', kind=tarfile.SYMTYPE, link='../..')", "escapes the package"},
        Hostile{"link-abs.tar.gz", "add('l', kind=tarfile.SYMTYPE, link='/etc')", "escapes the package"},
        Hostile{"through-link.tar.gz",
                "add('d/', kind=tarfile.DIRTYPE)\nadd('l', kind=tarfile.SYMTYPE, link='d')\nadd('l/x.tf')",
                "written through a link"},
        Hostile{"hardlink-out.tar.gz", "add('h', kind=tarfile.LNKTYPE, link='../escaped')", "'..' component"},
        Hostile{"fifo.tar.gz", "add('p', kind=tarfile.FIFOTYPE)", "special file"},
        Hostile{"device.tar.gz", "add('ok.tf')\nadd('dev/sda', kind=tarfile.BLKTYPE)", "special file"},
        Hostile{"dotdot.zip", "z.writestr('../escaped', 'x')", "'..' component"},
        Hostile{"absolute.zip", "z.writestr('/escaped', 'x')", "absolute path"},
        Hostile{"hardlink-abs.tar.gz", "add('h', kind=tarfile.LNKTYPE, link='/etc/passwd')", "absolute path"},
        Hostile{"link-out.zip", kZipLinkOut, "escapes the package"},
        Hostile{"oversize.zip", kZipDeclaring2GiB, "expands beyond 1 GiB (the limit for a module archive)"}),
    [](const auto& test_info) {
      std::string name = test_info.param.name;
      for (auto& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// ---- expansion caps and formats (docs/download.md "Module archives") ---------------------------

// Expects extract_archive to refuse `archive` with a message containing `message`, leaving nothing.
void expect_refused(const TempDir& dir, const fs::path& archive, const std::string& message,
                    const ArchiveLimits& limits = {}) {
  auto out = dir / "out";
  try {
    extract_archive(archive, out, archive.filename().string(), limits);
    ADD_FAILURE() << "extracted " << archive.filename();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find(archive.filename().string()), std::string::npos) << error.what();
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(ModuleArchive, ZipBombBeyondTheByteCapIsRefused) {
  TempDir dir;
  // 64 MiB of zeros deflate to about 64 KiB.
  auto bomb = make_archive(dir, "bomb.zip",
                           "z.writestr(zipfile.ZipInfo('zeros.tf'), b'\\0' * (64 << 20), compress_type=zipfile.ZIP_DEFLATED)");
  ASSERT_LT(fs::file_size(bomb), 1u << 20);
  ArchiveLimits limits;
  limits.max_bytes = 8u << 20;
  expect_refused(dir, bomb, "expands beyond 8 MiB (the limit for a module archive), at zeros.tf", limits);
}

TEST(ModuleArchive, ManyFilesTogetherBeyondTheByteCapAreRefused) {
  TempDir dir;
  // 64 files of 256 KiB: each under the cap, together twice over it.
  auto bomb = make_archive(dir, "many.tar.gz", "for i in range(64): add('f%02d.tf' % i, b'\\0' * (256 << 10))");
  ArchiveLimits limits;
  limits.max_bytes = 8u << 20;
  expect_refused(dir, bomb, "expands beyond 8 MiB", limits);
}

TEST(ModuleArchive, MoreEntriesThanTheCapAreRefused) {
  TempDir dir;
  auto bomb = make_archive(dir, "entries.tar.gz", "for i in range(300): add('d/f%03d.tf' % i, b'')");
  ArchiveLimits limits;
  limits.max_entries = 100;
  expect_refused(dir, bomb, "more than 100 entries", limits);
  // Under the cap it unpacks.
  limits.max_entries = 1000;
  extract_archive(bomb, dir / "ok", "entries.tar.gz", limits);
  EXPECT_TRUE(fs::exists(dir / "ok" / "d" / "f299.tf"));
}

TEST(ModuleArchive, ASizeDeclaredBeyondTheDefaultCapIsRefusedBeforeWriting) {
  TempDir dir;
  // A tar header that declares 2 TiB, followed by a little data: refused on the header alone.
  auto archive = dir / "huge.tar.gz";
  auto made = test::run({"python3", "-c",
                         "import gzip,sys,tarfile\n"
                         "i=tarfile.TarInfo('huge.tf'); i.size=2<<40\n"
                         "with gzip.open(sys.argv[1],'wb') as f: f.write(i.tobuf(format=tarfile.PAX_FORMAT) + b'\\0'*65536)\n",
                         archive.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  expect_refused(dir, archive, "expands beyond 1 GiB (the limit for a module archive), at huge.tf");
}

TEST(ModuleArchive, FormatsOtherThanZipAndTarAreRefused) {
  TempDir dir;
  // An ar archive (as Debian packages are made): libarchive could read it, a module is never one.
  auto archive = dir / "pkg.tar.gz";
  auto made = test::run({"python3", "-c",
                         "import sys\n"
                         "data=b'variable \"x\" {}\\n'\n"
                         "head=b'main.tf/'.ljust(16)+b'0'.ljust(12)+b'0'.ljust(6)+b'0'.ljust(6)+b'100644'.ljust(8)"
                         "+str(len(data)).encode().ljust(10)+b'`\\n'\n"
                         "open(sys.argv[1],'wb').write(b'!<arch>\\n'+head+data)\n",
                         archive.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  expect_refused(dir, archive, "as a zip or tar archive");
}

TEST(ModuleArchive, NotAnArchiveIsAnError) {
  TempDir dir;
  test::write_file(dir / "x.tar.gz", "this is not an archive");
  EXPECT_THROW(extract_archive(dir / "x.tar.gz", dir / "out", "x.tar.gz"), Error);
}

TEST(ModuleArchive, PackageLinkOutOfTheTreeIsRefused) {
  TempDir dir;
  fs::create_directories(dir / "pkg");
  test::write_file(dir / "secret", "x");
  fs::create_symlink("../secret", dir / "pkg" / "leak");
  EXPECT_THROW((void)list_package_files(dir / "pkg"), Error);
}

}  // namespace
}  // namespace podplane::fetch
