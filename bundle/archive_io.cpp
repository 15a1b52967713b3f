#include "bundle/archive_io.hpp"

#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>

#include "base/error.hpp"

namespace podplane::bundle::detail {

namespace {

constexpr std::uint64_t kUstarMaxSize = 077777777777ULL;  // 11 octal digits

std::uint64_t padded(std::uint64_t size) { return (size + 511) / 512 * 512; }

}  // namespace

std::uint64_t tar_entry_bytes(std::uint64_t size) {
  std::uint64_t bytes = 512 + padded(size);
  // A pax header (its own 512-byte header plus one block of records) carries the size.
  if (size > kUstarMaxSize) bytes += 1024;
  return bytes;
}

// ---------------------------------------------------------------------------------------
ArchiveWriter::ArchiveWriter(int fd, std::int64_t mtime, std::string where) : mtime_(mtime), where_(std::move(where)) {
  // pax_restricted writes plain ustar headers and adds pax records only when a value needs them.
  // Blocks of 64 KiB keep write(2) calls few; no padding after the end marker so the volume
  // size is exactly what the plan computed.
  const std::string doing = "cannot start writing " + where_;
  archive* handle = archive_.get();
  archive_.check(archive_write_set_format_pax_restricted(handle), doing);
  archive_.check(archive_write_add_filter_none(handle), doing);
  archive_.check(archive_write_set_bytes_per_block(handle, 65536), doing);
  archive_.check(archive_write_set_bytes_in_last_block(handle, 1), doing);
  archive_.open_write_fd(fd, doing);
}

// Without close() the archive stays without end marker: the caller discards the temp file.
ArchiveWriter::~ArchiveWriter() = default;

void ArchiveWriter::begin_file(std::string_view name, std::uint64_t size) {
  libarchive::FixedHeader header;
  header.path = name;
  header.mode = 0444;
  header.size = size;
  header.mtime = mtime_;
  header.owner_names = libarchive::FixedHeader::OwnerNames::root;
  libarchive::write_fixed_header(archive_, entry_, header, "cannot write tar header of " + std::string(name) + " to " + where_);
}

void ArchiveWriter::write(const void* data, std::size_t size) { archive_.write_data(data, size, "cannot write to " + where_); }

void ArchiveWriter::add_file(std::string_view name, std::string_view content) {
  begin_file(name, content.size());
  if (!content.empty()) write(content.data(), content.size());
}

void ArchiveWriter::close() {
  if (closed_) return;
  closed_ = true;
  archive_.close("cannot finish " + where_);
}

// ---------------------------------------------------------------------------------------
ArchiveReader::ArchiveReader(int fd, std::string where)
    : archive_(libarchive::Archive::reader(libarchive::Formats::bundle_tar)),
      where_(std::move(where)),
      damaged_("damaged or truncated bundle " + where_) {
  archive_.open_fd(fd, "cannot read " + where_ + " as a bundle (tar)");
}

bool ArchiveReader::next(archive_entry*& entry) {
  // ARCHIVE_WARN is refused too: libarchive warns about the very irregularities we reject.
  entry = archive_.next_entry("damaged bundle " + where_);
  return entry != nullptr;
}

bool ArchiveReader::read_block(const void*& data, std::size_t& size) {
  auto block = archive_.read_block(damaged_);
  if (!block) return false;
  data = block->data;
  size = block->size;
  return true;
}

void ArchiveReader::skip() { archive_.skip_entry(damaged_); }

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
