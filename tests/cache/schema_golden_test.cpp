// Golden files of the index schema as SQLite keeps it (`sqlite3 index.db .schema`, read by the
// real sqlite3 shell): of a store created now, and of a store created at each older schema
// version (its migrations applied as that podplane applied them) and then opened, which
// migrates it. A new migration fails these tests until its golden files are written, and
// docs/store.md must name every table and column of the schema.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "cache/layout.hpp"
#include "cache/store.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using test::read_file;
using test::run;
using test::TempDir;

struct Migration {
  int version = 0;
  std::string name;  // file name without .sql
  fs::path file;
};

// cache/schema/NNN_name.sql, in order.
std::vector<Migration> migrations() {
  std::vector<Migration> out;
  const std::regex pattern(R"((\d{3})_[a-z0-9_]+)");
  for (const auto& entry : fs::directory_iterator(test::source_dir() / "cache" / "schema")) {
    std::smatch m;
    const std::string stem = entry.path().stem().string();
    if (entry.path().extension() == ".sql" && std::regex_match(stem, m, pattern))
      out.push_back({std::stoi(m[1]), stem, entry.path()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.version < b.version; });
  return out;
}

test::ProcessResult sqlite3(const fs::path& db, const std::string& sql) {
  test::ProcessOptions options;
  options.stdin_data = sql;
  return run({"sqlite3", "-batch", "-bail", db.string()}, options);
}

std::string schema_of(const fs::path& root) {
  auto result = run({"sqlite3", layout::index_db(root).string(), ".schema"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.out;
}

std::string applied_versions(const fs::path& root) {
  auto result = sqlite3(layout::index_db(root), "SELECT group_concat(version, ',') FROM (SELECT version FROM schema_migrations ORDER BY version);");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.out;
}

class IndexSchema : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_program("sqlite3")) GTEST_SKIP() << "the sqlite3 shell is not installed (apt-get install sqlite3)";
    all = migrations();
    ASSERT_FALSE(all.empty());
    for (std::size_t i = 0; i < all.size(); ++i)
      ASSERT_EQ(all[i].version, static_cast<int>(i) + 1) << "migrations are numbered 001, 002, … without gaps";
    for (std::size_t i = 0; i < all.size(); ++i) latest_versions += (i ? "," : "") + std::to_string(all[i].version);
    latest_versions += "\n";
  }
  std::vector<Migration> all;
  std::string latest_versions;  // "1,2\n" as sqlite3 prints the applied versions
  TempDir dir;
};

TEST_F(IndexSchema, OfANewStore) {
  { Store store = Store::open(dir / "deps"); }
  test::expect_golden("cache/index-schema.sql", schema_of(dir / "deps"));
  EXPECT_EQ(applied_versions(dir / "deps"), latest_versions);
}

// A store left at version N by the podplane of its day: the bookkeeping table as store.cpp
// creates it, then migrations 1..N, each recorded. Opening it applies the rest.
TEST_F(IndexSchema, OfAStoreMigratedFromEachOlderVersion) {
  for (std::size_t n = 1; n < all.size(); ++n) {
    SCOPED_TRACE("a store at schema version " + std::to_string(n));
    const fs::path root = dir / ("v" + std::to_string(n));
    fs::create_directories(layout::index_db(root).parent_path());
    std::string script =
        "CREATE TABLE IF NOT EXISTS schema_migrations ( version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);\n"
        "BEGIN;\n";
    for (std::size_t i = 0; i < n; ++i) {
      script += read_file(all[i].file) + "\n";
      script += "INSERT INTO schema_migrations VALUES (" + std::to_string(all[i].version) + ", '" + all[i].name +
                "', '2026-01-01T00:00:00Z');\n";
    }
    script += "COMMIT;\n";
    auto made = sqlite3(layout::index_db(root), script);
    ASSERT_EQ(made.exit_code, 0) << made.err;
    { Store store = Store::open(root); }
    test::expect_golden("cache/index-schema.from-v" + std::to_string(n) + ".sql", schema_of(root));
    EXPECT_EQ(applied_versions(root), latest_versions);
  }
}

// docs/store.md describes the schema: its "Tables (schema version N)" heading says the newest
// version, and it names (in backquotes) every table and every column.
TEST_F(IndexSchema, DocsStoreMdNamesEveryTableAndColumn) {
  { Store store = Store::open(dir / "deps"); }
  const std::string doc = read_file(test::source_dir() / "docs" / "store.md");
  EXPECT_NE(doc.find("### Tables (schema version " + std::to_string(all.back().version) + ")"), std::string::npos)
      << "docs/store.md: the heading of the tables section names another schema version than "
      << all.back().name;
  auto columns = sqlite3(layout::index_db(dir / "deps"),
                         ".mode tabs\nSELECT m.name, p.name FROM sqlite_schema m JOIN pragma_table_info(m.name) p "
                         "WHERE m.type = 'table' ORDER BY m.name, p.cid;");
  ASSERT_EQ(columns.exit_code, 0) << columns.err;
  std::istringstream lines(columns.out);
  std::string line;
  std::size_t checked = 0;
  while (std::getline(lines, line)) {
    const std::string table = line.substr(0, line.find('\t')), column = line.substr(line.find('\t') + 1);
    EXPECT_NE(doc.find("`" + table + "`"), std::string::npos) << "docs/store.md does not name the table " << table;
    EXPECT_NE(doc.find("`" + column + "`"), std::string::npos)
        << "docs/store.md does not name the column " << column << " of " << table;
    ++checked;
  }
  EXPECT_GT(checked, 20u);
}

}  // namespace
}  // namespace podplane::cache
