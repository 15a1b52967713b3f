#pragma once
// A Disk (generator/staged_write.hpp) that fails chosen operations, to test that a write
// failing between two files leaves every file as it was.
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "generator/staged_write.hpp"
#include "base/error.hpp"

namespace podplane::test {

// The real disk, except that the operations numbered in `fail_at` (counted from 1) throw
// instead, and that links may be "unsupported" (so the copy is taken).
class FailingDisk : public generator::Disk {
 public:
  enum class Links { supported, unsupported };

  explicit FailingDisk(std::set<int> fail_at, Links links = Links::supported)
      : fail_at_(std::move(fail_at)), links_(links) {}

  int operations = 0;  // every operation asked for so far, failed or not

  void write_new(const std::filesystem::path& file, std::string_view content, generator::FileMode mode) override {
    tick("writing " + file.filename().string());
    Disk::write_new(file, content, mode);
  }
  bool link_new(const std::filesystem::path& from, const std::filesystem::path& file) override {
    tick("linking " + from.filename().string());
    return links_ == Links::supported && Disk::link_new(from, file);
  }
  void copy_new(const std::filesystem::path& from, const std::filesystem::path& file) override {
    tick("copying " + from.filename().string());
    Disk::copy_new(from, file);
  }
  void rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    tick("renaming " + from.filename().string() + " to " + to.filename().string());
    Disk::rename(from, to);
  }
  void remove(const std::filesystem::path& file) override {
    tick("removing " + file.filename().string());
    Disk::remove(file);
  }
  void sync_directory(const std::filesystem::path& dir) override {
    tick("syncing " + dir.string());
    Disk::sync_directory(dir);
  }

 private:
  void tick(const std::string& what) {
    if (fail_at_.count(++operations)) throw Error("injected failure " + std::to_string(operations) + ": " + what);
  }
  std::set<int> fail_at_;
  Links links_;
};

}  // namespace podplane::test
