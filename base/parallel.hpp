#pragma once
// Independent work on a few threads: batches of syncs (an fsync waits on the disk, not the
// CPU, so several in flight finish in about the time of one) and batches of small HTTP
// requests (each waits on a round trip).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace podplane {

// Runs fn(i, state) for every i in [0, count) on up to `threads` threads (the caller's among
// them), each thread with its own `state = make_state()` (an HTTP client, say), and returns
// when all are done, with each index's exception (null where fn returned). Where a thread
// cannot make its state, every index it takes fails with that error.
template <typename MakeState, typename Fn>
std::vector<std::exception_ptr> on_threads_with_state(std::size_t count, std::size_t threads, const MakeState& make_state,
                                                      const Fn& fn) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    try {
      auto state = make_state();
      for (std::size_t i = next++; i < count; i = next++) {
        try {
          fn(i, state);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    } catch (...) {
      auto error = std::current_exception();
      for (std::size_t i = next++; i < count; i = next++) errors[i] = error;
    }
  };
  std::vector<std::thread> started;
  for (std::size_t t = 1; t < std::min(threads, count); ++t) started.emplace_back(work);
  work();
  for (auto& thread : started) thread.join();
  return errors;
}

// Runs fn(i) for every i in [0, count) on up to `threads` threads (the caller's among them)
// and returns when all are done, with each index's exception (null where fn returned).
inline std::vector<std::exception_ptr> on_threads(std::size_t count, const std::function<void(std::size_t)>& fn,
                                                  std::size_t threads = 8) {
  return on_threads_with_state(count, threads, [] { return 0; }, [&](std::size_t i, int) { fn(i); });
}

// Rethrows the error of the lowest index that has one; returns when none has.
inline void rethrow_first(const std::vector<std::exception_ptr>& errors) {
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace podplane
