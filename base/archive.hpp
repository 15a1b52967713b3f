#pragma once
// libarchive, owned and checked in one place: Archive is one handle (a reader or a writer),
// freed with the matching call, whose check() turns any status but ARCHIVE_OK into a
// podplane::Error naming what was done and libarchive's reason (archive_error_string may be
// NULL: error_text() never is). Entry owns one archive_entry. No other file calls
// archive_read_new, archive_write_new or archive_error_string.
//
// What podplane reads from outside is read strictly, by the rules listed here once: the
// formats a reader accepts (Formats) and the names an entry may carry (relative_entry_name,
// link_stays_inside). Bundles and module packages both use them; each adds what its own
// contents may be (a bundle: plain files only; a package: directories and links inside it).
// ZipReader reads a zip's entries as Go's archive/zip lists them.
// Thread-compatible: one object per thread.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct archive;
struct archive_entry;

namespace podplane::libarchive {

enum class Direction { read, write };

// What a reader accepts; any other format or filter is refused when the archive is opened.
enum class Formats {
  // Uncompressed tar only: a bundle never carries a compression filter, and accepting one
  // would let a small input expand without bound.
  bundle_tar,
  // A module package: zip, or tar plain or through gzip, bzip2 or xz. Nothing else (no cpio,
  // iso9660, rar, 7z, ar, …): every extra reader is attack surface for no package anyone
  // publishes.
  module_package,
};

// Whether check() lets ARCHIVE_WARN pass. Readers never do: libarchive warns about the very
// irregularities a hostile archive is made of.
enum class Warnings { fail, pass };

// One archive_entry, freed on destruction. Error when libarchive cannot allocate one.
class Entry {
 public:
  Entry();
  ~Entry();
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  [[nodiscard]] archive_entry* get() const noexcept { return entry_; }

 private:
  archive_entry* entry_;
};

class Archive {
 public:
  // Receives what a writer opened with open_sink() produces. It may throw: the exception is
  // caught inside libarchive's callback, the libarchive call fails, and check() rethrows it.
  using Sink = std::function<void(const char* data, std::size_t size)>;
  // One block of an entry's data; `offset` is where it starts in the entry (sparse holes skip).
  struct Block {
    const void* data = nullptr;
    std::size_t size = 0;
    std::uint64_t offset = 0;
  };

  explicit Archive(Direction direction);  // Error when libarchive cannot allocate a handle
  // A reader that accepts `formats` and nothing else.
  [[nodiscard]] static Archive reader(Formats formats);
  ~Archive();
  Archive(Archive&& other) noexcept;
  Archive& operator=(Archive&& other) noexcept;
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  [[nodiscard]] archive* get() const noexcept { return handle_; }
  // Returns `status` when it is ARCHIVE_OK (or ARCHIVE_WARN with Warnings::pass); otherwise
  // rethrows what a sink threw, or throws "<doing>: <reason>".
  int check(int status, std::string_view doing, Warnings warnings = Warnings::fail) const;
  // libarchive's reason for the last failure on this handle, or `fallback` when it has none.
  [[nodiscard]] std::string error_text(std::string_view fallback = "no reason given") const;

  // Opens the reader on a file, or on a descriptor (not owned), in blocks of 64 KiB.
  void open_file(const std::filesystem::path& file, std::string_view doing);
  void open_fd(int fd, std::string_view doing);
  // Opens the writer on a descriptor (not owned) or on `sink`. Set the format first.
  void open_write_fd(int fd, std::string_view doing);
  void open_sink(Sink sink, std::string_view doing);

  // The next entry's header (valid until the next call), or nullptr after the last.
  [[nodiscard]] archive_entry* next_entry(std::string_view doing);
  // The current entry's next block, or nullopt at its end.
  [[nodiscard]] std::optional<Block> read_block(std::string_view doing);
  void skip_entry(std::string_view doing);

  void write_header(const Entry& entry, std::string_view doing, Warnings warnings = Warnings::fail);
  void write_data(const void* data, std::size_t size, std::string_view doing);  // all of it, or Error
  // Ends a writer (its end marker, its last block); a writer freed without close() leaves an
  // unfinished archive, which its caller discards.
  void close(std::string_view doing);

  struct SinkState;  // internal to archive.cpp: the sink and what it threw

 private:
  archive* handle_;
  Direction direction_;
  std::unique_ptr<SinkState> sink_;
};

// The header of a reproducible entry: the same fields give the same bytes whoever writes them
// and when (owner 0:0, the mtime given rather than the file's, no other metadata).
struct FixedHeader {
  enum class Type { file, directory };
  // Whether the header names its owner too: bundles say "root"/"root", module packages only 0:0.
  enum class OwnerNames { none, root };
  std::string_view path;
  Type type = Type::file;
  unsigned mode = 0444;
  std::uint64_t size = 0;  // a directory's is 0
  std::int64_t mtime = 0;
  OwnerNames owner_names = OwnerNames::none;
};

// Writes `header` through `writer`, reusing `entry` (cleared first).
void write_fixed_header(Archive& writer, const Entry& entry, const FixedHeader& header, std::string_view doing,
                        Warnings warnings = Warnings::fail);

// The path of an entry from outside, relative and '/'-separated ("" for the root, "./"), or an
// Error "refused entry '<raw>' in <where>: <why>" when it has no name, is absolute ("/x",
// "\x", "C:x") or has a ".." component. '\' separates too (zips made on Windows use it).
[[nodiscard]] std::string relative_entry_name(const char* raw, std::string_view where);

// True when a link's `target`, read from the directory of the entry `name`, stays inside the
// tree the entry belongs to (never absolute, never above the root on the way).
[[nodiscard]] bool link_stays_inside(std::string_view name, std::string_view target);

// The entries of a zip in central-directory order (the seekable reader, as Go's archive/zip;
// the streaming one trusts local headers, which may disagree). Names flagged UTF-8 are read
// as UTF-8 bytes whatever the process locale; '\' in names becomes '/'. A zip with no entries
// reads as empty. Any warning (bad CRC, inconsistent headers) is an Error.
// Entries are listed, and their headers read and checked, by libarchive. The bytes of a regular
// entry, stored or deflated, are read by default through libzip and inflated by ISA-L
// (zip_inflate.hpp), and checked against the central directory's CRC-32 and size; a zip libzip
// refuses or whose names libarchive rewrites, and any other entry, is read by libarchive alone.
// Inflater::libarchive reads every byte the old way (tests compare the two).
class ZipReader {
 public:
  enum class Inflater { isal, libarchive };
  explicit ZipReader(const std::filesystem::path& zip, Inflater inflater = Inflater::isal);
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  // The next entry's name, or nullopt after the last one.
  [[nodiscard]] std::optional<std::string> next();
  // The current entry's bytes, block by block (a symlink's bytes are its target's text).
  void read(const std::function<void(const void* data, std::size_t size)>& sink);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace podplane::libarchive
