// generator/staged_write.hpp: a set of file changes in one directory is made all or nothing,
// whichever operation fails (each one is failed in turn through the Disk seam).
#include <sys/stat.h>
#include <utime.h>

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "generator/staged_write.hpp"
#include "base/error.hpp"
#include "tests/generator/failing_disk.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

using generator::Disk;
using generator::FileChange;
using Links = FailingDisk::Links;

// One directory entry as lstat and read see it.
struct Entry {
  std::string bytes;
  unsigned mode = 0;
  long long mtime_ns = 0;
  unsigned long long inode = 0;
};

enum class Inodes { compared, ignored };

std::map<std::string, Entry> listing(const fs::path& dir, Inodes inodes) {
  std::map<std::string, Entry> entries;
  for (const auto& item : fs::directory_iterator(dir)) {
    struct stat info {};
    EXPECT_EQ(::lstat(item.path().c_str(), &info), 0);
    Entry entry;
    entry.bytes = read_file(item.path());
    entry.mode = info.st_mode;
    entry.mtime_ns = info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec;
    entry.inode = inodes == Inodes::compared ? info.st_ino : 0;
    entries[item.path().filename().string()] = entry;
  }
  return entries;
}

bool operator==(const Entry& a, const Entry& b) {
  return a.bytes == b.bytes && a.mode == b.mode && a.mtime_ns == b.mtime_ns && a.inode == b.inode;
}

std::ostream& operator<<(std::ostream& out, const Entry& entry) {
  return out << "{" << entry.bytes.size() << " bytes, mode " << std::oct << entry.mode << std::dec << ", mtime "
             << entry.mtime_ns << ", inode " << entry.inode << "}";
}

// A directory with a file to update (mode 0600, an old mtime), one to remove and one to keep.
struct Dir {
  TempDir temp;
  fs::path path = temp.path();
  Dir() {
    write_file(path / "b.tf", "old b\n");
    ::chmod((path / "b.tf").c_str(), 0600);
    struct utimbuf old_times {1000000000, 1000000000};
    ::utime((path / "b.tf").c_str(), &old_times);
    write_file(path / "c.json", "old c\n");
    write_file(path / "user.tf", "mine\n");
  }
  // Create a, update b, remove c, and one more file last (the state, say).
  std::vector<FileChange> changes() const {
    return {{"a.tf", "new a\n"}, {"b.tf", "new b\n"}, {"c.json", std::nullopt}, {"z.json", "{}\n"}};
  }
};

void expect_applied(const fs::path& dir) {
  EXPECT_EQ(read_file(dir / "a.tf"), "new a\n");
  EXPECT_EQ(read_file(dir / "b.tf"), "new b\n");
  EXPECT_FALSE(fs::exists(dir / "c.json"));
  EXPECT_EQ(read_file(dir / "z.json"), "{}\n");
  EXPECT_EQ(read_file(dir / "user.tf"), "mine\n");
  for (const auto& item : fs::directory_iterator(dir))
    EXPECT_NE(item.path().filename().string().rfind(".podplane.tmp.", 0), 0u) << item.path() << " is left over";
}

TEST(StagedWrite, AppliesEveryChange) {
  Dir dir;
  Disk disk;
  generator::write_all_or_nothing(dir.path, dir.changes(), disk);
  expect_applied(dir.path);
}

TEST(StagedWrite, AFailureAtAnyStepLeavesEveryFileAsItWas) {
  for (Links links : {Links::supported, Links::unsupported}) {
    // With links the very inodes come back; a copy restores the bytes, mode and times.
    Inodes inodes = links == Links::supported ? Inodes::compared : Inodes::ignored;
    int failures = 0;
    for (int fail_at = 1;; ++fail_at) {
      Dir dir;
      const auto before = listing(dir.path, inodes);
      FailingDisk disk({fail_at}, links);
      try {
        generator::write_all_or_nothing(dir.path, dir.changes(), disk);
      } catch (const Error& error) {
        ++failures;
        EXPECT_NE(std::string(error.what()).find("injected failure " + std::to_string(fail_at)), std::string::npos)
            << error.what();
        EXPECT_EQ(listing(dir.path, inodes), before) << "after " << error.what();
        continue;
      }
      if (disk.operations >= fail_at) {
        // The failure hit the removal of a kept old file after the change: done all the same.
        EXPECT_EQ(read_file(dir.path / "b.tf"), "new b\n");
        continue;
      }
      expect_applied(dir.path);
      break;
    }
    // 3 new files and 1 kept (a link, or a failed link and a copy), 4 renames and the sync.
    EXPECT_EQ(failures, links == Links::supported ? 9 : 10);
  }
}

