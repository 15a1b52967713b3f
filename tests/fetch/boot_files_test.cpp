// Reading os.boot's kernel and initrd out of a real qcow2 image (fetch/boot_files.hpp) with the
// real tools: images made by tests/tools/upstream/boot_image.py (GPT, partition 1 ext4 or swap,
// qemu-img convert), then every way the image or the manifest's entry can be wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "fetch/boot_files.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const std::string kKernel = "/boot/vmlinuz-6.12.86+deb13-cloud-amd64";
const std::string kInitrd = "/boot/initrd.img-6.12.86+deb13-cloud-amd64";

class BootFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"qemu-img", "sfdisk", "debugfs", "mkfs.ext4", "blkid"}) {
      if (!test::have_program(tool)) GTEST_SKIP() << tool << " is not installed (scripts/setup installs it)";
    }
    kernel_ = std::string(40000, 'k') + "kernel";
    initrd_ = std::string(30000, 'i') + "initrd";
    test::write_file(dir_ / "kernel", kernel_);
    test::write_file(dir_ / "initrd", initrd_);
    fs::create_directories(dir_ / "work");
  }

  fs::path make_image(const std::string& name, const std::string& partition_fs = "ext4",
                      const std::vector<std::string>& options = {}) {
    fs::path out = dir_ / name;
    std::vector<std::string> argv{"python3", (test::source_dir() / "tests/tools/upstream/boot_image.py").string(), out.string(),
                                  "--file", kKernel + "=" + (dir_ / "kernel").string(), "--file",
                                  kInitrd + "=" + (dir_ / "initrd").string(), "--partition-fs", partition_fs};
    argv.insert(argv.end(), options.begin(), options.end());
    auto made = test::run(argv);
    if (made.exit_code != 0) throw std::runtime_error("boot_image.py failed:\n" + made.err);
    return out;
  }

  std::vector<VmconfigBootFile> wanted(int partition = 1, const std::string& kernel_path = kKernel) const {
    return {{"kernel", partition, kernel_path, "sha256:" + sha256_hex(kernel_)},
            {"initrd", partition, kInitrd, "sha512:" + [&] {
               Hasher hasher(DigestAlgorithm::sha512);
               hasher.update(initrd_);
               return hasher.finish_hex();
             }()}};
  }

  std::string error_of(const fs::path& image, const std::vector<VmconfigBootFile>& files) {
    return error_in(image, files, dir_ / "work");
  }
  std::string error_in(const fs::path& image, const std::vector<VmconfigBootFile>& files, const fs::path& work) {
    try {
      (void)read_boot_files(image, "os-image 1 (disk.qcow2)", files, work);
    } catch (const Error& error) {
      return error.message();
    }
    return "(no error)";
  }

  // The manifest names another kernel's digest: refused with expected and got, and only the
  // extracted kernel stays in the work dir.
  void expect_another_kernel_refused(const fs::path& image) {
  auto files = wanted();
  files[0].digest = "sha256:" + sha256_hex("another kernel");
  auto message = error_of(image, files);
  EXPECT_NE(message.find("boot kernel " + kKernel + " (partition 1) of os-image 1 (disk.qcow2) does not match the manifest's "
                         "os.boot.kernel.digest\n  expected: sha256:" + sha256_hex("another kernel") +
                         "\n  got:      sha256:" + sha256_hex(kernel_)),
            std::string::npos)
      << message;
  EXPECT_EQ(left_in_work().size(), 1u) << "only the extracted kernel; no raw partition";
  }

  // The kernel's path is one the file system lacks: the error names the path, the partition
  // and debugfs's words, and nothing stays in the work dir.
  void expect_missing_path_named(const fs::path& image, const std::string& path) {
    auto message = error_of(image, wanted(1, path));
    EXPECT_NE(message.find("os.boot.kernel " + path + " on partition 1 of os-image 1 (disk.qcow2): no such file (debugfs: " +
                           path + ": File not found by ext2_lookup"),
              std::string::npos)
        << message;
    EXPECT_TRUE(left_in_work().empty());
  }

  // What read_boot_files left in its work dir: only the files it returned, on every path.
  std::vector<std::string> left_in_work() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_ / "work")) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  TempDir dir_;
  std::string kernel_, initrd_;
};

