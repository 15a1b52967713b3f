#pragma once
// The result of a readiness check (`cluster check`, `stack check`): one row per item checked,
// per platform where it matters, and the commands that fix what failed. Rendered as one
// fixed-width table. Plain values; not shared between threads.
#include <string>
#include <vector>

namespace podplane::checks {

struct CheckRow {
  std::string platform;  // "-" when not platform-specific
  std::string item;
  bool ok = false;
  std::string detail;    // "ok" or what is wrong
};

struct CheckReport {
  std::vector<CheckRow> rows;
  std::vector<std::string> remedies;  // unique, in order of first need
  bool ok() const;
  // Appends `other`'s rows, and those of its remedies this report does not have yet.
  void add(const CheckReport& other);
};

// Adds rows to a report; a failing row's remedy is recorded once, however many rows need it.
class CheckReporter {
 public:
  explicit CheckReporter(CheckReport& report) : report_(report) {}
  void ok(std::string platform, std::string item, std::string detail = "ok");
  void fail(std::string platform, std::string item, std::string detail, const std::string& remedy);

 private:
  CheckReport& report_;
};

// A fixed-width table: PLATFORM, CHECK, RESULT.
std::string render_check_table(const CheckReport& report);

// "a…" after `keep` characters of a hash, for table cells.
std::string short_hash(const std::string& hash, std::size_t keep = 15);

}  // namespace podplane::checks
