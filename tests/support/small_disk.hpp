#pragma once
// A tmpfs of a given size that a test mounts (and unmounts) to see what commands do on a full
// disk. Mounting needs root (CAP_SYS_ADMIN): a test checks mounted() and skips with error().
#include <cstddef>
#include <filesystem>
#include <string>

namespace podplane::test {

class SmallDisk {
 public:
  // A tmpfs of `size` (mount's spelling: "3m") at `where`, created if missing.
  SmallDisk(const std::filesystem::path& where, const std::string& size);
  ~SmallDisk();
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::filesystem::path& path() const { return path_; }

  // Writes a filler file until the disk is full, then frees `spare` bytes of it. False (with
  // the reason in error()) when the filler cannot be made.
  bool fill_leaving(std::size_t spare);
  // Removes the filler: the disk has its room back.
  void empty_filler();

 private:
  std::filesystem::path path_;
  bool mounted_ = false;
  std::string error_;
};

}  // namespace podplane::test
