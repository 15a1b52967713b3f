#include "cache/gc.hpp"

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/error.hpp"
#include "cache/layout.hpp"
#include "cache/object_scan.hpp"
#include "cache/store_impl.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;

ExclusiveStoreLock::ExclusiveStoreLock(Store::Impl& impl, const std::string& what, const std::string& command) : impl_(impl) {
  if (::flock(impl_.store_lock.get(), LOCK_EX | LOCK_NB) != 0) {
    // A failed conversion may drop the shared lock: take it back before reporting.
    while (::flock(impl_.store_lock.get(), LOCK_SH) != 0 && errno == EINTR) {
    }
    throw Error("cannot " + what + ": another podplane process has the store at " + impl_.root.string() +
                " open for writing; run " + command + " again when it has finished");
  }
}

ExclusiveStoreLock::~ExclusiveStoreLock() {
  while (::flock(impl_.store_lock.get(), LOCK_SH) != 0 && errno == EINTR) {
  }
}

namespace {

// Whether the index records that a prune removed rows from it. A prune deletes its rows and
// writes this audit entry in one transaction, and removes the objects those rows named only
// after that: a prune stopped in between, in a store where it kept nothing, leaves an index
// with no content row that still lists those objects. That is not a lost index made again
// (which has no audit log): on its own word the objects are garbage, and gc or the prune run
// again must be able to finish the work instead of refusing the store for good.
bool emptied_by_prune(sqlite::Database& db) {
  sqlite::Statement prunes(db, "SELECT detail FROM audit_log WHERE action = 'prune'");
  while (prunes.step()) {
    auto detail = nlohmann::json::parse(prunes.text(0), nullptr, false);
    if (!detail.is_object()) continue;
    auto removed = detail.find("rows");
    if (removed != detail.end() && removed->is_number_integer() && removed->get<std::int64_t>() > 0) return true;
  }
  return false;
}

// An index that no command ever committed to (no audit entry: every command that adds rows
// records one) and that lists every object file on disk: each object is one its own writers
// published, and the fills they belonged to stopped before their rows (killed, or the power
// cut, during a store's first fill). Its word that they are garbage is good. An old empty index
// restored over a filled store lists none of the store's files, and one whose rows someone
// removed records the commands that wrote them.
bool only_stopped_fills(sqlite::Database& db, const DiskObjects& disk, const IndexedObjects& indexed) {
  sqlite::Statement audits(db, "SELECT count(*) FROM audit_log");
  if (!audits.step() || audits.integer(0) != 0) return false;
  return std::all_of(disk.files.begin(), disk.files.end(), [&](const RawDigest& file) { return indexed.contains(file); });
}

}  // namespace

// gc deletes objects on the index's word that no row needs them. An index that cannot be read
// whole, that lists no content while objects exist (unless it records the prune that removed
// it, or only fills stopped before their rows wrote to it), or that was created after objects
// it does not know (it was lost and made again) cannot give that word: refuse, delete nothing.
void refuse_untrustworthy_index(const Store& store, std::string_view command) {
  auto& impl = const_cast<Store::Impl&>(StoreInternals::of(store));
  const fs::path index = layout::index_db(store.root());
  const std::string refused = std::string(command) + " refused: it deletes objects on the word of the index " + index.string() + ", and ";
  {
    sqlite::Statement check(impl.db, "PRAGMA quick_check");
    std::string result = check.step() ? check.text(0) : "no answer";
    if (result != "ok") {
      throw Error(refused + "that index is damaged (" + result + "). Nothing was deleted. `podplane deps verify` says more.");
    }
  }
  auto disk = scan_objects(store.root());
  auto indexed = IndexedObjects::read(impl.db);
  if (!indexed.malformed.empty()) {
    throw Error(refused + "that index names an object '" + indexed.malformed.front() +
                "', which is not a sha256 digest (64 lower-case hex digits). Nothing was deleted. `podplane deps verify` says more.");
  }
  sqlite::Statement rows(impl.db, "SELECT (SELECT count(*) FROM artifacts) + (SELECT count(*) FROM module_trees)");
  std::int64_t content_rows = rows.step() ? rows.integer(0) : 0;
  if (content_rows == 0 && (!disk.files.empty() || !indexed.empty()) && !emptied_by_prune(impl.db) &&
      !only_stopped_fills(impl.db, disk, indexed)) {
    throw Error(refused + "that index is empty (no artifact or module row) while " + std::to_string(disk.files.size()) +
                " object file(s) are on disk: an empty index cannot say they are garbage. Nothing was deleted.\n"
                "If the index was lost, `podplane bundle import` or `podplane deps tf`/`deps download` index the "
                "objects again; to discard the whole store, remove " + store.root().string() + " by hand.");
  }
  sqlite::Statement created(impl.db, "SELECT applied_at FROM schema_migrations WHERE version = 1");
  if (!created.step()) throw Error(refused + "that index does not say when it was created. Nothing was deleted.");
  std::string created_at = created.text(0);
  const auto born = parse_utc_timestamp(created_at);
  if (!born) throw Error(refused + "its creation time '" + created_at + "' cannot be read. Nothing was deleted.");
  const std::time_t index_born = *born;
  std::size_t older = 0;
  std::string example;
  for (const auto& digest : disk.files) {
    if (indexed.contains(digest)) continue;
    const fs::path file = impl.object_path(digest.hex());
    struct stat info {};
    if (::lstat(file.c_str(), &info) == 0 && info.st_mtime < index_born) {
      if (older++ == 0) example = file.string();
    }
  }
  if (older > 0) {
    throw Error(refused + std::to_string(older) + " unindexed object file(s) are older than the index (created " + created_at +
                "; e.g. " + example + "): the index was made again after they were written and cannot say they are "
                "garbage. Nothing was deleted.\nRe-index them with `podplane bundle import` or `podplane deps tf`/"
                "`deps download`; to discard the whole store, remove " + store.root().string() + " by hand.");
  }
}

