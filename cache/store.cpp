#include "cache/store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <set>
#include <thread>
#include <atomic>
#include <exception>
#include <functional>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/clock.hpp"
#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/parallel.hpp"
#include "base/url.hpp"
#include "cache/kinds.hpp"
#include "cache/layout.hpp"
#include "cache/row_readers.hpp"
#include "cache/row_rules.hpp"
#include "cache/store_impl.hpp"
#include "lockfile/hash.hpp"
#include "podplane/cache_schema.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Small helpers

namespace {

std::string errno_text() { return std::strerror(errno); }

// Writable for us: not on a read-only mount, and the permission bits (or root) allow it.
bool writable_directory(const fs::path& dir) {
  struct statvfs info {};
  if (::statvfs(dir.c_str(), &info) == 0 && (info.f_flag & ST_RDONLY)) return false;
  return ::access(dir.c_str(), W_OK) == 0;
}

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

void require_field(std::string_view value, std::string_view field, std::string_view what) {
  if (value.empty()) throw Error(std::string(what) + ": " + std::string(field) + " is empty");
  if (has_control_character(value)) {
    throw Error(std::string(what) + ": " + std::string(field) + " contains a control character");
  }
}

void require_digest(std::string_view digest, std::string_view what) {
  if (!is_sha256_hex(digest)) {
    throw Error(std::string(what) + ": not a sha256 digest (64 lower-case hex digits): '" + std::string(digest) + "'");
  }
}

// "https://user:secret@host/…" must never reach the index (docs/design.md §6).
void require_no_credentials(std::string_view url, std::string_view what) {
  if (const auto parts = split_url(url); parts && !parts->userinfo.empty())
    throw Error(std::string(what) + ": the upstream URL carries credentials; refusing to record it");
}

std::optional<std::int64_t> object_size(sqlite::Database& db, std::string_view digest) {
  sqlite::Statement query(db, "SELECT size FROM objects WHERE digest = ?");
  query.bind(1, digest);
  if (!query.step()) return std::nullopt;
  return query.integer(0);
}

// dirhash Hash1 over (name, sha256 hex) pairs: sha256 of "<hex>  <name>\n" lines in name order.
std::string tree_h1(const std::vector<ModuleFile>& files) {
  std::vector<std::pair<std::string, std::string>> entries;
  entries.reserve(files.size());
  for (const auto& file : files) entries.emplace_back(file.path, file.digest);
  return lockfile::h1_hash(std::move(entries));
}

int known_schema_version() {
  int version = 0;
  for (const auto& migration : schema::migrations) version = std::max(version, migration.version);
  return version;
}

int applied_schema_version(sqlite::Database& db) {
  sqlite::Statement query(db, "SELECT coalesce(max(version), 0) FROM schema_migrations");
  return query.step() ? static_cast<int>(query.integer(0)) : 0;
}

}  // namespace

fs::path default_deps_root() {
  if (const char* dir = std::getenv("PODPLANE_DEPS_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "podplane" / "deps";
  const char* home = std::getenv("HOME");
  if (!home || !*home) throw Error("cannot find the deps root: set PODPLANE_DEPS_CACHE_DIR, XDG_CACHE_HOME or HOME");
  return fs::path(home) / ".cache" / "podplane" / "deps";
}

// ---------------------------------------------------------------------------------------------
// Store::Impl

void Store::Impl::require_writable(std::string_view what) const {
  if (read_only) {
    throw Error("cannot " + std::string(what) + ": the store at " + root.string() + " is read-only (" +
                read_only_reason + ")");
  }
}

fs::path Store::Impl::object_path(std::string_view digest) const {
  require_digest(digest, "object path");
  return layout::objects_dir(root) / std::string(digest.substr(0, 2)) / std::string(digest.substr(2));
}

void Store::Impl::transact(const std::function<void()>& body) {
  require_writable("write to the index");
  if (transaction_depth > 0) {
    body();
    return;
  }
  // The busy timeout already waits for other writers; when it runs out we rerun the whole
  // transaction (never a half of it) after a short randomised pause, a bounded number of times.
  constexpr int max_attempts = 30;
  std::minstd_rand jitter(static_cast<unsigned>(::getpid()) ^ static_cast<unsigned>(std::time(nullptr)));
  for (int attempt = 1;; ++attempt) {
    try {
      sqlite::Transaction transaction(db);
      ++transaction_depth;
      struct Depth {
        int& depth;
        ~Depth() { --depth; }
      } depth{transaction_depth};
      body();
      transaction.commit();
      return;
    } catch (const sqlite::BusyError&) {
      if (attempt >= max_attempts) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10 + jitter() % (20 * attempt)));
    }
  }
}

std::vector<fs::path> sweep_temp_files(const fs::path& root, Sweep sweep) {
  std::vector<fs::path> swept;
  std::error_code ec;
  fs::directory_iterator it(layout::temp_dir(root), ec);
  if (ec) return swept;
  for (const auto& entry : it) {
    const fs::path& file = entry.path();
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) continue;  // already gone, or not a file we can lock: leave it
    // A live writer holds an exclusive flock for the file's whole life; a free lock means the
    // writer died (a crash or SIGKILL) and the file is garbage.
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
    struct stat by_fd {}, by_path {};
    if (::fstat(fd.get(), &by_fd) != 0 || ::lstat(file.c_str(), &by_path) != 0) continue;
    if (by_fd.st_ino != by_path.st_ino || by_fd.st_dev != by_path.st_dev) continue;
    // Only files: a directory here is a run's ScratchDir, live or not (a dead run's is removed by
    // the next run of its kind, or by `deps gc`, which holds the store alone).
    if (!S_ISREG(by_fd.st_mode)) continue;
    if (sweep == Sweep::remove && ::unlink(file.c_str()) != 0) continue;
    swept.push_back(file);
  }
  std::sort(swept.begin(), swept.end());
  return swept;
}

