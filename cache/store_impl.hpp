#pragma once
// Internal to cache/: the state behind a Store handle, shared by store.cpp, maintenance.cpp
// and views.cpp. Not part of the library's contract.
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "base/unique_fd.hpp"
#include "cache/sqlite.hpp"
#include "cache/store.hpp"

namespace podplane::cache {

struct Store::Impl {
  std::filesystem::path root;
  bool read_only = false;
  std::string read_only_reason;  // why the store was opened read-only, for messages
  sqlite::Database db;
  // A shared flock on store/lock, held while a writable handle is open: gc takes it
  // exclusively, so no object can be between "renamed into place" and "indexed" while gc runs.
  UniqueFd store_lock;
  int transaction_depth = 0;
  int snapshot_depth = 0;  // read_snapshot() calls running; an inner one shares the outer snapshot
  int schema_version = 0;  // of the index as opened (a read-only open may find an older one)
  // Rows the open transaction wrote whose views could collide with other rows' (module trees,
  // the selection): Store::write() checks their layout before the transaction commits.
  struct Written {
    std::set<std::int64_t> module_trees;
    bool selection = false;
  } written;
  // "SELECT size FROM objects WHERE digest = ?", prepared once: has_object() runs once per
  // object in inventories and bundle plans, where preparing it each time cost more than the
  // lookup. Declared after db, so destroyed before it; always reset after use.
  std::optional<sqlite::Statement> object_size_query;

  // Runs body in one write transaction (joining an open one), rerunning it whole on SQLITE_BUSY.
  void transact(const std::function<void()>& body);
  void require_writable(std::string_view what) const;
  std::filesystem::path object_path(std::string_view digest) const;
};

struct StoreInternals {
  static Store::Impl& of(Store& store) { return *store.impl_; }
  static const Store::Impl& of(const Store& store) { return *store.impl_; }
};

// Throws when a module tree or selection written in the open transaction cannot be laid out
// as a view beside the rows already there (views.cpp: the same plan the views use).
void check_written_rows_lay_out(const Store& store);

// Writes every view of `store` (views.cpp: rebuild_views), for Store::open when a writer died
// between committing rows and writing their views (ViewsPending).
void finish_interrupted_views(Store& store);

// Removes temp files in store/tmp whose writer is gone (its flock is free). Files of live
// writers are left alone. Returns the files removed (or, with Sweep::list, that would be).
enum class Sweep { list, remove };
std::vector<std::filesystem::path> sweep_temp_files(const std::filesystem::path& root, Sweep sweep);

}  // namespace podplane::cache
