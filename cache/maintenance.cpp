#include "cache/maintenance.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/scratch_dir.hpp"
#include "cache/gc.hpp"
#include "cache/kinds.hpp"
#include "cache/layout.hpp"
#include "cache/object_scan.hpp"
#include "cache/row_rules.hpp"
#include "cache/store_impl.hpp"
#include "cache/views.hpp"
#include "lockfile/hash.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;

namespace {

bool same_file(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string relative_to(const fs::path& root, const fs::path& path) { return path.lexically_relative(root).generic_string(); }

// Objects `deps verify --repair` moved aside, by digest: "<when>: <why>".
std::map<std::string, std::string> quarantined_objects(const Store& store) {
  std::map<std::string, std::string> objects;
  for (const auto& entry : store.quarantine()) {
    if (entry.what == "object") objects[entry.subject] = entry.at + ": " + entry.reason;
  }
  return objects;
}

// The online command that takes a row of `kind` again (the table's Refetch), for the row of
// `address`, `platform` and `version`: run as printed, it fetches that row's object.
std::string refetch_command(sqlite::Database& db, const KindInfo& kind, const std::string& address, const std::string& platform,
                            const std::string& version) {
  const std::string arch = platform == "linux_amd64" || platform == "linux_arm64" ? platform.substr(6) : "";
  switch (kind.refetch) {
    case Refetch::unset: break;
    case Refetch::deps_tf_provider_package:
    case Refetch::deps_tf_provider_document: {
      std::string command = "podplane deps tf --engine ";
      command += address.starts_with("registry.terraform.io/") ? "terraform" : "tofu";
      if (kind.refetch == Refetch::deps_tf_provider_package) command += " --platform " + platform;
      // `deps tf` alone takes Podplane's stack; another provider comes with the root that needs it.
      sqlite::Statement selected(db, "SELECT 1 FROM tf_selection_providers WHERE address = ?");
      selected.bind(1, address);
      if (!selected.step()) command += " --stack <the root that needs " + address + ">";
      return "`" + command + "`";
    }
    case Refetch::deps_tf_module: return "`podplane deps tf`";
    case Refetch::deps_download_vmconfig:
      return "`podplane deps download --providers all" + (arch.empty() ? std::string() : " --arch " + arch) + "`";
    case Refetch::deps_download_seeds: return "`podplane deps download`";
    case Refetch::deps_images:
      return "`podplane deps images -f <a list naming " + address + ">` (or `podplane deps download" +
             (arch.empty() ? std::string() : " --arch " + arch) + "` for an image a vmconfig manifest pins)";
    case Refetch::deps_tools_engine:
      return "`podplane deps tools --engine " + address + " --version " + version +
             (platform.empty() ? std::string() : " --platform " + platform) + "`";
    case Refetch::deps_tools_podplane:
      return "`podplane deps tools --podplane-release <the directory of podplane " + version + "'s release files>`";
  }
  return "`podplane deps tf` or `podplane deps download`";
}

// The one online command that takes object `digest` again, by the kind of a row that names it
// (refetch_command). One zip is often named by two rows, registry.terraform.io's and
// registry.opentofu.org's (deps tf reuses the bytes when the engine changes): a row of a
// selected provider goes first, so that the command names the selection's engine (and so
// neither switches it nor needs a --stack), then the oldest row.
std::string take_again_command(sqlite::Database& db, const std::string& digest) {
  sqlite::Statement row(db,
                        "SELECT kind, address, platform, version FROM artifacts WHERE digest = ?"
                        " ORDER BY address IN (SELECT address FROM tf_selection_providers) DESC, id LIMIT 1");
  row.bind(1, digest);
  if (!row.step()) {
    sqlite::Statement file(db, "SELECT 1 FROM module_files WHERE digest = ? LIMIT 1");
    file.bind(1, digest);
    return file.step() ? refetch_command(db, kModuleTrees, "", "", "") : "`podplane deps tf` or `podplane deps download`";
  }
  const std::string address = row.text(1), platform = row.text(2), version = row.text(3);
  std::optional<ArtifactKind> kind;
  try {
    kind = parse_artifact_kind(row.text(0));
  } catch (const Error&) {
    return "`podplane deps tf` or `podplane deps download`";  // a kind this podplane does not know
  }
  return refetch_command(db, kind_info(*kind, address), address, platform, version);
}

enum class ObjectState { intact, missing, wrong_size, corrupt, unreadable };

struct ObjectCheck {
  ObjectState state = ObjectState::intact;
  std::string message;  // the problem line, empty when intact
};

// Whether the file of object `digest` (indexed with `size`) is there and holds its bytes
// (VerifyDepth::quick: has its size). `writable` tells whether anyone may write it. One stat.
ObjectCheck check_object(const Store::Impl& impl, const std::string& digest, std::int64_t size, VerifyDepth depth,
                         bool& writable) {
  fs::path file = impl.object_path(digest);
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) {
    if (errno == ENOENT) return {ObjectState::missing, "object missing: " + digest + " (" + file.string() + ")"};
    return {ObjectState::unreadable, "object unreadable: " + file.string() + ": " + std::strerror(errno)};
  }
  writable = (info.st_mode & 0222) != 0;
  if (!S_ISREG(info.st_mode) || static_cast<std::int64_t>(info.st_size) != size) {
    return {ObjectState::wrong_size, mismatch_message("object " + digest + " has the wrong size (" + file.string() + ")",
                                                      std::to_string(size),
                                                      S_ISREG(info.st_mode) ? std::to_string(info.st_size) : "not a regular file")};
  }
  if (depth == VerifyDepth::quick) return {};
  std::string got;
  try {
    got = file_digest_hex(file);
  } catch (const Error& error) {
    return {ObjectState::unreadable, std::string("object unreadable: ") + error.what()};
  }
  if (got != digest) {
    return {ObjectState::corrupt, mismatch_message("object " + file.string() + " is corrupt", "sha256:" + digest, "sha256:" + got)};
  }
  return {};
}

// Every view file against the plan: planned files hold their object or content; in a view
// tree that was built, a planned file that is missing and a file no row put there are
// problems (a module version's tree is exactly its rows). Views of missing objects are
// skipped: the object is the problem.
// `objects` are the indexed objects, each marked whether its file checked out.
void check_views(const Store& store, const ViewPlan& plan, const IndexedObjects& objects, VerifyReport& report) {
  const fs::path& root = store.root();
  const auto& impl = StoreInternals::of(store);
  std::map<fs::path, bool> built_trees;  // by first segment below the root: asked once each
  auto built = [&](const fs::path& view) {
    const fs::path relative = view.lexically_relative(root);
    if (relative.empty()) return false;
    auto [it, inserted] = built_trees.emplace(*relative.begin(), false);
    if (inserted) {
      std::error_code ec;
      it->second = fs::is_directory(root / it->first, ec);
    }
    return it->second;
  };
  std::size_t not_built = 0;
  for (const auto& view : plan.files) {
    const IndexedObjects::Object* object = view.object_digest.empty() ? nullptr : objects.find(view.object_digest);
    if (!view.object_digest.empty() && (object == nullptr || !object->intact)) continue;
    const fs::path path(view.path);
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(path, ec))) {
      if (built(path)) {
        report.problems.push_back("view " + relative_to(root, path) +
                                  " is missing (the index implies it; `podplane deps verify --repair` rebuilds the views)");
      } else {
        ++not_built;
      }
      continue;
    }
    ++report.views_checked;
    std::string expected = view.object_digest.empty() ? sha256_hex(*view.content) : view.object_digest;
    if (!view.object_digest.empty() && same_file(path, impl.object_path(view.object_digest))) continue;
    if (report.depth == VerifyDepth::quick && !view.object_digest.empty()) {
      // A copy of its object (where a hard link failed): its size, not its bytes.
      auto size = fs::file_size(path, ec);
      auto expected_size = object->size;
      if (ec || static_cast<std::int64_t>(size) != expected_size) {
        report.problems.push_back(mismatch_message("view " + view.path + " does not hold its object (size)",
                                                   std::to_string(expected_size), ec ? ec.message() : std::to_string(size)));
      }
      continue;
    }
    std::string got;
    try {
      got = file_digest_hex(path);
    } catch (const Error& error) {
      report.problems.push_back(std::string("view unreadable: ") + error.what());
      continue;
    }
    if (got == expected) continue;
    if (!view.object_digest.empty()) {
      report.problems.push_back(mismatch_message("view " + view.path + " does not hold its object",
                                                 "sha256:" + view.object_digest, "sha256:" + got));
    } else {
      report.problems.push_back("view " + view.path + " differs from what the index implies (rebuild the views)");
    }
  }
  for (const auto& file : unplanned_view_files(plan)) {
    if (is_temp_path_beside(file)) {
      report.notes.push_back("temp file of a view rebuild (a running podplane's, or left by a crash): " + file.string());
      continue;
    }
    report.problems.push_back("view " + relative_to(root, file) +
                              " is not implied by the index (no row put it there; `podplane deps verify --repair` removes it)");
  }
  if (not_built > 0) {
    report.notes.push_back(std::to_string(not_built) + " view file(s) not built yet under " + root.string() +
                           " (they are rebuilt from the index on demand)");
  }
}

}  // namespace

