#include "fetch/boot_files.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/human_bytes.hpp"
#include "base/run_tool.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::uint64_t kHeadBytes = 1u << 20;  // MBR or GPT header and its 128 entries, with room
constexpr std::uint64_t kMaxBootFile = 1ull << 30;
// An os image is a template disk of a few GiB; the partition table is read from a sparse file
// of the disk's size, which no file system holds past a few TiB (ext4: 16 TiB).
constexpr std::uint64_t kMaxDiskSize = 4ull << 40;
// A file system's first 64 KiB: its superblock (ext: at 1024) and every signature blkid probes.
constexpr std::uint64_t kFsHeadBytes = 64u << 10;
// From this much data in a file system on, its boot files are read from a sparse copy.
constexpr std::uint64_t kSparseFromBytes = 32u << 20;

// Which package brings each tool (scripts/setup installs them all).
std::string package_of(const std::string& tool) {
  if (tool == "qemu-img") return "qemu-utils";
  if (tool == "sfdisk") return "fdisk";
  if (tool == "blkid") return "util-linux";
  return "e2fsprogs";  // debugfs
}

// sfdisk, blkid and debugfs live in /usr/sbin, which is not on an ordinary user's PATH on
// Debian although they need no privilege for a file: PATH first, then the sbin directories.
std::string program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return name;
    start = end + 1;
  }
  for (const char* dir : {"/usr/sbin/", "/sbin/"})
    if (::access((dir + name).c_str(), X_OK) == 0) return dir + name;
  return name;  // run_tool reports it missing
}

// Runs a tool and throws "<what>: <tool> failed (exit N):\n<its stderr>" unless it succeeds.
ToolRun run_checked(std::vector<std::string> argv, const std::string& what) {
  const std::string name = argv[0];
  argv[0] = program(name);
  ToolRun run = run_tool(argv);
  if (run.missing) {
    throw Error(what + ": " + name + " is not installed (Debian package " + package_of(name) +
                "; podplane reads boot files out of os images with it)");
  }
  if (run.exit_code != 0) {
    throw Error(what + ": " + name + " failed (exit " + std::to_string(run.exit_code) + ")" +
                (run.err.empty() ? std::string() : ":\n" + run.err));
  }
  return run;
}

// qemu's option syntax: a ',' in a value is written ",,". The file name goes in as an option
// value, never as a bare argument, so that qemu never reads "json:" or "nbd:" in it.
std::string qemu_value(const fs::path& path) {
  std::string out;
  for (char c : path.string()) {
    out += c;
    if (c == ',') out += ',';
  }
  return out;
}

std::string qcow2_options(const fs::path& image) {
  return "driver=qcow2,file.driver=file,file.filename=" + qemu_value(image);
}

// Bytes [offset, offset + size) of the image's disk, as qemu's options.
std::string slice_options(const fs::path& image, std::uint64_t offset, std::uint64_t size) {
  return "driver=raw,offset=" + std::to_string(offset) + ",size=" + std::to_string(size) +
         ",file.driver=qcow2,file.file.driver=file,file.file.filename=" + qemu_value(image);
}

// Bytes [offset, offset + size) of the image's disk as a sparse raw file (qemu-img skips what
// is unallocated or zero, so a mostly empty partition costs little disk).
void copy_slice(const fs::path& image, const std::string& label, std::uint64_t offset, std::uint64_t size,
                const fs::path& out, const std::string& what) {
  (void)run_checked({"qemu-img", "convert", "-O", "raw", "--image-opts", slice_options(image, offset, size), out.string()},
                    "cannot read " + what + " of " + label);
}

