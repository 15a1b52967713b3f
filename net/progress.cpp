#include "net/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/human_bytes.hpp"
#include "base/terminal_text.hpp"

namespace podplane::net {

namespace {

bool is_terminal(std::FILE* out) {
  const char* term = std::getenv("TERM");
  return isatty(fileno(out)) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
}

std::size_t terminal_width(std::FILE* out) {
  winsize size{};
  if (ioctl(fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 20) return size.ws_col;
  return 80;
}

std::string clock_text(double seconds) {
  if (seconds < 0 || seconds > 359999) return "--:--";
  const auto total = static_cast<long>(seconds + 0.5);
  char buffer[32];
  if (total >= 3600) {
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", total / 3600, (total / 60) % 60, total % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld", total / 60, total % 60);
  }
  return buffer;
}

}  // namespace

ProgressDisplay::ProgressDisplay(Progress mode, std::size_t total_items, std::FILE* out)
    : out_(out), total_(total_items), start_(std::chrono::steady_clock::now()) {
  switch (mode) {
    case Progress::quiet: mode_ = Mode::quiet; break;
    case Progress::plain_lines: mode_ = Mode::lines; break;
    case Progress::automatic: mode_ = is_terminal(out) ? Mode::bar : Mode::lines; break;
  }
}

ProgressDisplay::~ProgressDisplay() { clear_line(); }

void ProgressDisplay::expect_bytes(std::uint64_t bytes) { expected_ += bytes; }

void ProgressDisplay::forget_bytes(std::uint64_t expected, std::uint64_t received) {
  expected_ -= std::min(expected_, expected);
  received_ -= std::min(received_, received);
}

void ProgressDisplay::received(std::uint64_t bytes) { received_ += bytes; }

void ProgressDisplay::retrying(const std::string& label, const std::string& reason, std::chrono::milliseconds delay) {
  if (mode_ != Mode::lines) return;  // a terminal shows retries as a stalled rate, not as noise
  std::fprintf(out_, "retrying %s in %.1fs: %s\n", printable(label, Newlines::escape).c_str(),
               static_cast<double>(delay.count()) / 1000.0, printable(reason, Newlines::escape).c_str());
  std::fflush(out_);
}

void ProgressDisplay::finished(const std::string& label, bool ok, std::uint64_t size) {
  ++finished_;
  if (!ok) ++failed_;
  current_ = label;
  if (mode_ == Mode::lines) {
    std::fprintf(out_, "%s %s%s [%zu/%zu]\n", ok ? "fetched" : "failed", printable(label, Newlines::escape).c_str(),
                 ok ? (" (" + human_bytes(size) + ")").c_str() : "", finished_, total_);
    std::fflush(out_);
  } else if (mode_ == Mode::bar) {
    draw();
  }
}

void ProgressDisplay::tick() {
  if (mode_ != Mode::bar) return;
  if (std::chrono::steady_clock::now() - last_draw_ >= std::chrono::milliseconds(100)) draw();
}

void ProgressDisplay::draw() {
  last_draw_ = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
  const double rate = elapsed > 0.2 ? static_cast<double>(received_) / elapsed : 0.0;
  std::string eta = "--:--";
  if (rate > 0 && finished_ > 0) {
    // Bytes still to come: what the open transfers announced, plus the average size of a
    // finished item for every item not started yet.
    const double per_item = static_cast<double>(received_) / static_cast<double>(finished_);
    const double pending = static_cast<double>(total_ - finished_) * per_item;
    const double known_left = expected_ > received_ ? static_cast<double>(expected_ - received_) : 0.0;
    eta = clock_text(std::max(known_left, pending) / rate);
  }
  std::string line = "[" + std::to_string(finished_) + "/" + std::to_string(total_) + "] " + human_bytes(received_) +
                     "  " + human_bytes(static_cast<std::uint64_t>(rate)) + "/s  ETA " + eta;
  if (failed_ > 0) line += "  " + std::to_string(failed_) + " failed";
  if (!current_.empty()) line += "  " + printable(current_, Newlines::escape);
  const std::size_t width = terminal_width(out_) - 1;
  if (line.size() > width) line.resize(width);
  std::fprintf(out_, "\r\033[K%s", line.c_str());
  std::fflush(out_);
  line_shown_ = true;
}

void ProgressDisplay::clear_line() {
  if (line_shown_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
    line_shown_ = false;
  }
}

void ProgressDisplay::done() {
  if (mode_ == Mode::quiet || total_ == 0) return;
  clear_line();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(out_, "fetched %zu of %zu files, %s in %.1fs", finished_ - failed_, total_, human_bytes(received_).c_str(),
               elapsed);
  if (failed_ > 0) std::fprintf(out_, ", %zu failed", failed_);
  std::fprintf(out_, "\n");
  std::fflush(out_);
}

}  // namespace podplane::net