std::vector<std::string> artifact_content_problems(const Store& store, const Artifact& a, VerifyDepth depth) {
  std::vector<std::string> problems;
  const auto& impl = StoreInternals::of(store);
  const std::string name = "row " + describe(a);
  fs::path file = impl.object_path(a.digest);
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) return {name + ": its object " + a.digest + " is not on disk"};
  if (static_cast<std::int64_t>(size) != a.size) {
    problems.push_back(mismatch_message(name + " records another size than its object's", std::to_string(size), std::to_string(a.size)));
  }
  switch (kind_info(a).content) {
    case ContentCheck::unset:
    case ContentCheck::object:
    case ContentCheck::module_tree:  // not an artifact row's
      break;
    case ContentCheck::provider_zip:
      if (a.zh != lockfile::zh_hash(a.digest))
        problems.push_back(mismatch_message(name + " has the wrong zh", lockfile::zh_hash(a.digest), a.zh));
      if (!a.h1.empty() && depth == VerifyDepth::full) {
        try {
          std::string h1 = lockfile::h1_hash_of_zip(file);
          if (h1 != a.h1) problems.push_back(mismatch_message(name + " has the wrong h1", h1, a.h1));
        } catch (const Error& error) {
          problems.push_back(name + ": cannot compute h1 of its zip: " + error.what());
        }
      }
      break;
  }
  if (!a.upstream_digest.empty()) {
    try {
      auto expected = TypedDigest::parse(a.upstream_digest);
      if (depth == VerifyDepth::quick && expected.algorithm != DigestAlgorithm::sha256) return problems;
      std::string got = expected.algorithm == DigestAlgorithm::sha256 ? a.digest
                                                                                : file_digest_hex(file, expected.algorithm);
      if (got != expected.hex) {
        problems.push_back(mismatch_message(name + " does not match its upstream digest", a.upstream_digest,
                                            expected.str().substr(0, expected.str().find(':') + 1) + got));
      }
    } catch (const Error& error) {
      problems.push_back(name + ": " + error.what());
    }
  }
  return problems;
}

