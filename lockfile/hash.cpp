#include "lockfile/hash.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <system_error>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"

namespace podplane::lockfile {
namespace {

constexpr std::size_t kBufferSize = 64 * 1024;

// libarchive's read handle.
struct ArchiveReader {
  archive* handle = archive_read_new();
  ArchiveReader() = default;
  ~ArchiveReader() {
    if (handle != nullptr) archive_read_free(handle);
  }
  ArchiveReader(const ArchiveReader&) = delete;
  ArchiveReader& operator=(const ArchiveReader&) = delete;
};

// Switches this thread to a UTF-8 LC_CTYPE while alive. libarchive converts zip names flagged
// as UTF-8 into the current locale's charset; under the "C" locale that mangles every
// non-ASCII name into '?'. dirhash takes names as raw bytes, so we want UTF-8 → UTF-8
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

std::string escape_newlines(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

// True when libarchive's streaming zip reader sees a well-formed archive with no entries
// (only an end-of-central-directory record).
bool is_empty_zip(const std::filesystem::path& zip) {
  ArchiveReader reader;
  if (reader.handle == nullptr) return false;
  archive_read_support_format_zip_streamable(reader.handle);
  if (archive_read_open_filename(reader.handle, zip.c_str(), kBufferSize) != ARCHIVE_OK) return false;
  archive_entry* entry = nullptr;
  return archive_read_next_header(reader.handle, &entry) == ARCHIVE_EOF;
}

}  // namespace

std::string zh_hash_of_file(const std::filesystem::path& zip) { return "zh:" + file_digest_hex(zip); }

std::string h1_hash(std::vector<std::pair<std::string, std::string>> name_and_sha256_hex) {
  // std::string compares bytes as unsigned char, the order of Go's sort.Strings.
  std::stable_sort(name_and_sha256_hex.begin(), name_and_sha256_hex.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Hasher summary;
  for (const auto& [name, hex] : name_and_sha256_hex) {
    if (name.find('\n') != std::string::npos) {
      throw Error("cannot compute h1 hash: file names with newlines are not supported (dirhash): \"" +
                  escape_newlines(name) + "\"");
    }
    if (!is_sha256_hex(hex)) throw Error("h1 hash input for \"" + name + "\" is not a sha256 hex digest");
    summary.update(hex);
    summary.update("  ");
    summary.update(name);
    summary.update("\n");
  }
  return "h1:" + base64_encode(summary.finish_raw());
}

std::string h1_hash_of_zip(const std::filesystem::path& zip) {
  const std::string where = zip.string();
  ScopedUtf8Locale utf8_names;
  ArchiveReader reader;
  if (reader.handle == nullptr) throw Error("cannot allocate a zip reader for " + where);
  // The seekable reader walks the central directory, as Go's archive/zip does; the streaming
  // one trusts local headers, which may disagree with it.
  archive_read_support_format_zip_seekable(reader.handle);
  if (archive_read_open_filename(reader.handle, zip.c_str(), kBufferSize) != ARCHIVE_OK) {
    std::string why = archive_error_string(reader.handle);
    // The seekable reader does not bid on a zip without entries; Go reads it as empty.
    if (is_empty_zip(zip)) return h1_hash({});
    throw Error("cannot read zip " + where + ": " + why);
  }
  // Every name counts, but a duplicate's content is that of the last entry with the name
  // (dirhash builds a name → entry map in central-directory order).
  std::vector<std::string> names;
  std::map<std::string, std::string> content_hash;
  archive_entry* entry = nullptr;
  while (true) {
    int status = archive_read_next_header(reader.handle, &entry);
    if (status == ARCHIVE_EOF) break;
    // A warning (bad CRC, inconsistent headers, a name that cannot be converted) is a
    // failure too: a hash of something Go might read differently is worse than none.
    if (status != ARCHIVE_OK) {
      throw Error("cannot read zip " + where + ": " + archive_error_string(reader.handle));
    }
    const char* raw_name = archive_entry_pathname(entry);
    if (raw_name == nullptr) throw Error("cannot read zip " + where + ": an entry has no usable name");
    std::string name = raw_name;
    Hasher content;
    if (archive_entry_filetype(entry) == AE_IFLNK) {
      // libarchive hands a symlink's stored content over as its target; the entry's bytes are
      // that text, which is what dirhash hashes.
      const char* target = archive_entry_symlink(entry);
      content.update(std::string_view(target != nullptr ? target : ""));
    } else {
      const void* block = nullptr;
      std::size_t size = 0;
      la_int64_t offset = 0;
      while (true) {
        int read_status = archive_read_data_block(reader.handle, &block, &size, &offset);
        if (read_status == ARCHIVE_EOF) break;
        if (read_status != ARCHIVE_OK) {
          throw Error("cannot read \"" + name + "\" in zip " + where + ": " + archive_error_string(reader.handle));
        }
        content.update(block, size);
      }
    }
    names.push_back(name);
    content_hash[name] = content.finish_hex();
  }
  std::vector<std::pair<std::string, std::string>> files;
  files.reserve(names.size());
  for (auto& name : names) {
    std::string hex = content_hash.at(name);
    files.emplace_back(std::move(name), std::move(hex));
  }
  return h1_hash(std::move(files));
}

std::string h1_hash_of_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Terraform resolves the package root before hashing (PackageHashV1).
  fs::path root = fs::canonical(dir, ec);
  if (ec) throw Error("cannot hash directory " + dir.string() + ": " + ec.message());
  if (!fs::is_directory(root, ec)) throw Error("cannot hash " + dir.string() + ": not a directory");
  std::vector<std::pair<std::string, std::string>> files;
  // Like filepath.Walk: lstat each entry, never descend through a symlink, keep every
  // non-directory; opening the name then follows a symlink to its target.
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  if (ec) throw Error("cannot read directory " + dir.string() + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw Error("cannot read directory " + dir.string() + ": " + ec.message());
    const fs::directory_entry& item = *it;
    fs::file_status own = item.symlink_status(ec);
    if (ec) throw Error("cannot stat " + item.path().string() + ": " + ec.message());
    if (fs::is_directory(own)) continue;
    std::string name = item.path().lexically_relative(root).generic_string();
    fs::file_status target = item.status(ec);
    if (ec || !fs::exists(target)) {
      throw Error("cannot hash " + item.path().string() + ": dangling symlink");
    }
    if (fs::is_directory(target)) {
      throw Error("cannot hash " + item.path().string() + ": symlink to a directory (dirhash reads it as a file)");
    }
    if (!fs::is_regular_file(target)) {
      throw Error("cannot hash " + item.path().string() + ": not a regular file");
    }
    files.emplace_back(std::move(name), file_digest_hex(item.path()));
  }
  if (ec) throw Error("cannot read directory " + dir.string() + ": " + ec.message());
  return h1_hash(std::move(files));
}

}  // namespace podplane::lockfile
