#pragma once
// Independent work on a few threads: batches of syncs (an fsync waits on the disk, not the
// CPU, so several in flight finish in about the time of one) and batches of small HTTP
// requests (each waits on a round trip).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
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

// A few threads that run tasks as they are handed over, so that CPU work on what has arrived
// (hashing a zip that just landed) overlaps with what still waits (the transfers running).
// submit() is thread-safe; wait() returns once every task submitted so far has run. A task
// reports its own result and catches its own errors (one that escapes ends the program).
// The destructor waits for the tasks, then stops the threads.
class TaskPool {
 public:
  explicit TaskPool(std::size_t threads) {
    for (std::size_t t = 0; t < std::max<std::size_t>(threads, 1); ++t) threads_.emplace_back([this] { work(); });
  }
  ~TaskPool() {
    wait();
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (auto& thread : threads_) thread.join();
  }
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
      ++unfinished_;
    }
    changed_.notify_all();
  }

  void wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return unfinished_ == 0; });
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      auto task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
      if (--unfinished_ == 0) changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  std::size_t unfinished_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace podplane