namespace {

// The marks in store/views-pending/ whose writer is gone (its flock is free: killed between
// committing rows and writing their views), each held locked by us until the views are done.
std::vector<std::pair<fs::path, UniqueFd>> orphaned_view_marks(const fs::path& root) {
  std::vector<std::pair<fs::path, UniqueFd>> orphans;
  std::error_code ec;
  fs::directory_iterator it(layout::views_pending_dir(root), ec);
  if (ec) return orphans;
  for (const auto& entry : it) {
    const fs::path& file = entry.path();
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // gone, or its writer is alive
    // Removed by its writer's done() between our open and our lock: not an orphan.
    struct stat by_fd {}, by_path {};
    if (::fstat(fd.get(), &by_fd) != 0 || ::lstat(file.c_str(), &by_path) != 0) continue;
    if (by_fd.st_ino != by_path.st_ino || by_fd.st_dev != by_path.st_dev) continue;
    orphans.emplace_back(file, std::move(fd));
  }
  return orphans;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ViewsPending

void ViewsPending::done() {
  if (!locked_) return;
  ::unlink(file_.c_str());  // while still locked: no opener can take it for an orphan
  locked_.reset();
}

ViewsPending Store::views_pending() {
  impl_->require_writable("mark views as pending");
  const fs::path dir = layout::views_pending_dir(impl_->root);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message());
  const fs::path file = temp_path_beside(dir / "writer");
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd) throw Error("cannot create " + file.string() + ": " + errno_text());
  if (::flock(fd.get(), LOCK_EX) != 0) {
    const std::string error = errno_text();
    ::unlink(file.c_str());
    throw Error("cannot lock " + file.string() + ": " + error);
  }
  sync_directory(dir);  // on disk before any row it stands for commits
  return ViewsPending(file, std::move(fd));
}

// ---------------------------------------------------------------------------------------------
// ObjectWriter

struct ObjectWriter::Impl {
  Store::Impl* store = nullptr;
  fs::path temp;
  UniqueFd fd;
  Hasher hasher{DigestAlgorithm::sha256};
  std::uint64_t size = 0;
  bool finished = false;
  bool hashed_at_seal = false;  // Store::new_object_hashed_at_seal
  std::string sealed_digest;    // set by ObjectWriter::seal, awaiting publish()
  // The sha256 of the bytes written, once known: from Store::adopt_file's caller (hashed as it
  // wrote), or from check().
  std::string written_digest;
  std::string label = "object";

  std::string digest_of_written();
  std::string check(std::optional<std::string_view> expected_sha256);
  std::string seal(std::optional<std::string_view> expected_sha256);
  std::vector<fs::path> place(const std::string& digest);
  void discard() {
    if (!finished && !temp.empty()) ::unlink(temp.c_str());
    finished = true;
    fd.reset();
  }
  ~Impl() { discard(); }
};

ObjectWriter::ObjectWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ObjectWriter::~ObjectWriter() = default;
ObjectWriter::ObjectWriter(ObjectWriter&&) noexcept = default;
ObjectWriter& ObjectWriter::operator=(ObjectWriter&&) noexcept = default;

void ObjectWriter::write(const void* data, std::size_t size) {
  if (impl_->finished) throw Error("writing to a finished object writer");
  const char* bytes = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(impl_->fd.get(), bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string reason = errno_text();
      impl_->discard();
      throw Error("cannot write " + impl_->temp.string() + ": " + reason);
    }
    done += static_cast<std::size_t>(n);
  }
  if (!impl_->hashed_at_seal) impl_->hasher.update(data, size);
  impl_->size += size;
}

std::uint64_t ObjectWriter::size() const { return impl_->size; }

// Publish order (docs/design.md §3.2): data durable, read-only, renamed into place, the
// directory durable, and only then the index row, which is the commit point. seal() is the
// first half and touches only this writer, so writers of one batch may seal on several threads.
std::string ObjectWriter::Impl::check(std::optional<std::string_view> expected_sha256) {
  if (finished) throw Error("committing a finished object writer");
  if (written_digest.empty()) written_digest = hashed_at_seal ? digest_of_written() : hasher.finish_hex();
  if (expected_sha256) {
    const std::string expected = ascii_lower(*expected_sha256);
    if (expected != written_digest) {
      discard();
      throw Error(mismatch_message("hash mismatch for " + label + " (nothing was added to the store)",
                                   "sha256:" + expected, "sha256:" + written_digest));
    }
  }
  return written_digest;
}

std::string ObjectWriter::Impl::seal(std::optional<std::string_view> expected_sha256) {
  std::string digest = check(expected_sha256);
  if (::fsync(fd.get()) != 0 || ::fchmod(fd.get(), 0444) != 0) {
    std::string reason = errno_text();
    discard();
    throw Error("cannot publish " + label + ": " + temp.string() + ": " + reason);
  }
  return digest;
}

// The digest of the bytes written, read back from the temp file (still in the page cache,
// just written) in blocks that stay in the CPU cache while they are hashed.
std::string ObjectWriter::Impl::digest_of_written() {
  std::vector<char> block(256 << 10);
  std::uint64_t offset = 0;
  while (offset < size) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), size - offset));
    ssize_t n = ::pread(fd.get(), block.data(), want, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string reason = n < 0 ? errno_text() : "shorter than what was written";
      discard();
      throw Error("cannot read back " + label + ": " + temp.string() + ": " + reason);
    }
    hasher.update(block.data(), static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
  return hasher.finish_hex();
}

// Renames the sealed temp file into place; returns the directories whose entries changed (to be
// synced before the row), none when an identical object was already there. That is the
// object's `<2 hex>` directory, and `objects/sha256` too when the `<2 hex>` directory was made
// for this object: a new directory's own entry must be durable before a row names a file in it.
std::vector<fs::path> ObjectWriter::Impl::place(const std::string& digest) {
  fs::path target = store->object_path(digest);
  std::error_code ec;
  const bool made_directory = fs::create_directories(target.parent_path(), ec);
  // Content-addressed: an object already in place is this content, unless it was damaged
  // after it was published. Checking costs one read of an object we already hold, and only
  // when the same bytes are added twice; a damaged one is replaced by the verified temp file.
  struct stat existing {};
  bool keep_existing = ::lstat(target.c_str(), &existing) == 0 && S_ISREG(existing.st_mode) &&
                       static_cast<std::uint64_t>(existing.st_size) == size && file_digest_hex(target) == digest;
  if (keep_existing) {
    discard();
    return {};
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    std::string reason = errno_text();
    discard();
    throw Error("cannot publish " + label + " as " + target.string() + ": " + reason);
  }
  finished = true;
  fd.reset();
  if (made_directory) return {target.parent_path(), target.parent_path().parent_path()};
  return {target.parent_path()};
}