// A scratch file removed when the scope ends, whichever way it ends.
class RemovedAtExit {
 public:
  explicit RemovedAtExit(fs::path path) : path_(std::move(path)) {}
  ~RemovedAtExit() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  RemovedAtExit(const RemovedAtExit&) = delete;
  RemovedAtExit& operator=(const RemovedAtExit&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// At most the first `limit` bytes of `file`.
std::string read_head(const fs::path& file, std::uint64_t limit) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes(limit, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(limit));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

struct Partition {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

std::uint64_t little_endian(const std::string& bytes, std::size_t at, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < width; ++i) value |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return value;
}

// What an ext2/3/4 superblock says of its file system's layout: its size, and where a sparse
// copy finds the group descriptors and the inode tables.
struct ExtLayout {
  std::uint64_t block_size = 0;
  std::uint64_t blocks = 0;
  std::uint64_t first_data_block = 0;  // the superblock's block: 1 with 1 KiB blocks, else 0
  std::uint64_t blocks_per_group = 0;
  std::uint64_t inode_table_blocks = 0;  // per group
  std::uint64_t descriptor_size = 0;
  bool meta_bg = false;  // group descriptors spread over the disk rather than after the superblock
};

// nullopt when `head` (the partition's first bytes) holds no ext superblock.
std::optional<ExtLayout> ext_layout(const std::string& head) {
  constexpr std::size_t kSuperblock = 1024;
  if (head.size() < kSuperblock + 1024 || little_endian(head, kSuperblock + 56, 2) != 0xEF53) return std::nullopt;
  const std::uint64_t log_block_size = little_endian(head, kSuperblock + 24, 4);
  if (log_block_size > 6) return std::nullopt;  // blocks of 1 KiB to 64 KiB
  ExtLayout layout;
  layout.block_size = std::uint64_t{1024} << log_block_size;
  layout.blocks = little_endian(head, kSuperblock + 4, 4);
  constexpr std::uint64_t kIncompatMetaBg = 0x10;
  constexpr std::uint64_t kIncompat64Bit = 0x80;
  const std::uint64_t incompat = little_endian(head, kSuperblock + 96, 4);
  layout.descriptor_size = 32;
  if (incompat & kIncompat64Bit) {
    layout.blocks |= little_endian(head, kSuperblock + 0x150, 4) << 32;
    layout.descriptor_size = little_endian(head, kSuperblock + 0xFE, 2);
  }
  layout.meta_bg = (incompat & kIncompatMetaBg) != 0;
  layout.first_data_block = little_endian(head, kSuperblock + 20, 4);
  layout.blocks_per_group = little_endian(head, kSuperblock + 32, 4);
  const std::uint64_t inodes_per_group = little_endian(head, kSuperblock + 40, 4);
  const std::uint64_t revision = little_endian(head, kSuperblock + 76, 4);
  const std::uint64_t inode_size = revision >= 1 ? little_endian(head, kSuperblock + 88, 2) : 128;
  layout.inode_table_blocks = (inodes_per_group * inode_size + layout.block_size - 1) / layout.block_size;
  return layout;
}

// The size an ext2/3/4 file system gives itself in its superblock (blocks count times block
// size): where its data can be, so what a copy of the partition needs.
std::uint64_t ext_file_system_bytes(const ExtLayout& layout) {
  if (layout.blocks > (kMaxDiskSize >> 10)) return kMaxDiskSize;  // more than any disk we read: the partition bounds it
  return layout.blocks * layout.block_size;
}

// The bytes of the image's disk in [offset, offset + size) that hold data, as qemu-img maps
// them: what a sparse raw copy of that range writes (a compressed cluster expands to its
// whole size). Refuses a map it cannot read whole (one cut at run_tool's limit included).
std::uint64_t data_bytes_in(const fs::path& image, const std::string& label, std::uint64_t offset, std::uint64_t size,
                            const std::string& what) {
  ToolRun run = run_checked({"qemu-img", "map", "--output=json", "--image-opts", slice_options(image, offset, size)},
                            "cannot map " + what + " of " + label);
  json map = json::parse(run.out, nullptr, false);
  if (!map.is_array()) throw Error("cannot map " + what + " of " + label + ": qemu-img map gave no map it could read whole");
  std::uint64_t data = 0;
  for (const auto& extent : map) {
    if (!extent.is_object() || !extent.value("data", false) || extent.value("zero", false)) continue;
    const auto& length = extent.value("length", json());
    if (!length.is_number_unsigned()) throw Error("cannot map " + what + " of " + label + ": an extent without a length");
    data += length.get<std::uint64_t>();
  }
  return data;
}

// Free bytes for an unprivileged writer on the file system of `dir`.
std::uint64_t free_bytes(const fs::path& dir) {
  struct statvfs info {};
  if (::statvfs(dir.c_str(), &info) != 0) return 0;
  return static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
}

// debugfs takes its command as one line; the manifest's path is plain (fetch/vmconfig.cpp)
// and our scratch path may hold spaces, so both go in double quotes.
std::string quoted(const std::string& text) {
  if (text.find('"') != std::string::npos || text.find('\n') != std::string::npos)
    throw Error("cannot pass " + text + " to debugfs: it holds a quote or a line break");
  return "\"" + text + "\"";
}

// Where a partition's file system lies, and the names its messages give it.
struct ReadSite {
  const fs::path& image;
  const std::string& label;
  int number;              // the partition
  std::uint64_t offset;    // of the file system on the image's disk
  std::uint64_t size;      // of the file system, as far as a copy of it goes
  const std::string& where;  // "partition 1 of <label>"
};

// debugfs reads the allocation bitmaps as it opens a file system unless told not to (-c): a
// sparse copy has none, and reading files needs none.
enum class DebugfsMode { whole, without_bitmaps };

std::vector<std::string> debugfs_argv(DebugfsMode mode, const std::string& command, const fs::path& raw) {
  if (mode == DebugfsMode::without_bitmaps) return {"debugfs", "-c", "-R", command, raw.string()};
  return {"debugfs", "-R", command, raw.string()};
}

// Dumps each wanted file out of `raw` (a raw copy of the file system) into work_dir, and checks
// it against its digest.
std::vector<ExtractedBootFile> dump_files(const ReadSite& site, const std::vector<const VmconfigBootFile*>& wanted,
                                          const fs::path& raw, DebugfsMode mode, const fs::path& work_dir) {
  const std::string& where = site.where;
  std::vector<ExtractedBootFile> dumped;
  for (const VmconfigBootFile* file : wanted) {
    std::string what = "os.boot." + file->part + " " + file->path + " on " + where;
    ToolRun stat = run_checked(debugfs_argv(mode, "stat " + quoted(file->path), raw), "cannot read " + what);
    // debugfs reports a missing file on stderr and still exits 0.
    std::smatch type_match;
    static const std::regex type_pattern(R"(Type: (\S+))");
    if (!std::regex_search(stat.out, type_match, type_pattern)) {
      std::string message = stat.err;
      if (auto banner = message.find('\n'); message.starts_with("debugfs ") && banner != std::string::npos)
        message.erase(0, banner + 1);  // the version banner
      throw Error(what + ": no such file" + (message.empty() ? std::string() : " (debugfs: " + message + ")"));
    }
    if (type_match[1] != "regular") {
      throw Error(mismatch_message(what + " is not a regular file", "regular", type_match[1].str()));
    }
    static const std::regex size_pattern(R"(Size: (\d+))");
    if (std::smatch size_match; std::regex_search(stat.out, size_match, size_pattern) &&
                                (size_match[1].length() > 12 || std::stoull(size_match[1]) > kMaxBootFile)) {
      throw Error(what + " is larger than a boot file can be (" + size_match[1].str() + " bytes, at most 1 GiB)");
    }
    fs::path out = work_dir / (file->part + "-" + file->file_name());
    (void)run_checked(debugfs_argv(mode, "dump " + quoted(file->path) + " " + quoted(out.string()), raw),
                      "cannot read " + what);
    if (!fs::is_regular_file(out)) {
      throw Error("cannot read " + what + ": debugfs wrote nothing");
    }
    auto expected = TypedDigest::parse(file->digest);
    TypedDigest got{expected.algorithm, file_digest_hex(out, expected.algorithm)};
    if (got.hex != expected.hex) {
      throw Error(mismatch_message("boot " + file->part + " " + file->path + " (partition " + std::to_string(site.number) +
                                       ") of " + site.label + " does not match the manifest's os.boot." + file->part + ".digest",
                                   expected.str(), got.str()));
    }
    dumped.push_back({*file, out});
  }
  return dumped;
}

// The bytes `path` takes on its file system (a sparse file's holes take none).
std::uint64_t allocated_bytes(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return 0;
  return static_cast<std::uint64_t>(info.st_blocks) * 512;
}

void note_copy(BootReadReport* report, const fs::path& raw, bool whole) {
  if (report == nullptr) return;
  report->scratch_bytes += allocated_bytes(raw);
  (whole ? report->whole_copies : report->sparse_copies) += 1;
}

// The whole file system copied out (into a sparse raw file: qemu-img skips what is unallocated
// or zero), then the files dumped from it: the way that reads any file system debugfs can.
std::vector<ExtractedBootFile> read_whole(const ReadSite& site, const std::vector<const VmconfigBootFile*>& wanted,
                                          const fs::path& work_dir, BootReadReport* report) {
  RemovedAtExit raw_file(work_dir / ("partition-" + std::to_string(site.number) + ".raw"));
  copy_slice(site.image, site.label, site.offset, site.size, raw_file.path(), "partition " + std::to_string(site.number));
  auto dumped = dump_files(site, wanted, raw_file.path(), DebugfsMode::whole, work_dir);
  note_copy(report, raw_file.path(), true);
  return dumped;
}

// A run of blocks of a file system: [first, first + count).
struct BlockRun {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};

// Blocks of one file system copied out of the image into the same places of a sparse raw file
// of the file system's size, each run once; every block never asked for stays a hole.
class SparseCopy {
 public:
  SparseCopy(const ReadSite& site, std::uint64_t block_size, fs::path raw)
      : site_(site), block_size_(block_size), blocks_(site.size / block_size), raw_(std::move(raw)) {
    { std::ofstream create(raw_, std::ios::binary); }
    fs::resize_file(raw_, site.size);
  }

  // Copies the runs not copied yet. Neighbours up to 1 MiB apart go in one qemu-img run (a
  // hole costs nothing to copy, another process about 30 ms). Returns how many runs were new;
  // throws when a run lies past the file system or there are too many runs to copy this way.
  std::size_t copy(std::vector<BlockRun> runs) {
    std::erase_if(runs, [&](const BlockRun& run) { return run.count == 0 || copied(run); });
    const std::size_t fresh = runs.size();
    std::sort(runs.begin(), runs.end(), [](const BlockRun& a, const BlockRun& b) { return a.first < b.first; });
    const std::uint64_t gap = std::max<std::uint64_t>(1, (1u << 20) / block_size_);
    std::vector<BlockRun> merged;
    for (const BlockRun& run : runs) {
      if (run.first >= blocks_ || run.count > blocks_ - run.first)
        throw Error(site_.where + ": its metadata names blocks past the end of the file system");
      if (!merged.empty() && run.first <= merged.back().first + merged.back().count + gap) {
        merged.back().count = std::max(merged.back().count, run.first + run.count - merged.back().first);
      } else {
        merged.push_back(run);
      }
    }
    constexpr std::size_t kMaxRunsPerCopy = 64;
    if (merged.size() > kMaxRunsPerCopy) throw Error(site_.where + ": too many runs of blocks to copy one by one");
    for (const BlockRun& run : merged) copy_run(run);
    return fresh;
  }

 private:
  bool copied(const BlockRun& run) const {
    auto after = copied_.upper_bound(run.first);
    if (after == copied_.begin()) return false;
    --after;
    return run.first + run.count <= after->second;
  }

  void copy_run(const BlockRun& run) {
    const std::uint64_t offset = run.first * block_size_;
    const std::uint64_t size = run.count * block_size_;
    (void)run_checked({"qemu-img", "convert", "-n", "--image-opts", slice_options(site_.image, site_.offset + offset, size),
                       "--target-image-opts",
                       "driver=raw,offset=" + std::to_string(offset) + ",size=" + std::to_string(size) +
                           ",file.driver=file,file.filename=" + qemu_value(raw_)},
                      "cannot read " + site_.where);
    // Kept disjoint: a run joins the ones it touches.
    std::uint64_t first = run.first;
    std::uint64_t end = run.first + run.count;
    auto at = copied_.upper_bound(first);
    if (at != copied_.begin() && std::prev(at)->second >= first) {
      --at;
      first = at->first;
      end = std::max(end, at->second);
    }
    while (at != copied_.end() && at->first <= end) {
      end = std::max(end, at->second);
      at = copied_.erase(at);
    }
    copied_[first] = end;
  }

  const ReadSite& site_;
  std::uint64_t block_size_;
  std::uint64_t blocks_;
  fs::path raw_;
  std::map<std::uint64_t, std::uint64_t> copied_;  // first block → one past the last
};

// Every directory on the way to each file, then the file: "/", "/boot", "/boot/vmlinuz-…".
std::set<std::string> paths_to(const std::vector<const VmconfigBootFile*>& wanted) {
  std::set<std::string> paths{"/"};
  for (const VmconfigBootFile* file : wanted) {
    std::string path;
    for (std::size_t start = 0; start < file->path.size();) {
      std::size_t end = std::min(file->path.find('/', start), file->path.size());
      if (end > start) {
        path += "/" + file->path.substr(start, end - start);
        paths.insert(path);
      }
      start = end + 1;
    }
  }
  return paths;
}

// The block numbers `debugfs -f` printed for its `blocks` commands, one run each; nullopt for
// anything else on stdout (debugfs echoes each command as "debugfs: …"; errors go to stderr).
std::optional<std::vector<BlockRun>> listed_blocks(const std::string& out) {
  std::vector<BlockRun> runs;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("debugfs:")) continue;
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      if (word.size() > 19 || !std::all_of(word.begin(), word.end(), ::isdigit)) return std::nullopt;
      runs.push_back({std::stoull(word), 1});
    }
  }
  return runs;
}