// Kept whole: a checklist read top to bottom (integrity, objects, rows, temp files, views) into one report.
VerifyReport verify_store(const Store& store, VerifyDepth depth) {
  VerifyReport report;
  report.depth = depth;
  auto& impl = const_cast<Store::Impl&>(StoreInternals::of(store));
  auto& db = impl.db;
  const fs::path& root = store.root();

  {
    // quick_check skips matching every index against its table: O(N), not O(N log N).
    sqlite::Statement integrity(db, depth == VerifyDepth::quick ? "PRAGMA quick_check" : "PRAGMA integrity_check");
    while (integrity.step()) {
      if (integrity.text(0) != "ok") report.problems.push_back("index integrity: " + integrity.text(0));
    }
    sqlite::Statement foreign(db, "PRAGMA foreign_key_check");
    while (foreign.step()) {
      report.problems.push_back("dangling row: " + foreign.text(0) + " row " + foreign.text(1) + " names a missing " + foreign.text(2) + " row");
    }
  }

  // Objects: every row has its file with the recorded size and content; every file has a row.
  auto objects = IndexedObjects::read(db);
  for (const auto& digest : objects.malformed) {
    report.problems.push_back("index row of objects names '" + digest + "', which is not a sha256 digest (64 lower-case hex digits)");
  }
  {
    auto quarantined = quarantined_objects(store);
    for (auto& object : objects.all()) {
      const std::string digest = object.digest.hex();
      bool writable = false;
      auto check = check_object(impl, digest, object.size, depth, writable);
      if (check.state != ObjectState::missing) ++report.objects_checked;
      if (check.state == ObjectState::intact) {
        object.intact = true;
        if (writable) report.notes.push_back("object " + digest + " is writable (objects should be read-only)");
        continue;
      }
      std::string line = check.message;
      if (auto q = quarantined.find(digest); q != quarantined.end() && check.state == ObjectState::missing) {
        line += " was quarantined (" + q->second + "); take it again: " + take_again_command(db, digest) +
                " online, or `podplane bundle import` of a bundle that carries it";
      } else {
        line += "; `podplane deps verify --repair` quarantines it, then " + take_again_command(db, digest) +
                " online, or `podplane bundle import` of a bundle that carries it, takes it again";
      }
      report.problems.push_back(line);
    }
  }
  {
    auto disk = scan_objects(root);
    for (const auto& digest : disk.files) {
      if (!objects.contains(digest)) report.garbage.push_back("unindexed object " + impl.object_path(digest.hex()).string());
    }
    for (const auto& stray : disk.strays) report.garbage.push_back("stray file in the object store " + stray.string());
  }
  for (const auto& [digest, size] : unreferenced_objects(db)) {
    report.garbage.push_back("unreferenced object " + digest + " (" + std::to_string(size) + " bytes)");
  }

  // Rows: each names an object of its recorded size; hashes agree with the object.
  for (const auto& a : store.artifacts()) {
    ++report.artifacts_checked;
    const auto* object = objects.find(a.digest);
    if (object == nullptr) {
      report.problems.push_back("dangling row: " + describe(a) + " names object " + a.digest + ", which is not in the store");
      continue;
    }
    if (object->size != a.size) {
      report.problems.push_back(mismatch_message("row " + describe(a) + " records another size than its object's",
                                                 std::to_string(object->size), std::to_string(a.size)));
      continue;
    }
    if (!object->intact) continue;  // already reported as missing or corrupt
    for (auto& problem : artifact_content_problems(store, a, depth)) report.problems.push_back(std::move(problem));
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
      const auto* object = objects.find(file.digest);
      if (object == nullptr) {
        report.problems.push_back("dangling row: " + describe(tree) + " file " + file.path + " names object " + file.digest +
                                  ", which is not in the store");
      } else if (object->size != file.size) {
        report.problems.push_back(mismatch_message(describe(tree) + " file " + file.path + " records another size than its object's",
                                                   std::to_string(object->size), std::to_string(file.size)));
      }
    }
    std::string h1;
    try {
      h1 = entries.empty() ? "" : lockfile::h1_hash(std::move(entries));
    } catch (const Error& error) {
      h1 = std::string("(") + error.what() + ")";
    }
    if (h1 != tree.h1) report.problems.push_back(mismatch_message(describe(tree) + " has the wrong h1", h1, tree.h1));
  }
  {
    sqlite::Statement provenance(db, "SELECT artifact_id, shasums_digest, signature_digest, keys_digest FROM provenance");
    while (provenance.step()) {
      for (int column = 1; column <= 3; ++column) {
        std::string digest = provenance.text(column);
        if (!digest.empty() && objects.find(digest) == nullptr) {
          report.problems.push_back("dangling row: provenance of artifact " + std::to_string(provenance.integer(0)) +
                                    " names object " + digest + ", which is not in the store");
        }
      }
    }
  }

  // Temp files: a dead writer's are garbage; a live writer's are work in progress. So are the
  // scratch directories of runs (Store::temp_dir()), by their maker's pid.
  std::error_code ec;
  for (fs::directory_iterator it(layout::temp_dir(root), ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& entry = it->path();
    if (is_scratch_directory(entry)) {
      const auto pid = scratch_dir_pid(entry.filename().string());
      if (pid && !run_is_gone(*pid)) report.notes.push_back("scratch directory of a running podplane: " + entry.string());
      else report.garbage.push_back("scratch directory " + entry.string());
      continue;
    }
    if (temp_file_in_use(entry)) report.notes.push_back("temp file in use by a running podplane: " + entry.string());
    else report.garbage.push_back("temp file " + entry.string());
  }

  // Rows the views cannot lay out, then the views themselves against the rows.
  auto plan = plan_views(store);
  for (const auto& unplaced : plan.unplaced) {
    report.problems.push_back("no view for " + unplaced.reason + " (`podplane deps verify --repair` quarantines the row)");
  }
  check_views(store, plan, objects, report);
  std::sort(report.garbage.begin(), report.garbage.end());
  return report;
}

