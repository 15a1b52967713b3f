#include "cache/maintenance.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cache/layout.hpp"
#include "cache/sha256.hpp"
#include "cache/store_impl.hpp"
#include "cache/views.hpp"
#include "lockfile/error.hpp"
#include "lockfile/hash.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;

namespace {

// Every digest some row depends on: an object is garbage only when none of these names it.
constexpr const char* referenced_digests_sql =
    "SELECT digest FROM artifacts UNION SELECT digest FROM module_files"
    " UNION SELECT shasums_digest FROM provenance WHERE shasums_digest != ''"
    " UNION SELECT signature_digest FROM provenance WHERE signature_digest != ''"
    " UNION SELECT keys_digest FROM provenance WHERE keys_digest != ''";

std::set<std::string> referenced_digests(sqlite::Database& db) {
  std::set<std::string> digests;
  sqlite::Statement select(db, referenced_digests_sql);
  while (select.step()) digests.insert(select.text(0));
  return digests;
}

std::map<std::string, std::int64_t> indexed_objects(sqlite::Database& db) {
  std::map<std::string, std::int64_t> objects;
  sqlite::Statement select(db, "SELECT digest, size FROM objects");
  while (select.step()) objects.emplace(select.text(0), select.integer(1));
  return objects;
}

// Object files on disk, by digest, plus anything in objects/ that is not an object file.
struct DiskObjects {
  std::map<std::string, fs::path> files;
  std::vector<fs::path> strays;
};

DiskObjects scan_objects(const fs::path& root) {
  DiskObjects disk;
  std::error_code ec;
  for (fs::directory_iterator prefix(layout::objects_dir(root), ec), end; !ec && prefix != end; prefix.increment(ec)) {
    std::string first = prefix->path().filename().string();
    if (!prefix->is_directory() || first.size() != 2) {
      disk.strays.push_back(prefix->path());
      continue;
    }
    std::error_code inner;
    for (fs::directory_iterator it(prefix->path(), inner), stop; !inner && it != stop; it.increment(inner)) {
      std::string digest = first + it->path().filename().string();
      if (is_sha256_hex(digest) && it->is_regular_file() && !it->is_symlink()) disk.files.emplace(digest, it->path());
      else disk.strays.push_back(it->path());
    }
  }
  return disk;
}

bool temp_file_in_use(const fs::path& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return false;
  return ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0;
}

bool same_file(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void check_views(const Store& store, VerifyReport& report) {
  std::vector<ViewFile> views;
  try {
    views = planned_views(store);
  } catch (const Error& error) {
    report.problems.push_back(std::string("cannot work out the views: ") + error.what());
    return;
  }
  std::size_t missing = 0;
  for (const auto& view : views) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(view.path, ec))) {
      ++missing;
      continue;
    }
    ++report.views_checked;
    if (!view.object_digest.empty()) {
      if (same_file(view.path, StoreInternals::of(store).object_path(view.object_digest))) continue;
      std::string got;
      try {
        got = sha256_hex_of_file(view.path);
      } catch (const Error& error) {
        report.problems.push_back(std::string("view unreadable: ") + error.what());
        continue;
      }
      if (got != view.object_digest) {
        report.problems.push_back(mismatch_message("view " + view.path.string() + " does not hold its object",
                                                   "sha256:" + view.object_digest, "sha256:" + got));
      }
    } else if (view.content) {
      std::string got;
      try {
        got = sha256_hex_of_file(view.path);
      } catch (const Error& error) {
        report.problems.push_back(std::string("view unreadable: ") + error.what());
        continue;
      }
      if (got != lockfile::sha256_hex(*view.content)) {
        report.problems.push_back("view " + view.path.string() + " differs from what the index implies (rebuild the views)");
      }
    }
  }
  if (missing > 0) {
    report.notes.push_back(std::to_string(missing) + " view file(s) not built yet under " +
                           store.root().string() + " (they are rebuilt from the index on demand)");
  }
}

}  // namespace

