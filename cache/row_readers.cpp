#include "cache/row_readers.hpp"

namespace podplane::cache {

namespace {

// Reads a result row's columns left to right: each reader below takes them in the order its
// `columns` lists them, so the list and the reader are read side by side.
class Columns {
 public:
  explicit Columns(const sqlite::Statement& row) : row_(row) {}
  std::string text() { return row_.text(next_++); }
  std::int64_t integer() { return row_.integer(next_++); }

 private:
  const sqlite::Statement& row_;
  int next_ = 0;
};

}  // namespace

std::string RowReader<Artifact>::columns(int schema_version) {
  return std::string(
             "id, kind, address, version, platform, filename, digest, size, h1, zh, upstream_digest, upstream_url, trust, "
             "added_at") +
         (schema_version >= 5 ? ", protocols" : ", '' AS protocols");
}

Artifact RowReader<Artifact>::read(const sqlite::Statement& row) {
  Columns column(row);
  Artifact a;
  a.id = column.integer();
  a.kind = parse_artifact_kind(column.text());
  a.address = column.text();
  a.version = column.text();
  a.platform = column.text();
  a.filename = column.text();
  a.digest = column.text();
  a.size = column.integer();
  a.h1 = column.text();
  a.zh = column.text();
  a.upstream_digest = column.text();
  a.upstream_url = column.text();
  a.trust = parse_trust(column.text());
  a.added_at = column.text();
  a.protocols = parse_protocols_column(column.text());
  return a;
}

const std::string_view RowReader<Provenance>::columns =
    "artifact_id, shasums_digest, signature_digest, keys_digest, key_fingerprint, result, checked_at";

Provenance RowReader<Provenance>::read(const sqlite::Statement& row) {
  Columns column(row);
  Provenance p;
  p.artifact_id = column.integer();
  p.shasums_digest = column.text();
  p.signature_digest = column.text();
  p.keys_digest = column.text();
  p.key_fingerprint = column.text();
  p.result = column.text();
  p.checked_at = column.text();
  return p;
}

const std::string_view RowReader<ModuleTree>::columns = "id, address, version, h1, upstream_url, added_at";

ModuleTree RowReader<ModuleTree>::read(const sqlite::Statement& row) {
  Columns column(row);
  ModuleTree tree;
  tree.id = column.integer();
  tree.address = column.text();
  tree.version = column.text();
  tree.h1 = column.text();
  tree.upstream_url = column.text();
  tree.added_at = column.text();
  return tree;
}

const std::string_view RowReader<ModuleFile>::columns = "path, mode, digest, size";

ModuleFile RowReader<ModuleFile>::read(const sqlite::Statement& row) {
  Columns column(row);
  ModuleFile file;
  file.path = column.text();
  file.mode = static_cast<std::uint32_t>(column.integer());
  file.digest = column.text();
  file.size = column.integer();
  return file;
}

const std::string_view RowReader<TfSelection::Provider>::columns = "address, version, constraints";

TfSelection::Provider RowReader<TfSelection::Provider>::read(const sqlite::Statement& row) {
  Columns column(row);
  TfSelection::Provider provider;
  provider.address = column.text();
  provider.version = column.text();
  provider.constraints = column.text();
  return provider;
}

const std::string_view RowReader<AuditEntry>::columns = "id, at, action, subject, detail";

AuditEntry RowReader<AuditEntry>::read(const sqlite::Statement& row) {
  Columns column(row);
  AuditEntry entry;
  entry.id = column.integer();
  entry.at = column.text();
  entry.action = column.text();
  entry.subject = column.text();
  entry.detail = column.text();
  return entry;
}

const std::string_view RowReader<QuarantineEntry>::columns = "id, at, what, subject, reason, detail";

QuarantineEntry RowReader<QuarantineEntry>::read(const sqlite::Statement& row) {
  Columns column(row);
  QuarantineEntry entry;
  entry.id = column.integer();
  entry.at = column.text();
  entry.what = column.text();
  entry.subject = column.text();
  entry.reason = column.text();
  entry.detail = column.text();
  return entry;
}

const std::string_view RowReader<BundleSignerMark>::columns = "signer, created_at, bundle_id, recorded_at";

BundleSignerMark RowReader<BundleSignerMark>::read(const sqlite::Statement& row) {
  Columns column(row);
  BundleSignerMark mark;
  mark.signer = column.text();
  mark.created_at = column.text();
  mark.bundle_id = column.text();
  mark.recorded_at = column.text();
  return mark;
}

}  // namespace podplane::cache
