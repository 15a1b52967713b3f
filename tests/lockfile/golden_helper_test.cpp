// The golden file helper every golden test uses (tests/support/golden.hpp): one switch,
// PODPLANE_UPDATE_GOLDEN=1 exactly, rewrites; nothing else does; a missing golden file fails
// with the command that creates it. It lives with the lockfile tests, the lightest binary.
#include "tests/support/golden.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

class GoldenHelper : public ::testing::Test {
 protected:
  TempDir dir;
  ScopedEnv no_update{"PODPLANE_UPDATE_GOLDEN", std::nullopt};  // whatever the caller's shell says
  fs::path file = dir / "golden.txt";
};

TEST_F(GoldenHelper, EqualBytesPass) {
  write_file(file, "a\nb\n");
  expect_golden_at(file, "a\nb\n");
}

TEST_F(GoldenHelper, OtherBytesFailAndNameTheCommandThatRewritesThem) {
  write_file(file, "a\nb\n");
  EXPECT_NONFATAL_FAILURE(expect_golden_at(file, "a\nc\n"), "differs from the golden file");
  EXPECT_NONFATAL_FAILURE(
      expect_golden_at(file, "a\n"),
      "PODPLANE_UPDATE_GOLDEN=1 " + fs::read_symlink("/proc/self/exe").string() +
          " --gtest_filter='GoldenHelper.OtherBytesFailAndNameTheCommandThatRewritesThem'");
  EXPECT_EQ(read_file(file), "a\nb\n");
}

TEST_F(GoldenHelper, AMissingFileFailsWithTheCommandThatCreatesIt) {
  EXPECT_NONFATAL_FAILURE(expect_golden_at(file, "new\n"),
                          "is missing; create it with\n  PODPLANE_UPDATE_GOLDEN=1 ");
  EXPECT_NONFATAL_FAILURE(expect_golden_at(file, "new\n"),
                          "--gtest_filter='GoldenHelper.AMissingFileFailsWithTheCommandThatCreatesIt'");
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(GoldenHelper, OnlyTheValueOneRewrites) {
  write_file(file, "old\n");
  for (const char* value : {"", "0", "true", "yes", "TRUE", "1 ", " 1", "01", "2"}) {
    ScopedEnv env("PODPLANE_UPDATE_GOLDEN", std::string(value));
    EXPECT_FALSE(updating_golden()) << "'" << value << "'";
    EXPECT_NONFATAL_FAILURE(expect_golden_at(file, "new\n"), "differs from the golden file");
  }
  for (const char* name : {"UPDATE_GOLDEN", "PODPLANE_UPDATE_GOLDENS", "PODPLANE_GOLDEN_UPDATE", "podplane_update_golden"}) {
    ScopedEnv env(name, std::string("1"));
    EXPECT_FALSE(updating_golden()) << name;
    EXPECT_NONFATAL_FAILURE(expect_golden_at(file, "new\n"), "differs from the golden file");
  }
  EXPECT_EQ(read_file(file), "old\n");

  ScopedEnv update("PODPLANE_UPDATE_GOLDEN", std::string("1"));
  EXPECT_TRUE(updating_golden());
  expect_golden_at(file, "new\n");
  expect_golden_at(dir / "created" / "file.txt", "made\n");
  EXPECT_EQ(read_file(file), "new\n");
  EXPECT_EQ(read_file(dir / "created" / "file.txt"), "made\n");
}

TEST_F(GoldenHelper, ADirectoryMustHoldTheSameNamesAndBytes) {
  const fs::path golden = dir / "expected";
  write_file(golden / "a.tf", "a\n");
  write_file(golden / ".state.json", "{}\n");
  expect_golden_dir_at(golden, {{"a.tf", "a\n"}, {".state.json", "{}\n"}});
  EXPECT_NONFATAL_FAILURE(expect_golden_dir_at(golden, {{"a.tf", "a\n"}, {".state.json", "{}\n"}, {"b.tf", "b\n"}}),
                          "b.tf was produced but is not in the golden directory");
  EXPECT_NONFATAL_FAILURE(expect_golden_dir_at(golden, {{"a.tf", "a\n"}}), ".state.json is in the golden directory");
  EXPECT_NONFATAL_FAILURE(expect_golden_dir_at(golden, {{"a.tf", "A\n"}, {".state.json", "{}\n"}}),
                          "a.tf differs from the golden file");
  EXPECT_NONFATAL_FAILURE(expect_golden_dir_at(dir / "nowhere", {{"a.tf", "a\n"}}), "is missing; create it with");

  ScopedEnv update("PODPLANE_UPDATE_GOLDEN", std::string("1"));
  expect_golden_dir_at(golden, {{"b.tf", "b\n"}});
  EXPECT_FALSE(fs::exists(golden / "a.tf")) << "an update leaves files that are no longer produced";
  EXPECT_EQ(read_file(golden / "b.tf"), "b\n");
}

}  // namespace
}  // namespace podplane::test