VerifyReport verify_store(const Store& store) {
  VerifyReport report;
  auto& impl = const_cast<Store::Impl&>(StoreInternals::of(store));
  auto& db = impl.db;
  const fs::path& root = store.root();

  {
    sqlite::Statement integrity(db, "PRAGMA integrity_check");
    while (integrity.step()) {
      if (integrity.text(0) != "ok") report.problems.push_back("index integrity: " + integrity.text(0));
    }
    sqlite::Statement foreign(db, "PRAGMA foreign_key_check");
    while (foreign.step()) {
      report.problems.push_back("dangling row: " + foreign.text(0) + " row " + foreign.text(1) + " names a missing " + foreign.text(2) + " row");
    }
  }

  // Objects: every row has its file with the recorded size and content; every file has a row.
  auto objects = indexed_objects(db);
  auto disk = scan_objects(root);
  std::map<std::string, std::string> verified;  // digest → rehash result
  for (const auto& [digest, size] : objects) {
    fs::path file = impl.object_path(digest);
    auto found = disk.files.find(digest);
    if (found == disk.files.end()) {
      report.problems.push_back("object missing: " + digest + " (" + file.string() + ")");
      continue;
    }
    std::error_code ec;
    auto actual_size = fs::file_size(file, ec);
    if (ec || static_cast<std::int64_t>(actual_size) != size) {
      report.problems.push_back(mismatch_message("object " + digest + " has the wrong size (" + file.string() + ")",
                                                 std::to_string(size), ec ? ec.message() : std::to_string(actual_size)));
      continue;
    }
    std::string got;
    try {
      got = sha256_hex_of_file(file);
    } catch (const Error& error) {
      report.problems.push_back(std::string("object unreadable: ") + error.what());
      continue;
    }
    ++report.objects_checked;
    verified[digest] = got;
    if (got != digest) {
      report.problems.push_back(mismatch_message("object " + file.string() + " is corrupt", "sha256:" + digest, "sha256:" + got));
    }
    struct stat info {};
    if (::stat(file.c_str(), &info) == 0 && (info.st_mode & 0222) != 0) {
      report.notes.push_back("object " + digest + " is writable (objects should be read-only)");
    }
  }
  for (const auto& [digest, file] : disk.files) {
    if (!objects.count(digest)) report.garbage.push_back("unindexed object " + file.string());
  }
  for (const auto& stray : disk.strays) report.garbage.push_back("stray file in the object store " + stray.string());
  auto referenced = referenced_digests(db);
  for (const auto& [digest, size] : objects) {
    if (!referenced.count(digest)) report.garbage.push_back("unreferenced object " + digest + " (" + std::to_string(size) + " bytes)");
  }

  // Rows: each names an object of its recorded size; hashes agree with the object.
  for (const auto& a : store.artifacts()) {
    ++report.artifacts_checked;
    std::string name = std::string(to_string(a.kind)) + " " + a.address + " " + a.version +
                       (a.platform.empty() ? "" : " " + a.platform) + " (" + a.filename + ")";
    auto object = objects.find(a.digest);
    if (object == objects.end()) {
      report.problems.push_back("dangling row: " + name + " names object " + a.digest + ", which is not in the store");
      continue;
    }
    if (object->second != a.size) {
      report.problems.push_back(mismatch_message("row " + name + " records another size than its object's",
                                                 std::to_string(object->second), std::to_string(a.size)));
    }
    if (!verified.count(a.digest)) continue;  // already reported as missing or corrupt
    fs::path file = impl.object_path(a.digest);
    if (a.kind == ArtifactKind::provider_package) {
      if (a.zh != "zh:" + a.digest) report.problems.push_back(mismatch_message("row " + name + " has the wrong zh", "zh:" + a.digest, a.zh));
      if (!a.h1.empty()) {
        std::string h1;
        try {
          h1 = lockfile::h1_hash_of_zip(file);
        } catch (const Error& error) {
          report.problems.push_back("row " + name + ": cannot compute h1 of its zip: " + error.what());
          continue;
        }
        if (h1 != a.h1) report.problems.push_back(mismatch_message("row " + name + " has the wrong h1", h1, a.h1));
      }
    }
    if (!a.upstream_digest.empty()) {
      try {
        auto expected = lockfile::TypedDigest::parse(a.upstream_digest);
        std::string got = expected.algorithm == lockfile::DigestAlgorithm::sha256 ? a.digest
                                                                                  : lockfile::file_digest_hex(file, expected.algorithm);
        if (got != expected.hex) {
          report.problems.push_back(mismatch_message("row " + name + " does not match its upstream digest", a.upstream_digest,
                                                     expected.str().substr(0, expected.str().find(':') + 1) + got));
        }
      } catch (const Error& error) {
        report.problems.push_back("row " + name + ": " + error.what());
      }
    }
  }
  {
    sqlite::Statement duplicates(db,
                                 "SELECT kind, address, version, platform, filename, count(*) FROM artifacts"
                                 " GROUP BY kind, address, version, platform, filename HAVING count(*) > 1");
    while (duplicates.step()) {
      report.problems.push_back("duplicate rows: " + duplicates.text(0) + " " + duplicates.text(1) + " " + duplicates.text(2) +
                                " " + duplicates.text(3) + " " + duplicates.text(4) + " is indexed " + duplicates.text(5) + " times");
    }
  }
  for (const auto& tree : store.module_trees()) {
    std::vector<std::pair<std::string, std::string>> entries;
    for (const auto& file : tree.files) {
      ++report.module_files_checked;
      entries.emplace_back(file.path, file.digest);
      auto object = objects.find(file.digest);
      if (object == objects.end()) {
        report.problems.push_back("dangling row: module " + tree.address + " " + tree.version + " file " + file.path +
                                  " names object " + file.digest + ", which is not in the store");
      } else if (object->second != file.size) {
        report.problems.push_back(mismatch_message("module " + tree.address + " " + tree.version + " file " + file.path +
                                                       " records another size than its object's",
                                                   std::to_string(object->second), std::to_string(file.size)));
      }
    }
    std::string h1 = entries.empty() ? "" : lockfile::h1_hash(std::move(entries));
    if (h1 != tree.h1) {
      report.problems.push_back(mismatch_message("module " + tree.address + " " + tree.version + " has the wrong h1", h1, tree.h1));
    }
  }
  {
    sqlite::Statement provenance(db, "SELECT artifact_id, shasums_digest, signature_digest, keys_digest FROM provenance");
    while (provenance.step()) {
      for (int column = 1; column <= 3; ++column) {
        std::string digest = provenance.text(column);
        if (!digest.empty() && !objects.count(digest)) {
          report.problems.push_back("dangling row: provenance of artifact " + std::to_string(provenance.integer(0)) +
                                    " names object " + digest + ", which is not in the store");
        }
      }
    }
  }

  // Temp files: a dead writer's are garbage; a live writer's are work in progress.
  std::error_code ec;
  for (fs::directory_iterator it(layout::temp_dir(root), ec), end; !ec && it != end; it.increment(ec)) {
    if (temp_file_in_use(it->path())) report.notes.push_back("temp file in use by a running podplane: " + it->path().string());
    else report.garbage.push_back("temp file " + it->path().string());
  }

  check_views(store, report);
  std::sort(report.garbage.begin(), report.garbage.end());
  return report;
}

