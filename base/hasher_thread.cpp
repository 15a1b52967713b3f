#include "base/hasher_thread.hpp"

#include <algorithm>
#include <utility>

namespace podplane {

HasherThread::HasherThread(DigestAlgorithm algorithm, std::size_t max_queued)
    : hasher_(algorithm), max_queued_(std::max(max_queued, kBlock)), thread_([this] { work(); }) {
  block_.reserve(kBlock);
}

HasherThread::~HasherThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void HasherThread::update(const void* data, std::size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const std::size_t n = std::min(size, kBlock - block_.size());
    block_.append(bytes, n);
    bytes += n;
    size -= n;
    if (block_.size() == kBlock) {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return failure_ || queued_ + kBlock <= max_queued_; });
      hand_over(lock);
    }
  }
}

std::string HasherThread::finish_hex() {
  std::unique_lock lock(mutex_);
  if (!block_.empty()) hand_over(lock);
  finishing_ = true;
  changed_.notify_all();
  changed_.wait(lock, [this] { return done_; });
  if (failure_) std::rethrow_exception(failure_);
  return hasher_.finish_hex();
}

// Moves the caller's block to the queue (under `lock`) and starts a new one.
void HasherThread::hand_over(std::unique_lock<std::mutex>& lock) {
  (void)lock;
  if (failure_) {  // the thread has stopped: nothing more is hashed
    block_.clear();
    return;
  }
  queued_ += block_.size();
  queue_.push_back(std::exchange(block_, std::string()));
  block_.reserve(kBlock);
  changed_.notify_all();
}

void HasherThread::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty() || finishing_; });
    if (stopping_) return;
    if (queue_.empty()) {  // finishing, and every block hashed
      done_ = true;
      changed_.notify_all();
      return;
    }
    std::string block = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    try {
      hasher_.update(block.data(), block.size());
    } catch (...) {
      lock.lock();
      failure_ = std::current_exception();
      queue_.clear();
      done_ = true;
      changed_.notify_all();
      return;
    }
    lock.lock();
    queued_ -= block.size();
    changed_.notify_all();  // room for update()
  }
}

}  // namespace podplane
