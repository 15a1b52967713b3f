#include "cache/object_scan.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "base/hex.hpp"
#include "base/unique_fd.hpp"
#include "cache/layout.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;

namespace {

// Every digest some row depends on: an object is garbage only when none of these names it.
constexpr const char* referenced_digests_sql =
    "SELECT digest FROM artifacts UNION SELECT digest FROM module_files"
    " UNION SELECT shasums_digest FROM provenance WHERE shasums_digest != ''"
    " UNION SELECT signature_digest FROM provenance WHERE signature_digest != ''"
    " UNION SELECT keys_digest FROM provenance WHERE keys_digest != ''";

}  // namespace

std::vector<std::pair<std::string, std::int64_t>> unreferenced_objects(sqlite::Database& db) {
  std::vector<std::pair<std::string, std::int64_t>> objects;
  sqlite::Statement select(db, std::string("SELECT digest, size FROM objects WHERE digest NOT IN (") + referenced_digests_sql +
                                   ") ORDER BY digest");
  while (select.step()) objects.emplace_back(select.text(0), select.integer(1));
  return objects;
}

DiskObjects scan_objects(const fs::path& root) {
  DiskObjects disk;
  std::error_code ec;
  for (fs::directory_iterator prefix(layout::objects_dir(root), ec), end; !ec && prefix != end; prefix.increment(ec)) {
    std::string first = prefix->path().filename().string();
    if (!prefix->is_directory() || first.size() != 2) {
      disk.strays.push_back(prefix->path());
      continue;
    }
    std::error_code inner;
    for (fs::directory_iterator it(prefix->path(), inner), stop; !inner && it != stop; it.increment(inner)) {
      auto digest = RawDigest::parse(first + it->path().filename().string());
      if (digest && it->is_regular_file() && !it->is_symlink()) disk.files.push_back(*digest);
      else disk.strays.push_back(it->path());
    }
  }
  std::sort(disk.files.begin(), disk.files.end());
  return disk;
}

bool temp_file_in_use(const fs::path& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return false;
  return ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0;
}

bool is_scratch_directory(const fs::path& entry) {
  struct stat info {};
  return ::lstat(entry.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::uint64_t bytes_under(const fs::path& dir) {
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_error;
    if (it->is_regular_file(size_error)) bytes += it->file_size(size_error);
  }
  return bytes;
}

}  // namespace podplane::cache
