// Digests, zh and h1 against the literal vectors of docs/protocols.md §4.4, and the
// HashZip/HashDir edge cases of §4.3.
#include "base/digest.hpp"
#include "base/hex.hpp"
#include "lockfile/hash.hpp"

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "tests/support/zip_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::lockfile {
namespace {

using test::TempDir;
using test::ZipEntry;
using test::make_zip;
using test::write_file;

constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr const char* kNullPlaceholder =
    "# This is just a placeholder file for discovery testing, not a real provider plugin.\n";

TEST(Digest, Sha256AndSha512OfKnownInputs) {
  EXPECT_EQ(sha256_hex(""), kEmptySha256);
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Hasher sha512(DigestAlgorithm::sha512);
  sha512.update("abc");
  EXPECT_EQ(sha512.finish_hex(),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
}

TEST(Digest, StreamingEqualsOneShot) {
  Hasher hasher;
  std::string whole;
  for (int i = 0; i < 1000; ++i) {
    std::string piece(static_cast<std::size_t>(i % 97), static_cast<char>('a' + i % 26));
    hasher.update(piece);
    whole += piece;
  }
  EXPECT_EQ(hasher.finish_hex(), sha256_hex(whole));
}

TEST(Digest, FinishedHasherRefusesMoreInput) {
  Hasher hasher;
  (void)hasher.finish_raw();
  EXPECT_THROW(hasher.update("x"), Error);
  EXPECT_THROW((void)hasher.finish_hex(), Error);
}

TEST(Digest, FileDigestMatchesAndMissingFileIsAnError) {
  TempDir dir;
  write_file(dir / "f", "abc");
  EXPECT_EQ(file_digest_hex(dir / "f"), sha256_hex("abc"));
  EXPECT_EQ(zh_hash_of_file(dir / "f"), "zh:" + sha256_hex("abc"));
  EXPECT_THROW((void)file_digest_hex(dir / "missing"), Error);
}

TEST(TypedDigest, ParsesAndRendersBothAlgorithms) {
  auto digest = TypedDigest::parse(std::string("sha256:") + kEmptySha256);
  EXPECT_EQ(digest.algorithm, DigestAlgorithm::sha256);
  EXPECT_EQ(digest.hex, kEmptySha256);
  EXPECT_EQ(digest.str(), std::string("sha256:") + kEmptySha256);
  std::string hex512(128, 'a');
  EXPECT_EQ(TypedDigest::parse("sha512:" + hex512).algorithm, DigestAlgorithm::sha512);
}

TEST(TypedDigest, RejectsOtherAlgorithmsAndBadHex) {
  EXPECT_THROW(TypedDigest::parse("md5:d41d8cd98f00b204e9800998ecf8427e"), Error);
  EXPECT_THROW(TypedDigest::parse("sha256:abc"), Error);
  EXPECT_THROW(TypedDigest::parse(std::string("sha256:") + std::string(64, 'G')), Error);
  EXPECT_THROW(TypedDigest::parse(std::string("sha512:") + std::string(64, 'a')), Error);
  EXPECT_THROW(TypedDigest::parse(kEmptySha256), Error);
}

TEST(Base64, StandardPaddedAlphabet) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("\xfb\xff"), "+/8=");
}

// §4.4 vector 1: dirhash TestHash1.
TEST(H1, DirhashTestHash1Vector) {
  EXPECT_EQ(h1_hash({{"xyz", sha256_hex("data for xyz")}, {"abc", sha256_hex("data for abc")}}),
            "h1:EP6WfDoQTSk9klnxcjriWJOGztueJUywHNmWeq+efB8=");
  EXPECT_EQ(sha256_hex("data for abc"), "c807b6b431cbbfff4dcc032527d0e106e7f76e6aa20b3cab70fa00154144f351");
}

