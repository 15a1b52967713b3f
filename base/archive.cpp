#include "base/archive.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>

#include <memory>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "base/zip_inflate.hpp"

namespace podplane::libarchive {
namespace {

constexpr std::size_t kBlockSize = 64 * 1024;

void free_handle(archive* handle, Direction direction) noexcept {
  if (handle == nullptr) return;
  if (direction == Direction::read) archive_read_free(handle);
  else archive_write_free(handle);
}

// Switches this thread to a UTF-8 LC_CTYPE while alive. libarchive converts zip names flagged
// as UTF-8 into the current locale's charset; under the "C" locale that mangles every
// non-ASCII name into '?'. Go takes names as raw bytes, so we want UTF-8 → UTF-8
// (unflagged names are copied raw whatever the locale).
class ScopedUtf8Locale {
 public:
  ScopedUtf8Locale() : utf8_(newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0))) {
    if (utf8_ != static_cast<locale_t>(0)) previous_ = uselocale(utf8_);
  }
  ~ScopedUtf8Locale() {
    if (utf8_ != static_cast<locale_t>(0)) {
      uselocale(previous_);
      freelocale(utf8_);
    }
  }
  ScopedUtf8Locale(const ScopedUtf8Locale&) = delete;
  ScopedUtf8Locale& operator=(const ScopedUtf8Locale&) = delete;

 private:
  locale_t utf8_;
  locale_t previous_ = static_cast<locale_t>(0);
};

// True when libarchive's streaming zip reader sees a well-formed archive with no entries
// (only an end-of-central-directory record).
bool is_empty_zip(const std::filesystem::path& zip) {
  Archive reader(Direction::read);
  archive_entry* entry = nullptr;
  return archive_read_support_format_zip_streamable(reader.get()) == ARCHIVE_OK &&
         archive_read_open_filename(reader.get(), zip.c_str(), kBlockSize) == ARCHIVE_OK &&
         archive_read_next_header(reader.get(), &entry) == ARCHIVE_EOF;
}

}  // namespace

struct Archive::SinkState {
  Sink sink;
  std::exception_ptr error;  // what the sink threw, kept until check() rethrows it
};

