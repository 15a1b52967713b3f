#include "base/hash_lanes.hpp"

#include <algorithm>
#include <utility>

#include "base/error.hpp"

namespace podplane {

HashLanes::HashLanes(std::size_t lanes, std::size_t max_queued)
    : max_queued_(std::max(max_queued, 2 * kBlock)), lanes_(std::max<std::size_t>(lanes, 1)) {
  for (auto& lane : lanes_) lane.thread = std::thread([this, &lane] { work(lane); });
}

HashLanes::~HashLanes() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (auto& lane : lanes_) lane.thread.join();
}

std::size_t HashLanes::begin() {
  if (current_lane_ != nullptr) throw Error("HashLanes::begin called before the previous object's end()");
  {
    std::lock_guard lock(mutex_);
    current_lane_ = &*std::min_element(lanes_.begin(), lanes_.end(),
                                       [](const Lane& a, const Lane& b) { return a.queued < b.queued; });
  }
  current_started_ = false;
  block_.clear();
  if (block_.capacity() < kBlock) {
    std::lock_guard lock(mutex_);
    if (!spare_.empty()) {
      block_ = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  block_.reserve(kBlock);
  return next_++;
}

void HashLanes::update(const void* data, std::size_t size) {
  if (current_lane_ == nullptr) throw Error("HashLanes::update called outside an object");
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const std::size_t n = std::min(size, kBlock - block_.size());
    block_.append(bytes, n);
    bytes += n;
    size -= n;
    if (block_.size() == kBlock) hand_over(false);
  }
}

void HashLanes::end() {
  if (current_lane_ == nullptr) throw Error("HashLanes::end called outside an object");
  hand_over(true);
  current_lane_ = nullptr;
}

// Queues the caller's block on the current object's lane, waiting while too much waits.
void HashLanes::hand_over(bool last) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return queued_ + block_.size() <= max_queued_ || current_lane_->queued == 0; });
  Work work{next_ - 1, std::exchange(block_, std::string()), !current_started_, last};
  current_started_ = true;
  current_lane_->queued += work.bytes.size();
  queued_ += work.bytes.size();
  current_lane_->queue.push_back(std::move(work));
  if (!last && !spare_.empty()) {
    block_ = std::move(spare_.back());
    spare_.pop_back();
  }
  lock.unlock();
  changed_.notify_all();
  if (!last) block_.reserve(kBlock);
}

void HashLanes::work(Lane& lane) {
  std::optional<Hasher> hasher;
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !lane.queue.empty(); });
    if (stopping_) return;
    Work work = std::move(lane.queue.front());
    lane.queue.pop_front();
    lock.unlock();
    std::exception_ptr failure;
    std::string digest;
    try {
      if (work.first) hasher.emplace();
      hasher->update(work.bytes.data(), work.bytes.size());
      if (work.last) digest = hasher->finish_hex();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    lane.queued -= work.bytes.size();
    queued_ -= work.bytes.size();
    // Blocks are reused: a fresh 1 MiB block is a fresh mapping, and touching its pages costs
    // more than hashing them on some virtual machines.
    if (work.bytes.capacity() >= kBlock && spare_.size() < max_queued_ / kBlock) {
      work.bytes.clear();
      spare_.push_back(std::move(work.bytes));
    }
    if (failure) failures_.emplace(work.object, failure);
    else if (work.last) digests_.emplace(work.object, std::move(digest));
    changed_.notify_all();
  }
}

std::optional<std::string> HashLanes::digest(std::size_t number, Wait wait) {
  std::unique_lock lock(mutex_);
  auto known = [&] { return digests_.count(number) != 0 || failures_.count(number) != 0; };
  if (wait == Wait::yes) changed_.wait(lock, known);
  if (auto failed = failures_.find(number); failed != failures_.end()) {
    auto error = failed->second;
    failures_.erase(failed);
    digests_.erase(number);
    std::rethrow_exception(error);
  }
  auto found = digests_.find(number);
  if (found == digests_.end()) return std::nullopt;
  std::string hex = std::move(found->second);
  digests_.erase(found);
  return hex;
}

}  // namespace podplane
