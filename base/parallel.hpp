#pragma once
// Independent work on a few threads, for batches of syncs: an fsync waits on the disk, not the
// CPU, so several in flight finish in about the time of one.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace podplane {

// Runs fn(i) for every i in [0, count) on up to `threads` threads (the caller's among them)
// and returns when all are done, with each index's exception (null where fn returned).
inline std::vector<std::exception_ptr> on_threads(std::size_t count, const std::function<void(std::size_t)>& fn,
                                                  std::size_t threads = 8) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> started;
  for (std::size_t t = 1; t < std::min(threads, count); ++t) started.emplace_back(work);
  work();
  for (auto& thread : started) thread.join();
  return errors;
}

}  // namespace podplane
