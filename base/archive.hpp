#pragma once
// libarchive, owned and checked in one place: Archive is one handle (a reader or a writer),
// freed with the matching call, whose check() turns any status but ARCHIVE_OK into a
// podplane::Error naming what was done and libarchive's reason (archive_error_string may be
// NULL: error_text() never is). ZipReader reads a zip's entries as Go's archive/zip lists them.
// Thread-compatible: one object per thread.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

struct archive;

namespace podplane::libarchive {

enum class Direction { read, write };

class Archive {
 public:
  explicit Archive(Direction direction);  // Error when libarchive cannot allocate a handle
  ~Archive();
  Archive(Archive&& other) noexcept;
  Archive& operator=(Archive&& other) noexcept;
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  [[nodiscard]] archive* get() const noexcept { return handle_; }
  // Returns `status` when it is ARCHIVE_OK; otherwise throws "<doing>: <reason>". A warning
  // (ARCHIVE_WARN) fails too: we never build on something libarchive had doubts about.
  int check(int status, std::string_view doing) const;
  // libarchive's reason for the last failure on this handle, or `fallback` when it has none.
  [[nodiscard]] std::string error_text(std::string_view fallback = "no reason given") const;

 private:
  archive* handle_;
  Direction direction_;
};

// The entries of a zip in central-directory order (the seekable reader, as Go's archive/zip;
// the streaming one trusts local headers, which may disagree). Names flagged UTF-8 are read
// as UTF-8 bytes whatever the process locale; '\' in names becomes '/'. A zip with no entries
// reads as empty. Any warning (bad CRC, inconsistent headers) is an Error.
class ZipReader {
 public:
  explicit ZipReader(const std::filesystem::path& zip);
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