nlohmann::json to_json(const VerifyReport& report) {
  return {{"ok", report.ok()},
          {"quick", report.depth == VerifyDepth::quick},
          {"objects_checked", report.objects_checked},
          {"artifacts_checked", report.artifacts_checked},
          {"module_files_checked", report.module_files_checked},
          {"views_checked", report.views_checked},
          {"problems", report.problems},
          {"garbage", report.garbage},
          {"notes", report.notes}};
}

namespace {

nlohmann::json artifact_json(const Artifact& a, const std::vector<Provenance>& provenance) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& p : provenance) {
    checks.push_back({{"shasums_digest", p.shasums_digest}, {"signature_digest", p.signature_digest},
                      {"keys_digest", p.keys_digest}, {"key_fingerprint", p.key_fingerprint},
                      {"result", p.result}, {"checked_at", p.checked_at}});
  }
  nlohmann::json row = {{"kind", to_string(a.kind)}, {"address", a.address}, {"version", a.version}, {"platform", a.platform},
          {"filename", a.filename}, {"digest", a.digest}, {"size", a.size}, {"h1", a.h1}, {"zh", a.zh},
          {"upstream_digest", a.upstream_digest}, {"upstream_url", a.upstream_url}, {"trust", to_string(a.trust)},
          {"added_at", a.added_at}, {"provenance", checks}};
  if (a.protocols) row["protocols"] = *a.protocols;
  return row;
}