TEST_F(BootFiles, KernelAndInitrdComeOutOfTheImageMatchingTheirDigests) {
  auto image = make_image("disk.qcow2");
  auto files = read_boot_files(image, "os-image 1 (disk.qcow2)", wanted(), dir_ / "work");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].file.part, "kernel");
  EXPECT_EQ(test::read_file(files[0].path), kernel_);
  EXPECT_EQ(files[1].file.part, "initrd");
  EXPECT_EQ(test::read_file(files[1].path), initrd_);
  // Neither the disk head nor the partition's raw copy stays behind.
  EXPECT_EQ(left_in_work(), (std::vector<std::string>{files[1].path.filename().string(), files[0].path.filename().string()}));
}

// Debian keeps sfdisk, blkid and debugfs in /usr/sbin, off an ordinary user's PATH.
TEST_F(BootFiles, TheToolsInSbinAreFoundWhenPathLacksIt) {
  auto image = make_image("disk.qcow2");
  test::ScopedEnv path("PATH", "/usr/bin:/bin");
  auto files = read_boot_files(image, "os-image 1 (disk.qcow2)", wanted(), dir_ / "work");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(test::read_file(files[0].path), kernel_);
}

TEST_F(BootFiles, AMissingToolIsNamedWithItsPackage) {
  auto image = make_image("disk.qcow2");
  test::ScopedEnv path("PATH", (dir_ / "no-such-dir").string());
  auto message = error_of(image, wanted());
  EXPECT_NE(message.find("os-image 1 (disk.qcow2) is not a readable qcow2 image: qemu-img is not installed (Debian package "
                         "qemu-utils; podplane reads boot files out of os images with it)"),
            std::string::npos)
      << message;
}

TEST_F(BootFiles, AKernelThatDiffersFromTheManifestIsRefusedWithExpectedAndGot) {
  expect_another_kernel_refused(make_image("disk.qcow2"));
}

TEST_F(BootFiles, AMissingPartitionNamesTheImageThePartitionAndWhatThereIs) {
  auto image = make_image("disk.qcow2");
  auto message = error_of(image, wanted(2));
  EXPECT_NE(message.find("os-image 1 (disk.qcow2) has no partition 2 (named by os.boot.kernel)\n  expected: partition 2\n"
                         "  got:      partitions 1"),
            std::string::npos)
      << message;
  EXPECT_TRUE(left_in_work().empty());
}

TEST_F(BootFiles, AMissingPathNamesThePathThePartitionAndDebugfsWords) {
  auto image = make_image("disk.qcow2");
  expect_missing_path_named(image, "/boot/vmlinuz-none");
}

TEST_F(BootFiles, ADirectoryIsNotABootFile) {
  auto image = make_image("disk.qcow2");
  auto message = error_of(image, wanted(1, "/boot"));
  EXPECT_NE(message.find("os.boot.kernel /boot on partition 1 of os-image 1 (disk.qcow2) is not a regular file\n"
                         "  expected: regular\n  got:      directory"),
            std::string::npos)
      << message;
}

TEST_F(BootFiles, APartitionThatIsNotExt4SaysWhatItIs) {
  auto image = make_image("disk.qcow2", "swap");
  auto message = error_of(image, wanted());
  EXPECT_NE(message.find("partition 1 of os-image 1 (disk.qcow2) is not an ext2/3/4 file system, so its boot files cannot "
                         "be read\n  expected: ext2, ext3 or ext4\n  got:      swap"),
            std::string::npos)
      << message;
  EXPECT_TRUE(left_in_work().empty());
}

TEST_F(BootFiles, ACorruptQcow2GivesQemuImgsOwnWords) {
  test::write_file(dir_ / "disk.qcow2", "QFI\xfb but not really a qcow2 image");
  auto message = error_of(dir_ / "disk.qcow2", wanted());
  EXPECT_NE(message.find("os-image 1 (disk.qcow2) is not a readable qcow2 image: qemu-img failed (exit 1):\nqemu-img: "),
            std::string::npos)
      << message;
  EXPECT_TRUE(left_in_work().empty());
}

