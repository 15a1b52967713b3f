#pragma once
// Store objects on their way out (`mirror serve`, `mirror export`): never hand out bytes that
// do not hash to the digest they are served under. The server hashes each object file once per
// process, before its first byte goes out, and remembers the verdict for that very file (device,
// inode, size, mtime and ctime), so a file replaced or written to is checked again. Hashing
// before serving, not while streaming, means a client never receives a wrong byte, Range
// requests are covered, and the cost is paid once per object rather than per request.
// CheckedObjects is thread-safe; concurrent first requests for one object share one hashing.
#include <cstdint>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <string>

#include "base/unique_fd.hpp"

namespace podplane::mirror {

// The command that repairs a damaged or missing object, for messages.
inline constexpr const char* kRepairCommand = "podplane deps verify --repair";

enum class ObjectState { good, corrupt, missing };

struct OpenedObject {
  ObjectState state = ObjectState::missing;
  UniqueFd fd;   // open on the object file when good
  std::string problem;  // when not good: what is wrong, naming the digest, the file and the fix
  bool first_verdict = false;  // this call found the problem (log it once, not per request)
};

class CheckedObjects {
 public:
  // Opens the object `file` that must hold `size` bytes hashing to sha256 `digest`.
  [[nodiscard]] OpenedObject open(const std::filesystem::path& file, const std::string& digest, std::int64_t size);

 private:
  struct Identity {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  struct Verdict {
    ObjectState state = ObjectState::good;
    std::string problem;
  };
  struct Entry {
    Identity identity;
    std::shared_future<Verdict> verdict;
  };
  std::mutex mutex_;
  std::map<std::string, Entry> checked_;  // by digest: the verdict on the file last seen
};

// The problem with the object `file` (missing, wrong size, other bytes), or "" when it holds
// `size` bytes hashing to `digest`. Reads the whole file: for one-shot users such as export.
[[nodiscard]] std::string object_problem(const std::filesystem::path& file, const std::string& digest, std::int64_t size);

}  // namespace podplane::mirror
