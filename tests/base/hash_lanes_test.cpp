// HashLanes: every object's digest equals its one-thread sha256, whatever its size, the
// number of lanes, or how little may wait.
#include "base/hash_lanes.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/digest.hpp"
#include "base/error.hpp"

namespace podplane {
namespace {

std::string pattern(std::size_t size, unsigned seed) {
  std::string out(size, '\0');
  unsigned x = seed;
  for (auto& c : out) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 16);
  }
  return out;
}

TEST(HashLanes, DigestsEqualOneThreadSha256ForEverySizeAndLaneCount) {
  const std::vector<std::size_t> sizes = {0, 1, 100, (1u << 20) - 1, 1u << 20, (1u << 20) + 1, 3u << 20, 5000, 0, 7u << 20};
  std::vector<std::string> objects;
  for (std::size_t i = 0; i < sizes.size(); ++i) objects.push_back(pattern(sizes[i], static_cast<unsigned>(i)));
  for (std::size_t lanes : {1u, 2u, 3u}) {
    HashLanes hashing(lanes, 2u << 20);  // the least that may wait: updates must wait for the lanes
    std::vector<std::size_t> numbers;
    for (const auto& object : objects) {
      numbers.push_back(hashing.begin());
      // Odd pieces, so that blocks straddle the updates.
      for (std::size_t at = 0; at < object.size(); at += 70001) {
        hashing.update(object.data() + at, std::min<std::size_t>(70001, object.size() - at));
      }
      hashing.end();
    }
    for (std::size_t i = 0; i < objects.size(); ++i) {
      EXPECT_EQ(numbers[i], i);
      auto digest = hashing.digest(numbers[i], HashLanes::Wait::yes);
      ASSERT_TRUE(digest.has_value());
      EXPECT_EQ(*digest, sha256_hex(objects[i])) << "object " << i << " of " << sizes[i] << " bytes, " << lanes << " lanes";
    }
  }
}

TEST(HashLanes, NoWaitAnswersOnlyOnceHashedAndMisuseIsAnError) {
  HashLanes hashing(2);
  EXPECT_THROW(hashing.update("x", 1), Error);
  EXPECT_THROW(hashing.end(), Error);
  const std::size_t first = hashing.begin();
  EXPECT_THROW((void)hashing.begin(), Error);
  hashing.update("abc", 3);
  EXPECT_FALSE(hashing.digest(first, HashLanes::Wait::no).has_value()) << "not ended yet";
  hashing.end();
  EXPECT_EQ(hashing.digest(first, HashLanes::Wait::yes), sha256_hex("abc"));
  // Dropped unasked: the destructor stops with work still queued.
  (void)hashing.begin();
  const std::string big = pattern(4u << 20, 9);
  hashing.update(big.data(), big.size());
  hashing.end();
}

}  // namespace
}  // namespace podplane
