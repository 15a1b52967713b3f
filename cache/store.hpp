#pragma once
// The content-addressed store under a deps root: immutable objects at
// store/objects/sha256/<2 hex>/<62 hex> and the SQLite index store/index.db.
//
// Contract: every method is safe to call from several processes sharing one deps root
// (SQLite WAL + busy retry; objects are published by rename). A Store object itself is
// not thread-safe: use one per thread. Errors are podplane::Error. Nothing is ever
// overwritten or removed except by gc(). A read-only store (media mounted ro, or
// Access::read_only) answers every query; writes throw.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/unique_fd.hpp"
#include "cache/rows.hpp"

namespace podplane::cache {

// $PODPLANE_DEPS_CACHE_DIR, else $XDG_CACHE_HOME/podplane/deps, else ~/.cache/podplane/deps.
std::filesystem::path default_deps_root();

struct ArtifactQuery {
  std::optional<ArtifactKind> kind{};
  std::optional<std::string> address{};
  std::optional<std::string> version{};
  std::optional<std::string> platform{};
};

class Store;
struct StoreInternals;

// Streams one object into a temp file inside the store while hashing it. Destroying an
// uncommitted writer removes its temp file. Not copyable; must not outlive its Store.
class ObjectWriter {
 public:
  ~ObjectWriter();
  ObjectWriter(ObjectWriter&&) noexcept;
  ObjectWriter& operator=(ObjectWriter&&) noexcept;

  void write(const void* data, std::size_t size);
  std::uint64_t size() const;
  // Checks the digest (Error with expected/got on mismatch, temp removed), fsyncs, renames
  // into place (an existing identical object is kept) and records the objects row.
  // Returns the sha256 hex digest.
  [[nodiscard]] std::string commit(std::optional<std::string_view> expected_sha256 = std::nullopt);

  // commit() in two steps, for objects written on one thread and checked on others (bundle
  // import): seal() checks the digest (the same Error, temp removed) and makes the data durable
  // and read-only; it touches only this writer, so any thread may call it. publish() then
  // renames into place and records the row, on the thread that owns the Store; it returns
  // the digest.
  void seal(std::optional<std::string_view> expected_sha256);
  [[nodiscard]] std::string publish();

  // The digest check of seal() alone, nothing synced (the same Error, temp removed); returns
  // the digest, and seal() later finds it checked. For a writer handed on before it is
  // sealed: a download's bytes checked on the transfer's thread, then read and sealed on a
  // worker while the transfers go on (deps tf), and published with Store::publish_sealed.
  [[nodiscard]] std::string check(std::optional<std::string_view> expected_sha256);
  // The bytes written so far, until published: for reading an object before it is one.
  const std::filesystem::path& temp_path() const;

