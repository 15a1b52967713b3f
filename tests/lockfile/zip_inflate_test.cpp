// The fast path of zip contents (libzip's raw entries inflated by ISA-L, base/zip_inflate.hpp)
// against libarchive's own inflate: the same bytes, the same h1, on every kind of zip the hash
// tests use, and a clear error, never a hash, on a corrupt, truncated or understated zip.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/archive.hpp"
#include "base/error.hpp"
#include "base/zip_inflate.hpp"
#include "lockfile/hash.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/zip_fixture.hpp"

namespace podplane::test {
namespace {

namespace fs = std::filesystem;
using Kind = ZipEntry::Kind;
using Inflater = libarchive::ZipReader::Inflater;

// Like a Go binary: runs of pseudo-random bytes (stored blocks when deflated) between runs
// drawn from a few common byte values (Huffman blocks with long matches).
std::string binary_like(std::size_t size, std::uint32_t seed) {
  std::string out(size, '\0');
  std::uint32_t x = seed;
  for (std::size_t i = 0; i < size; ++i) {
    x = x * 1664525u + 1013904223u;
    const bool random_run = (i / 65536) % 2 == 0;
    out[i] = static_cast<char>(random_run ? (x >> 24) : "\x48\x89\xe5\x00\x0f\x1f\xc3\x90"[(x >> 29) & 7]);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> read_all(const fs::path& zip, Inflater inflater) {
  std::vector<std::pair<std::string, std::string>> entries;
  libarchive::ZipReader reader(zip, inflater);
  while (auto name = reader.next()) {
    std::string bytes;
    reader.read([&](const void* data, std::size_t size) { bytes.append(static_cast<const char*>(data), size); });
    entries.emplace_back(std::move(*name), std::move(bytes));
  }
  return entries;
}

std::vector<std::pair<std::string, std::vector<ZipEntry>>> fixture_zips() {
  return {
      {"provider", {{"terraform-provider-demo_v1.0.0_x5", binary_like(3 << 20, 7)}, {"LICENSE", "MPL\n"}, {"README.md", "# demo\n"}}},
      {"stored_provider", {{"terraform-provider-demo_v1.0.0_x5", binary_like(1 << 20, 9), Kind::file, false}}},
      {"empty", {}},
      {"empty_entry", {{"empty", ""}, {"also_empty", "", Kind::file, false}}},
      {"prefix", {{"prefix/xyz", "data for xyz"}, {"prefix/abc", "data for abc"}}},
      {"directories", {{"LICENSE", "MIT\n"}, {"docs/", "", Kind::directory}, {"docs/x.md", "doc\n"}}},
      {"duplicates", {{"a", "first"}, {"b", "bee"}, {"a", "second"}}},
      {"odd_names", {{"./a", "x"}, {"d\xc3\xa9j\xc3\xa0/\xe2\x9c\x93", "unicode", Kind::file, false}, {"back\\slash", "b"}}},
      {"symlink", {{"target", "data"}, {"link", "target", Kind::symlink, false}}},
  };
}

TEST(ZipInflate, BothInflatersGiveTheSameBytesAndH1ForEveryFixtureZip) {
  TempDir dir;
  for (const auto& [name, entries] : fixture_zips()) {
    const fs::path zip = dir / (name + ".zip");
    make_zip(zip, entries);
    EXPECT_EQ(read_all(zip, Inflater::isal), read_all(zip, Inflater::libarchive)) << name;
    EXPECT_EQ(lockfile::h1_hash_of_zip(zip, Inflater::isal), lockfile::h1_hash_of_zip(zip, Inflater::libarchive)) << name;
  }
  // Info-ZIP's zip: a streamed entry (a data descriptor after its data, as Go writes provider
  // zips) and a forced zip64 one.
  write_file(dir / "src/terraform-provider-x_v1.0.0", binary_like(1 << 20, 11));
  make_zip_with_infozip(dir / "src", dir / "zip64.zip", {"-fz"}, {"terraform-provider-x_v1.0.0"});
  make_zip_with_infozip(dir / "src", dir / "streamed.zip", {}, {"-"}, binary_like(300000, 13));
  for (const char* name : {"zip64.zip", "streamed.zip"}) {
    EXPECT_EQ(read_all(dir / name, Inflater::isal), read_all(dir / name, Inflater::libarchive)) << name;
    EXPECT_NE(libzip::InflatingZip::open(dir / name), nullptr) << name << ": the fast path should take it";
  }
}

TEST(ZipInflate, PlainZipsTakeTheFastPathAndOthersTheOldOne) {
  TempDir dir;
  make_zip(dir / "plain.zip", {{"bin", binary_like(100000, 3)}, {"LICENSE", "MPL\n", Kind::file, false}});
  auto plain = libzip::InflatingZip::open(dir / "plain.zip");
  ASSERT_NE(plain, nullptr);
  EXPECT_TRUE(plain->plain_entry("bin", 100000).has_value());
  EXPECT_TRUE(plain->plain_entry("LICENSE", 4).has_value());
  EXPECT_FALSE(plain->plain_entry("bin", 99999).has_value()) << "another size than libarchive read";
  EXPECT_FALSE(plain->plain_entry("missing", 0).has_value());
  // Duplicate names, and names libarchive rewrites, keep libarchive's reading alone.
  make_zip(dir / "dup.zip", {{"a", "first"}, {"a", "second"}});
  EXPECT_EQ(libzip::InflatingZip::open(dir / "dup.zip"), nullptr);
  make_zip(dir / "backslash.zip", {{"a\\b", "x"}});
  EXPECT_EQ(libzip::InflatingZip::open(dir / "backslash.zip"), nullptr);
  make_zip(dir / "utf8.zip", {{"d\xc3\xa9j\xc3\xa0", "x"}});
  EXPECT_EQ(libzip::InflatingZip::open(dir / "utf8.zip"), nullptr);
  write_file(dir / "not.zip", "this is not a zip file at all");
  EXPECT_EQ(libzip::InflatingZip::open(dir / "not.zip"), nullptr);
}

// A deflated entry whose compressed bytes are overwritten in the middle (its CRC and sizes
// untouched): an Error from both inflaters naming the zip and the entry.
TEST(ZipInflate, CorruptDeflateDataIsAClearError) {
  TempDir dir;
  const std::string content = binary_like(2 << 20, 5);
  make_zip(dir / "c.zip", {{"terraform-provider-c", content}});
  std::string bytes = read_file(dir / "c.zip");
  ASSERT_GT(bytes.size(), 600000u);
  for (std::size_t i = 0; i < 4096; ++i) bytes[bytes.size() / 2 + i] = static_cast<char>(i * 131 + 7);
  write_file(dir / "c.zip", bytes);
  for (Inflater inflater : {Inflater::isal, Inflater::libarchive}) {
    try {
      (void)lockfile::h1_hash_of_zip(dir / "c.zip", inflater);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find((dir / "c.zip").string()), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("terraform-provider-c"), std::string::npos) << error.what();
    }
  }
  // The fast path read it (its own words), not libarchive after a silent fallback.
  try {
    (void)lockfile::h1_hash_of_zip(dir / "c.zip");
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_TRUE(what.find("deflate") != std::string::npos || what.find("CRC-32") != std::string::npos ||
                what.find("central directory") != std::string::npos)
        << what;
  }
}

TEST(ZipInflate, TruncatedZipIsAClearError) {
  TempDir dir;
  make_zip(dir / "whole.zip", {{"terraform-provider-t", binary_like(1 << 20, 17)}, {"LICENSE", "MPL\n"}});
  const std::string bytes = read_file(dir / "whole.zip");
  for (std::size_t keep : {bytes.size() / 2, bytes.size() - 30, std::size_t{100}}) {
    write_file(dir / "cut.zip", bytes.substr(0, keep));
    for (Inflater inflater : {Inflater::isal, Inflater::libarchive}) {
      try {
        (void)lockfile::h1_hash_of_zip(dir / "cut.zip", inflater);
        ADD_FAILURE() << "expected an error for " << keep << " bytes";
      } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("cut.zip"), std::string::npos) << error.what();
      }
    }
  }
}

// A zip that says its entry is smaller than it inflates to (a bomb understating its size):
// the fast path stops at the stated size instead of inflating all of it.
TEST(ZipInflate, UnderstatedSizeStopsTheInflate) {
  TempDir dir;
  const std::string content(4 << 20, 'z');  // 4 MiB of one byte: a few KiB deflated
  make_zip(dir / "bomb.zip", {{"f", content}});
  std::string bytes = read_file(dir / "bomb.zip");
  auto put_le32 = [&](std::size_t at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  };
  ASSERT_EQ(bytes.compare(0, 4, "PK\x03\x04"), 0);
  put_le32(22, 4096);  // the local header's uncompressed size
  const auto central = bytes.find("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  put_le32(central + 24, 4096);  // the central directory's
  write_file(dir / "bomb.zip", bytes);
  ASSERT_NE(libzip::InflatingZip::open(dir / "bomb.zip"), nullptr);
  for (Inflater inflater : {Inflater::isal, Inflater::libarchive}) {
    EXPECT_THROW((void)lockfile::h1_hash_of_zip(dir / "bomb.zip", inflater), Error);
  }
  std::uint64_t seen = 0;
  libarchive::ZipReader reader(dir / "bomb.zip");
  ASSERT_TRUE(reader.next().has_value());
  try {
    reader.read([&](const void*, std::size_t size) { seen += size; });
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("beyond its size"), std::string::npos) << error.what();
  }
  EXPECT_LE(seen, 4096u) << "no byte past the stated size reaches the reader";
}

}  // namespace
}  // namespace podplane::test
