#pragma once
// Thin RAII over the SQLite C API for the store index: one type per handle (Database,
// Statement, Transaction). Errors are podplane::Error naming the database file; a busy
// database throws BusyError so that callers can rerun the whole transaction.
// Not thread-safe: one Database per thread, like the Store that owns it.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace podplane::cache::sqlite {

// SQLITE_BUSY / SQLITE_LOCKED after the busy timeout: rerun the transaction.
class BusyError : public Error {
 public:
  using Error::Error;
};

enum class OpenMode {
  read_write_create,  // the normal store
  read_only,          // mode=ro: reads the WAL through an existing -shm
  immutable,          // immutable=1: read-only media, no locking, no WAL (it was checkpointed)
};

class Database {
 public:
  [[nodiscard]] static Database open(const std::filesystem::path& file, OpenMode mode);
  Database() = default;  // not open; assign the result of open()
  ~Database();
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(std::string_view sql);  // one or more statements, no results
  std::int64_t last_insert_rowid() const;
  int changes() const;
  sqlite3* handle() const { return db_; }
  const std::filesystem::path& file() const { return file_; }

  // Throws BusyError or Error for a non-OK result code, with the database's message.
  void check(int rc, std::string_view what) const;

 private:
  Database(sqlite3* db, std::filesystem::path file) : db_(db), file_(std::move(file)) {}
  sqlite3* db_ = nullptr;
  std::filesystem::path file_;
};

class Statement {
 public:
  Statement(Database& db, std::string_view sql);
  ~Statement();
  Statement(Statement&&) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds are 1-based, chained: Statement(db, sql).bind(1, a).bind(2, b).
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::int64_t value);
  Statement& bind_null(int index);

  [[nodiscard]] bool step();  // true while a row is available
  void run();                 // steps to completion, ignoring rows
  void reset();

  std::string text(int column) const;  // 0-based; "" for NULL
  std::int64_t integer(int column) const;
  bool is_null(int column) const;

 private:
  Database* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

// BEGIN IMMEDIATE (take the write lock up front, so a busy store fails at BEGIN, not halfway),
// rolled back on destruction unless commit() was called.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool active_ = true;
};

}  // namespace podplane::cache::sqlite