// The sparse way, for a file system with much data: a raw file of its size that holds only
// what debugfs reads to find and dump the boot files (the superblock, the group descriptors,
// the inode tables, the directories on the paths, the files and their extent trees), so that a
// Debian cloud image costs the MiB of its kernel and initrd, not the GiB of its root file
// system. debugfs itself says which blocks each path uses; each round it can say more (the
// entries of a directory just copied, the next level of an extent tree), until a round names
// none it lacks. Returns nothing when this file system cannot be read this way (its group
// descriptors spread with meta_bg, an answer debugfs gives that this does not expect, files
// that do not match their digests): the caller then copies the whole file system, whose read
// has the last word and the error messages.
std::vector<ExtractedBootFile> read_sparsely(const ReadSite& site, const ExtLayout& layout,
                                             const std::vector<const VmconfigBootFile*>& wanted, const fs::path& work_dir,
                                             BootReadReport* report) {
  if (layout.meta_bg || layout.blocks_per_group == 0 || layout.descriptor_size == 0) return {};
  const std::string prefix = "partition-" + std::to_string(site.number);
  RemovedAtExit raw_file(work_dir / (prefix + ".sparse.raw"));
  RemovedAtExit commands_file(work_dir / (prefix + ".debugfs"));
  try {
    SparseCopy copy(site, layout.block_size, raw_file.path());
    // The superblock, and the group descriptors in the blocks after it.
    const std::uint64_t groups = (layout.blocks - layout.first_data_block + layout.blocks_per_group - 1) / layout.blocks_per_group;
    const std::uint64_t descriptor_blocks = (groups * layout.descriptor_size + layout.block_size - 1) / layout.block_size;
    (void)copy.copy({{0, layout.first_data_block + 1 + descriptor_blocks}});

    // Every group's inode table, where dumpe2fs says it starts: lines "group:block:super:gdt:
    // bbitmap:ibitmap:itable". With flex_bg, the tables of 16 groups lie together: one run.
    ToolRun table_run = run_checked({"dumpe2fs", "-g", raw_file.path().string()}, "cannot read " + site.where);
    std::vector<BlockRun> tables;
    std::istringstream lines(table_run.out);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t at = line.rfind(':');
      if (at == std::string::npos || std::count(line.begin(), line.end(), ':') != 6) continue;
      const std::string table = line.substr(at + 1);
      if (table.empty() || table.size() > 19 || !std::all_of(table.begin(), table.end(), ::isdigit)) continue;
      tables.push_back({std::stoull(table), layout.inode_table_blocks});
    }
    if (tables.empty()) return {};
    (void)copy.copy(tables);

    {
      std::ofstream commands(commands_file.path());
      for (const auto& path : paths_to(wanted)) commands << "blocks " << quoted(path) << "\n";
    }
    constexpr std::size_t kMaxRounds = 16;
    for (std::size_t round = 0;; ++round) {
      if (round == kMaxRounds) return {};
      ToolRun listed = run_checked({"debugfs", "-c", "-f", commands_file.path().string(), raw_file.path().string()},
                                   "cannot read " + site.where);
      auto runs = listed_blocks(listed.out);
      if (!runs || listed.out.size() >= (4u << 20)) return {};  // run_tool keeps 4 MiB of stdout
      if (copy.copy(std::move(*runs)) == 0) break;
    }
    auto dumped = dump_files(site, wanted, raw_file.path(), DebugfsMode::without_bitmaps, work_dir);
    note_copy(report, raw_file.path(), false);
    return dumped;
  } catch (const std::exception&) {
    for (const VmconfigBootFile* file : wanted) {
      std::error_code ignored;
      fs::remove(work_dir / (file->part + "-" + file->file_name()), ignored);
    }
    return {};
  }
}

