// write_file_durably on a real file system: whole files only, the old file kept on every
// failure (a write cut short by a file size limit, a rename that the target refuses), no temp
// left behind, exact modes, and concurrent writers that never share a temp.
#include "base/durable_write.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "tests/support/test_support.hpp"

namespace podplane {
namespace {

namespace fs = std::filesystem;
using test::read_file;
using test::TempDir;
using test::write_file;

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(WriteFileDurably, CreatesThenReplacesTheWholeFileAndLeavesNoTemp) {
  TempDir dir;
  const fs::path file = dir.path() / "inventory.json";
  write_file_durably(file, "first");
  EXPECT_EQ(read_file(file), "first");
  write_file_durably(file, std::string(100000, 'x'));
  EXPECT_EQ(read_file(file), std::string(100000, 'x'));
  write_file_durably(file, "");
  EXPECT_EQ(read_file(file), "");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"inventory.json"});
}

TEST(WriteFileDurably, AFailingRenameLeavesWhatWasThereAndNoTemp) {
  TempDir dir;
  // A directory where the file should go: rename() refuses (EISDIR), as it would for a user
  // who passed a directory to `-o`.
  const fs::path target = dir.path() / "out";
  write_file(target / "kept", "old");
  try {
    write_file_durably(target, "new");
    FAIL() << "replaced a directory";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("cannot replace " + target.string()), std::string::npos) << error.message();
  }
  EXPECT_EQ(read_file(target / "kept"), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out"});
}

TEST(WriteFileDurably, AFailingWriteLeavesTheOldFileWholeAndNoTemp) {
  TempDir dir;
  const fs::path file = dir.path() / "podplane.cluster.jsonc";
  write_file(file, "old content");
  // A file size limit makes write() fail with EFBIG part way: the real short-disk path. Set in
  // a child, so the test process keeps its limits.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    try {
      write_file_durably(file, std::string(1 << 20, 'n'));
    } catch (const Error& error) {
      ::_exit(error.message().find("cannot write") != std::string::npos ? 0 : 4);
    }
    ::_exit(5);  // no error: the limit did not bite
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_file(file), "old content");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"podplane.cluster.jsonc"});
}

TEST(WriteFileDurably, AnExactModeIgnoresTheUmaskAndTheDefaultHonoursIt) {
  TempDir dir;
  mode_t before = ::umask(077);
  write_file_durably(dir.path() / "view", "v", FileMode{0444});
  write_file_durably(dir.path() / "plain", "p");
  ::umask(before);
  struct stat info {};
  ASSERT_EQ(::stat((dir.path() / "view").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0444u);
  ASSERT_EQ(::stat((dir.path() / "plain").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
}

TEST(WriteFileDurably, ConcurrentWritersAndAReaderOnlyEverSeeWholeFiles) {
  TempDir dir;
  const fs::path file = dir.path() / "lock";
  constexpr std::size_t kSize = 1 << 16;
  write_file_durably(file, std::string(kSize, 'a'));
  std::atomic<int> writers_left{4};
  std::vector<std::thread> writers;
  for (char letter : {'b', 'c', 'd', 'e'}) {
    writers.emplace_back([&, letter] {
      for (int i = 0; i < 40; ++i) write_file_durably(file, std::string(kSize, letter));
      --writers_left;
    });
  }
  std::size_t torn = 0, reads = 0;
  while (writers_left > 0) {
    std::string seen = read_file(file);
    ++reads;
    if (seen.size() != kSize || seen.find_first_not_of(seen.front()) != std::string::npos) ++torn;
  }
  for (auto& writer : writers) writer.join();
  EXPECT_EQ(torn, 0u) << "of " << reads << " reads";
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"lock"});
}

// Many files at once (the views of a run): each whole, with its mode; one that cannot be
// written fails alone and is named, and no temp is left anywhere.
TEST(WriteFilesDurably, WritesEveryFileWholeAndAFailureLeavesTheRestWritten) {
  TempDir dir;
  fs::create_directories(dir.path() / "a");
  fs::create_directories(dir.path() / "b");
  write_file(dir.path() / "b" / "old.json", "old");
  std::vector<std::string> texts;
  for (int i = 0; i < 20; ++i) texts.push_back("document " + std::to_string(i));
  std::vector<FileToWrite> files;
  for (int i = 0; i < 20; ++i) {
    files.push_back({dir.path() / (i % 2 ? "a" : "b") / ("f" + std::to_string(i) + ".json"), texts[i], FileMode{0644}});
  }
  files.push_back({dir.path() / "b" / "old.json", "new", FileMode{0600}});
  write_files_durably(files);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(read_file(files[i].path), texts[i]) << i;
  EXPECT_EQ(read_file(dir.path() / "b" / "old.json"), "new");
  EXPECT_EQ(fs::status(dir.path() / "b" / "old.json").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(names_in(dir.path() / "a").size(), 10u) << "no temp left";
  EXPECT_EQ(names_in(dir.path() / "b").size(), 11u) << "no temp left";

  // A directory that does not exist: that file fails, named; the others are written.
  std::vector<FileToWrite> mixed{{dir.path() / "a" / "x.json", "x", {}},
                                 {dir.path() / "missing" / "y.json", "y", {}},
                                 {dir.path() / "b" / "old.json", "newer", {}}};
  try {
    write_files_durably(mixed);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("missing/y.json"), std::string::npos) << error.what();
  }
  EXPECT_EQ(read_file(dir.path() / "a" / "x.json"), "x");
  EXPECT_EQ(read_file(dir.path() / "b" / "old.json"), "newer");
  EXPECT_EQ(names_in(dir.path() / "a").size(), 11u);
  EXPECT_FALSE(fs::exists(dir.path() / "missing"));
  write_files_durably({});  // nothing to write is no error
}

TEST(TempPathBeside, IsHiddenBesideItsTargetUniqueAndRecognised) {
  const fs::path target = fs::path("dir") / "index.json";
  const fs::path a = temp_path_beside(target), b = temp_path_beside(target);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.parent_path(), target.parent_path());
  EXPECT_TRUE(a.filename().string().starts_with(".index.json.tmp-")) << a;
  EXPECT_TRUE(is_temp_path_beside(a));
  EXPECT_FALSE(is_temp_path_beside(target));
  EXPECT_FALSE(is_temp_path_beside(".terraform.lock.hcl"));
}

}  // namespace
}  // namespace podplane