nlohmann::json tree_json(const ModuleTree& tree) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : tree.files) files.push_back({{"path", f.path}, {"mode", f.mode}, {"digest", f.digest}, {"size", f.size}});
  return {{"address", tree.address}, {"version", tree.version}, {"h1", tree.h1},
          {"upstream_url", tree.upstream_url}, {"added_at", tree.added_at}, {"files", files}};
}

// Moves rows aside, each with why, in the caller's transaction. begin() at the start of each
// attempt of it (a busy store reruns the whole transaction); lines() once it committed.
class Quarantine {
 public:
  explicit Quarantine(Store& store) : store_(store), db_(StoreInternals::of(store).db) {}

  void begin() {
    lines_.clear();
    done_artifacts_.clear();
    done_trees_.clear();
  }
  const std::vector<std::string>& lines() const { return lines_; }

  void record(const std::string& what, const std::string& subject, const std::string& reason, const nlohmann::json& detail) {
    sqlite::Statement insert(db_, "INSERT INTO quarantine (at, what, subject, reason, detail) VALUES (?,?,?,?,?)");
    insert.bind(1, utc_timestamp_now()).bind(2, what).bind(3, subject).bind(4, reason).bind(5, detail.dump()).run();
    lines_.push_back("quarantined " + (what == "object" ? "object " + subject : subject) + ": " + reason);
  }

  void artifact(std::int64_t id, const std::string& reason) {
    if (!done_artifacts_.insert(id).second) return;
    auto row = find_artifact(id);
    if (!row) return;
    record("artifact", describe(*row), reason, artifact_json(*row, store_.provenance_of(id)));
    sqlite::Statement provenance(db_, "DELETE FROM provenance WHERE artifact_id = ?");
    provenance.bind(1, id).run();
    sqlite::Statement remove(db_, "DELETE FROM artifacts WHERE id = ?");
    remove.bind(1, id).run();
  }

