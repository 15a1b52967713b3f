#include "mirror/serve_objects.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <system_error>
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

class ObjectCheck {
 public:
  struct Verdict {
    ObjectState state = ObjectState::good;
    std::string problem;
  };

  void publish(Verdict verdict) {
    {
      std::lock_guard lock(mutex_);
      verdict_ = std::move(verdict);
      ended_ = true;
    }
    ended_changed_.notify_all();
  }
  [[nodiscard]] bool ended() {
    std::lock_guard lock(mutex_);
    return ended_;
  }
  // The verdict, once published; it never changes afterwards.
  [[nodiscard]] const Verdict& wait() {
    std::unique_lock lock(mutex_);
    ended_changed_.wait(lock, [this] { return ended_; });
    return verdict_;
  }
  // True for the first caller only: who logs the problem.
  [[nodiscard]] bool claim_report() { return !reported_.exchange(true); }

 private:
  std::mutex mutex_;
  std::condition_variable ended_changed_;
  bool ended_ = false;
  Verdict verdict_;
  std::atomic<bool> reported_{false};
};

CheckedObjects::~CheckedObjects() {
  std::list<Hashing> running;
  {
    std::lock_guard lock(mutex_);
    running.swap(hashings_);
  }
  for (auto& hashing : running)
    if (hashing.thread.joinable()) hashing.thread.join();
}

void CheckedObjects::reap_finished() {
  for (auto it = hashings_.begin(); it != hashings_.end();) {
    if (!it->done) {
      ++it;
      continue;
    }
    it->thread.join();  // it has published and left the lock: it is exiting
    it = hashings_.erase(it);
  }
}

OpenedObject CheckedObjects::open_missing(const fs::path& file, const std::string& digest) {
  OpenedObject result;
  result.state = ObjectState::missing;
  result.problem = missing_message(digest, file, std::strerror(errno));
  // Log a missing object once until it comes back, not on every request.
  auto missing = std::make_shared<ObjectCheck>();
  missing->publish({ObjectState::missing, result.problem});
  std::lock_guard lock(mutex_);
  auto it = checked_.find(digest);
  result.first_verdict = it == checked_.end() || !(it->second.identity == Identity{});
  if (result.first_verdict) counters_.missing.fetch_add(1, std::memory_order_relaxed);
  checked_[digest] = {Identity{}, std::move(missing)};
  return result;
}

void CheckedObjects::hash_into(ObjectCheck& check, int fd, const fs::path& file, const std::string& digest,
                               const Identity& identity) {
  ObjectCheck::Verdict found;
  bool unreadable = false;
  try {
    if (auto got = sha256_of_fd(fd, file); got != digest) found = {ObjectState::corrupt, corrupt_message(digest, file, got)};
  } catch (const std::exception& error) {
    found = {ObjectState::corrupt, "object " + digest + " cannot be checked: " + error.what()};
    unreadable = true;
  }
  if (unreadable) {
    // An I/O error is not a verdict on the bytes: the next request checks again.
    std::lock_guard lock(mutex_);
    if (auto it = checked_.find(digest); it != checked_.end() && it->second.identity == identity && it->second.check.get() == &check)
      checked_.erase(it);
  }
  auto& counter = unreadable ? counters_.unreadable : found.state == ObjectState::good ? counters_.good : counters_.damaged;
  counter.fetch_add(1, std::memory_order_relaxed);
  check.publish(std::move(found));
}

bool CheckedObjects::hash_beside(const std::shared_ptr<ObjectCheck>& check, int fd, const fs::path& file,
                                 const std::string& digest, const Identity& identity) {
  // The hashing reads its own descriptor: the caller's goes to the answer.
  UniqueFd hashed(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!hashed) return false;
  std::lock_guard lock(mutex_);
  reap_finished();
  // Each distinct object a client names starts a hashing: without a bound, requests for every
  // object of a large store would start as many threads (each with a 1 MiB buffer) at once.
  if (hashings_.size() >= kMostHashingsBeside) return false;
  auto hashing = hashings_.emplace(hashings_.end());
  try {
    hashing->thread = std::thread([this, check, hashing, file, digest, identity, hashed = std::move(hashed)] {
      hash_into(*check, hashed.get(), file, digest, identity);
      std::lock_guard done(mutex_);
      hashing->done = true;
    });
  } catch (const std::system_error&) {
    hashings_.erase(hashing);  // no thread to be had: the caller hashes
    return false;
  }
  return true;
}

OpenedObject CheckedObjects::open(const fs::path& file, const std::string& digest, std::int64_t size) {
  return open_object(file, digest, size, true);
}

OpenedObject CheckedObjects::open_object(const fs::path& file, const std::string& digest, std::int64_t size, bool beside) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat info {};
  if (!fd || ::fstat(fd.get(), &info) != 0) return open_missing(file, digest);
  const Identity identity{info.st_dev, info.st_ino, info.st_size,
                          info.st_mtim.tv_sec * 1'000'000'000LL + info.st_mtim.tv_nsec,
                          info.st_ctim.tv_sec * 1'000'000'000LL + info.st_ctim.tv_nsec};
  OpenedObject result;
  std::shared_ptr<ObjectCheck> check;
  bool started = false;  // this call starts the check
  {
    std::lock_guard lock(mutex_);
    reap_finished();
    auto it = checked_.find(digest);
    if (it != checked_.end() && it->second.identity == identity) {
      check = it->second.check;
    } else {
      check = std::make_shared<ObjectCheck>();
      checked_[digest] = {identity, check};
      started = true;
    }
  }
  if (started && info.st_size != size) {
    counters_.damaged.fetch_add(1, std::memory_order_relaxed);
    check->publish({ObjectState::corrupt, size_message(digest, file, size, info.st_size)});
  } else if (started) {
    bool on_a_thread = false;
    if (beside) on_a_thread = hash_beside(check, fd.get(), file, digest, identity);
    if (!on_a_thread) hash_into(*check, fd.get(), file, digest, identity);
  }
  result.state = ObjectState::checking;
  result.fd = std::move(fd);
  result.check = std::move(check);
  // The call that started a hashing comes back checking even when it has ended already: which
  // answer its request gets never depends on the hashing's pace.
  const bool hashing_started = started && info.st_size == size;
  if (hashing_started || !result.check->ended()) return result;
  await(result);
  return result;
}

void CheckedObjects::await(OpenedObject& object) {
  if (object.state != ObjectState::checking) return;
  const auto& verdict = object.check->wait();
  object.state = verdict.state;
  if (verdict.state == ObjectState::good) return;
  object.problem = verdict.problem;
  object.first_verdict = object.check->claim_report();
  object.fd.reset();
}

OpenedObject CheckedObjects::open_checked(const fs::path& file, const std::string& digest, std::int64_t size) {
  auto opened = open_object(file, digest, size, false);
  await(opened);
  return opened;
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
