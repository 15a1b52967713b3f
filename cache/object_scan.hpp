#pragma once
// Internal to cache/: the objects as the index lists them and as the disk holds them, read for
// deps verify, deps verify --repair, gc and prune (maintenance.cpp, gc.cpp). Not thread-safe.
#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/hex.hpp"
#include "cache/sqlite.hpp"

namespace podplane::cache {

// A sha256 digest as its 32 bytes: no allocation of its own, and half the size of its hex.
// Byte order sorts as the lower-case hex does.
struct RawDigest {
  std::array<unsigned char, 32> bytes{};

  // nullopt unless `hex` is a sha256 as we write it (is_sha256_hex).
  static std::optional<RawDigest> parse(std::string_view hex) {
    if (!is_sha256_hex(hex)) return std::nullopt;
    auto nibble = [](char c) { return static_cast<unsigned char>(c <= '9' ? c - '0' : c - 'a' + 10); };
    RawDigest digest;
    for (std::size_t i = 0; i < digest.bytes.size(); ++i) digest.bytes[i] = static_cast<unsigned char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
    return digest;
  }
  std::string hex() const { return to_hex(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())); }
  auto operator<=>(const RawDigest&) const = default;
};

// The objects table, sorted by digest, about 48 bytes an object (a 50,000-object store held
// 8 MiB in a map of hex strings). A row whose digest is not a sha256 (a damaged or hostile
// index) cannot name a file: it is kept aside in `malformed` for the caller to report.
class IndexedObjects {
 public:
  struct Object {
    RawDigest digest;
    std::int64_t size = 0;
    bool intact = false;  // deps verify: its file checked out
  };

  static IndexedObjects read(sqlite::Database& db) {
    IndexedObjects objects;
    sqlite::Statement count(db, "SELECT count(*) FROM objects");
    if (count.step()) objects.sorted_.reserve(static_cast<std::size_t>(count.integer(0)));
    sqlite::Statement select(db, "SELECT digest, size FROM objects ORDER BY digest");
    while (select.step()) {
      std::string text = select.text(0);
      if (auto digest = RawDigest::parse(text)) objects.sorted_.push_back({*digest, select.integer(1), false});
      else objects.malformed.push_back(std::move(text));
    }
    // ORDER BY compares the text; parse keeps that order, but a sort costs nothing when sorted.
    if (!std::is_sorted(objects.sorted_.begin(), objects.sorted_.end(), by_digest)) {
      std::sort(objects.sorted_.begin(), objects.sorted_.end(), by_digest);
    }
    return objects;
  }

  const Object* find(std::string_view hex) const {
    auto digest = RawDigest::parse(hex);
    if (!digest) return nullptr;
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(), Object{*digest}, by_digest);
    return it != sorted_.end() && it->digest == *digest ? &*it : nullptr;
  }
  bool contains(const RawDigest& digest) const {
    return std::binary_search(sorted_.begin(), sorted_.end(), Object{digest}, by_digest);
  }
  bool empty() const { return sorted_.empty() && malformed.empty(); }
  std::vector<Object>& all() { return sorted_; }
  const std::vector<Object>& all() const { return sorted_; }

  std::vector<std::string> malformed;  // digests of rows that are not a sha256

 private:
  static bool by_digest(const Object& a, const Object& b) { return a.digest < b.digest; }
  std::vector<Object> sorted_;
};

// Objects no row depends on (garbage), by digest, with their size: the index says it in one
// query instead of holding every referenced digest.
[[nodiscard]] std::vector<std::pair<std::string, std::int64_t>> unreferenced_objects(sqlite::Database& db);

// Object files on disk, by digest (sorted), plus anything in objects/ that is not an object
// file. Digests only (paths follow from them): a 50,000-object store would hold 50,000 paths.
struct DiskObjects {
  std::vector<RawDigest> files;
  std::vector<std::filesystem::path> strays;
};

[[nodiscard]] DiskObjects scan_objects(const std::filesystem::path& root);

// Whether a temp file in store/tmp is held (flock'ed) by a live writer.
[[nodiscard]] bool temp_file_in_use(const std::filesystem::path& file);
// A directory in store/tmp (not followed through a symlink): a run's scratch directory.
[[nodiscard]] bool is_scratch_directory(const std::filesystem::path& entry);
// The bytes of the files under `dir`, as far as they can be read.
[[nodiscard]] std::uint64_t bytes_under(const std::filesystem::path& dir);

}  // namespace podplane::cache
