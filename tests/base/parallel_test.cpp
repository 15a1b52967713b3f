#include "base/parallel.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace podplane {
namespace {

TEST(OnThreadsWithState, EachThreadMakesItsOwnStateAndEveryIndexRunsOnce) {
  std::mutex lock;
  std::set<std::thread::id> made_on;
  std::vector<int> runs(50, 0);
  auto errors = on_threads_with_state(
      runs.size(), 4,
      [&] {
        std::lock_guard<std::mutex> guard(lock);
        EXPECT_TRUE(made_on.insert(std::this_thread::get_id()).second) << "a thread made its state twice";
        return std::this_thread::get_id();
      },
      [&](std::size_t i, const std::thread::id& owner) {
        EXPECT_EQ(owner, std::this_thread::get_id());
        ++runs[i];
      });
  ASSERT_EQ(errors.size(), runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i], 1) << "index " << i;
    EXPECT_EQ(errors[i], nullptr) << "index " << i;
  }
  EXPECT_LE(made_on.size(), 4u);
}

TEST(OnThreadsWithState, AStateThatCannotBeMadeFailsTheIndicesItsThreadTakes) {
  auto errors = on_threads_with_state(
      3, 1, []() -> int { throw std::runtime_error("no client"); }, [](std::size_t, int) {});
  ASSERT_EQ(errors.size(), 3u);
  for (const auto& error : errors) EXPECT_NE(error, nullptr);
  EXPECT_THROW(rethrow_first(errors), std::runtime_error);
}

TEST(RethrowFirst, ThrowsTheLowestIndexError) {
  auto errors = on_threads(4, [](std::size_t i) {
    if (i >= 2) throw std::runtime_error("index " + std::to_string(i));
  });
  try {
    rethrow_first(errors);
    FAIL() << "nothing thrown";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "index 2");
  }
  rethrow_first(std::vector<std::exception_ptr>(3));  // none: returns
}

}  // namespace
}  // namespace podplane