namespace {

void copy_file_into(const fs::path& file, ObjectWriter& writer) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error("cannot read " + file.string() + ": " + errno_text());
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read " + file.string() + ": " + errno_text());
    if (n == 0) break;
    writer.write(buffer, static_cast<std::size_t>(n));
  }
}

void insert_object_rows(Store::Impl& store, const std::vector<std::pair<std::string, std::int64_t>>& objects) {
  store.transact([&] {
    sqlite::Statement insert(store.db, "INSERT OR IGNORE INTO objects (digest, size, added_at) VALUES (?, ?, ?)");
    const std::string now = utc_timestamp_now();
    for (const auto& [digest, size] : objects) {
      insert.reset();
      insert.bind(1, digest).bind(2, size).bind(3, now).run();
    }
  });
}

}  // namespace

std::string ObjectWriter::commit(std::optional<std::string_view> expected_sha256) {
  Impl& w = *impl_;
  std::string digest = w.seal(expected_sha256);
  // The rename must be durable before the row that names it. A failed sync fails the add
  // before the row: the object file without a row is garbage that gc removes.
  for (const auto& dir : w.place(digest)) sync_directory(dir);
  insert_object_rows(*w.store, {{digest, static_cast<std::int64_t>(w.size)}});
  return digest;
}

void ObjectWriter::seal(std::optional<std::string_view> expected_sha256) {
  if (!impl_->sealed_digest.empty()) throw Error("sealing a sealed object writer");
  impl_->sealed_digest = impl_->seal(expected_sha256);
}

std::string ObjectWriter::check(std::optional<std::string_view> expected_sha256) { return impl_->check(expected_sha256); }

const fs::path& ObjectWriter::temp_path() const { return impl_->temp; }

std::string ObjectWriter::publish() {
  Impl& w = *impl_;
  if (w.sealed_digest.empty()) throw Error("publishing an object writer that was not sealed");
  for (const auto& dir : w.place(w.sealed_digest)) sync_directory(dir);
  insert_object_rows(*w.store, {{w.sealed_digest, static_cast<std::int64_t>(w.size)}});
  return w.sealed_digest;
}

std::vector<std::string> Store::add_many(std::size_t count, const std::function<void(std::size_t, ObjectWriter&)>& fill) {
  std::vector<std::optional<ObjectWriter>> writers(count);
  // Written and sealed (data synced) on several threads: one sync after another is what a
  // batch of small objects waits for.
  auto errors = on_threads(count, [&](std::size_t i) {
    writers[i].emplace(new_object());
    fill(i, *writers[i]);
    writers[i]->seal(std::nullopt);
  });
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);  // the writers remove their temp files
  }
  std::vector<ObjectWriter*> sealed;
  for (auto& writer : writers) sealed.push_back(&*writer);
  return publish_sealed(sealed);
}

std::vector<std::string> Store::publish_sealed(const std::vector<ObjectWriter*>& writers) {
  for (const auto* writer : writers) {
    if (writer->impl_->sealed_digest.empty()) throw Error("publishing an object writer that was not sealed");
    if (writer->impl_->store != impl_.get()) throw Error("publishing another store's object writer");
  }
  // Placed in order; the first failure is thrown after the objects placed before it are indexed.
  std::exception_ptr failure;
  std::set<fs::path> dirs;
  std::vector<std::pair<std::string, std::int64_t>> rows;
  std::vector<std::string> digests;
  for (auto* writer : writers) {
    auto& w = *writer->impl_;
    try {
      for (auto& dir : w.place(w.sealed_digest)) dirs.insert(std::move(dir));
      rows.emplace_back(w.sealed_digest, static_cast<std::int64_t>(w.size));
      digests.push_back(w.sealed_digest);
    } catch (...) {
      failure = std::current_exception();
      break;
    }
  }
  // The renames must be durable before the rows that name them: a failed sync fails the batch
  // before any row (its placed files are garbage that gc removes).
  const std::vector<fs::path> to_sync(dirs.begin(), dirs.end());
  for (const auto& error : on_threads(to_sync.size(), [&](std::size_t i) { sync_directory(to_sync[i]); })) {
    if (error) std::rethrow_exception(error);
  }
  insert_object_rows(*impl_, rows);
  if (failure) std::rethrow_exception(failure);
  return digests;
}

std::vector<std::string> Store::add_all_bytes(const std::vector<std::string_view>& contents) {
  return add_many(contents.size(), [&](std::size_t i, ObjectWriter& writer) {
    writer.write(contents[i].data(), contents[i].size());
  });
}

std::vector<std::string> Store::add_files(const std::vector<std::filesystem::path>& files) {
  return add_many(files.size(), [&](std::size_t i, ObjectWriter& writer) {
    writer.impl_->label = files[i].filename().string();
    copy_file_into(files[i], writer);
  });
}

// ---------------------------------------------------------------------------------------------
// Store

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

Store Store::open(const fs::path& deps_root, Access access) { return open(deps_root, access, TempSweep::at_open); }

