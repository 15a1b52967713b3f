#pragma once
// Reads the boot kernel and initrd (os.boot) out of a vmconfig os image and checks each against
// its manifest digest. Standard tools do the reading, never a reader of ours: `qemu-img` (info,
// convert of the first MiB, then of one partition's file system to a sparse raw file),
// `sfdisk --json` for the partition table, `blkid` for the file system type and `debugfs` for
// the file. Of a file system with much data (a real root file system: GiB), only what debugfs
// reads is copied (`dumpe2fs -g` says where the inode tables are, `debugfs blocks` which blocks
// each path uses); the whole file system is copied when that cannot be done. Only the
// partitions named are written out, into `work_dir` (a scratch dir, never the store), and each
// is removed as soon as its files are out. Errors are podplane::Error naming the image, the
// partition and the path, with the tool's own message; a missing tool says which package
// brings it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fetch/vmconfig.hpp"

namespace podplane::fetch {

struct ExtractedBootFile {
  VmconfigBootFile file;
  std::filesystem::path path;  // in work_dir; its bytes match file.digest
};

// How the files were read: what the copies of file systems took in scratch, and how many were
// whole or sparse (for the tests and the benchmark).
struct BootReadReport {
  std::uint64_t scratch_bytes = 0;
  std::size_t whole_copies = 0;
  std::size_t sparse_copies = 0;
};

// `image` is a qcow2 file (opened read-only; an image with a backing or external data file is
// refused, so nothing outside it is ever read); `label` names it in messages
// ("os-image 20260512-2476 (debian-13-genericcloud-amd64-20260512-2476.qcow2)").
[[nodiscard]] std::vector<ExtractedBootFile> read_boot_files(const std::filesystem::path& image, const std::string& label,
                                                             const std::vector<VmconfigBootFile>& files,
                                                             const std::filesystem::path& work_dir,
                                                             BootReadReport* report = nullptr);

}  // namespace podplane::fetch
