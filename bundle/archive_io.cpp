#include "bundle/archive_io.hpp"

#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>

#include "base/error.hpp"

namespace podplane::bundle::detail {

namespace {

constexpr std::uint64_t kUstarMaxSize = 077777777777ULL;  // 11 octal digits

std::uint64_t padded(std::uint64_t size) { return (size + 511) / 512 * 512; }

// libarchive's reason for the last failure, or `fallback`: archive_error_string() may be NULL.
std::string reason(archive* handle, const char* fallback) {
  const char* text = archive_error_string(handle);
  return text != nullptr ? text : fallback;
}

}  // namespace

std::uint64_t tar_entry_bytes(std::uint64_t size) {
  std::uint64_t bytes = 512 + padded(size);
  // A pax header (its own 512-byte header plus one block of records) carries the size.
  if (size > kUstarMaxSize) bytes += 1024;
  return bytes;
}

// ---------------------------------------------------------------------------------------
ArchiveWriter::ArchiveWriter(int fd, std::int64_t mtime, std::string where)
    : archive_(archive_write_new()), entry_(archive_entry_new()), mtime_(mtime), where_(std::move(where)) {
  if (archive_ == nullptr || entry_ == nullptr) throw Error("out of memory creating a tar writer");
  // pax_restricted writes plain ustar headers and adds pax records only when a value needs them.
  // Blocks of 64 KiB keep write(2) calls few; no padding after the end marker so the volume
  // size is exactly what the plan computed.
  if (archive_write_set_format_pax_restricted(archive_) != ARCHIVE_OK ||
      archive_write_add_filter_none(archive_) != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(archive_, 65536) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(archive_, 1) != ARCHIVE_OK ||
      archive_write_open_fd(archive_, fd) != ARCHIVE_OK) {
    std::string message = reason(archive_, "unknown error");
    archive_entry_free(entry_);
    archive_write_free(archive_);
    throw Error("cannot start writing " + where_ + ": " + message);
  }
}

ArchiveWriter::~ArchiveWriter() {
  archive_entry_free(entry_);
  // Without close() the archive stays without end marker: the caller discards the temp file.
  archive_write_free(archive_);
}

void ArchiveWriter::begin_file(std::string_view name, std::uint64_t size) {
  archive_entry_clear(entry_);
  archive_entry_copy_pathname(entry_, std::string(name).c_str());
  archive_entry_set_filetype(entry_, AE_IFREG);
  archive_entry_set_perm(entry_, 0444);
  archive_entry_set_size(entry_, static_cast<la_int64_t>(size));
  archive_entry_set_mtime(entry_, mtime_, 0);
  archive_entry_set_uid(entry_, 0);
  archive_entry_set_gid(entry_, 0);
  archive_entry_copy_uname(entry_, "root");
  archive_entry_copy_gname(entry_, "root");
  if (archive_write_header(archive_, entry_) != ARCHIVE_OK)
    throw Error("cannot write tar header of " + std::string(name) + " to " + where_ + ": " + reason(archive_, "no reason given"));
}

void ArchiveWriter::write(const void* data, std::size_t size) {
  la_ssize_t written = archive_write_data(archive_, data, size);
  if (written < 0 || static_cast<std::size_t>(written) != size)
    throw Error("cannot write to " + where_ + ": " +
                reason(archive_, "short write"));
}

void ArchiveWriter::add_file(std::string_view name, std::string_view content) {
  begin_file(name, content.size());
  if (!content.empty()) write(content.data(), content.size());
}

void ArchiveWriter::close() {
  if (closed_) return;
  closed_ = true;
  if (archive_write_close(archive_) != ARCHIVE_OK)
    throw Error("cannot finish " + where_ + ": " + reason(archive_, "no reason given"));
}

// ---------------------------------------------------------------------------------------
ArchiveReader::ArchiveReader(int fd, std::string where) : archive_(archive_read_new()), where_(std::move(where)) {
  if (archive_ == nullptr) throw Error("out of memory creating a tar reader");
  // Only uncompressed tar: a bundle never carries a compression filter, and accepting one
  // would let a small input expand without bound.
  if (archive_read_support_format_tar(archive_) != ARCHIVE_OK ||
      archive_read_support_filter_none(archive_) != ARCHIVE_OK ||
      archive_read_open_fd(archive_, fd, 65536) != ARCHIVE_OK) {
    std::string message = reason(archive_, "unknown error");
    archive_read_free(archive_);
    throw Error("cannot read " + where_ + " as a bundle (tar): " + message);
  }
}

ArchiveReader::~ArchiveReader() { archive_read_free(archive_); }

bool ArchiveReader::next(archive_entry*& entry) {
  int status = archive_read_next_header(archive_, &entry);
  if (status == ARCHIVE_EOF) return false;
  // ARCHIVE_WARN is refused too: libarchive warns about the very irregularities we reject.
  if (status != ARCHIVE_OK)
    throw Error("damaged bundle " + where_ + ": " +
                reason(archive_, "unreadable tar header"));
  return true;
}

bool ArchiveReader::read_block(const void*& data, std::size_t& size) {
  la_int64_t offset = 0;
  int status = archive_read_data_block(archive_, &data, &size, &offset);
  if (status == ARCHIVE_EOF) return false;
  if (status != ARCHIVE_OK)
    throw Error("damaged or truncated bundle " + where_ + ": " +
                reason(archive_, "read error"));
  return true;
}

void ArchiveReader::skip() {
  if (archive_read_data_skip(archive_) != ARCHIVE_OK)
    throw Error("damaged or truncated bundle " + where_ + ": " +
                reason(archive_, "read error"));
}

std::string ArchiveReader::read_all(std::uint64_t limit) {
  std::string content;
  const void* data = nullptr;
  std::size_t size = 0;
  while (read_block(data, size)) {
    if (content.size() + size > limit) throw Error("entry of " + where_ + " exceeds " + std::to_string(limit) + " bytes");
    content.append(static_cast<const char*>(data), size);
  }
  return content;
}

}  // namespace podplane::bundle::detail
