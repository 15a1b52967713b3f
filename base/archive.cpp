#include "base/archive.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>

#include <utility>

#include "base/error.hpp"

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
  archive* handle = archive_read_new();
  if (handle == nullptr) return false;
  archive_read_support_format_zip_streamable(handle);
  archive_entry* entry = nullptr;
  bool empty = archive_read_open_filename(handle, zip.c_str(), kBlockSize) == ARCHIVE_OK &&
               archive_read_next_header(handle, &entry) == ARCHIVE_EOF;
  archive_read_free(handle);
  return empty;
}

}  // namespace

Archive::Archive(Direction direction)
    : handle_(direction == Direction::read ? archive_read_new() : archive_write_new()), direction_(direction) {
  if (handle_ == nullptr) throw Error("libarchive cannot allocate a handle (out of memory)");
}

Archive::~Archive() { free_handle(handle_, direction_); }

Archive::Archive(Archive&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), direction_(other.direction_) {}

Archive& Archive::operator=(Archive&& other) noexcept {
  if (this != &other) {
    free_handle(handle_, direction_);
    handle_ = std::exchange(other.handle_, nullptr);
    direction_ = other.direction_;
  }
  return *this;
}

int Archive::check(int status, std::string_view doing) const {
  if (status != ARCHIVE_OK) throw Error(std::string(doing) + ": " + error_text());
  return status;
}

std::string Archive::error_text(std::string_view fallback) const {
  const char* text = handle_ != nullptr ? archive_error_string(handle_) : nullptr;
  return text != nullptr ? std::string(text) : std::string(fallback);
}

struct ZipReader::Impl {
  ScopedUtf8Locale utf8_names;  // held while libarchive converts names
  Archive reader{Direction::read};
  std::string where;
  bool empty = false;
  archive_entry* entry = nullptr;
  std::string name;
};

ZipReader::ZipReader(const std::filesystem::path& zip) : impl_(new Impl) {
  try {
    impl_->where = zip.string();
    archive* handle = impl_->reader.get();
    archive_read_support_format_zip_seekable(handle);
    if (archive_read_open_filename(handle, zip.c_str(), kBlockSize) != ARCHIVE_OK) {
      std::string why = impl_->reader.error_text();
      // The seekable reader does not bid on a zip without entries; Go reads it as empty.
      if (!is_empty_zip(zip)) throw Error("cannot read zip " + impl_->where + ": " + why);
      impl_->empty = true;
    }
  } catch (...) {
    delete impl_;
    throw;
  }
}

ZipReader::~ZipReader() { delete impl_; }

std::optional<std::string> ZipReader::next() {
  if (impl_->empty) return std::nullopt;
  int status = archive_read_next_header(impl_->reader.get(), &impl_->entry);
  if (status == ARCHIVE_EOF) return std::nullopt;
  // A warning (bad CRC, inconsistent headers, a name that cannot be converted) is a failure too.
  impl_->reader.check(status, "cannot read zip " + impl_->where);
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
  const void* block = nullptr;
  std::size_t size = 0;
  la_int64_t offset = 0;
  while (true) {
    int status = archive_read_data_block(impl_->reader.get(), &block, &size, &offset);
    if (status == ARCHIVE_EOF) break;
    impl_->reader.check(status, "cannot read \"" + impl_->name + "\" in zip " + impl_->where);
    sink(block, size);
  }
}

}  // namespace podplane::libarchive
