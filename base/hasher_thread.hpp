#pragma once
// A Hasher on a thread of its own. update() queues a copy of the bytes and returns, so that a
// slow digest of a download (sha512 runs at about a third of sha256's speed with SHA-NI) is
// computed while the bytes stream, on another core, instead of holding up the event loop or
// following the transfer. Bytes go to the thread a block at a time; at most `max_queued` bytes
// wait, and update() waits beyond that.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "base/digest.hpp"

namespace podplane {

class HasherThread {
 public:
  explicit HasherThread(DigestAlgorithm algorithm, std::size_t max_queued = std::size_t{4} << 20);
  ~HasherThread();  // drops what is still queued
  HasherThread(const HasherThread&) = delete;
  HasherThread& operator=(const HasherThread&) = delete;

  void update(const void* data, std::size_t size);
  // Waits for the queued bytes, then returns the digest as lower-case hex (or throws what the
  // hashing threw). Once only.
  [[nodiscard]] std::string finish_hex();

 private:
  static constexpr std::size_t kBlock = std::size_t{1} << 20;
  void hand_over(std::unique_lock<std::mutex>& lock);
  void work();

  Hasher hasher_;
  const std::size_t max_queued_;
  std::string block_;  // the caller's, until it is full or finished
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> queue_;
  std::size_t queued_ = 0;
  bool finishing_ = false;
  bool stopping_ = false;
  bool done_ = false;
  std::exception_ptr failure_;  // what hashing threw: the thread stops, finish_hex() rethrows
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace podplane