nlohmann::json to_json(const VerifyReport& report) {
  return {{"ok", report.ok()},
          {"objects_checked", report.objects_checked},
          {"artifacts_checked", report.artifacts_checked},
          {"module_files_checked", report.module_files_checked},
          {"views_checked", report.views_checked},
          {"problems", report.problems},
          {"garbage", report.garbage},
          {"notes", report.notes}};
}

namespace {

// gc must be alone: writers hold store/lock shared for their whole life, so holding it
// exclusively means no object can sit between "renamed into place" and "indexed".
class ExclusiveStoreLock {
 public:
  explicit ExclusiveStoreLock(Store::Impl& impl) : impl_(impl) {
    if (::flock(impl_.store_lock.get(), LOCK_EX | LOCK_NB) != 0) {
      // A failed conversion may drop the shared lock: take it back before reporting.
      while (::flock(impl_.store_lock.get(), LOCK_SH) != 0 && errno == EINTR) {
      }
      throw Error("cannot collect garbage: another podplane process has the store at " + impl_.root.string() +
                  " open for writing; run gc again when it has finished");
    }
  }
  ~ExclusiveStoreLock() {
    while (::flock(impl_.store_lock.get(), LOCK_SH) != 0 && errno == EINTR) {
    }
  }
  ExclusiveStoreLock(const ExclusiveStoreLock&) = delete;
  ExclusiveStoreLock& operator=(const ExclusiveStoreLock&) = delete;

 private:
  Store::Impl& impl_;
};

}  // namespace

GcReport collect_garbage(Store& store, DryRun dry_run) {
  auto& impl = StoreInternals::of(store);
  impl.require_writable("collect garbage");
  ExclusiveStoreLock alone(impl);
  GcReport report;
  const fs::path& root = store.root();

  for (const auto& file : sweep_temp_files(root, Sweep::list)) {
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (dry_run == DryRun::no && ::unlink(file.c_str()) != 0) continue;
    report.bytes += ec ? 0 : size;
    report.temp_files.push_back(file);
  }

  std::map<std::string, std::int64_t> garbage;
  impl.transact([&] {
    garbage.clear();
    auto objects = indexed_objects(impl.db);
    auto referenced = referenced_digests(impl.db);
    for (const auto& [digest, size] : objects) {
      if (!referenced.count(digest)) garbage.emplace(digest, size);
    }
    if (dry_run == DryRun::yes) return;
    // Row first, file second: a crash in between leaves an unindexed file, which is garbage.
    sqlite::Statement remove(impl.db, "DELETE FROM objects WHERE digest = ?");
    for (const auto& [digest, size] : garbage) {
      remove.reset();
      remove.bind(1, digest).run();
    }
  });
  auto indexed = indexed_objects(impl.db);
  auto disk = scan_objects(root);
  for (const auto& [digest, file] : disk.files) {
    if (indexed.count(digest)) continue;
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    garbage.emplace(digest, ec ? 0 : static_cast<std::int64_t>(size));
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
  if (dry_run == DryRun::no && (!report.objects.empty() || !report.temp_files.empty())) {
    store.audit("gc", root.string(),
                {{"objects", report.objects.size()}, {"temp_files", report.temp_files.size()}, {"bytes", report.bytes}});
  }
  return report;
}

nlohmann::json to_json(const GcReport& report) {
  nlohmann::json temp = nlohmann::json::array();
  for (const auto& file : report.temp_files) temp.push_back(file.string());
  return {{"temp_files", temp}, {"objects", report.objects}, {"bytes", report.bytes}};
}

}  // namespace podplane::cache
