#pragma once
// A file descriptor closed on destruction (and with it any flock() the descriptor holds).
// Used wherever a descriptor is held across calls that may throw.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "base/error.hpp"

namespace podplane {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes now and reports a failed close (a late write error on some filesystems).
  void close_checked(const std::string& where) {
    int fd = std::exchange(fd_, -1);
    if (fd >= 0 && ::close(fd) != 0) throw Error("cannot close " + where + ": " + std::strerror(errno));
  }

 private:
  int fd_ = -1;
};

}  // namespace podplane