TEST(H1, DirhashPrefixVariantFromZipAndDir) {
  TempDir dir;
  make_zip(dir / "p.zip", {{"prefix/xyz", "data for xyz"}, {"prefix/abc", "data for abc"}});
  EXPECT_EQ(h1_hash_of_zip(dir / "p.zip"), "h1:rLyfpGMAgqOnGE2aKOY5Xb6cOc0/YQhPjHBHBwkblhs=");
  write_file(dir / "tree/prefix/abc", "data for abc");
  write_file(dir / "tree/prefix/xyz", "data for xyz");
  EXPECT_EQ(h1_hash_of_dir(dir / "tree"), "h1:rLyfpGMAgqOnGE2aKOY5Xb6cOc0/YQhPjHBHBwkblhs=");
}

// §4.4 vector 2: Terraform's package_authentication_test.go.
TEST(H1, TerraformNullPlaceholderVector) {
  TempDir dir;
  ASSERT_EQ(std::string(kNullPlaceholder).size(), 85u);
  write_file(dir / "pkg/terraform-provider-null", kNullPlaceholder);
  EXPECT_EQ(h1_hash_of_dir(dir / "pkg"), "h1:qjsREM4DqEWECD43FcPqddZ9oxCG+IaMTxvWPciS05g=");
  make_zip(dir / "null.zip", {{"terraform-provider-null", kNullPlaceholder}});
  EXPECT_EQ(h1_hash_of_zip(dir / "null.zip"), "h1:qjsREM4DqEWECD43FcPqddZ9oxCG+IaMTxvWPciS05g=");
}

// §4.4 vector 3: the empty package.
TEST(H1, EmptyPackageVector) {
  TempDir dir;
  EXPECT_EQ(h1_hash({}), "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
  std::filesystem::create_directories(dir / "empty/sub");
  EXPECT_EQ(h1_hash_of_dir(dir / "empty"), "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
  make_zip(dir / "empty.zip", {});
  EXPECT_EQ(h1_hash_of_zip(dir / "empty.zip"), "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
}

// §4.4 vector 4: a directory entry makes HashZip differ from HashDir of the extracted tree.
TEST(H1, DirectoryEntryVector) {
  TempDir dir;
  make_zip(dir / "flat.zip", {{"LICENSE", "MIT\n"}, {"terraform-provider-demo_v1.0.0", "hello\n"}});
  EXPECT_EQ(h1_hash_of_zip(dir / "flat.zip"), "h1:mC2y7VgNBWb3wR/bC2X7ADvSGaJNwBCOxIEiDbCt16U=");
  write_file(dir / "flat/LICENSE", "MIT\n");
  write_file(dir / "flat/terraform-provider-demo_v1.0.0", "hello\n");
  EXPECT_EQ(h1_hash_of_dir(dir / "flat"), "h1:mC2y7VgNBWb3wR/bC2X7ADvSGaJNwBCOxIEiDbCt16U=");

  make_zip(dir / "docs.zip", {{"LICENSE", "MIT\n"},
                              {"docs/", "", ZipEntry::Kind::directory},
                              {"docs/x.md", "doc\n"},
                              {"terraform-provider-demo_v1.0.0", "hello\n"}});
  EXPECT_EQ(h1_hash_of_zip(dir / "docs.zip"), "h1:3FrnnRPxGLD7qpLAtuOK6Ri0SF+PZrqC2/0Z9FebQ4Y=");
  write_file(dir / "flat/docs/x.md", "doc\n");
  EXPECT_EQ(h1_hash_of_dir(dir / "flat"), "h1:dVgi8i4tIQO7In5tIn18oL2hIT/Je5iRspMS8+Em3uk=");
}

TEST(H1, DuplicateNamesCountTwiceWithTheLastContent) {
  TempDir dir;
  make_zip(dir / "dup.zip", {{"a", "first"}, {"b", "bee"}, {"a", "second"}});
  EXPECT_EQ(h1_hash_of_zip(dir / "dup.zip"),
            h1_hash({{"a", sha256_hex("second")}, {"a", sha256_hex("second")}, {"b", sha256_hex("bee")}}));
}

TEST(H1, NamesAreTakenVerbatim) {
  TempDir dir;
  make_zip(dir / "odd.zip", {{"./a", "x"}, {"d\xc3\xa9j\xc3\xa0/\xe2\x9c\x93", "unicode", ZipEntry::Kind::file, false}});
  EXPECT_EQ(h1_hash_of_zip(dir / "odd.zip"),
            h1_hash({{"./a", sha256_hex("x")}, {"d\xc3\xa9j\xc3\xa0/\xe2\x9c\x93", sha256_hex("unicode")}}));
}

TEST(H1, SymlinkEntryHashesItsTargetText) {
  TempDir dir;
  make_zip(dir / "link.zip", {{"target", "data"}, {"link", "target", ZipEntry::Kind::symlink, false}});
  EXPECT_EQ(h1_hash_of_zip(dir / "link.zip"), h1_hash({{"target", sha256_hex("data")}, {"link", sha256_hex("target")}}));
}

TEST(H1, NewlineInNameIsRejected) {
  TempDir dir;
  EXPECT_THROW((void)h1_hash({{"a\nb", kEmptySha256}}), Error);
  make_zip(dir / "nl.zip", {{"a\nb", "x"}});
  try {
    (void)h1_hash_of_zip(dir / "nl.zip");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("newline"), std::string::npos) << error.what();
  }
}

TEST(H1, NotAZipIsAClearError) {
  TempDir dir;
  write_file(dir / "bad.zip", "this is not a zip file at all");
  try {
    (void)h1_hash_of_zip(dir / "bad.zip");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("bad.zip"), std::string::npos) << error.what();
  }
  EXPECT_THROW((void)h1_hash_of_zip(dir / "missing.zip"), Error);
}

TEST(H1, CorruptedEntryIsAnError) {
  TempDir dir;
  make_zip(dir / "c.zip", {{"f", std::string(1000, 'z'), ZipEntry::Kind::file, false}});
  std::string bytes = test::read_file(dir / "c.zip");
  auto at = bytes.find(std::string(100, 'z'));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 10] = 'y';  // stored data no longer matches the CRC
  write_file(dir / "c.zip", bytes);
  EXPECT_THROW((void)h1_hash_of_zip(dir / "c.zip"), Error);
}