namespace {

// libarchive's write callback: no exception may cross it, so one is stored and the write fails.
la_ssize_t write_to_sink(archive*, void* context, const void* data, size_t size) noexcept {
  auto* state = static_cast<Archive::SinkState*>(context);
  try {
    state->sink(static_cast<const char*>(data), size);
    return static_cast<la_ssize_t>(size);
  } catch (...) {
    state->error = std::current_exception();
    return -1;
  }
}

// Splits on '/' and '\\' into non-empty components.
std::vector<std::string_view> components(std::string_view name) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '/' || name[i] == '\\') {
      if (i > start) out.push_back(name.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace

Entry::Entry() : entry_(archive_entry_new()) {
  if (entry_ == nullptr) throw Error("libarchive cannot allocate an entry (out of memory)");
}

Entry::~Entry() { archive_entry_free(entry_); }

Archive::Archive(Direction direction)
    : handle_(direction == Direction::read ? archive_read_new() : archive_write_new()), direction_(direction) {
  if (handle_ == nullptr) throw Error("libarchive cannot allocate a handle (out of memory)");
}

Archive Archive::reader(Formats formats) {
  Archive reader(Direction::read);
  archive* handle = reader.get();
  switch (formats) {
    case Formats::bundle_tar:
      reader.check(archive_read_support_format_tar(handle), "cannot set up a tar reader");
      reader.check(archive_read_support_filter_none(handle), "cannot set up a tar reader");
      break;
    case Formats::module_package:
      reader.check(archive_read_support_format_zip(handle), "cannot set up a zip reader");
      reader.check(archive_read_support_format_tar(handle), "cannot set up a tar reader");
      // ARCHIVE_WARN: the filter runs through an external program; still supported.
      for (int status : {archive_read_support_filter_gzip(handle), archive_read_support_filter_bzip2(handle),
                         archive_read_support_filter_xz(handle)}) {
        reader.check(status, "cannot set up a decompressing reader", Warnings::pass);
      }
      break;
  }
  return reader;
}

Archive::~Archive() { free_handle(handle_, direction_); }

Archive::Archive(Archive&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), direction_(other.direction_), sink_(std::move(other.sink_)) {}

Archive& Archive::operator=(Archive&& other) noexcept {
  if (this != &other) {
    free_handle(handle_, direction_);
    handle_ = std::exchange(other.handle_, nullptr);
    direction_ = other.direction_;
    sink_ = std::move(other.sink_);
  }
  return *this;
}

int Archive::check(int status, std::string_view doing, Warnings warnings) const {
  if (status == ARCHIVE_OK || (status == ARCHIVE_WARN && warnings == Warnings::pass)) return status;
  if (sink_ != nullptr && sink_->error != nullptr) std::rethrow_exception(std::exchange(sink_->error, nullptr));
  throw Error(std::string(doing) + ": " + error_text());
}

std::string Archive::error_text(std::string_view fallback) const {
  const char* text = handle_ != nullptr ? archive_error_string(handle_) : nullptr;
  return text != nullptr ? std::string(text) : std::string(fallback);
}

void Archive::open_file(const std::filesystem::path& file, std::string_view doing) {
  check(archive_read_open_filename(handle_, file.c_str(), kBlockSize), doing);
}

void Archive::open_fd(int fd, std::string_view doing) { check(archive_read_open_fd(handle_, fd, kBlockSize), doing); }

void Archive::open_write_fd(int fd, std::string_view doing) { check(archive_write_open_fd(handle_, fd), doing); }

void Archive::open_sink(Sink sink, std::string_view doing) {
  sink_ = std::make_unique<SinkState>();
  sink_->sink = std::move(sink);
  check(archive_write_open(handle_, sink_.get(), nullptr, write_to_sink, nullptr), doing);
}

archive_entry* Archive::next_entry(std::string_view doing) {
  archive_entry* entry = nullptr;
  int status = archive_read_next_header(handle_, &entry);
  if (status == ARCHIVE_EOF) return nullptr;
  check(status, doing);
  return entry;
}

std::optional<Archive::Block> Archive::read_block(std::string_view doing) {
  Block block;
  la_int64_t offset = 0;
  int status = archive_read_data_block(handle_, &block.data, &block.size, &offset);
  if (status == ARCHIVE_EOF) return std::nullopt;
  check(status, doing);
  if (offset < 0) throw Error(std::string(doing) + ": a block at a negative offset");
  block.offset = static_cast<std::uint64_t>(offset);
  return block;
}

void Archive::skip_entry(std::string_view doing) { check(archive_read_data_skip(handle_), doing); }

void Archive::write_header(const Entry& entry, std::string_view doing, Warnings warnings) {
  check(archive_write_header(handle_, entry.get()), doing, warnings);
}

void Archive::write_data(const void* data, std::size_t size, std::string_view doing) {
  la_ssize_t written = archive_write_data(handle_, data, size);
  if (written >= 0 && static_cast<std::size_t>(written) == size) return;
  check(written < 0 ? ARCHIVE_FATAL : ARCHIVE_OK, doing);
  throw Error(std::string(doing) + ": short write (" + std::to_string(written) + " of " + std::to_string(size) + " bytes)");
}

void Archive::close(std::string_view doing) { check(archive_write_close(handle_), doing); }

void write_fixed_header(Archive& writer, const Entry& entry, const FixedHeader& header, std::string_view doing,
                        Warnings warnings) {
  archive_entry* e = entry.get();
  archive_entry_clear(e);
  archive_entry_copy_pathname(e, std::string(header.path).c_str());
  bool directory = header.type == FixedHeader::Type::directory;
  archive_entry_set_filetype(e, directory ? AE_IFDIR : AE_IFREG);
  archive_entry_set_perm(e, header.mode);
  archive_entry_set_size(e, directory ? 0 : static_cast<la_int64_t>(header.size));
  archive_entry_set_mtime(e, header.mtime, 0);
  archive_entry_set_uid(e, 0);
  archive_entry_set_gid(e, 0);
  if (header.owner_names == FixedHeader::OwnerNames::root) {
    archive_entry_copy_uname(e, "root");
    archive_entry_copy_gname(e, "root");
  }
  writer.write_header(entry, doing, warnings);
}

std::string relative_entry_name(const char* raw, std::string_view where) {
  auto refuse = [&](std::string_view why) {
    throw Error("refused entry '" + std::string(raw != nullptr ? raw : "") + "' in " + std::string(where) + ": " +
                std::string(why));
  };
  if (raw == nullptr || *raw == '\0') refuse("entry without a name");
  std::string_view name(raw);
  if (name.front() == '/' || name.front() == '\\' || (name.size() > 1 && name[1] == ':')) refuse("absolute path");
  std::string joined;
  for (auto part : components(name)) {
    if (part == ".") continue;
    if (part == "..") refuse("a '..' component");
    if (!joined.empty()) joined += '/';
    joined += part;
  }
  return joined;
}

bool link_stays_inside(std::string_view name, std::string_view target) {
  if (target.empty() || target.front() == '/' || target.front() == '\\') return false;
  auto parts = components(name);
  if (!parts.empty()) parts.pop_back();  // the link's own name
  for (auto part : components(target)) {
    if (part == ".") continue;
    if (part == "..") {
      if (parts.empty()) return false;
      parts.pop_back();
    } else {
      parts.push_back(part);
    }
  }
  return true;
}

struct ZipReader::Impl {
  ScopedUtf8Locale utf8_names;  // held while libarchive converts names
  Archive reader{Direction::read};
  std::string where;
  bool empty = false;
  archive_entry* entry = nullptr;
  std::string name;
  // The bytes of plain entries, through libzip and ISA-L; null when the zip is read the old way.
  std::unique_ptr<libzip::InflatingZip> inflating;
};

ZipReader::ZipReader(const std::filesystem::path& zip, Inflater inflater) : impl_(new Impl) {
  try {
    impl_->where = zip.string();
    archive* handle = impl_->reader.get();
    impl_->reader.check(archive_read_support_format_zip_seekable(handle), "cannot set up a zip reader");
    if (archive_read_open_filename(handle, zip.c_str(), kBlockSize) != ARCHIVE_OK) {
      std::string why = impl_->reader.error_text();
      // The seekable reader does not bid on a zip without entries; Go reads it as empty.
      if (!is_empty_zip(zip)) throw Error("cannot read zip " + impl_->where + ": " + why);
      impl_->empty = true;
    }
    if (!impl_->empty && inflater == Inflater::isal) impl_->inflating = libzip::InflatingZip::open(zip);
  } catch (...) {
    delete impl_;
    throw;
  }
}

ZipReader::~ZipReader() { delete impl_; }

std::optional<std::string> ZipReader::next() {
  if (impl_->empty) return std::nullopt;
  // A warning (bad CRC, inconsistent headers, a name that cannot be converted) is a failure too.
  impl_->entry = impl_->reader.next_entry("cannot read zip " + impl_->where);
  if (impl_->entry == nullptr) return std::nullopt;
  const char* raw_name = archive_entry_pathname(impl_->entry);
  if (raw_name == nullptr) throw Error("cannot read zip " + impl_->where + ": an entry has no usable name");
  impl_->name = raw_name;
  return impl_->name;
}

void ZipReader::read(const std::function<void(const void* data, std::size_t size)>& sink) {
  if (impl_->entry == nullptr) throw Error("ZipReader::read called before next()");
  if (archive_entry_filetype(impl_->entry) == AE_IFLNK) {
    // libarchive hands a symlink's stored content over as its target; the entry's bytes are
    // that text.
    const char* target = archive_entry_symlink(impl_->entry);
    std::string_view text(target != nullptr ? target : "");
    sink(text.data(), text.size());
    return;
  }
  const std::string doing = "cannot read \"" + impl_->name + "\" in zip " + impl_->where;
  // A regular entry whose name and size libzip agrees on is inflated by ISA-L; libarchive has
  // read and checked its headers (next()) all the same.
  if (impl_->inflating != nullptr && archive_entry_filetype(impl_->entry) == AE_IFREG &&
      archive_entry_size_is_set(impl_->entry) != 0 && archive_entry_size(impl_->entry) >= 0) {
    const auto size = static_cast<std::uint64_t>(archive_entry_size(impl_->entry));
    if (auto index = impl_->inflating->plain_entry(impl_->name, size)) {
      impl_->inflating->read(*index, sink, doing);
      return;
    }
  }
  while (auto block = impl_->reader.read_block(doing)) sink(block->data, block->size);
}

}  // namespace podplane::libarchive
