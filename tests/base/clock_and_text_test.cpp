// The one owner of UTC timestamps (base/clock.hpp) and of split (base/split.hpp).
#include <gtest/gtest.h>

#include "base/clock.hpp"
#include "base/split.hpp"

namespace podplane {
namespace {

TEST(Clock, FormatsRfc3339UtcAndAFileStamp) {
  EXPECT_EQ(utc_timestamp(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(utc_timestamp(1796256000), "2026-12-03T00:00:00Z");
  EXPECT_EQ(utc_file_stamp(1796256000 + 3600 * 14 + 7 * 60 + 1), "20261203T140701Z");
  EXPECT_EQ(utc_timestamp_now().size(), 20u);
}

TEST(Clock, ParsesExactlyWhatItWrites) {
  for (std::time_t when : {std::time_t{0}, std::time_t{1796256000}, std::time(nullptr)})
    EXPECT_EQ(parse_utc_timestamp(utc_timestamp(when)), when);
  for (const char* bad : {"", "2026-12-03T00:00:00", "2026-12-03T00:00:00.5Z", "2026-12-03 00:00:00Z",
                          "2026-12-03T00:00:00Z ", "20261203T000000Z", "yesterday"}) {
    EXPECT_FALSE(parse_utc_timestamp(bad).has_value()) << bad;
  }
}

TEST(Split, KeepsEveryPartEmptyOnesIncluded) {
  using Parts = std::vector<std::string>;
  EXPECT_EQ(split("registry.opentofu.org/hashicorp/aws", '/'), (Parts{"registry.opentofu.org", "hashicorp", "aws"}));
  EXPECT_EQ(split("a//b/", '/'), (Parts{"a", "", "b", ""}));
  EXPECT_EQ(split("", '/'), (Parts{""}));
  EXPECT_EQ(split("none", '/'), (Parts{"none"}));
}

}  // namespace
}  // namespace podplane