// Kept whole: the steps of opening a store must run in this order, each commented where it happens.
Store Store::open(const fs::path& deps_root, Access access, TempSweep sweep) {
  auto impl = std::make_unique<Impl>();
  impl->root = fs::absolute(deps_root).lexically_normal();
  if (impl->root.has_relative_path() && impl->root.filename().empty()) impl->root = impl->root.parent_path();
  const fs::path index = layout::index_db(impl->root);
  const fs::path store_dir = layout::store_dir(impl->root);

  bool read_only = access == Access::read_only;
  impl->read_only_reason = "opened read-only";
  // A writer died between committing rows and writing their views: a writable store finishes
  // them before any command reads it, even one that asked only to read (as SQLite rolls back
  // a hot journal for a reader), so that the views never stay behind the rows.
  if (read_only && writable_directory(store_dir) && !orphaned_view_marks(impl->root).empty())
    (void)open(deps_root, Access::read_write, TempSweep::none);
  if (!read_only) {
    std::error_code ec;
    fs::create_directories(layout::objects_dir(impl->root), ec);
    if (!ec) fs::create_directories(layout::temp_dir(impl->root), ec);
    if (ec || !writable_directory(store_dir)) {
      if (!fs::exists(index)) {
        throw Error("cannot create a store at " + impl->root.string() + ": " +
                    (ec ? ec.message() : std::string("directory is not writable")));
      }
      read_only = true;
      impl->read_only_reason = store_dir.string() + " is not writable";
    }
  }
  impl->read_only = read_only;

  if (!read_only) {
    impl->store_lock = UniqueFd(::open((store_dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!impl->store_lock) throw Error("cannot open " + (store_dir / "lock").string() + ": " + errno_text());
    while (::flock(impl->store_lock.get(), LOCK_SH) != 0) {
      if (errno != EINTR) throw Error("cannot lock " + (store_dir / "lock").string() + ": " + errno_text());
    }
    impl->db = sqlite::Database::open(index, sqlite::OpenMode::read_write_create);
    // WAL: readers never block the one writer and vice versa, which is what several podplane
    // processes sharing a store need. synchronous=NORMAL is durable against process crashes in
    // WAL mode; a power loss may drop the last transactions, which only leaves unindexed objects
    // (garbage), never a row without its object, because objects are fsynced before their row.
    for (int attempt = 1;; ++attempt) {
      try {
        impl->db.exec("PRAGMA journal_mode = WAL");
        break;
      } catch (const sqlite::BusyError&) {
        if (attempt >= 30) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
      }
    }
    impl->db.exec("PRAGMA synchronous = NORMAL");
    impl->db.exec("PRAGMA foreign_keys = ON");
    Impl& store = *impl;
    store.transact([&] {
      store.db.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations ("
          " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
      int applied = applied_schema_version(store.db);
      if (applied > known_schema_version()) {
        throw Error(mismatch_message("the store index " + index.string() + " was written by a newer podplane",
                                     "schema version <= " + std::to_string(known_schema_version()),
                                     "schema version " + std::to_string(applied)));
      }
      for (const auto& migration : schema::migrations) {
        if (migration.version <= applied) continue;
        store.db.exec(migration.sql);
        sqlite::Statement record(store.db, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
        record.bind(1, std::int64_t{migration.version}).bind(2, migration.name).bind(3, utc_timestamp_now()).run();
      }
    });
    impl->schema_version = known_schema_version();
    if (sweep == TempSweep::at_open) (void)sweep_temp_files(impl->root, Sweep::remove);
    if (auto orphans = orphaned_view_marks(impl->root); !orphans.empty()) {
      Store opened(std::move(impl));
      try {
        finish_interrupted_views(opened);
      } catch (const Error&) {
        return opened;  // the marks stay for a later open; deps verify reports the views meanwhile
      }
      for (const auto& [file, locked] : orphans) ::unlink(file.c_str());
      return opened;
    }
  } else {
    if (!fs::exists(index)) throw Error("no store at " + impl->root.string() + ": " + index.string() + " does not exist");
    // mode=ro reads a live WAL through its -shm; on read-only media there is no -shm to map and
    // SQLite refuses, so fall back to immutable=1 (writers checkpoint the WAL on close, so the
    // main file holds every committed row).
    try {
      impl->db = sqlite::Database::open(index, sqlite::OpenMode::read_only);
      (void)applied_schema_version(impl->db);
    } catch (const Error&) {
      // Only read-only media justify immutable=1: on a writable disk a failure is real, and
      // immutable would ignore the WAL of a live writer.
      if (writable_directory(store_dir)) throw;
      impl->db = sqlite::Database::open(index, sqlite::OpenMode::immutable);
      impl->read_only_reason += "; index opened immutable";
      std::error_code ec;
      if (fs::file_size(fs::path(index.string() + "-wal"), ec) > 0 && !ec) {
        impl->read_only_reason += " (its -wal file was not checkpointed: the newest rows may be missing)";
      }
    }
    int applied = applied_schema_version(impl->db);
    if (applied > known_schema_version()) {
      throw Error(mismatch_message("the store index " + index.string() + " was written by a newer podplane",
                                   "schema version <= " + std::to_string(known_schema_version()),
                                   "schema version " + std::to_string(applied)));
    }
    // An older index (say, on read-only media written by an older podplane) still answers
    // every query: migrations so far only add tables, and the readers of those tables treat
    // them as empty (Impl::schema_version). A writable open migrates it.
    impl->schema_version = applied;
  }
  return Store(std::move(impl));
}

const fs::path& Store::root() const { return impl_->root; }
bool Store::read_only() const { return impl_->read_only; }
std::string Store::read_only_reason() const { return impl_->read_only ? impl_->read_only_reason : std::string(); }

fs::path Store::object_path(std::string_view digest) const { return impl_->object_path(digest); }

bool Store::has_object(std::string_view digest) const {
  if (!is_sha256_hex(digest)) return false;
  auto& query = impl_->object_size_query;
  if (!query) query.emplace(impl_->db, "SELECT size FROM objects WHERE digest = ?");
  query->bind(1, digest);
  std::optional<std::int64_t> size;
  try {
    if (query->step()) size = query->integer(0);
  } catch (...) {
    query->reset();
    throw;
  }
  query->reset();  // or the statement keeps a read transaction open
  if (!size) return false;
  // A file of another size than its row is damaged (or half-restored): not "present".
  struct stat info {};
  return ::lstat(impl_->object_path(digest).c_str(), &info) == 0 && S_ISREG(info.st_mode) && info.st_size == *size;
}

ObjectWriter Store::new_object(std::string label) {
  ObjectWriter writer = new_object();
  writer.impl_->label = std::move(label);
  return writer;
}

ObjectWriter Store::new_object_hashed_at_seal() {
  ObjectWriter writer = new_object();
  writer.impl_->hashed_at_seal = true;
  return writer;
}

ObjectWriter Store::new_object() {
  impl_->require_writable("add an object");
  auto writer = std::make_unique<ObjectWriter::Impl>();
  writer->store = impl_.get();
  static thread_local std::mt19937_64 random(std::random_device{}() ^ static_cast<std::uint64_t>(::getpid()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    char name[64];
    std::snprintf(name, sizeof name, "%d-%016llx.tmp", static_cast<int>(::getpid()),
                  static_cast<unsigned long long>(random()));
    fs::path temp = layout::temp_dir(impl_->root) / name;
    UniqueFd fd(::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) {
      if (errno == EEXIST) continue;
      throw Error("cannot create a temp file in " + layout::temp_dir(impl_->root).string() + ": " + errno_text());
    }
    while (::flock(fd.get(), LOCK_EX) != 0) {
      if (errno != EINTR) throw Error("cannot lock " + temp.string() + ": " + errno_text());
    }
    // A sweeper may have taken the file between open and flock (it looked abandoned): then
    // the name no longer refers to our file and we start over with a new one.
    struct stat by_fd {}, by_path {};
    if (::fstat(fd.get(), &by_fd) != 0 || ::lstat(temp.c_str(), &by_path) != 0 || by_fd.st_ino != by_path.st_ino) {
      continue;
    }
    writer->temp = std::move(temp);
    writer->fd = std::move(fd);
    return ObjectWriter(std::move(writer));
  }
  throw Error("cannot create a temp file in " + layout::temp_dir(impl_->root).string());
}

ObjectWriter Store::adopt_file(const fs::path& file, std::string label, std::string written_sha256) {
  ObjectWriter writer = new_object(std::move(label));
  ObjectWriter::Impl& impl = *writer.impl_;
  // Locked before it is moved over the writer's locked temp file, so that the temp name always
  // names a locked file: a sweeper (sweep_temp_files) never sees it free.
  UniqueFd fd(::open(file.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throw Error("cannot read " + file.string() + ": " + errno_text());
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw Error("cannot lock " + file.string() + ": " + errno_text());
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) throw Error("cannot read " + file.string() + ": " + errno_text());
  if (!S_ISREG(status.st_mode)) throw Error("cannot add " + file.string() + ": not a regular file");
  if (::rename(file.c_str(), impl.temp.c_str()) == 0) {
    impl.fd = std::move(fd);  // the replaced empty temp file's fd (and lock) go with it
    impl.size = static_cast<std::uint64_t>(status.st_size);
    impl.written_digest = std::move(written_sha256);
    return writer;
  }
  if (errno != EXDEV) throw Error("cannot move " + file.string() + " into " + impl.temp.string() + ": " + errno_text());
  copy_file_into(file, writer);
  std::error_code ignored;
  fs::remove(file, ignored);
  return writer;
}

fs::path Store::temp_dir() const { return layout::temp_dir(impl_->root); }

std::string Store::add_file(const fs::path& file, std::optional<std::string_view> expected_sha256) {
  ObjectWriter writer = new_object();
  writer.impl_->label = file.filename().string();
  copy_file_into(file, writer);
  return writer.commit(expected_sha256);
}

std::string Store::add_bytes(std::string_view bytes, std::optional<std::string_view> expected_sha256) {
  ObjectWriter writer = new_object();
  writer.write(bytes.data(), bytes.size());
  return writer.commit(expected_sha256);
}

std::string Store::read_object(std::string_view digest) const {
  // Its own cap rather than the input limits: this is for the small objects (JSON, sums) the
  // store already checked on the way in; anything larger is streamed from object_path().
  constexpr std::uintmax_t limit = 64u << 20;
  fs::path file = impl_->object_path(digest);
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) throw Error("object " + std::string(digest) + " is not in the store (" + file.string() + ")");
  if (size > limit) throw Error("object " + std::string(digest) + " is too large to read into memory");
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error("cannot read " + file.string() + ": " + errno_text());
  std::string content(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd.get(), content.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot read " + file.string() + ": " + (n < 0 ? errno_text() : "short read"));
    done += static_cast<std::size_t>(n);
  }
  return content;
}

std::int64_t Store::add_artifact(const Artifact& input) {
  Artifact a = input;
  const std::string what = "cannot index " + describe(a);
  require_field(a.address, "address", what);
  require_field(a.version, "version", what);
  require_field(a.filename, "filename", what);
  require_digest(a.digest, what);
  require_no_credentials(a.upstream_url, what);
  a.zh = zh_of(a);
  try {
    check_artifact_layout(a);  // the rules the views rely on (cache/kinds.hpp)
  } catch (const Error& error) {
    throw Error("cannot index " + std::string(error.what()));
  }
  if (a.added_at.empty()) a.added_at = utc_timestamp_now();

  std::int64_t id = 0;
  write([&] {
    auto& db = impl_->db;
    auto stored_size = object_size(db, a.digest);
    if (!stored_size) throw Error(what + ": object " + a.digest + " is not in the store (add the file first)");
    if (a.size == 0) a.size = *stored_size;
    if (a.size != *stored_size) {
      throw Error(mismatch_message(what + ": size differs from the object's", std::to_string(*stored_size), std::to_string(a.size)));
    }
    sqlite::Statement existing(
        db, "SELECT id, digest, protocols FROM artifacts WHERE kind = ? AND address = ? AND version = ? AND platform = ? AND filename = ?");
    existing.bind(1, to_string(a.kind)).bind(2, a.address).bind(3, a.version).bind(4, a.platform).bind(5, a.filename);
    if (existing.step()) {
      if (existing.text(1) != a.digest) {
        throw Error(mismatch_message(what + ": already in the store with other content (the store is additive)",
                                     "sha256:" + existing.text(1), "sha256:" + a.digest));
      }
      id = existing.integer(0);
      // What was not known is learnt (a later fetch or a newer bundle); what was known stays.
      if (existing.text(2).empty() && a.protocols) {
        sqlite::Statement learn(db, "UPDATE artifacts SET protocols = ? WHERE id = ?");
        learn.bind(1, protocols_column(a.protocols)).bind(2, id).run();
      }
      return;
    }
    sqlite::Statement insert(db,
                             "INSERT INTO artifacts (kind, address, version, platform, filename, digest, size, h1, zh,"
                             " upstream_digest, upstream_url, trust, added_at, protocols) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    insert.bind(1, to_string(a.kind)).bind(2, a.address).bind(3, a.version).bind(4, a.platform).bind(5, a.filename);
    insert.bind(6, a.digest).bind(7, a.size).bind(8, a.h1).bind(9, a.zh).bind(10, a.upstream_digest);
    insert.bind(11, a.upstream_url).bind(12, to_string(a.trust)).bind(13, a.added_at);
    insert.bind(14, protocols_column(a.protocols)).run();
    id = db.last_insert_rowid();
  });
  return id;
}

void Store::add_provenance(const Provenance& input) {
  Provenance p = input;
  const std::string what = "cannot record provenance of artifact " + std::to_string(p.artifact_id);
  require_field(p.result, "result", what);
  for (const auto* digest : {&p.shasums_digest, &p.signature_digest, &p.keys_digest}) {
    if (!digest->empty()) require_digest(*digest, what);
  }
  if (p.checked_at.empty()) p.checked_at = utc_timestamp_now();
  write([&] {
    auto& db = impl_->db;
    sqlite::Statement artifact(db, "SELECT 1 FROM artifacts WHERE id = ?");
    artifact.bind(1, p.artifact_id);
    if (!artifact.step()) throw Error(what + ": no such artifact in the index");
    for (const auto* digest : {&p.shasums_digest, &p.signature_digest, &p.keys_digest}) {
      if (!digest->empty() && !object_size(db, *digest)) throw Error(what + ": object " + *digest + " is not in the store");
    }
    sqlite::Statement insert(db,
                             "INSERT OR IGNORE INTO provenance (artifact_id, shasums_digest, signature_digest, keys_digest,"
                             " key_fingerprint, result, checked_at) VALUES (?,?,?,?,?,?,?)");
    insert.bind(1, p.artifact_id).bind(2, p.shasums_digest).bind(3, p.signature_digest).bind(4, p.keys_digest);
    insert.bind(5, p.key_fingerprint).bind(6, p.result).bind(7, p.checked_at).run();
  });
}

std::int64_t Store::add_module_tree(const ModuleTree& input) {
  ModuleTree tree = input;
  const std::string what = "cannot index module " + tree.address + " " + tree.version;
  require_field(tree.address, "address", what);
  require_field(tree.version, "version", what);
  require_no_credentials(tree.upstream_url, what);
  try {
    check_module_tree_layout(tree);  // the rules the views rely on (cache/row_rules.hpp)
  } catch (const Error& error) {
    throw Error("cannot index " + std::string(error.what()));
  }
  std::sort(tree.files.begin(), tree.files.end(), [](const ModuleFile& a, const ModuleFile& b) { return a.path < b.path; });
  std::string h1 = tree_h1(tree.files);
  if (!tree.h1.empty() && tree.h1 != h1) throw Error(mismatch_message(what + ": h1 of the files does not match", tree.h1, h1));
  tree.h1 = h1;
  if (tree.added_at.empty()) tree.added_at = utc_timestamp_now();

  std::int64_t id = 0;
  write([&] {
    auto& db = impl_->db;
    sqlite::Statement existing(db, "SELECT id, h1 FROM module_trees WHERE address = ? AND version = ?");
    existing.bind(1, tree.address).bind(2, tree.version);
    if (existing.step()) {
      if (existing.text(1) != tree.h1) {
        throw Error(mismatch_message(what + ": already in the store with other content (the store is additive)",
                                     existing.text(1), tree.h1));
      }
      id = existing.integer(0);
      return;
    }
    for (auto& file : tree.files) {
      auto size = object_size(db, file.digest);
      if (!size) throw Error(what + ": " + file.path + ": object " + file.digest + " is not in the store");
      if (file.size == 0) file.size = *size;
      if (file.size != *size) {
        throw Error(mismatch_message(what + ": " + file.path + ": size differs from the object's", std::to_string(*size),
                                     std::to_string(file.size)));
      }
    }
    sqlite::Statement insert(db, "INSERT INTO module_trees (address, version, h1, upstream_url, added_at) VALUES (?,?,?,?,?)");
    insert.bind(1, tree.address).bind(2, tree.version).bind(3, tree.h1).bind(4, tree.upstream_url).bind(5, tree.added_at).run();
    id = db.last_insert_rowid();
    sqlite::Statement add_file(db, "INSERT INTO module_files (tree_id, path, mode, digest, size) VALUES (?,?,?,?,?)");
    for (const auto& file : tree.files) {
      add_file.reset();
      add_file.bind(1, id).bind(2, file.path).bind(3, std::int64_t{file.mode}).bind(4, file.digest).bind(5, file.size).run();
    }
    impl_->written.module_trees.insert(id);
  });
  return id;
}

void Store::set_tf_selection(const TfSelection& input) {
  TfSelection selection = input;
  std::sort(selection.platforms.begin(), selection.platforms.end());
  selection.platforms.erase(std::unique(selection.platforms.begin(), selection.platforms.end()), selection.platforms.end());
  try {
    check_selection_layout(selection);  // the rules the views and the lock file rely on
  } catch (const Error& error) {
    throw Error("cannot record " + std::string(error.what()));
  }
  write([&] {
    impl_->written.selection = true;
    auto& db = impl_->db;
    db.exec("DELETE FROM tf_selection_providers; DELETE FROM tf_selection_platforms;");
    sqlite::Statement settings(db,
                               "INSERT OR REPLACE INTO tf_selection (id, module_address, module_version, engine, updated_at)"
                               " VALUES (1, ?, ?, ?, ?)");
    settings.bind(1, selection.module_address).bind(2, selection.module_version).bind(3, selection.engine).bind(4, utc_timestamp_now()).run();
    sqlite::Statement provider(db, "INSERT INTO tf_selection_providers (address, version, constraints) VALUES (?,?,?)");
    for (const auto& p : selection.providers) {
      provider.reset();
      provider.bind(1, p.address).bind(2, p.version).bind(3, p.constraints).run();
    }
    sqlite::Statement platform(db, "INSERT INTO tf_selection_platforms (platform) VALUES (?)");
    for (const auto& p : selection.platforms) {
      platform.reset();
      platform.bind(1, p).run();
    }
  });
}

std::vector<Artifact> Store::artifacts(const ArtifactQuery& query) const {
  std::string sql = "SELECT " + RowReader<Artifact>::columns(impl_->schema_version) + " FROM artifacts WHERE 1 = 1";
  if (query.kind) sql += " AND kind = :kind";
  if (query.address) sql += " AND address = :address";
  if (query.version) sql += " AND version = :version";
  if (query.platform) sql += " AND platform = :platform";
  sql += " ORDER BY kind, address, version, platform, filename";
  sqlite::Statement select(impl_->db, sql);
  int index = 1;
  if (query.kind) select.bind(index++, to_string(*query.kind));
  if (query.address) select.bind(index++, *query.address);
  if (query.version) select.bind(index++, *query.version);
  if (query.platform) select.bind(index++, *query.platform);
  return read_rows<Artifact>(select);
}

std::optional<Artifact> Store::find_artifact(ArtifactKind kind, std::string_view address, std::string_view version,
                                             std::string_view platform, std::string_view filename) const {
  sqlite::Statement select(impl_->db, "SELECT " + RowReader<Artifact>::columns(impl_->schema_version) +
                                          " FROM artifacts WHERE kind = ? AND address = ? AND version = ? AND platform = ?"
                                          " AND filename = ?");
  select.bind(1, to_string(kind)).bind(2, address).bind(3, version).bind(4, platform).bind(5, filename);
  if (!select.step()) return std::nullopt;
  return RowReader<Artifact>::read(select);
}

std::vector<Provenance> Store::provenance_of(std::int64_t artifact_id) const {
  sqlite::Statement select(impl_->db, select_rows<Provenance>("FROM provenance WHERE artifact_id = ? ORDER BY id"));
  select.bind(1, artifact_id);
  return read_rows<Provenance>(select);
}

namespace {

std::vector<ModuleTree> select_module_trees(sqlite::Database& db, const std::string& where,
                                            const std::vector<std::string>& parameters) {
  sqlite::Statement select(db, select_rows<ModuleTree>("FROM module_trees " + where + " ORDER BY address, version"));
  for (std::size_t i = 0; i < parameters.size(); ++i) select.bind(static_cast<int>(i + 1), parameters[i]);
  std::vector<ModuleTree> trees = read_rows<ModuleTree>(select);
  sqlite::Statement files(db, select_rows<ModuleFile>("FROM module_files WHERE tree_id = ? ORDER BY path"));
  for (auto& tree : trees) {
    files.reset();
    files.bind(1, tree.id);
    tree.files = read_rows<ModuleFile>(files);
  }
  return trees;
}

}  // namespace

std::vector<ModuleTree> Store::module_trees(std::optional<std::string_view> address) const {
  if (address) return select_module_trees(impl_->db, "WHERE address = ?", {std::string(*address)});
  return select_module_trees(impl_->db, "", {});
}

std::optional<ModuleTree> Store::find_module_tree(std::string_view address, std::string_view version) const {
  auto trees = select_module_trees(impl_->db, "WHERE address = ? AND version = ?", {std::string(address), std::string(version)});
  if (trees.empty()) return std::nullopt;
  return std::move(trees.front());
}

std::optional<TfSelection> Store::tf_selection() const {
  auto& db = impl_->db;
  sqlite::Statement settings(db, "SELECT module_address, module_version, engine FROM tf_selection WHERE id = 1");
  if (!settings.step()) return std::nullopt;
  TfSelection selection;
  selection.module_address = settings.text(0);
  selection.module_version = settings.text(1);
  selection.engine = settings.text(2);
  sqlite::Statement providers(db, select_rows<TfSelection::Provider>("FROM tf_selection_providers ORDER BY address"));
  selection.providers = read_rows<TfSelection::Provider>(providers);
  sqlite::Statement platforms(db, "SELECT platform FROM tf_selection_platforms ORDER BY platform");
  while (platforms.step()) selection.platforms.push_back(platforms.text(0));
  return selection;
}

void Store::audit(std::string_view action, std::string_view subject, const nlohmann::json& detail) {
  require_field(action, "action", "cannot write the audit log");
  impl_->transact([&] {
    sqlite::Statement insert(impl_->db, "INSERT INTO audit_log (at, action, subject, detail) VALUES (?,?,?,?)");
    // Details carry names from outside (tar entries, bundle paths) that need not be UTF-8: they
    // are recorded with U+FFFD rather than failing the command at its very end.
    const std::string text = detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    insert.bind(1, utc_timestamp_now()).bind(2, action).bind(3, subject).bind(4, text).run();
  });
}

std::vector<AuditEntry> Store::audit_log() const {
  sqlite::Statement select(impl_->db, select_rows<AuditEntry>("FROM audit_log ORDER BY id"));
  return read_rows<AuditEntry>(select);
}

void Store::in_transaction(const std::function<void()>& body) { write(body); }

void Store::read_snapshot(const std::function<void()>& body) const {
  if (impl_->transaction_depth > 0) throw Error("internal: read_snapshot inside a write transaction");
  // Inside another snapshot `body` simply runs: a reader that takes its own (plan_prune, for
  // the catalogue's totals) then sees the same commit as the caller's other reads.
  const bool outermost = impl_->snapshot_depth == 0;
  struct Depth {
    int& depth;
    explicit Depth(int& d) : depth(++d) {}
    ~Depth() { --depth; }
  } depth(impl_->snapshot_depth);
  if (!outermost) {
    body();
    return;
  }
  // A deferred BEGIN takes its WAL read mark at the first SELECT and keeps it to the end, so
  // commits by other processes in between stay invisible to `body`.
  impl_->db.exec("BEGIN DEFERRED");
  try {
    body();
  } catch (...) {
    try {
      impl_->db.exec("ROLLBACK");
    } catch (...) {
    }
    throw;
  }
  impl_->db.exec("COMMIT");
}

std::int64_t Store::index_generation() const {
  sqlite::Statement statement(impl_->db, "PRAGMA data_version");
  return statement.step() ? statement.integer(0) : 0;
}

void Store::write_module_files(const ModuleTree& tree, const fs::path& dir) const {
  fs::create_directories(dir);
  for (const auto& file : tree.files) {
    const fs::path target = dir / file.path;
    fs::create_directories(target.parent_path());
    fs::copy_file(object_path(file.digest), target);
    fs::permissions(target, fs::perms(0644));
  }
}

std::string Store::content_generation() const {
  // One line per row, fields separated by a byte no field holds (names are checked safe and
  // digests are hex), sorted by SQLite's BINARY collation: the same bytes on every host.
  Hasher hasher;
  auto hash_rows = [&](std::string_view tag, int columns, const std::string& sql) {
    sqlite::Statement select(impl_->db, sql);
    while (select.step()) {
      hasher.update(tag);
      for (int column = 0; column < columns; ++column) {
        hasher.update("\x1f", 1);
        hasher.update(select.text(column));
      }
      hasher.update("\n", 1);
    }
  };
  const std::string protocols = impl_->schema_version >= 5 ? "protocols" : "''";
  hash_rows("artifact", 7, "SELECT kind, address, version, platform, filename, digest, " + protocols +
                            " FROM artifacts ORDER BY kind, address, version, platform, filename");
  hash_rows("module", 5, "SELECT t.address, t.version, f.path, f.mode, f.digest FROM module_trees t"
                      " JOIN module_files f ON f.tree_id = t.id ORDER BY t.address, t.version, f.path");
  hash_rows("selection", 3, "SELECT module_address, module_version, engine FROM tf_selection");
  hash_rows("selected_provider", 3, "SELECT address, version, constraints FROM tf_selection_providers ORDER BY address");
  hash_rows("selected_platform", 1, "SELECT platform FROM tf_selection_platforms ORDER BY platform");
  return hasher.finish_hex();
}

void Store::write(const std::function<void()>& body) {
  const bool outermost = impl_->transaction_depth == 0;
  impl_->transact([&] {
    if (outermost) impl_->written = {};
    body();
    // Rows are validated completely before the commit: a tree or selection whose views would
    // take another row's place rolls the whole transaction back (docs/design.md §5.4).
    if (outermost) check_written_rows_lay_out(*this);
  });
}

std::vector<QuarantineEntry> Store::quarantine() const {
  if (impl_->schema_version < 2) return {};
  sqlite::Statement select(impl_->db, select_rows<QuarantineEntry>("FROM quarantine ORDER BY id"));
  return read_rows<QuarantineEntry>(select);
}

std::string Store::identity() {
  auto read = [&]() -> std::string {
    if (impl_->schema_version < 3) {
      // A store opened read-only before migration 003: its id is still the oldest audit row.
      sqlite::Statement select(impl_->db,
                               "SELECT subject FROM audit_log WHERE action = 'store-identity' ORDER BY id LIMIT 1");
      return select.step() ? select.text(0) : std::string();
    }
    sqlite::Statement select(impl_->db, "SELECT store_id FROM store_identity WHERE singleton = 1");
    return select.step() ? select.text(0) : std::string();
  };
  if (std::string id = read(); !id.empty() || impl_->read_only) return id;
  write([&] {
    // SQLite's randomblob draws on the operating system's randomness; a racing process that
    // inserted first wins for everybody (the singleton key).
    sqlite::Statement insert(impl_->db,
                             "INSERT OR IGNORE INTO store_identity (singleton, store_id, created_at)"
                             " VALUES (1, lower(hex(randomblob(16))), ?)");
    insert.bind(1, utc_timestamp_now()).run();
  });
  return read();
}

std::optional<BundleSignerMark> Store::bundle_signer(std::string_view signer) const {
  if (impl_->schema_version < 2) return std::nullopt;
  sqlite::Statement select(impl_->db, select_rows<BundleSignerMark>("FROM bundle_signers WHERE signer = ?"));
  select.bind(1, signer);
  if (!select.step()) return std::nullopt;
  return RowReader<BundleSignerMark>::read(select);
}

std::vector<BundleSignerMark> Store::bundle_signers() const {
  std::vector<BundleSignerMark> marks;
  if (impl_->schema_version < 2) return marks;
  sqlite::Statement select(impl_->db, select_rows<BundleSignerMark>("FROM bundle_signers ORDER BY signer"));
  return read_rows<BundleSignerMark>(select);
}

void Store::record_bundle_signer(std::string_view signer, std::string_view created_at, std::string_view bundle_id) {
  require_field(signer, "signer", "cannot record a bundle signer");
  require_field(created_at, "created_at", "cannot record a bundle signer");
  write([&] {
    // Only ever forward: (created_at, bundle_id) of the newest bundle seen from this signer.
    sqlite::Statement upsert(impl_->db,
                             "INSERT INTO bundle_signers (signer, created_at, bundle_id, recorded_at) VALUES (?1, ?2, ?3, ?4)"
                             " ON CONFLICT (signer) DO UPDATE SET created_at = excluded.created_at,"
                             " bundle_id = excluded.bundle_id, recorded_at = excluded.recorded_at"
                             " WHERE (excluded.created_at, excluded.bundle_id) > (bundle_signers.created_at, bundle_signers.bundle_id)");
    upsert.bind(1, signer).bind(2, created_at).bind(3, bundle_id).bind(4, utc_timestamp_now()).run();
  });
}

}  // namespace podplane::cache
