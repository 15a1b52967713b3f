#include "base/durable_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/parallel.hpp"
#include "base/unique_fd.hpp"

namespace podplane {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int error) { return std::strerror(error); }

// The directory a rename of `path` changes ("." for a bare file name).
fs::path directory_of(const fs::path& path) {
  fs::path dir = path.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

}  // namespace

fs::path temp_path_beside(const fs::path& path) {
  // Seeded per thread from the OS; the pid keeps two processes apart even on equal seeds.
  static thread_local std::mt19937_64 random(std::random_device{}() ^ static_cast<std::uint64_t>(::getpid()));
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".tmp-%d-%012llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(random() & 0xffffffffffffULL));
  return path.parent_path() / ("." + path.filename().string() + suffix);
}

bool is_temp_path_beside(const fs::path& path) {
  std::string name = path.filename().string();
  auto at = name.rfind(".tmp-");
  return name.size() > 1 && name.front() == '.' && at != std::string::npos && at > 1;
}

void write_all(int fd, std::string_view bytes, const fs::path& file) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t wrote = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    // write() returning 0 for a non-empty buffer makes no progress: report it as EIO, not a hang.
    if (wrote <= 0) throw Error("cannot write " + file.string() + ": " + errno_text(wrote < 0 ? errno : EIO));
    done += static_cast<std::size_t>(wrote);
  }
}

void sync_directory(const fs::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw Error("cannot open the directory " + dir.string() + " to sync it: " + errno_text(errno));
  if (::fsync(fd.get()) != 0 && errno != EINVAL)
    throw Error("cannot sync the directory " + dir.string() + ": " + errno_text(errno));
  fd.close_checked(dir.string());
}

bool file_holds(const fs::path& path, std::string_view bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec)) || fs::file_size(path, ec) != bytes.size() || ec) return false;
  return file_digest_hex(path) == sha256_hex(bytes);
}

namespace {

// The first half of write_file_durably: `bytes` in a synced temp file beside `path`, with its
// mode. Returns the temp's path; on an error nothing is left.
fs::path write_synced_temp(const fs::path& path, std::string_view bytes, FileMode mode) {
  const fs::path temp = temp_path_beside(path);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode.exact ? 0600 : 0666));
  if (!fd) throw Error("cannot write " + path.string() + ": cannot create " + temp.string() + ": " + errno_text(errno));
  try {
    write_all(fd.get(), bytes, temp);
    if (mode.exact && ::fchmod(fd.get(), static_cast<mode_t>(*mode.exact)) != 0)
      throw Error("cannot set the mode of " + temp.string() + ": " + errno_text(errno));
    if (::fsync(fd.get()) != 0) throw Error("cannot sync " + temp.string() + ": " + errno_text(errno));
    fd.close_checked(temp.string());
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  return temp;
}

}  // namespace

void write_files_durably(const std::vector<FileToWrite>& files) {
  std::vector<fs::path> temps(files.size());
  auto errors = on_threads(files.size(), [&](std::size_t i) { temps[i] = write_synced_temp(files[i].path, files[i].bytes, files[i].mode); });
  std::set<fs::path> dirs;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (errors[i]) continue;
    if (::rename(temps[i].c_str(), files[i].path.c_str()) != 0) {
      errors[i] = std::make_exception_ptr(Error("cannot replace " + files[i].path.string() + " with " + temps[i].string() +
                                                ": " + errno_text(errno)));  // errno read before the unlink
      ::unlink(temps[i].c_str());
      continue;
    }
    dirs.insert(directory_of(files[i].path));
  }
  const std::vector<fs::path> to_sync(dirs.begin(), dirs.end());
  auto sync_errors = on_threads(to_sync.size(), [&](std::size_t i) { sync_directory(to_sync[i]); });
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  for (const auto& error : sync_errors) {
    if (error) std::rethrow_exception(error);
  }
}

fs::path write_target(const fs::path& path) {
  fs::path target = path;
  for (int links = 0;; ++links) {
    std::error_code ec;
    auto status = fs::symlink_status(target, ec);
    if (ec || !fs::is_symlink(status)) return target;  // a missing file is created where it is named
    // The kernel's own limit on a chain of links (ELOOP after 40).
    if (links == 40) throw Error("cannot write " + path.string() + ": too many levels of symbolic links");
    fs::path link = fs::read_symlink(target, ec);
    if (ec) throw Error("cannot write " + path.string() + ": cannot read the link " + target.string() + ": " + ec.message());
    target = link.is_absolute() ? link : target.parent_path() / link;
  }
}

namespace {

// A device, FIFO or socket takes the bytes as a stream: opened for writing, never created,
// truncated or synced, and never replaced by a file (`-o /dev/null` run as root must leave the
// device node).
bool write_in_place_if_special(const fs::path& target, const fs::path& named, std::string_view bytes) {
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return false;
  UniqueFd fd(::open(target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC));
  if (!fd) throw Error("cannot write " + named.string() + ": " + errno_text(errno));
  write_all(fd.get(), bytes, named);
  fd.close_checked(named.string());
  return true;
}

}  // namespace

void write_file_durably(const fs::path& named, std::string_view bytes, FileMode mode) {
  const fs::path path = write_target(named);
  if (write_in_place_if_special(path, named, bytes)) return;
  const fs::path temp = write_synced_temp(path, bytes, mode);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());  // never renamed: the temp is ours alone, and `path` is untouched
    throw Error("cannot replace " + path.string() + " with " + temp.string() + ": " + errno_text(error));
  }
  // The new file is in place; a failed directory sync means it may not survive a crash, which
  // the caller must hear about all the same.
  sync_directory(directory_of(path));
}

}  // namespace podplane
