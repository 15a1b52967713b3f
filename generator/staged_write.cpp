#include "generator/staged_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/unique_fd.hpp"

namespace podplane::generator {

namespace fs = std::filesystem;

namespace {

std::string error_text(int error) { return std::strerror(error); }

// Synced and closed, so that a rename that makes the file visible comes after its bytes.
void finish(UniqueFd& fd, const fs::path& file) {
  if (::fsync(fd.get()) != 0) throw Error("cannot write " + file.string() + ": " + error_text(errno));
  fd.close_checked(file.string());
}

// ".podplane.tmp.<name>.<pid>.<random>[.old]": the pid and the random part keep a temp left
// by a crashed run from ever meeting this one's.
fs::path temp_beside(const fs::path& dir, const std::string& name, std::string_view role) {
  static thread_local std::mt19937_64 random(std::random_device{}());
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".%d.%012llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(random() & 0xffffffffffffULL));
  return dir / (".podplane.tmp." + name + suffix + std::string(role));
}

bool exists_as_file_or_link(const fs::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && (S_ISREG(info.st_mode) || S_ISLNK(info.st_mode));
}

// One change on its way: where its new bytes wait, and how to put the old file back.
struct Step {
  fs::path target;
  fs::path staged;  // the new content, until renamed over the target; empty for a removal
  fs::path before;  // the file as it was (a link or a copy, or the removed file moved aside); empty if none
  bool applied = false;
};

}  // namespace

void Disk::write_new(const fs::path& file, std::string_view content, FileMode mode) {
  const mode_t bits = mode == FileMode::executable ? 0755 : 0644;
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, bits));
  if (!fd) throw Error("cannot create " + file.string() + ": " + error_text(errno));
  write_all(fd.get(), content, file);
  finish(fd, file);
}

bool Disk::link_new(const fs::path& from, const fs::path& file) {
  if (::link(from.c_str(), file.c_str()) == 0) return true;
  if (errno == EPERM || errno == EOPNOTSUPP || errno == EMLINK || errno == EXDEV) return false;
  throw Error("cannot link " + from.string() + " to " + file.string() + ": " + error_text(errno));
}

void Disk::copy_new(const fs::path& from, const fs::path& file) {
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat info {};
  if (!in || ::fstat(in.get(), &info) != 0) throw Error("cannot read " + from.string() + ": " + error_text(errno));
  UniqueFd out(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out) throw Error("cannot create " + file.string() + ": " + error_text(errno));
  char buffer[1 << 14];
  for (;;) {
    ssize_t got = ::read(in.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read " + from.string() + ": " + error_text(errno));
    if (got == 0) break;
    write_all(out.get(), std::string_view(buffer, static_cast<std::size_t>(got)), file);
  }
  const struct timespec times[2] = {info.st_atim, info.st_mtim};
  if (::fchmod(out.get(), info.st_mode & 07777) != 0 || ::futimens(out.get(), times) != 0)
    throw Error("cannot copy the mode and times of " + from.string() + " to " + file.string() + ": " + error_text(errno));
  finish(out, file);
}

void Disk::rename(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw Error("cannot rename " + from.string() + " to " + to.string() + ": " + error_text(errno));
}

void Disk::remove(const fs::path& file) {
  if (::unlink(file.c_str()) != 0) throw Error("cannot remove " + file.string() + ": " + error_text(errno));
}

void Disk::sync_directory(const fs::path& dir) { podplane::sync_directory(dir); }

void write_all_or_nothing(const fs::path& dir, const std::vector<FileChange>& changes, Disk& disk) {
  std::vector<Step> steps;
  try {
    // Every byte first: nothing is visible yet, and a full disk stops us here.
    for (const auto& change : changes) {
      Step& step = steps.emplace_back();
      step.target = dir / change.name;
      if (change.content) {
        // A file the user made a symbolic link (a lock kept in another repository) stays a
        // link: the new bytes go to the file it points to, staged beside that file so that
        // the rename stays on its file system.
        step.target = write_target(step.target);
        step.staged = temp_beside(step.target.parent_path(), step.target.filename().string(), "");
        disk.write_new(step.staged, *change.content, change.mode);
        if (exists_as_file_or_link(step.target)) {
          // A hard link keeps the file exactly (inode, mode, times, a symbolic link as a
          // link); a file system without links gets a copy of the bytes, mode and times.
          step.before = temp_beside(step.target.parent_path(), step.target.filename().string(), ".old");
          if (!disk.link_new(step.target, step.before)) disk.copy_new(step.target, step.before);
        }
      } else {
        step.before = temp_beside(dir, change.name, ".old");
      }
    }
    // Then renames only, in order.
    for (auto& step : steps) {
      if (!step.staged.empty()) {
        disk.rename(step.staged, step.target);
        step.staged.clear();
      } else {
        disk.rename(step.target, step.before);
      }
      step.applied = true;
    }
    std::set<fs::path> dirs{dir};
    for (const auto& step : steps) dirs.insert(step.target.parent_path());
    for (const auto& changed : dirs) disk.sync_directory(changed);
  } catch (...) {
    // Undo in reverse order, by renames (and the removal of files that did not exist), then
    // drop every temp. The error that stopped us is the one reported, with any undo failure.
    std::string undo_failures;
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      try {
        if (it->applied) {
          if (!it->before.empty()) {
            disk.rename(it->before, it->target);
            it->before.clear();
          } else {
            disk.remove(it->target);
          }
        }
      } catch (const std::exception& failure) {
        undo_failures += "\n  " + std::string(failure.what());
        it->before.clear();  // keep the old file's only copy
      }
      for (const fs::path* temp : {&it->staged, &it->before}) {
        if (temp->empty()) continue;
        try {
          disk.remove(*temp);
        } catch (const std::exception&) {
          // not made (a removal never applied), or a leftover ".podplane.tmp.*" that nothing reads
        }
      }
    }
    if (undo_failures.empty()) throw;
    std::string message;
    try {
      throw;
    } catch (const Error& error) {
      message = error.message();
    } catch (const std::exception& error) {
      message = error.what();
    }
    throw Error(message + "\nand putting back the files already changed in " + dir.string() +
                " failed (their previous content is in the .podplane.tmp.* files there):" + undo_failures);
  }
  // Done: the old files go. A leftover temp is harmless, so a failure here is not an error.
  for (const auto& step : steps) {
    if (step.before.empty()) continue;
    try {
      disk.remove(step.before);
    } catch (const std::exception&) {
    }
  }
}

}  // namespace podplane::generator
