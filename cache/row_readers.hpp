#pragma once
// The one mapping from an index table's columns onto its row type (cache/rows.hpp), cache/
// internal. A query selects RowReader<Row>::columns (select_rows) and reads each result row
// with RowReader<Row>::read, so that a column is named, and assigned to its field, once.
#include <string>
#include <string_view>
#include <vector>

#include "cache/rows.hpp"
#include "cache/sqlite.hpp"

namespace podplane::cache {

template <class Row>
struct RowReader;

template <>
struct RowReader<Artifact> {
  // Depends on the index: one older than migration 005 (opened read-only) has no protocols
  // column, and its rows read as "not known".
  static std::string columns(int schema_version);
  static Artifact read(const sqlite::Statement& row);
};

template <>
struct RowReader<Provenance> {
  static const std::string_view columns;
  static Provenance read(const sqlite::Statement& row);
};

// The tree's own row; its files are ModuleFile rows of module_files (tree_id = its id).
template <>
struct RowReader<ModuleTree> {
  static const std::string_view columns;
  static ModuleTree read(const sqlite::Statement& row);
};

template <>
struct RowReader<ModuleFile> {
  static const std::string_view columns;
  static ModuleFile read(const sqlite::Statement& row);
};

template <>
struct RowReader<TfSelection::Provider> {
  static const std::string_view columns;
  static TfSelection::Provider read(const sqlite::Statement& row);
};

template <>
struct RowReader<AuditEntry> {
  static const std::string_view columns;
  static AuditEntry read(const sqlite::Statement& row);
};

template <>
struct RowReader<QuarantineEntry> {
  static const std::string_view columns;
  static QuarantineEntry read(const sqlite::Statement& row);
};

template <>
struct RowReader<BundleSignerMark> {
  static const std::string_view columns;
  static BundleSignerMark read(const sqlite::Statement& row);
};

// "SELECT <Row's columns> <rest>", rest being "FROM <table> [WHERE …] [ORDER BY …]".
template <class Row>
std::string select_rows(std::string_view rest) {
  return "SELECT " + std::string(RowReader<Row>::columns) + " " + std::string(rest);
}

// Every remaining result row of `select` (a select_rows query).
template <class Row>
std::vector<Row> read_rows(sqlite::Statement& select) {
  std::vector<Row> rows;
  while (select.step()) rows.push_back(RowReader<Row>::read(select));
  return rows;
}

}  // namespace podplane::cache
