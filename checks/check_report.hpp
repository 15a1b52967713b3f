#pragma once
// The result of a readiness check (`cluster check`, `stack check`): one row per item checked,
// per platform where it matters, and the commands that fix what failed. Rendered as one
// fixed-width table. Plain values; not shared between threads.
#include <string>
#include <vector>

namespace podplane::checks {

// A row that was not run proves nothing either way: a report with one is not "passed", only
// "nothing failed" (the engine not installed, say), and says what would run it.
enum class RowResult { ok, failed, not_run };

struct CheckRow {
  std::string platform;  // "-" when not platform-specific
  std::string item;
  RowResult result = RowResult::failed;
  std::string detail;    // "ok" or what is wrong or why it did not run
};

struct CheckReport {
  std::vector<CheckRow> rows;
  std::vector<std::string> remedies;  // unique, in order of first need (failed and not-run rows)
  // No row failed (some may not have run).
  bool ok() const;
  // Every row ran and passed: what "All checks passed" may say.
  bool proven() const;
  // The rows that did not run.
  std::vector<CheckRow> not_run() const;
  // Appends `other`'s rows, and those of its remedies this report does not have yet.
  void add(const CheckReport& other);
};

// Adds rows to a report; a failing row's remedy is recorded once, however many rows need it.
class CheckReporter {
 public:
  explicit CheckReporter(CheckReport& report) : report_(report) {}
  void ok(std::string platform, std::string item, std::string detail = "ok");
  void fail(std::string platform, std::string item, std::string detail, const std::string& remedy);
  // A check that could not run here; `remedy` is what runs it (or accepts the report without it).
  void not_run(std::string platform, std::string item, std::string why, const std::string& remedy);

 private:
  CheckReport& report_;
};

// A fixed-width table: PLATFORM, CHECK, RESULT.
std::string render_check_table(const CheckReport& report);

// "a…" after `keep` characters of a hash, for table cells.
std::string short_hash(const std::string& hash, std::size_t keep = 15);

}  // namespace podplane::checks
