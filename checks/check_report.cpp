#include "checks/check_report.hpp"

#include <algorithm>
#include <iterator>

namespace podplane::checks {

bool CheckReport::ok() const {
  return std::none_of(rows.begin(), rows.end(), [](const CheckRow& row) { return row.result == RowResult::failed; });
}

bool CheckReport::proven() const {
  return std::all_of(rows.begin(), rows.end(), [](const CheckRow& row) { return row.result == RowResult::ok; });
}

std::vector<CheckRow> CheckReport::not_run() const {
  std::vector<CheckRow> out;
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(out),
               [](const CheckRow& row) { return row.result == RowResult::not_run; });
  return out;
}

void CheckReport::add(const CheckReport& other) {
  rows.insert(rows.end(), other.rows.begin(), other.rows.end());
  for (const auto& remedy : other.remedies)
    if (std::find(remedies.begin(), remedies.end(), remedy) == remedies.end()) remedies.push_back(remedy);
}

namespace {

void add_remedy(CheckReport& report, const std::string& remedy) {
  if (!remedy.empty() && std::find(report.remedies.begin(), report.remedies.end(), remedy) == report.remedies.end())
    report.remedies.push_back(remedy);
}

}  // namespace

void CheckReporter::ok(std::string platform, std::string item, std::string detail) {
  report_.rows.push_back({std::move(platform), std::move(item), RowResult::ok, std::move(detail)});
}

void CheckReporter::fail(std::string platform, std::string item, std::string detail, const std::string& remedy) {
  report_.rows.push_back({std::move(platform), std::move(item), RowResult::failed, std::move(detail)});
  add_remedy(report_, remedy);
}

void CheckReporter::not_run(std::string platform, std::string item, std::string why, const std::string& remedy) {
  report_.rows.push_back({std::move(platform), std::move(item), RowResult::not_run, "NOT RUN: " + std::move(why)});
  add_remedy(report_, remedy);
}

std::string render_check_table(const CheckReport& report) {
  std::size_t platform_width = 8, item_width = 5;
  for (const auto& row : report.rows) {
    platform_width = std::max(platform_width, row.platform.size());
    item_width = std::max(item_width, row.item.size());
  }
  auto pad = [](const std::string& text, std::size_t width) { return text + std::string(width - text.size() + 2, ' '); };
  std::string out = pad("PLATFORM", platform_width) + pad("CHECK", item_width) + "RESULT\n";
  for (const auto& row : report.rows) out += pad(row.platform, platform_width) + pad(row.item, item_width) + row.detail + "\n";
  return out;
}

std::string short_hash(const std::string& hash, std::size_t keep) {
  return hash.size() > keep ? hash.substr(0, keep) + "…" : hash;
}

}  // namespace podplane::checks
