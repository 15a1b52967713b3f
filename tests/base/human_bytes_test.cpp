#include "base/human_bytes.hpp"

#include <gtest/gtest.h>

namespace podplane {
namespace {

TEST(HumanBytes, BinaryUnitsWithOneDecimalAboveBytes) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(12), "12 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1024), "1.0 KiB");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(100ull * 1024 * 1024), "100.0 MiB");
  EXPECT_EQ(human_bytes(4ull << 30), "4.0 GiB");
  EXPECT_EQ(human_bytes(2048ull << 40), "2048.0 TiB");  // the largest unit
}

}  // namespace
}  // namespace podplane
