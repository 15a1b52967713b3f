#pragma once
// Golden files under tests/data/lockfile/: compared byte for byte, rewritten instead when
// PODPLANE_UPDATE_GOLDEN=1 is set (then review the diff and commit it).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace podplane::test {

inline void expect_golden(const std::string& name, const std::string& actual) {
  auto file = test_data_dir() / "lockfile" / name;
  const char* update = std::getenv("PODPLANE_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    write_file(file, actual);
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(file)) << file << " is missing; run with PODPLANE_UPDATE_GOLDEN=1";
  EXPECT_EQ(read_file(file), actual) << "differs from " << file;
}

}  // namespace podplane::test