TEST(H1Dir, SymlinkToFileHashesTargetContentAndDirLinkFails) {
  TempDir dir;
  write_file(dir / "pkg/real", "content");
  std::filesystem::create_symlink("real", dir / "pkg/alias");
  EXPECT_EQ(h1_hash_of_dir(dir / "pkg"),
            h1_hash({{"alias", sha256_hex("content")}, {"real", sha256_hex("content")}}));
  std::filesystem::create_directories(dir / "other");
  std::filesystem::create_directory_symlink(dir / "other", dir / "pkg/sub");
  EXPECT_THROW((void)h1_hash_of_dir(dir / "pkg"), Error);
}

TEST(H1Dir, DanglingSymlinkAndMissingDirAreErrors) {
  TempDir dir;
  write_file(dir / "pkg/a", "a");
  std::filesystem::create_symlink("nowhere", dir / "pkg/broken");
  EXPECT_THROW((void)h1_hash_of_dir(dir / "pkg"), Error);
  EXPECT_THROW((void)h1_hash_of_dir(dir / "missing"), Error);
  write_file(dir / "file", "x");
  EXPECT_THROW((void)h1_hash_of_dir(dir / "file"), Error);
}

TEST(H1Dir, SymlinkedRootIsResolved) {
  TempDir dir;
  write_file(dir / "real/f", "x");
  std::filesystem::create_directory_symlink(dir / "real", dir / "link");
  EXPECT_EQ(h1_hash_of_dir(dir / "link"), h1_hash_of_dir(dir / "real"));
}

}  // namespace
}  // namespace podplane::lockfile
