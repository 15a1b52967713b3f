// base/child_process: the exec arrays, the filtered environment and the wait, with real children.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "base/child_process.hpp"
#include "base/error.hpp"
#include "tests/support/test_support.hpp"

namespace podplane {
namespace {

TEST(ChildProcess, ExecArrayPointsIntoTheStringsAndEndsWithNull) {
  std::vector<std::string> strings{"a", "bc"};
  auto array = exec_array(strings);
  ASSERT_EQ(array.size(), 3u);
  EXPECT_EQ(array[0], strings[0].data());
  EXPECT_EQ(array[1], strings[1].data());
  EXPECT_EQ(array[2], nullptr);
}

TEST(ChildProcess, EnvironmentWithoutDropsWholeNamesAndPrefixes) {
  test::ScopedEnv exact("PODPLANE_CHILD_TEST", "1");
  test::ScopedEnv longer("PODPLANE_CHILD_TEST_LONGER", "2");
  test::ScopedEnv prefixed("PODPLANE_CHILD_PREFIX_X", "3");
  auto has = [](const std::vector<std::string>& env, const std::string& entry) {
    return std::find(env.begin(), env.end(), entry) != env.end();
  };
  auto env = environment_without({"PODPLANE_CHILD_TEST"});
  EXPECT_FALSE(has(env, "PODPLANE_CHILD_TEST=1"));
  EXPECT_TRUE(has(env, "PODPLANE_CHILD_TEST_LONGER=2"));  // a name, not a prefix
  env = environment_without({"PODPLANE_CHILD_PREFIX_"});
  EXPECT_FALSE(has(env, "PODPLANE_CHILD_PREFIX_X=3"));
  EXPECT_TRUE(has(env, "PODPLANE_CHILD_TEST=1"));
}

TEST(ChildProcess, WaitGivesTheExitCodeOr128PlusTheSignal) {
  pid_t exits = ::fork();
  ASSERT_GE(exits, 0);
  if (exits == 0) ::_exit(3);
  EXPECT_EQ(wait_exit_code(exits, "a child"), 3);

  pid_t killed = ::fork();
  ASSERT_GE(killed, 0);
  if (killed == 0) {
    ::raise(SIGKILL);
    ::_exit(0);
  }
  EXPECT_EQ(wait_exit_code(killed, "a child"), 128 + SIGKILL);

  // No such child: a clear Error, not a hang or a made-up code.
  try {
    (void)wait_exit_code(killed, "a child already reaped");
    ADD_FAILURE() << "waited for a child that is gone";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("waiting for a child already reaped"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace podplane