  void module_tree(const ModuleTree& tree, const std::string& reason) {
    if (!done_trees_.insert(tree.id).second) return;
    record("module_tree", describe(tree), reason, tree_json(tree));
    sqlite::Statement files(db_, "DELETE FROM module_files WHERE tree_id = ?");
    files.bind(1, tree.id).run();
    sqlite::Statement remove(db_, "DELETE FROM module_trees WHERE id = ?");
    remove.bind(1, tree.id).run();
  }

  void selection_entry(const RowRef& row, const std::string& reason) {
    auto selection = store_.tf_selection();
    if (!selection) return;
    switch (row.kind) {
      case RowRef::Kind::selected_provider: {
        for (const auto& p : selection->providers) {
          if (p.address != row.key) continue;
          record("selected_provider", "selected provider " + p.address + " " + p.version, reason,
                 {{"address", p.address}, {"version", p.version}, {"constraints", p.constraints}});
          sqlite::Statement remove(db_, "DELETE FROM tf_selection_providers WHERE address = ?");
          remove.bind(1, p.address).run();
        }
        break;
      }
      case RowRef::Kind::selected_platform: {
        record("selected_platform", "selected platform " + row.key, reason, {{"platform", row.key}});
        sqlite::Statement remove(db_, "DELETE FROM tf_selection_platforms WHERE platform = ?");
        remove.bind(1, row.key).run();
        break;
      }
      case RowRef::Kind::selected_module: {
        record("selected_module", "selected module " + selection->module_address + " " + selection->module_version, reason,
               {{"module_address", selection->module_address}, {"module_version", selection->module_version}});
        db_.exec("UPDATE tf_selection SET module_address = '', module_version = '' WHERE id = 1");
        break;
      }
      case RowRef::Kind::selection: {
        nlohmann::json providers = nlohmann::json::array();
        for (const auto& p : selection->providers)
          providers.push_back({{"address", p.address}, {"version", p.version}, {"constraints", p.constraints}});
        record("selection", "the tf selection", reason,
               {{"providers", providers}, {"platforms", selection->platforms}, {"module_address", selection->module_address},
                {"module_version", selection->module_version}, {"engine", selection->engine}});
        db_.exec("DELETE FROM tf_selection_providers; DELETE FROM tf_selection_platforms; DELETE FROM tf_selection;");
        break;
      }
      case RowRef::Kind::artifact:
      case RowRef::Kind::module_tree:
        break;
    }
  }

 private:
  std::optional<Artifact> find_artifact(std::int64_t id) {
    for (const auto& a : store_.artifacts()) {
      if (a.id == id) return a;
    }
    return std::nullopt;
  }

  Store& store_;
  sqlite::Database& db_;
  std::vector<std::string> lines_;
  std::set<std::int64_t> done_artifacts_, done_trees_;
};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

