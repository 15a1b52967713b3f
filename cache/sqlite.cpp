#include "cache/sqlite.hpp"

#include <sqlite3.h>

#include <cstring>
#include <utility>

namespace podplane::cache::sqlite {

namespace {

std::string uri_escape_path(const std::string& path) {
  // SQLite URI filenames: '%', '?' and '#' must be percent-encoded.
  std::string out;
  for (char c : path) {
    if (c == '%') out += "%25";
    else if (c == '?') out += "%3f";
    else if (c == '#') out += "%23";
    else out += c;
  }
  return out;
}

}  // namespace

Database Database::open(const std::filesystem::path& file, OpenMode mode) {
  std::string uri = "file:" + uri_escape_path(std::filesystem::absolute(file).string());
  int flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case OpenMode::read_write_create:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
    case OpenMode::read_only:
      uri += "?mode=ro";
      flags |= SQLITE_OPEN_READONLY;
      break;
    case OpenMode::immutable:
      uri += "?mode=ro&immutable=1";
      flags |= SQLITE_OPEN_READONLY;
      break;
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(uri.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    if (int os_error = db ? sqlite3_system_errno(db) : 0; os_error != 0) message += std::string(" (") + std::strerror(os_error) + ")";
    sqlite3_close_v2(db);
    throw Error("cannot open the store index " + file.string() + ": " + message);
  }
  sqlite3_extended_result_codes(db, 1);
  // Several podplane processes share one index: wait for a writer this long before
  // reporting SQLITE_BUSY, after which the caller reruns its whole transaction.
  sqlite3_busy_timeout(db, 10000);
  return Database(db, file);
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), file_(std::move(other.file_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    file_ = std::move(other.file_);
  }
  return *this;
}

void Database::check(int rc, std::string_view what) const {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
  std::string message = "store index " + file_.string() + ": " + std::string(what) + ": " +
                        (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
  int primary = rc & 0xff;
  // SQLite says "disk I/O error" for a full disk when the index's shared-memory or log file
  // cannot grow: the system's own error says which (ENOSPC: "No space left on device").
  if (db_ && (primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN))
    if (int os_error = sqlite3_system_errno(db_); os_error != 0) message += std::string(" (") + std::strerror(os_error) + ")";
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) throw BusyError(message);
  throw Error(message);
}

void Database::exec(std::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (error) sqlite3_free(error);
  check(rc, "executing SQL");
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
int Database::changes() const { return sqlite3_changes(db_); }

Statement::Statement(Database& db, std::string_view sql) : db_(&db), sql_(sql) {
  int rc = sqlite3_prepare_v2(db.handle(), sql_.data(), static_cast<int>(sql_.size()), &stmt_, nullptr);
  db.check(rc, "preparing " + sql_);
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), sql_(std::move(other.sql_)) {}

Statement& Statement::bind(int index, std::string_view text) {
  db_->check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT),
             "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  db_->check(sqlite3_bind_int64(stmt_, index, value), "binding a parameter");
  return *this;
}

Statement& Statement::bind_null(int index) {
  db_->check(sqlite3_bind_null(stmt_, index), "binding a parameter");
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->check(rc, "running " + sql_);
  return false;
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::text(int column) const {
  const unsigned char* value = sqlite3_column_text(stmt_, column);
  if (!value) return {};
  return std::string(reinterpret_cast<const char*>(value), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }
bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!active_) return;
  // Rolling back cannot usefully fail; if it does, SQLite rolls back when the connection closes.
  sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  active_ = false;
}

}  // namespace podplane::cache::sqlite
