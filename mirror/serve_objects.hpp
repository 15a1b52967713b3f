#pragma once
// Store objects on their way out (`mirror serve`, `mirror export`): a client never receives a
// complete answer whose bytes differ from the digest they are served under. The server hashes
// each object file once per process and remembers the verdict for that very file (device,
// inode, size, mtime and ctime), so a file replaced or written to is checked again. The hashing
// runs on a thread of its own, so that the first download need not wait for it: a whole-object
// GET streams beside the check and holds back its last bytes until the check has passed (cut
// short when it fails), which makes the first download as fast as any later one where a core is
// free. Range requests, HEAD, small objects and module packages wait for the verdict before
// their first byte, as before: a range could be complete without the held-back part.
// CheckedObjects is thread-safe; concurrent first requests for one object share one hashing.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/unique_fd.hpp"
#include "mirror/serve_metrics.hpp"

namespace podplane::mirror {

// The command that repairs a damaged or missing object, for messages.
inline constexpr const char* kRepairCommand = "podplane deps verify --repair";

// checking: the object's check had not ended when it was opened.
enum class ObjectState { good, corrupt, missing, checking };

// The check of one object file, shared by the requests that wait for it (serve_objects.cpp).
class ObjectCheck;

struct OpenedObject {
  ObjectState state = ObjectState::missing;
  UniqueFd fd;          // open on the object file when good or checking
  std::string problem;  // when corrupt or missing: what is wrong, naming the digest, the file and the fix
  bool first_verdict = false;          // the first to learn of this problem (log it once, not per request)
  std::shared_ptr<ObjectCheck> check;  // when checking: what CheckedObjects::await waits for
};

class CheckedObjects {
 public:
  CheckedObjects() = default;
  ~CheckedObjects();  // waits for the hashings under way
  CheckedObjects(const CheckedObjects&) = delete;
  CheckedObjects& operator=(const CheckedObjects&) = delete;

  // At most this many hashings run beside their answers at once; past it, open() hashes on
  // the calling thread, as open_checked() always does.
  static constexpr std::size_t kMostHashingsBeside = 4;

  // Opens the object `file` that must hold `size` bytes hashing to sha256 `digest`, without
  // waiting for its check: a file with no verdict yet starts its hashing (on a thread of its
  // own) and comes back `checking`, always so for the call that started it. A file found
  // missing or of another size comes back with that verdict at once.
  [[nodiscard]] OpenedObject open(const std::filesystem::path& file, const std::string& digest, std::int64_t size);
  // Waits for the check of an object that open() gave back `checking`; afterwards it is good,
  // corrupt or missing, and its fd is closed unless good. Other states are left as they are.
  static void await(OpenedObject& object);
  // The verdict before any byte goes out: a hashing this call starts runs on the calling thread.
  [[nodiscard]] OpenedObject open_checked(const std::filesystem::path& file, const std::string& digest, std::int64_t size);

  // The verdicts reached so far, for /metrics; read from any thread.
  [[nodiscard]] const ObjectCheckCounters& counters() const { return counters_; }

 private:
  struct Identity {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  struct Entry {
    Identity identity;
    std::shared_ptr<ObjectCheck> check;
  };
  struct Hashing {
    std::thread thread;
    bool done = false;  // under mutex_: the thread has published its verdict and is leaving
  };

  OpenedObject open_object(const std::filesystem::path& file, const std::string& digest, std::int64_t size, bool beside);
  // Starts the hashing of `fd`'s file into `check` on a thread of its own; false when it did
  // not (kMostHashingsBeside are running, or no thread or descriptor was to be had).
  bool hash_beside(const std::shared_ptr<ObjectCheck>& check, int fd, const std::filesystem::path& file,
                   const std::string& digest, const Identity& identity);
  OpenedObject open_missing(const std::filesystem::path& file, const std::string& digest);
  // Hashes `fd` into `check` on the calling thread, publishes the verdict and counts it.
  void hash_into(ObjectCheck& check, int fd, const std::filesystem::path& file, const std::string& digest,
                 const Identity& identity);
  void reap_finished();  // under mutex_: joins hashing threads that are done

  std::mutex mutex_;
  std::map<std::string, Entry> checked_;  // by digest: the check of the file last seen
  std::list<Hashing> hashings_;
  ObjectCheckCounters counters_;
};

// The problem with the object `file` (missing, wrong size, other bytes), or "" when it holds
// `size` bytes hashing to `digest`. Reads the whole file: for one-shot users such as export.
[[nodiscard]] std::string object_problem(const std::filesystem::path& file, const std::string& digest, std::int64_t size);

}  // namespace podplane::mirror