GcReport collect_garbage(Store& store, DryRun dry_run) {
  auto& impl = StoreInternals::of(store);
  impl.require_writable("collect garbage");
  ExclusiveStoreLock alone(impl, "collect garbage", "gc");
  refuse_untrustworthy_index(store, "deps gc");
  return remove_garbage(store, dry_run);
}

GcReport remove_garbage(Store& store, DryRun dry_run) {
  auto& impl = StoreInternals::of(store);
  GcReport report;
  const fs::path& root = store.root();

  for (const auto& file : sweep_temp_files(root, Sweep::list)) {
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (dry_run == DryRun::no && ::unlink(file.c_str()) != 0) continue;
    report.bytes += ec ? 0 : size;
    report.temp_files.push_back(file);
  }

  // Every scratch directory in store/tmp is a dead run's (killed by SIGKILL, so none of its
  // own cleanup ran): a live run holds the store open, and gc holds it alone.
  std::vector<fs::path> scratch_dirs;
  std::error_code scan_error;
  for (fs::directory_iterator it(layout::temp_dir(root), scan_error), end; !scan_error && it != end;
       it.increment(scan_error)) {
    if (is_scratch_directory(it->path())) scratch_dirs.push_back(it->path());
  }
  std::sort(scratch_dirs.begin(), scratch_dirs.end());
  for (const auto& dir : scratch_dirs) {
    const std::uint64_t bytes = bytes_under(dir);
    if (dry_run == DryRun::no) {
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (ec) continue;
    }
    report.bytes += bytes;
    report.scratch_dirs.push_back(dir);
  }

  std::map<std::string, std::int64_t> garbage;
  impl.transact([&] {
    garbage.clear();
    for (auto& [digest, size] : unreferenced_objects(impl.db)) garbage.emplace(std::move(digest), size);
    if (dry_run == DryRun::yes) return;
    // Row first, file second: a crash in between leaves an unindexed file, which is garbage.
    sqlite::Statement remove(impl.db, "DELETE FROM objects WHERE digest = ?");
    for (const auto& [digest, size] : garbage) {
      remove.reset();
      remove.bind(1, digest).run();
    }
  });
  auto indexed = IndexedObjects::read(impl.db);
  auto disk = scan_objects(root);
  for (const auto& digest : disk.files) {
    if (indexed.contains(digest)) continue;
    std::error_code ec;
    auto size = fs::file_size(impl.object_path(digest.hex()), ec);
    garbage.emplace(digest.hex(), ec ? 0 : static_cast<std::int64_t>(size));
  }
  for (const auto& [digest, size] : garbage) {
    if (dry_run == DryRun::no) {
      fs::path file = impl.object_path(digest);
      if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
        throw Error("cannot remove " + file.string() + ": " + std::strerror(errno));
      }
    }
    report.objects.push_back(digest);
    report.bytes += static_cast<std::uint64_t>(size);
  }
  if (dry_run == DryRun::no && (!report.objects.empty() || !report.temp_files.empty() || !report.scratch_dirs.empty())) {
    store.audit("gc", root.string(),
                {{"objects", report.objects.size()},
                 {"temp_files", report.temp_files.size()},
                 {"scratch_dirs", report.scratch_dirs.size()},
                 {"bytes", report.bytes}});
  }
  return report;
}

nlohmann::json to_json(const GcReport& report) {
  nlohmann::json temp = nlohmann::json::array();
  for (const auto& file : report.temp_files) temp.push_back(file.string());
  nlohmann::json scratch = nlohmann::json::array();
  for (const auto& dir : report.scratch_dirs) scratch.push_back(dir.string());
  return {{"temp_files", temp}, {"scratch_dirs", scratch}, {"objects", report.objects}, {"bytes", report.bytes}};
}

}  // namespace podplane::cache