  struct Impl;
 private:
  friend class Store;
  explicit ObjectWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A mark that a writer is committing rows whose views it has not written yet (bundle import:
// rows commit volume by volume, views are written once at the end). A file in
// store/views-pending/ under this process's exclusive flock: a writer killed between its
// commits and its views leaves a mark that nobody holds, and the next Store::open of the
// writable store (any access, any command) rebuilds the views before anything else, then
// removes it. done() removes the mark once the views are written; destroyed without done()
// (an error on the way) it is left for that next open. Move-only.
class ViewsPending {
 public:
  ViewsPending(std::filesystem::path file, UniqueFd locked) : file_(std::move(file)), locked_(std::move(locked)) {}
  void done();

 private:
  std::filesystem::path file_;
  UniqueFd locked_;  // closing it (the process dying) frees the mark for the next open
};

class Store {
 public:
  enum class Access { read_write, read_only };

  // Creates the layout and migrates the index when writable. Opening a store on read-only
  // media works with Access::read_only (and is chosen automatically when the root is not writable).
  [[nodiscard]] static Store open(const std::filesystem::path& deps_root, Access access = Access::read_write);
  // A writable open removes temp files that dead writers left (TempSweep::at_open). `deps gc`
  // opens with TempSweep::none so that it can report (or, dry, only list) them itself.
  enum class TempSweep { at_open, none };
  [[nodiscard]] static Store open(const std::filesystem::path& deps_root, Access access, TempSweep sweep);
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;

  const std::filesystem::path& root() const;   // the deps root
  bool read_only() const;
  // Why the store is read-only (Access::read_only, a read-only mount, the index opened
  // immutable), or "" when writable.
  std::string read_only_reason() const;

  // Objects.
  std::filesystem::path object_path(std::string_view digest) const;
  // The files of a stored module tree written out below `dir` (created), each from its object,
  // mode 0644: what reading a tree's .tf files or vendoring it needs.
  void write_module_files(const ModuleTree& tree, const std::filesystem::path& dir) const;
  bool has_object(std::string_view digest) const;  // indexed and present on disk
  [[nodiscard]] ObjectWriter new_object();
  // `label` names the object in the writer's errors (e.g. "x.zip from https://…").
  [[nodiscard]] ObjectWriter new_object(std::string label);
  // A writer that hashes its bytes when sealed, reading its temp file back, instead of as
  // they are written: the writing thread (bundle import, extracting a tar) only copies, and
  // the hashing runs on whichever thread calls ObjectWriter::seal().
  [[nodiscard]] ObjectWriter new_object_hashed_at_seal();
  // `file` itself as a new object's bytes, not copied: it is moved into the store's temp area.
  // `written_sha256` is the sha256 of its bytes as this process wrote them into it (a download's
  // sink hashes them as they stream), the same trust as new_object(), which hashes what it is
  // given to write: nothing reads the file back. A file already written whole (a download's
  // scratch file) thus costs no copy and no second hash. The move needs `file` on the store's
  // file system (a ScratchDir under temp_dir()); from another one it is copied and hashed as
  // it is, and seal() checks that against its expected digest. `file` is gone after.
  [[nodiscard]] ObjectWriter adopt_file(const std::filesystem::path& file, std::string label,
                                          std::string written_sha256);
  // Where adopt_file's files should be made so that it can move them: the store's temp area.
  std::filesystem::path temp_dir() const;
  [[nodiscard]] std::string add_file(const std::filesystem::path& file,
                                     std::optional<std::string_view> expected_sha256 = std::nullopt);
  // Many objects at once (a run's signed documents, a module tree's files): each with the
  // publish order of add_bytes/add_file, but their syncs overlapped (temp files written and
  // synced on several threads, each directory synced once, the rows in one transaction).
  // Digests in the order given. The first failure is thrown; objects before it stay added.
  [[nodiscard]] std::vector<std::string> add_all_bytes(const std::vector<std::string_view>& contents);
  [[nodiscard]] std::vector<std::string> add_files(const std::vector<std::filesystem::path>& files);
  // Sealed writers published together: renamed into place in order, each directory synced
  // once, their rows in one transaction. Digests in the order given. The first failure is
  // thrown after the objects placed before it are indexed.
  [[nodiscard]] std::vector<std::string> publish_sealed(const std::vector<ObjectWriter*>& writers);
  [[nodiscard]] std::string add_bytes(std::string_view bytes,
                                      std::optional<std::string_view> expected_sha256 = std::nullopt);
  std::string read_object(std::string_view digest) const;  // small objects only (JSON, sums)

  // Index rows. Inserting a row identical in key and digest returns the existing id (and
  // records its protocols when the stored row did not know them); a row with the same key but
  // another digest is an Error (the store is additive).
  std::int64_t add_artifact(const Artifact& artifact);
  void add_provenance(const Provenance& provenance);
  std::int64_t add_module_tree(const ModuleTree& tree);
  void set_tf_selection(const TfSelection& selection);

  std::vector<Artifact> artifacts(const ArtifactQuery& query = {}) const;
  std::optional<Artifact> find_artifact(ArtifactKind kind, std::string_view address, std::string_view version,
                                        std::string_view platform, std::string_view filename) const;
  std::vector<Provenance> provenance_of(std::int64_t artifact_id) const;
  std::vector<ModuleTree> module_trees(std::optional<std::string_view> address = std::nullopt) const;
  std::optional<ModuleTree> find_module_tree(std::string_view address, std::string_view version) const;
  std::optional<TfSelection> tf_selection() const;

  std::vector<QuarantineEntry> quarantine() const;

  std::optional<BundleSignerMark> bundle_signer(std::string_view signer) const;
  std::vector<BundleSignerMark> bundle_signers() const;  // every signer, sorted by signer
  // Keeps the newest (created_at, then bundle id) mark per signer.
  void record_bundle_signer(std::string_view signer, std::string_view created_at, std::string_view bundle_id);

  // This store's random id (32 lower-case hex digits), named in `bundle inventory` files so that
  // an incremental bundle made for one store is refused by another. Created on first use by a
  // writable store and never changed afterwards; "" from a read-only store that has none yet.
  [[nodiscard]] std::string identity();

  void audit(std::string_view action, std::string_view subject, const nlohmann::json& detail);
  std::vector<AuditEntry> audit_log() const;

  // Marks this process as a writer of rows whose views come later (ViewsPending), durably,
  // before those rows commit. Writable stores only.
  [[nodiscard]] ViewsPending views_pending();

  // Runs `body` in one write transaction, rerunning it whole when another process holds
  // the lock (SQLITE_BUSY). Calls to add_* inside join it.
  void in_transaction(const std::function<void()>& body);

  // Runs `body` in one read transaction: every query in it sees the index as one commit left
  // it, never half of a later one (what `mirror serve` builds its site from). Not inside a
  // write transaction. Inside another read_snapshot, `body` runs in the outer snapshot.
  void read_snapshot(const std::function<void()>& body) const;

  // A number that changes whenever another connection commits to the index (SQLite's
  // data_version): cheap enough to poll every second. Equal numbers from one handle mean no
  // commit in between; the value itself means nothing.
  [[nodiscard]] std::int64_t index_generation() const;

  // An id of exactly what the index holds (sha256 hex over the identities of its rows, sorted:
  // each artifact's key, digest and protocols, each module tree's files, the tf selection), so
  // two stores holding the same rows have the same id whatever order they were filled or
  // imported in, and any fill, import, prune or repair that changes a row changes it. Times
  // (added_at, the audit log) are not part of it. Read it inside read_snapshot() to pair it
  // with other queries of the same commit.
  [[nodiscard]] std::string content_generation() const;

  struct Impl;
 private:
  friend struct StoreInternals;  // cache/ internals: verify, gc, views (cache/store_impl.hpp)
  explicit Store(std::unique_ptr<Impl> impl);
  // in_transaction() plus the check, before the outermost commit, that the module trees and
  // selection it wrote can be laid out as views beside the rows already there.
  void write(const std::function<void()>& body);
  std::vector<std::string> add_many(std::size_t count, const std::function<void(std::size_t, ObjectWriter&)>& fill);
  std::unique_ptr<Impl> impl_;
};

}  // namespace podplane::cache
