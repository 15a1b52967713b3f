// ScratchDir removes the scratch dirs that runs killed by SIGKILL left behind (their pid no
// longer runs), and nothing else: not a live process's, not a file, not another name.
#include "base/scratch_dir.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "tests/support/test_support.hpp"

namespace podplane {
namespace {

namespace fs = std::filesystem;

// The pid of a child that has exited and been reaped: no process has it (for a while).
pid_t pid_of_an_ended_process() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

TEST(ScratchDir, RemovesWhatADeadRunLeftAndNothingElse) {
  test::TempDir temp;
  const pid_t dead = pid_of_an_ended_process();
  ASSERT_NE(::kill(dead, 0), 0);
  const std::string prefix = "podplane-x-";
  auto make_dir = [&](const std::string& name) {
    fs::create_directories(temp.path() / name / "inside");
    std::ofstream(temp.path() / name / "inside" / "image.raw") << "bytes";
  };
  const std::string left_by_dead = prefix + std::to_string(dead) + "-42";
  const std::string live_init = prefix + "1-7";  // pid 1 runs
  const std::string live_self = prefix + std::to_string(getpid()) + "-9";
  const std::string other_prefix = "podplane-y-" + std::to_string(dead) + "-42";
  const std::string not_a_number = prefix + std::to_string(dead) + "-x";
  const std::string no_number = prefix + std::to_string(dead);
  for (const auto& name : {left_by_dead, live_init, live_self, other_prefix, not_a_number, no_number}) make_dir(name);
  const std::string a_file = prefix + std::to_string(dead) + "-43";
  std::ofstream(temp.path() / a_file) << "a file, not a scratch dir";

  {
    ScratchDir scratch(temp.path(), prefix);
    EXPECT_TRUE(fs::is_directory(scratch.path()));
    EXPECT_FALSE(fs::exists(temp.path() / left_by_dead));
    for (const auto& kept : {live_init, live_self, other_prefix, not_a_number, no_number, a_file})
      EXPECT_TRUE(fs::exists(temp.path() / kept)) << kept;
  }
}

// The pid in a scratch dir's name, whatever its prefix: what `deps verify` judges the scratch
// directories in store/tmp by.
TEST(ScratchDir, ThePidOfTheRunIsReadOutOfTheName) {
  EXPECT_EQ(scratch_dir_pid("podplane-deps-items-1234-567"), 1234);
  EXPECT_EQ(scratch_dir_pid("x-1-2"), 1);
  EXPECT_EQ(scratch_dir_pid("77-3"), 77);
  for (const char* name : {"podplane-x-12a-3", "podplane-x-12", "podplane-x-12-", "podplane-x--3", "podplane-x-0-3",
                           "podplane-x-12-3b", "-5", "", "podplane"}) {
    EXPECT_EQ(scratch_dir_pid(name), std::nullopt) << name;
  }
  EXPECT_FALSE(run_is_gone(getpid()));
  EXPECT_FALSE(run_is_gone(1)) << "pid 1 runs";
  EXPECT_TRUE(run_is_gone(pid_of_an_ended_process()));
}

}  // namespace
}  // namespace podplane
