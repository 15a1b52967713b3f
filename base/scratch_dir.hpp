#pragma once
// A private temp dir for files that must be read or checked before they enter the store;
// removed with everything in it when destroyed, or by the signal handler of main() when
// SIGINT/SIGTERM/SIGHUP ends the process first. Not shared between threads.
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <system_error>

#include "base/remove_on_signal.hpp"

namespace podplane {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) : ScratchDir(std::filesystem::temp_directory_path(), prefix) {}
  // Under `parent` instead: what is made there can be renamed into place on its file system.
  ScratchDir(const std::filesystem::path& parent, const std::string& prefix) {
    std::random_device random;
    path_ = parent / (prefix + std::to_string(getpid()) + "-" + std::to_string(random()));
    remove_on_signal_.emplace(path_);
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
  std::optional<RemoveOnSignal> remove_on_signal_;
};

}  // namespace podplane