// Kept whole: its three numbered steps run under one exclusive lock, each on what the step before quarantined.
RepairReport repair_store(Store& store) {
  auto& impl = StoreInternals::of(store);
  impl.require_writable("repair the store");
  ExclusiveStoreLock alone(impl, "repair the store", "deps verify --repair");
  RepairReport report;
  const fs::path& root = store.root();
  Quarantine quarantine(store);

  // 1. Objects whose file has other bytes than its name says: the file moves to
  //    store/quarantine/ (kept for a closer look), the rows stay, so that the next
  //    `deps tf`, `deps download` or bundle import takes the object again.
  const fs::path aside = layout::store_dir(root) / "quarantine";
  struct Moved {
    std::string digest, reason;
    fs::path file;
    std::int64_t size;
  };
  std::vector<Moved> moved_objects;
  std::set<std::string> moved;
  const auto indexed = IndexedObjects::read(impl.db);
  for (const auto& object : indexed.all()) {
    const std::string digest = object.digest.hex();
    const std::int64_t size = object.size;
    bool writable = false;
    auto check = check_object(impl, digest, size, VerifyDepth::full, writable);
    if (check.state != ObjectState::wrong_size && check.state != ObjectState::corrupt) continue;
    std::error_code ec;
    fs::create_directories(aside, ec);
    fs::path target = aside / (digest + "." + utc_timestamp_now());
    if (::rename(impl.object_path(digest).c_str(), target.c_str()) != 0) {
      throw Error("cannot move the corrupt object " + impl.object_path(digest).string() + " to " + target.string() + ": " +
                  std::strerror(errno));
    }
    moved.insert(digest);
    moved_objects.push_back({digest, first_line(check.message) + " (its bytes are in " + target.string() + ")", target, size});
  }
  impl.transact([&] {
    quarantine.begin();
    for (const auto& m : moved_objects) quarantine.record("object", m.digest, m.reason, {{"file", m.file.string()}, {"size", m.size}});
  });
  report.quarantined = quarantine.lines();

  // 2. Rows that disagree with their (intact) objects, module trees that lack an intact file
  //    (`deps tf` fetches a module again only when its tree row is gone), and rows the views
  //    cannot lay out.
  impl.transact([&] {
    quarantine.begin();
    auto objects = IndexedObjects::read(impl.db);
    for (const auto& a : store.artifacts()) {
      if (!store.has_object(a.digest)) continue;  // waits for the object; the row is fine
      auto problems = artifact_content_problems(store, a);
      if (!problems.empty()) quarantine.artifact(a.id, first_line(problems.front()));
    }
    for (const auto& tree : store.module_trees()) {
      std::vector<std::pair<std::string, std::string>> entries;
      std::string reason;
      for (const auto& file : tree.files) {
        entries.emplace_back(file.path, file.digest);
        const auto* object = objects.find(file.digest);
        if (reason.empty() && (object == nullptr || object->size != file.size || !store.has_object(file.digest))) {
          reason = describe(tree) + ": the object of " + file.path + " (" + file.digest + ") is missing or damaged";
        }
      }
      std::string h1;
      try {
        h1 = lockfile::h1_hash(std::move(entries));
      } catch (const Error&) {
      }
      if (reason.empty() && h1 != tree.h1) reason = first_line(mismatch_message(describe(tree) + " has the wrong h1", h1, tree.h1));
      if (!reason.empty()) quarantine.module_tree(tree, reason);
    }
    auto plan = plan_views(store);
    for (const auto& unplaced : plan.unplaced) {
      const RowRef& row = unplaced.row;
      if (row.kind == RowRef::Kind::artifact) {
        quarantine.artifact(row.id, unplaced.reason);
      } else if (row.kind == RowRef::Kind::module_tree) {
        for (const auto& tree : store.module_trees())
          if (tree.id == row.id) quarantine.module_tree(tree, unplaced.reason);
      } else {
        quarantine.selection_entry(row, unplaced.reason);
      }
    }
    // A moved object no row needs any more leaves the index too (nothing will take it again).
    sqlite::Statement forget(impl.db, "DELETE FROM objects WHERE digest = ?");
    for (const auto& [digest, size] : unreferenced_objects(impl.db)) {
      if (!moved.count(digest)) continue;
      forget.reset();
      forget.bind(1, digest).run();
    }
  });
  report.quarantined.insert(report.quarantined.end(), quarantine.lines().begin(), quarantine.lines().end());

  // 3. Views: a file no row implies, a view still holding the bytes of a quarantined object,
  //    and temp files of view rebuilds go (views are derived); then they are built again.
  //    Its plan is dropped first: rebuild and verify each make their own.
  {
    auto plan = plan_views(store);
    for (const auto& view : plan.files) {
      if (view.object_digest.empty() || store.has_object(view.object_digest)) continue;
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(view.path, ec))) continue;
      std::string got;
      try {
        got = file_digest_hex(view.path);
      } catch (const Error&) {
      }
      if (got != view.object_digest && ::unlink(view.path.c_str()) == 0) {
        report.removed_views.push_back(relative_to(root, view.path) + " (it held damaged bytes of " + view.object_digest + ")");
      }
    }
    for (const auto& file : remove_unplanned_views(plan, root)) report.removed_views.push_back(file + " (no row implies it)");
  }
  (void)rebuild_views(store);
  if (!report.quarantined.empty() || !report.removed_views.empty()) {
    store.audit("repair", root.string(), {{"quarantined", report.quarantined}, {"removed_views", report.removed_views}});
  }
  report.after = verify_store(store);
  return report;
}

nlohmann::json to_json(const RepairReport& report) {
  auto out = to_json(report.after);
  out["quarantined"] = report.quarantined;
  out["removed_views"] = report.removed_views;
  return out;
}

}  // namespace podplane::cache
