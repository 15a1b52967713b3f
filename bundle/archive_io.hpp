#pragma once
// The bundle tar on base's libarchive handles (internal to bundle/). The writer emits
// reproducible ustar/pax entries (fixed owner and mtime, no padding beyond the end marker);
// the reader reads one uncompressed tar (libarchive::Formats::bundle_tar) from a file
// descriptor. Errors are podplane::Error naming the bundle.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "base/archive.hpp"

struct archive_entry;

namespace podplane::bundle::detail {

// Bytes a regular-file entry of `size` occupies in our tar: header + data padded to 512
// (+ a pax extended header when ustar's 8 GiB size field overflows).
std::uint64_t tar_entry_bytes(std::uint64_t size);
inline constexpr std::uint64_t kTarEndBytes = 1024;

class ArchiveWriter {
 public:
  // Writes to `fd` (not owned). `mtime` is stamped on every entry.
  ArchiveWriter(int fd, std::int64_t mtime, std::string where);
  ~ArchiveWriter();
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;

  void begin_file(std::string_view name, std::uint64_t size);
  void write(const void* data, std::size_t size);
  void add_file(std::string_view name, std::string_view content);
  void close();  // writes the end marker; must be called for a valid archive

 private:
  libarchive::Archive archive_{libarchive::Direction::write};
  libarchive::Entry entry_;
  std::int64_t mtime_;
  std::string where_;
  bool closed_ = false;
};

class ArchiveReader {
 public:
  ArchiveReader(int fd, std::string where);  // `fd` not owned
  ArchiveReader(const ArchiveReader&) = delete;
  ArchiveReader& operator=(const ArchiveReader&) = delete;

  // False at the end of the archive. The entry stays valid until the next call.
  [[nodiscard]] bool next(archive_entry*& entry);
  // Next block of the current entry's data; false at its end. Throws on read errors.
  [[nodiscard]] bool read_block(const void*& data, std::size_t& size);
  void skip();
  std::string read_all(std::uint64_t limit);  // the whole current entry, Error beyond limit
  const std::string& where() const { return where_; }

 private:
  libarchive::Archive archive_;
  std::string where_;
  std::string damaged_;  // "damaged or truncated bundle <where>", formed once, not per block
};

}  // namespace podplane::bundle::detail