TEST_F(BootFiles, ATruncatedQcow2IsAnErrorNotACrash) {
  auto image = make_image("disk.qcow2");
  fs::resize_file(image, 100000);  // the clusters of the partition table and the files are gone
  auto message = error_of(image, wanted());
  // qemu-img reads what is cut off as zeros; the tool that finds nothing there says so.
  EXPECT_NE(message.find("os-image 1 (disk.qcow2) has no partition table sfdisk can read: sfdisk failed (exit 1):\nsfdisk: "),
            std::string::npos)
      << message;
  EXPECT_TRUE(left_in_work().empty());
}

TEST_F(BootFiles, AnImageWithABackingFileIsRefusedBeforeAnythingOfItIsRead) {
  test::write_file(dir_ / "secret", std::string(1 << 20, 's'));
  auto made = test::run({"qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b", (dir_ / "secret").string(), "-F", "raw",
                         (dir_ / "disk.qcow2").string(), "1M"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto message = error_of(dir_ / "disk.qcow2", wanted());
  EXPECT_NE(message.find("os-image 1 (disk.qcow2) refers to a backing file (" + (dir_ / "secret").string() +
                         "); an os image must be self-contained"),
            std::string::npos)
      << message;
}

// A qcow2 whose virtual size no file system can hold as a file (64 TiB; ext4 stops at 16):
// refused by its size, naming the image, never a bare file system error.
TEST_F(BootFiles, AHugeVirtualSizeIsRefusedNamingTheImage) {
  auto made = test::run({"qemu-img", "create", "-q", "-f", "qcow2", (dir_ / "disk.qcow2").string(), "64T"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto message = error_of(dir_ / "disk.qcow2", wanted());
  EXPECT_NE(message.find("os-image 1 (disk.qcow2) has a virtual size larger than an os image can be\n  expected: at most "
                         "4.0 TiB\n  got:      64.0 TiB (70368744177664 bytes)"),
            std::string::npos)
      << message;
  EXPECT_TRUE(left_in_work().empty());
}

// Large file systems: a root file system holds GiB beside the boot files (here a 48 MiB
// /filler). Only what debugfs reads is copied out of the image, so scratch holds about the boot
// files and the metadata, not the filler.
class BootFilesLarge : public BootFiles {
 protected:
  fs::path make_large_image(const std::vector<std::string>& options = {}) {
    std::vector<std::string> all{"--partition-mib", "72", "--filler-mib", "48"};
    all.insert(all.end(), options.begin(), options.end());
    return make_image("disk.qcow2", "ext4", all);
  }
  std::vector<ExtractedBootFile> read(const fs::path& image, BootReadReport& report) {
    try {
      return read_boot_files(image, "os-image 1 (disk.qcow2)", wanted(), dir_ / "work", &report);
    } catch (const Error& error) {
      ADD_FAILURE() << error.message();
      return {};
    }
  }
  void expect_the_boot_files(const std::vector<ExtractedBootFile>& files) {
    ASSERT_EQ(files.size(), 2u);
    EXPECT_EQ(test::read_file(files[0].path), kernel_);
    EXPECT_EQ(test::read_file(files[1].path), initrd_);
    EXPECT_EQ(left_in_work(), (std::vector<std::string>{files[1].path.filename().string(), files[0].path.filename().string()}));
  }
};

TEST_F(BootFilesLarge, OnlyWhatDebugfsReadsIsCopied) {
  auto image = make_large_image();
  BootReadReport report;
  auto files = read(image, report);
  expect_the_boot_files(files);
  EXPECT_EQ(report.sparse_copies, 1u);
  EXPECT_EQ(report.whole_copies, 0u);
  EXPECT_LT(report.scratch_bytes, 2u << 20) << "the 48 MiB filler must stay a hole";
}

// Without extents, a file's blocks are listed in indirect blocks that must be copied before
// debugfs can name the blocks they list: the rounds go one level deeper each time.
TEST_F(BootFilesLarge, FilesMappedThroughIndirectBlocksTakeARoundMore) {
  std::mt19937 random(7);
  kernel_.assign(3u << 20, '\0');  // past the 12 direct blocks
  for (char& byte : kernel_) byte = static_cast<char>(random());
  test::write_file(dir_ / "kernel", kernel_);
  auto image = make_large_image({"--mkfs-features", "^extent,^64bit"});
  BootReadReport report;
  auto files = read(image, report);
  expect_the_boot_files(files);
  EXPECT_EQ(report.sparse_copies, 1u);
  EXPECT_LT(report.scratch_bytes, 6u << 20);
}

// Group descriptors spread over the disk (meta_bg) are not where a sparse copy looks for them:
// the whole file system is copied, and the files come out the same.
TEST_F(BootFilesLarge, ALayoutTheSparseCopyDoesNotKnowIsCopiedWhole) {
  auto image = make_large_image({"--mkfs-features", "meta_bg,^resize_inode"});
  BootReadReport report;
  auto files = read(image, report);
  expect_the_boot_files(files);
  EXPECT_EQ(report.sparse_copies, 0u);
  EXPECT_EQ(report.whole_copies, 1u);
  EXPECT_GT(report.scratch_bytes, 48u << 20);
}

// A wrong digest or a missing path on a large image gets the words it gets on a small one: the
// whole copy, read after the sparse one fails, has the last word.
TEST_F(BootFilesLarge, ErrorsReadAsOnASmallImage) {
  auto image = make_large_image();
  expect_another_kernel_refused(image);

  fs::remove_all(dir_ / "work");
  fs::create_directories(dir_ / "work");
  expect_missing_path_named(image, "/boot/vmlinuz-missing");
}

// Decompression bombs: a qcow2 of a few hundred KiB whose compressed clusters expand to a
// partition of 96 MiB, read with a scratch dir on a 40 MiB tmpfs that a copy of the whole
// partition would fill (as it filled $TMPDIR for every other writer of it).
class BootFilesSmallScratch : public BootFiles {
 protected:
  void SetUp() override {
    BootFiles::SetUp();
    if (IsSkipped()) return;
    fs::create_directories(scratch_);
    auto mounted = test::run({"mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", scratch_.string()});
    if (mounted.exit_code != 0) GTEST_SKIP() << "cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): " << mounted.err;
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) (void)test::run({"umount", scratch_.string()});
  }
  std::uint64_t scratch_used() const { return fs::space(scratch_).capacity - fs::space(scratch_).free; }

  fs::path scratch_ = dir_ / "scratch";
  bool mounted_ = false;
};

// The file system fills the partition with compressible data: the copy is refused before it
// starts, saying how much it needed and how much there was, and the tmpfs stays empty.
TEST_F(BootFilesSmallScratch, APartitionThatExpandsPastTheScratchIsRefusedBeforeItIsCopied) {
  auto image = make_image("disk.qcow2", "ext4", {"--partition-mib", "96", "--filler-mib", "64", "--compress"});
  ASSERT_LT(fs::file_size(image), 4u << 20) << "the image must be a small file that expands";
  auto message = error_in(image, wanted(), scratch_);
  EXPECT_NE(message.find("partition 1 of os-image 1 (disk.qcow2) expands to more than the scratch space can take to "
                         "read its boot files, so nothing of it was read"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\n  expected: at most 20.0 MiB\n  got:      "), std::string::npos) << message;
  EXPECT_EQ(message.find("No space left"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_empty(scratch_));
}

// The file system is smaller than its partition, and the rest of the partition is filler: the
// copy ends where the file system does, so the boot files come out within the small scratch.
TEST_F(BootFilesSmallScratch, TheCopyEndsWhereTheFileSystemEnds) {
  auto image = make_image("disk.qcow2", "ext4", {"--partition-mib", "96", "--fs-mib", "8", "--fill-after-fs", "--compress"});
  ASSERT_LT(fs::file_size(image), 4u << 20);
  std::vector<ExtractedBootFile> files;
  try {
    files = read_boot_files(image, "os-image 1 (disk.qcow2)", wanted(), scratch_);
  } catch (const Error& error) {
    FAIL() << error.message();
  }
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(test::read_file(files[0].path), kernel_);
  EXPECT_EQ(test::read_file(files[1].path), initrd_);
  EXPECT_LT(scratch_used(), 1u << 20) << "only the boot files stay";
}

}  // namespace
}  // namespace podplane::fetch