// A stack file the user made a symbolic link (a lock kept in another repository) stays a link:
// the file it points to takes the new bytes, and a failure at any step leaves both as they were.
TEST(StagedWrite, ALinkedFileStaysALinkAndItsTargetChangesAllOrNothing) {
  auto make = [](const fs::path& root) {
    fs::create_directories(root / "stack");
    fs::create_directories(root / "elsewhere");
    write_file(root / "elsewhere" / "lock.hcl", "old lock\n");
    fs::create_symlink("../elsewhere/lock.hcl", root / "stack" / "b.tf");
    write_file(root / "stack" / "c.json", "old c\n");
  };
  const std::vector<FileChange> changes = {{"a.tf", "new a\n"}, {"b.tf", "new lock\n"}, {"c.json", std::nullopt}};
  {
    TempDir temp;
    make(temp.path());
    Disk disk;
    generator::write_all_or_nothing(temp.path() / "stack", changes, disk);
    EXPECT_TRUE(fs::is_symlink(temp.path() / "stack" / "b.tf"));
    EXPECT_EQ(fs::read_symlink(temp.path() / "stack" / "b.tf"), "../elsewhere/lock.hcl");
    EXPECT_EQ(read_file(temp.path() / "elsewhere" / "lock.hcl"), "new lock\n");
    EXPECT_EQ(listing(temp.path() / "elsewhere", Inodes::ignored).size(), 1u) << "a temp is left beside the target";
  }
  int failures = 0;
  for (int fail_at = 1; fail_at < 20; ++fail_at) {
    TempDir temp;
    make(temp.path());
    const auto stack_before = listing(temp.path() / "stack", Inodes::compared);
    const auto elsewhere_before = listing(temp.path() / "elsewhere", Inodes::compared);
    FailingDisk disk({fail_at}, Links::supported);
    try {
      generator::write_all_or_nothing(temp.path() / "stack", changes, disk);
    } catch (const Error& error) {
      ++failures;
      EXPECT_EQ(listing(temp.path() / "stack", Inodes::compared), stack_before) << "after " << error.what();
      EXPECT_EQ(listing(temp.path() / "elsewhere", Inodes::compared), elsewhere_before) << "after " << error.what();
      EXPECT_TRUE(fs::is_symlink(temp.path() / "stack" / "b.tf"));
      continue;
    }
    if (disk.operations < fail_at) break;
  }
  EXPECT_GE(failures, 6);
}

TEST(StagedWrite, AnUndoThatFailsKeepsTheOldFileAndSaysSo) {
  Dir dir;
  // 1-4: a and b written, b's old file kept, z written; 5: a renamed; 6: b renamed; 7: c moved
  // aside (fails). Undo, last first: 8: z's temp removed; 9: c's (never made); 10: b's old file
  // renamed back (fails); 11: a removed.
  FailingDisk disk({7, 10});
  try {
    generator::write_all_or_nothing(dir.path, dir.changes(), disk);
    FAIL() << "no error";
  } catch (const Error& error) {
    std::string message = error.message();
    EXPECT_NE(message.find("injected failure 7: renaming c.json"), std::string::npos) << message;
    EXPECT_NE(message.find("putting back the files already changed in " + dir.path.string() + " failed"), std::string::npos)
        << message;
    EXPECT_NE(message.find("injected failure 10: renaming .podplane.tmp.b.tf."), std::string::npos) << message;
  }
  EXPECT_FALSE(fs::exists(dir.path / "a.tf")) << "undone";
  EXPECT_EQ(read_file(dir.path / "c.json"), "old c\n");
  EXPECT_EQ(read_file(dir.path / "b.tf"), "new b\n") << "the one change that could not be undone";
  int kept = 0;
  for (const auto& item : fs::directory_iterator(dir.path)) {
    if (item.path().filename().string().rfind(".podplane.tmp.b.tf.", 0) == 0) {
      EXPECT_EQ(read_file(item.path()), "old b\n");
      ++kept;
    }
  }
  EXPECT_EQ(kept, 1) << "b's old content is kept beside it";
}

}  // namespace
}  // namespace podplane::test