namespace podplane {
namespace {

TEST(FileHolds, OnlyARegularFileWithExactlyTheBytes) {
  test::TempDir dir;
  const auto file = dir / "lock.hcl";
  EXPECT_FALSE(file_holds(file, ""));  // missing
  test::write_file(file, "same\n");
  EXPECT_TRUE(file_holds(file, "same\n"));
  EXPECT_FALSE(file_holds(file, "same"));    // other size
  EXPECT_FALSE(file_holds(file, "sane\n"));  // same size, other bytes
  std::filesystem::create_symlink(file, dir / "link.hcl");
  EXPECT_FALSE(file_holds(dir / "link.hcl", "same\n"));  // a link is never taken for its target: it is written through
  std::filesystem::create_directory(dir / "directory");
  EXPECT_FALSE(file_holds(dir / "directory", ""));
}

}  // namespace
}  // namespace podplane

namespace podplane {
namespace {

namespace fs = std::filesystem;

// A symlinked .terraform.lock.hcl (kept in another directory, say) stays a link: the file it
// names gets the new bytes, whole, and the link is left as it was.
TEST(WriteFileDurably, WritesThroughASymlinkAndKeepsIt) {
  test::TempDir dir;
  fs::create_directories(dir / "shared");
  test::write_file(dir / "shared" / "lock.hcl", "old\n");
  fs::create_directories(dir / "root");
  fs::create_symlink("../shared/lock.hcl", dir / "root" / ".terraform.lock.hcl");
  fs::create_symlink(".terraform.lock.hcl", dir / "root" / "second-link.hcl");  // a chain of two links

  write_file_durably(dir / "root" / "second-link.hcl", "new\n");
  EXPECT_TRUE(fs::is_symlink(dir / "root" / ".terraform.lock.hcl"));
  EXPECT_TRUE(fs::is_symlink(dir / "root" / "second-link.hcl"));
  EXPECT_EQ(fs::read_symlink(dir / "root" / ".terraform.lock.hcl"), "../shared/lock.hcl");
  EXPECT_EQ(test::read_file(dir / "shared" / "lock.hcl"), "new\n");
  EXPECT_EQ(names_in(dir / "shared"), std::vector<std::string>{"lock.hcl"});
  EXPECT_EQ(names_in(dir / "root"), (std::vector<std::string>{".terraform.lock.hcl", "second-link.hcl"}));

  // A link whose file does not exist yet: the file is created where the link points.
  fs::create_symlink("made-later.json", dir / "root" / "dangling");
  write_file_durably(dir / "root" / "dangling", "{}");
  EXPECT_TRUE(fs::is_symlink(dir / "root" / "dangling"));
  EXPECT_EQ(test::read_file(dir / "root" / "made-later.json"), "{}");

  fs::create_symlink("loop-b", dir / "root" / "loop-a");
  fs::create_symlink("loop-a", dir / "root" / "loop-b");
  EXPECT_THROW(write_file_durably(dir / "root" / "loop-a", "x"), Error);
  EXPECT_TRUE(fs::is_symlink(dir / "root" / "loop-a"));
}

// `-o FIFO`: the bytes go into the pipe, and the FIFO is still a FIFO afterwards (a rename
// would have put a regular file in its place).
TEST(WriteFileDurably, WritesIntoAFifoInPlace) {
  test::TempDir dir;
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // The reading end is open first, so the write never waits for a reader.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  write_file_durably(fifo, "through the pipe\n");
  char buffer[256];
  const ssize_t got = ::read(reader, buffer, sizeof buffer);
  ::close(reader);
  EXPECT_EQ(std::string(buffer, got > 0 ? static_cast<std::size_t>(got) : 0), "through the pipe\n");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"pipe"});
}

// `bundle inventory -o /dev/null` run as root replaced the device with a file. A null device
// made in a temp dir (the machine's own /dev/null is never put at risk by a test) stays one.
TEST(WriteFileDurably, WritesIntoADeviceInPlace) {
  test::TempDir dir;
  const fs::path null_device = dir / "null";
  if (::mknod(null_device.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "cannot make a device node here (needs CAP_MKNOD): " << std::strerror(errno);
  write_file_durably(null_device, "discarded\n");
  struct stat st {};
  ASSERT_EQ(::lstat(null_device.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced";
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"null"});
}

}  // namespace
}  // namespace podplane
