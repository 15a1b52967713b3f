#include "tests/support/small_disk.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace podplane::test {

namespace fs = std::filesystem;

SmallDisk::SmallDisk(const fs::path& where, const std::string& size) : path_(where) {
  fs::create_directories(path_);
  std::string options = "size=" + size + ",mode=0755";
  mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0;
  error_ = mounted_ ? "" : std::strerror(errno);
}

SmallDisk::~SmallDisk() {
  if (mounted_) (void)::umount2(path_.c_str(), MNT_DETACH);
}

bool SmallDisk::fill_leaving(std::size_t spare) {
  const fs::path filler = path_ / "filler";
  int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error_ = "cannot make " + filler.string() + ": " + std::strerror(errno);
    return false;
  }
  std::string block(4096, 'x');
  std::size_t written = 0;
  for (;;) {
    ssize_t n = ::write(fd, block.data(), block.size());
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  bool freed = ::ftruncate(fd, static_cast<off_t>(written > spare ? written - spare : 0)) == 0;
  if (!freed) error_ = "cannot shorten " + filler.string() + ": " + std::strerror(errno);
  ::close(fd);
  return freed;
}

void SmallDisk::empty_filler() {
  std::error_code ignored;
  fs::remove(path_ / "filler", ignored);
}

}  // namespace podplane::test
