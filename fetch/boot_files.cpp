#include "fetch/boot_files.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <system_error>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/human_bytes.hpp"
#include "base/run_tool.hpp"

namespace podplane::mirror {
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

// The size an ext2/3/4 file system gives itself in its superblock (blocks count times block
// size): where its data can be, so what a copy of the partition needs. 0 when `head` (the
// partition's first bytes) holds no ext superblock.
std::uint64_t ext_file_system_bytes(const std::string& head) {
  constexpr std::size_t kSuperblock = 1024;
  if (head.size() < kSuperblock + 1024 || little_endian(head, kSuperblock + 56, 2) != 0xEF53) return 0;
  const std::uint64_t log_block_size = little_endian(head, kSuperblock + 24, 4);
  if (log_block_size > 6) return 0;  // blocks of 1 KiB to 64 KiB
  std::uint64_t blocks = little_endian(head, kSuperblock + 4, 4);
  constexpr std::uint64_t kIncompat64Bit = 0x80;
  if (little_endian(head, kSuperblock + 96, 4) & kIncompat64Bit) blocks |= little_endian(head, kSuperblock + 0x150, 4) << 32;
  if (blocks > (kMaxDiskSize >> 10)) return kMaxDiskSize;  // more than any disk we read: the partition bounds it
  return blocks << (10 + log_block_size);
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

// Kept whole: each step reads what the step before it checked (image, table, partition, file system, file).
std::vector<ExtractedBootFile> read_boot_files_of(const fs::path& image, const std::string& label,
                                                  const std::vector<VmconfigBootFile>& files, const fs::path& work_dir) {
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
    const std::uint64_t fs_bytes = ext_file_system_bytes(fs_head);
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
    RemovedAtExit raw_file(work_dir / ("partition-" + std::to_string(number) + ".raw"));
    const fs::path& raw = raw_file.path();
    copy_slice(image, label, partition.offset, copy_size, raw, "partition " + std::to_string(number));

    for (const VmconfigBootFile* file : wanted) {
      std::string what = "os.boot." + file->part + " " + file->path + " on " + where;
      ToolRun stat = run_checked({"debugfs", "-R", "stat " + quoted(file->path), raw.string()}, "cannot read " + what);
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
      (void)run_checked({"debugfs", "-R", "dump " + quoted(file->path) + " " + quoted(out.string()), raw.string()},
                        "cannot read " + what);
      if (!fs::is_regular_file(out)) {
        throw Error("cannot read " + what + ": debugfs wrote nothing");
      }
      auto expected = TypedDigest::parse(file->digest);
      TypedDigest got{expected.algorithm, file_digest_hex(out, expected.algorithm)};
      if (got.hex != expected.hex) {
        throw Error(mismatch_message("boot " + file->part + " " + file->path + " (partition " + std::to_string(number) +
                                         ") of " + label + " does not match the manifest's os.boot." + file->part + ".digest",
                                     expected.str(), got.str()));
      }
      extracted.push_back({*file, out});
    }
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
                                               const std::vector<VmconfigBootFile>& files, const fs::path& work_dir) {
  try {
    return read_boot_files_of(image, label, files, work_dir);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // A file system or allocation error (a scratch file the size of a huge disk): it names
    // the image too, as every error here does.
    throw Error("cannot read the boot files of " + label + ": " + e.what());
  }
}

}  // namespace podplane::mirror
