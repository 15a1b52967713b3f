#pragma once
// What a batch of downloads shows on stderr: on a terminal one line rewritten in place (items
// done/total, bytes, rate, ETA); otherwise a plain line per finished item and per retry;
// nothing with Progress::quiet. Not thread-safe: the download loop owns it.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "net/download_options.hpp"

namespace podplane::net {

class ProgressDisplay {
 public:
  ProgressDisplay(Progress mode, std::size_t total_items, std::FILE* out = stderr);
  ~ProgressDisplay();  // clears a terminal line that is still shown
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  // More items joined the run (a run that grows as its documents arrive).
  void add_items(std::size_t count) { total_ += count; }
  // A transfer announced its length (Content-Length), so ETA can count on it.
  void expect_bytes(std::uint64_t bytes);
  // Bytes that will not arrive after all (a restart throws away what was written).
  void forget_bytes(std::uint64_t expected, std::uint64_t received);
  void received(std::uint64_t bytes);
  void retrying(const std::string& label, const std::string& reason, std::chrono::milliseconds delay);
  void finished(const std::string& label, bool ok, std::uint64_t size);
  // Redraws the terminal line when due (at most 10 times a second).
  void tick();
  // Prints the summary line (terminal and plain modes).
  void done();

  bool terminal() const { return mode_ == Mode::bar; }

 private:
  enum class Mode { bar, lines, quiet };
  void draw();
  void clear_line();

  Mode mode_;
  std::FILE* out_;
  std::size_t total_ = 0;
  std::size_t finished_ = 0;
  std::size_t failed_ = 0;
  std::uint64_t received_ = 0;
  std::uint64_t expected_ = 0;
  std::string current_;
  bool line_shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace podplane::net
