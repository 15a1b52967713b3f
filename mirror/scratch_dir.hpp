#pragma once
// A private temp dir for files that must be read or checked before they enter the store;
// removed with everything in it when destroyed. Not shared between threads.
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <system_error>

namespace podplane::mirror {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + std::to_string(getpid()) + "-" + std::to_string(random()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace podplane::mirror
