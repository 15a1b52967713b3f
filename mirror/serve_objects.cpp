#include "mirror/serve_objects.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/digest.hpp"
#include "base/error.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;

namespace {

std::string missing_message(const std::string& digest, const fs::path& file, const std::string& why) {
  return "object " + digest + " is missing from the store (" + file.string() + ": " + why + "); run " + kRepairCommand;
}

std::string size_message(const std::string& digest, const fs::path& file, std::int64_t expected, std::int64_t got) {
  return "object " + digest + " at " + file.string() + " has " + std::to_string(got) + " bytes, not the " +
         std::to_string(expected) + " its digest was taken over; run " + kRepairCommand;
}

std::string corrupt_message(const std::string& digest, const fs::path& file, const std::string& got) {
  return "object " + digest + " at " + file.string() + " does not match its digest (the file hashes to " + got +
         "); run " + kRepairCommand;
}

std::string sha256_of_fd(int fd, const fs::path& file) {
  Hasher hasher;
  std::vector<char> buffer(1 << 20);
  off_t offset = 0;
  while (true) {
    ssize_t got = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error("cannot read " + file.string() + ": " + std::strerror(errno));
    if (got == 0) break;
    hasher.update(buffer.data(), static_cast<std::size_t>(got));
    offset += got;
  }
  return hasher.finish_hex();
}

}  // namespace

OpenedObject CheckedObjects::open(const fs::path& file, const std::string& digest, std::int64_t size) {
  OpenedObject result;
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0) {
    result.state = ObjectState::missing;
    result.problem = missing_message(digest, file, std::strerror(errno));
    // Log a missing object once until it comes back, not on every request.
    std::lock_guard lock(mutex_);
    auto it = checked_.find(digest);
    result.first_verdict = it == checked_.end() || !(it->second.identity == Identity{});
    std::promise<Verdict> missing;
    missing.set_value({ObjectState::missing, result.problem});
    checked_[digest] = {Identity{}, missing.get_future().share()};
    return result;
  }
  Identity identity{info.st_dev, info.st_ino, info.st_size, info.st_mtim.tv_sec * 1'000'000'000LL + info.st_mtim.tv_nsec,
                    info.st_ctim.tv_sec * 1'000'000'000LL + info.st_ctim.tv_nsec};

  std::promise<Verdict> promise;
  std::shared_future<Verdict> verdict;
  bool mine = false;
  {
    std::lock_guard lock(mutex_);
    auto it = checked_.find(digest);
    if (it != checked_.end() && it->second.identity == identity) {
      verdict = it->second.verdict;
    } else {
      verdict = promise.get_future().share();
      checked_[digest] = {identity, verdict};
      mine = true;
    }
  }
  if (mine) {
    Verdict found;
    bool retry_later = false;
    try {
      if (info.st_size != size) {
        found = {ObjectState::corrupt, size_message(digest, file, size, info.st_size)};
      } else if (auto got = sha256_of_fd(fd.get(), file); got != digest) {
        found = {ObjectState::corrupt, corrupt_message(digest, file, got)};
      }
    } catch (const std::exception& error) {
      found = {ObjectState::corrupt, "object " + digest + " cannot be checked: " + error.what()};
      retry_later = true;  // an I/O error is not a verdict on the bytes
    }
    promise.set_value(found);
    if (retry_later) {
      std::lock_guard lock(mutex_);
      if (auto it = checked_.find(digest); it != checked_.end() && it->second.identity == identity) checked_.erase(it);
    }
    result.first_verdict = found.state != ObjectState::good;
  }
  const Verdict& known = verdict.get();
  result.state = known.state;
  result.problem = known.problem;
  if (known.state == ObjectState::good) result.fd = std::move(fd);
  return result;
}

std::string object_problem(const fs::path& file, const std::string& digest, std::int64_t size) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0) return missing_message(digest, file, std::strerror(errno));
  if (info.st_size != size) return size_message(digest, file, size, info.st_size);
  auto got = sha256_of_fd(fd.get(), file);
  return got == digest ? "" : corrupt_message(digest, file, got);
}

}  // namespace podplane::mirror
