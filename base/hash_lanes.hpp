#pragma once
// SHA-256 of a stream of objects on several cores. One thread (the caller's) hands over each
// object's bytes in turn (begin, update..., end); each object is hashed whole on one lane (a
// thread of its own: SHA-256 is sequential within an object), and the lanes hash different
// objects at once, beside the caller reading the next. Bytes are copied in blocks of 1 MiB;
// at most `max_queued` bytes wait, and update() waits beyond that. begin/update/end/digest
// belong to the caller's thread alone.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/digest.hpp"

namespace podplane {

class HashLanes {
 public:
  explicit HashLanes(std::size_t lanes, std::size_t max_queued = std::size_t{16} << 20);
  ~HashLanes();  // drops what is still queued
  HashLanes(const HashLanes&) = delete;
  HashLanes& operator=(const HashLanes&) = delete;

  // Starts the next object (numbered 0, 1, …) on the lane with the least work waiting.
  std::size_t begin();
  void update(const void* data, std::size_t size);
  void end();
  // Object `number`'s digest as lower-case hex, once it is hashed (nullopt before, with
  // Wait::no); rethrows what its hashing threw. Each number once.
  enum class Wait { no, yes };
  [[nodiscard]] std::optional<std::string> digest(std::size_t number, Wait wait);

 private:
  static constexpr std::size_t kBlock = std::size_t{1} << 20;
  struct Work {
    std::size_t object = 0;
    std::string bytes;
    bool first = false;
    bool last = false;
  };
  struct Lane {
    std::deque<Work> queue;
    std::size_t queued = 0;
    std::thread thread;
  };
  void hand_over(bool last);
  void work(Lane& lane);

  const std::size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Lane> lanes_;
  std::size_t queued_ = 0;  // over every lane
  bool stopping_ = false;
  std::map<std::size_t, std::string> digests_;  // hashed, not yet asked for
  std::map<std::size_t, std::exception_ptr> failures_;
  std::vector<std::string> spare_;  // hashed blocks, emptied, for the caller to fill again
  // The caller's current object.
  std::size_t next_ = 0;
  Lane* current_lane_ = nullptr;
  std::string block_;
  bool current_started_ = false;
};

}  // namespace podplane