// Kept whole: each step reads what the step before it checked (image, table, partition, file system, file).
std::vector<ExtractedBootFile> read_boot_files_of(const fs::path& image, const std::string& label,
                                                  const std::vector<VmconfigBootFile>& files, const fs::path& work_dir,
                                                  BootReadReport* report) {
  std::vector<ExtractedBootFile> extracted;
  if (files.empty()) return extracted;

  // The image itself: qcow2, and self-contained.
  json info;
  {
    ToolRun run = run_checked({"qemu-img", "info", "--output=json", "--image-opts", qcow2_options(image)},
                              label + " is not a readable qcow2 image");
    info = json::parse(run.out, nullptr, false);
    if (!info.is_object() || !info.contains("virtual-size") || !info["virtual-size"].is_number_unsigned())
      throw Error(label + ": qemu-img info gave no virtual size:\n" + run.out.substr(0, 400));
  }
  if (info.contains("backing-filename"))
    throw Error(label + " refers to a backing file (" + info.value("backing-filename", std::string()) +
                "); an os image must be self-contained");
  if (info.contains("format-specific") && info["format-specific"].value("data", json::object()).contains("data-file"))
    throw Error(label + " keeps its data in an external file; an os image must be self-contained");
  const std::uint64_t disk_size = info["virtual-size"].get<std::uint64_t>();
  if (disk_size > kMaxDiskSize)
    throw Error(mismatch_message(label + " has a virtual size larger than an os image can be",
                                 "at most " + human_bytes(kMaxDiskSize),
                                 human_bytes(disk_size) + " (" + std::to_string(disk_size) + " bytes)"));

  // The partition table, from the first MiB laid out as a sparse file of the disk's size (so
  // that sfdisk sees the partitions fit; the backup GPT at the end is not copied).
  RemovedAtExit head_file(work_dir / "disk-head.raw");
  const fs::path& head = head_file.path();
  copy_slice(image, label, 0, std::min(kHeadBytes, disk_size), head, "the partition table");
  fs::resize_file(head, disk_size);
  ToolRun table_run = run_checked({"sfdisk", "--json", head.string()}, label + " has no partition table sfdisk can read");
  json table = json::parse(table_run.out, nullptr, false);
  if (!table.is_object() || !table.contains("partitiontable") || !table["partitiontable"].is_object())
    throw Error(label + ": sfdisk gave no partition table:\n" + table_run.out.substr(0, 400));
  const json& disk = table["partitiontable"];
  const std::uint64_t sector = disk.value("sectorsize", std::uint64_t{512});
  const std::string device = head.string();
  std::map<int, Partition> partitions;
  for (const auto& entry : disk.value("partitions", json::array())) {
    std::string node = entry.value("node", std::string());
    if (!node.starts_with(device) || !entry.contains("start") || !entry.contains("size")) continue;
    std::string number = node.substr(device.size());
    if (number.empty() || number.size() > 3 || !std::all_of(number.begin(), number.end(), ::isdigit)) continue;
    partitions[std::stoi(number)] = {entry["start"].get<std::uint64_t>() * sector, entry["size"].get<std::uint64_t>() * sector};
  }

  // Each partition named once, then each file on it.
  std::map<int, std::vector<const VmconfigBootFile*>> by_partition;
  for (const auto& file : files) by_partition[file.partition].push_back(&file);
  for (const auto& [number, wanted] : by_partition) {
    std::string where = "partition " + std::to_string(number) + " of " + label;
    auto found = partitions.find(number);
    if (found == partitions.end()) {
      std::string present;
      for (const auto& [n, _] : partitions) present += (present.empty() ? "" : ", ") + std::to_string(n);
      throw Error(mismatch_message(label + " has no partition " + std::to_string(number) + " (named by os.boot." +
                                       wanted.front()->part + ")",
                                   "partition " + std::to_string(number), present.empty() ? "no partitions" : "partitions " + present));
    }
    const Partition& partition = found->second;
    if (partition.offset + partition.size > disk_size)
      throw Error(where + " ends past the end of the disk (" + std::to_string(disk_size) + " bytes)");
    // The file system's type and size from its first bytes, before any more of it is copied.
    std::string fs_head;
    std::string type;
    {
      RemovedAtExit head_of_fs(work_dir / ("partition-" + std::to_string(number) + "-head.raw"));
      copy_slice(image, label, partition.offset, std::min(kFsHeadBytes, partition.size), head_of_fs.path(),
                 "partition " + std::to_string(number));
      // blkid exits 2 when it finds no file system: that is an answer here, not a failure.
      ToolRun type_run = run_tool({program("blkid"), "-p", "-o", "value", "-s", "TYPE", head_of_fs.path().string()});
      if (type_run.missing) (void)run_checked({"blkid"}, where);
      if (type_run.exit_code != 0 && type_run.exit_code != 2)
        throw Error(where + ": blkid failed (exit " + std::to_string(type_run.exit_code) + ")" +
                    (type_run.err.empty() ? std::string() : ":\n" + type_run.err));
      type = type_run.out.substr(0, type_run.out.find('\n'));
      fs_head = read_head(head_of_fs.path(), kFsHeadBytes);
    }
    if (type != "ext2" && type != "ext3" && type != "ext4") {
      throw Error(mismatch_message(where + " is not an ext2/3/4 file system, so its boot files cannot be read",
                                   "ext2, ext3 or ext4", type.empty() ? "no file system blkid recognises" : type));
    }
    const std::optional<ExtLayout> layout = ext_layout(fs_head);
    const std::uint64_t fs_bytes = layout ? ext_file_system_bytes(*layout) : 0;
    if (fs_bytes == 0) throw Error(where + ": blkid says " + type + " but its superblock gives no size");

    // The copy ends where the file system does (the rest of the partition is no part of it),
    // and what it writes, every byte a compressed cluster expands to, must fit the scratch
    // space with room to spare: an image of a few MiB can expand to GiB, which must never
    // fill $TMPDIR for every other writer of it.
    const std::uint64_t copy_size = std::min(partition.size, fs_bytes);
    const std::uint64_t data = data_bytes_in(image, label, partition.offset, copy_size, "partition " + std::to_string(number));
    const std::uint64_t room = free_bytes(work_dir) / 2;
    if (data > room) {
      throw Error(mismatch_message(where + " expands to more than the scratch space can take to read its boot files, so "
                                       "nothing of it was read (its " + type + " file system of " + human_bytes(fs_bytes) +
                                       " holds that much data; scratch: " + work_dir.string() +
                                       ", of which a read takes at most half the free space; set TMPDIR to a larger "
                                       "file system)",
                                   "at most " + human_bytes(room), human_bytes(data)));
    }
    // Below some MiB of data, one copy of it all costs less than the dozen tool runs of a
    // sparse copy.
    const ReadSite site{image, label, number, partition.offset, copy_size, where};
    std::vector<ExtractedBootFile> read;
    if (data >= kSparseFromBytes) read = read_sparsely(site, *layout, wanted, work_dir, report);
    if (read.empty()) read = read_whole(site, wanted, work_dir, report);
    extracted.insert(extracted.end(), read.begin(), read.end());
  }
  // In the order the manifest named them.
  std::vector<ExtractedBootFile> ordered;
  for (const auto& file : files)
    for (const auto& done : extracted)
      if (done.file.part == file.part) ordered.push_back(done);
  return ordered;
}

}  // namespace

std::vector<ExtractedBootFile> read_boot_files(const fs::path& image, const std::string& label,
                                               const std::vector<VmconfigBootFile>& files, const fs::path& work_dir,
                                               BootReadReport* report) {
  try {
    return read_boot_files_of(image, label, files, work_dir, report);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // A file system or allocation error (a scratch file the size of a huge disk): it names
    // the image too, as every error here does.
    throw Error("cannot read the boot files of " + label + ": " + e.what());
  }
}

}  // namespace podplane::fetch
