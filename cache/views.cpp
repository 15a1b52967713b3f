#include "cache/views.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <memory_resource>
#include <optional>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "cache/kinds.hpp"
#include "cache/layout.hpp"
#include "cache/provider_documents.hpp"
#include "cache/row_rules.hpp"
#include "cache/store_impl.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/shasums.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;

namespace {

// The view files of one row (or of the selection), taken or refused as a whole.
struct Candidate {
  RowRef row;
  std::string name;              // the row in words, for conflict messages
  std::vector<ViewFile> files;
  std::optional<fs::path> claim; // a directory this row holds alone (a module version's tree)
};

// Every parent directory of a relative path ("a/b/c" → "a", "a/b"), as views into it.
std::vector<std::string_view> parents_of(std::string_view path) {
  std::vector<std::string_view> parents;
  for (auto slash = path.find('/'); slash != std::string_view::npos; slash = path.find('/', slash + 1)) {
    parents.push_back(path.substr(0, slash));
  }
  return parents;
}

// What the accepted rows already occupy. A candidate may not put a file where another row
// has a file or a directory, nor a directory where another has a file, nor anything inside
// a directory another row claims (nor claim a directory that holds another row's files).
// Paths are '/'-separated and relative to the deps root. A 50,000-object store takes ~50,000
// paths: each is kept once, in an arena, and names its row by number, not by a copy of its name.
class Claims {
 public:
  explicit Claims(const fs::path& root) : root_(root.native()) {
    if (root_.empty() || root_.back() != '/') root_ += '/';
  }

  std::optional<std::string> conflict(const Candidate& candidate) const {
    std::set<std::string> own;
    for (const auto& file : candidate.files) own.insert(relative_path_of(file.path));
    std::optional<std::string> claim;
    if (candidate.claim) claim = relative_path_of(candidate.claim->native());
    for (const auto& path : own) {
      for (auto parent : parents_of(path)) {
        if (own.count(std::string(parent))) return "'" + std::string(parent) + "' would be both a file and a directory";
      }
    }
    for (const auto& path : own) {
      if (auto it = files_.find(path); it != files_.end()) return "its view " + path + " is already the view of " + name(it);
      if (auto it = dirs_.find(path); it != dirs_.end()) return "its view " + path + " is a directory of the views of " + name(it);
      for (auto parent : parents_of(path)) {
        if (auto it = files_.find(parent); it != files_.end()) {
          return "its view " + path + " lies below " + std::string(parent) + ", the view of " + name(it);
        }
        if (auto it = claimed_.find(parent); it != claimed_.end() && parent != claim) {
          return "its view " + path + " lies in " + std::string(parent) + ", the view directory of " + name(it);
        }
      }
    }
    if (claim) {
      if (auto it = files_.find(*claim); it != files_.end()) return "its view directory " + *claim + " is the view of " + name(it);
      for (auto parent : parents_of(*claim)) {
        if (auto it = claimed_.find(parent); it != claimed_.end()) {
          return "its view directory " + *claim + " lies in " + std::string(parent) + ", the view directory of " + name(it);
        }
        if (auto it = files_.find(parent); it != files_.end()) {
          return "its view directory " + *claim + " lies below " + std::string(parent) + ", the view of " + name(it);
        }
      }
      for (const auto* taken : {&claimed_, &files_}) {
        if (auto it = at_or_below(*taken, *claim); it != taken->end()) {
          return "its view directory " + *claim + " overlaps " + std::string(it->first) + ", the view of " + name(it);
        }
      }
    }
    return std::nullopt;
  }

  void take(const Candidate& candidate) {
    const auto row = static_cast<std::uint32_t>(names_.size());
    names_.push_back(candidate.name);
    for (const auto& file : candidate.files) {
      std::string path = relative_path_of(file.path);
      insert(files_, path, row);
      for (auto parent : parents_of(path)) insert(dirs_, parent, row);
    }
    if (candidate.claim) insert(claimed_, relative_path_of(candidate.claim->native()), row);
  }

 private:
  // path → the row it belongs to (an index into names_); keys point into arena_.
  using Taken = std::pmr::map<std::string_view, std::uint32_t, std::less<>>;

  // Relative to the deps root, '/'-separated (view paths are built below the root).
  std::string relative_path_of(std::string_view path) const {
    if (path.size() > root_.size() && path.compare(0, root_.size(), root_) == 0) return std::string(path.substr(root_.size()));
    return fs::path(path).lexically_relative(root_).generic_string();
  }

  // The entry of `taken` that is `dir` or lies below it, if any.
  static Taken::const_iterator at_or_below(const Taken& taken, const std::string& dir) {
    if (auto it = taken.find(dir); it != taken.end()) return it;
    const std::string below = dir + "/";
    auto it = taken.lower_bound(below);  // "dir/…" sort together, right after "dir/"
    return it != taken.end() && it->first.substr(0, below.size()) == below ? it : taken.end();
  }

  // The first row to take a path keeps it (as std::map::emplace did).
  void insert(Taken& taken, std::string_view path, std::uint32_t row) {
    if (taken.find(path) != taken.end()) return;
    auto* bytes = static_cast<char*>(arena_.allocate(path.size(), 1));
    std::copy(path.begin(), path.end(), bytes);
    taken.emplace(std::string_view(bytes, path.size()), row);
  }

  const std::string& name(Taken::const_iterator it) const { return names_[it->second]; }

  std::string root_;  // with a trailing '/'
  std::pmr::monotonic_buffer_resource arena_;
  std::vector<std::string> names_;  // every taken candidate's name
  Taken files_{&arena_};    // path → the row it belongs to
  Taken dirs_{&arena_};     // every parent directory of a taken file
  Taken claimed_{&arena_};  // directories held alone
};

// <host>/nstance-dev/nstance/<cloud>: a package of Podplane's own stack.
bool is_nstance(const ModuleTree& tree) {
  auto slash = tree.address.find('/');
  if (slash == std::string::npos) return false;
  std::string rest = tree.address.substr(slash + 1);
  const std::string prefix = "nstance-dev/nstance/";
  return rest.rfind(prefix, 0) == 0 && rest.size() > prefix.size() && rest.find('/', prefix.size()) == std::string::npos;
}

// Builds the plan: candidates in priority order (the selection's files, then rows oldest
// first), each taken or refused whole.
class Planner {
 public:
  explicit Planner(const Store& store) : store_(store), root_(store.root()), claims_(store.root()) {}

  ViewPlan run() {
    selection_ = checked_selection();
    claim_selection_files();
    for (const auto& a : store_.artifacts()) {
      try {
        check_artifact_layout(a);
        rows_.push_back(a);
      } catch (const Error& error) {
        refuse({RowRef::Kind::artifact, a.id, ""}, error.what());
      }
    }
    // Each row where the table lays it out; the steps below take theirs, in their order.
    for (const auto& a : rows_) {
      switch (const View view = kind_info(a).view) {
        case View::unset:
        case View::none:
        case View::module_tree:  // module trees are no artifact rows: module_files()
          break;
        case View::provider_zip:
        case View::vmconfig_manifest_newest:
        case View::vmconfig_artifact:
        case View::vmconfig_boot_file:
        case View::seeds_manifest_newest:
        case View::seed_snapshot: laid_out_[view].push_back(a); break;
      }
    }
    auto providers = provider_files();
    auto modules = module_files();
    auto tf_files = selection_files();
    auto vmconfig = vmconfig_files();
    auto seeds = seed_files();
    // The order the views have always been listed in: providers, modules, tf files, vmconfig, seeds.
    // Reserved, and each part freed once moved: a store of 50,000 objects plans ~50,000 files.
    plan_.files.reserve(providers.size() + modules.size() + tf_files.size() + vmconfig.size() + seeds.size());
    for (auto* part : {&providers, &modules, &tf_files, &vmconfig, &seeds}) {
      for (auto& file : *part) plan_.files.push_back(std::move(file));
      std::vector<ViewFile>().swap(*part);
    }
    plan_.directories = {layout::providers_dir(root_), layout::tf_dir(root_) / "modules", root_ / "vmconfig",
                         layout::vmconfig_arch_bases_dir(root_), layout::seeds_dir(root_)};
    return std::move(plan_);
  }

 private:
  void refuse(const RowRef& row, std::string reason) { plan_.unplaced.push_back({row, std::move(reason)}); }

  // Takes the candidate's files into `out`, or records why it cannot have them.
  bool place(Candidate candidate, std::vector<ViewFile>& out) {
    if (auto conflict = claims_.conflict(candidate)) {
      refuse(candidate.row, candidate.name + ": " + *conflict);
      return false;
    }
    claims_.take(candidate);
    for (auto& file : candidate.files) out.push_back(std::move(file));
    return true;
  }

  // The selection without the entries that break the rules (reported, never fatal).
  std::optional<TfSelection> checked_selection() {
    auto selection = store_.tf_selection();
    if (!selection) return selection;
    std::vector<std::string> platforms;
    for (const auto& platform : selection->platforms) {
      try {
        check_selection_layout(TfSelection{{}, {platform}, "", "", "tofu"});
        platforms.push_back(platform);
      } catch (const Error& error) {
        refuse({RowRef::Kind::selected_platform, 0, platform}, error.what());
      }
    }
    selection->platforms = std::move(platforms);
    if (selection->engine != "tofu" && selection->engine != "terraform") {
      refuse({RowRef::Kind::selection, 0, ""}, "the tf selection: engine must be tofu or terraform, not '" + selection->engine + "'");
      selection->engine = "tofu";
    }
    std::vector<TfSelection::Provider> providers;
    for (const auto& provider : selection->providers) {
      try {
        check_selected_provider(provider);
        providers.push_back(provider);
      } catch (const Error& error) {
        refuse({RowRef::Kind::selected_provider, 0, provider.address}, error.what());
      }
    }
    selection->providers = std::move(providers);
    try {
      check_selection_layout(TfSelection{{}, {}, selection->module_address, selection->module_version, "tofu"});
    } catch (const Error& error) {
      refuse({RowRef::Kind::selected_module, 0, selection->module_address}, error.what());
      selection->module_address.clear();
      selection->module_version.clear();
    }
    return selection;
  }

  // The selection's files have fixed names and come first: no row can take their place.
  void claim_selection_files() {
    std::vector<fs::path> paths = {layout::tfrc_file(root_)};
    if (selection_) {
      paths.push_back(layout::lock_file(root_));
      paths.push_back(layout::platforms_file(root_));
      if (!selection_->module_version.empty()) paths.push_back(layout::current_version_file(root_));
    }
    Candidate fixed{{RowRef::Kind::selection, 0, ""}, "the tf selection", {}, {}};
    for (const auto& path : paths) fixed.files.push_back({path, "", std::string(), 0644});
    claims_.take(fixed);
  }

  // tf/platforms, tf/.terraform.lock.hcl (h1 and zh of the placed packages), tf/podplane.tfrc.
  std::vector<ViewFile> selection_files() {
    std::vector<ViewFile> out;
    if (selection_ && !selection_->platforms.empty()) {
      std::string text;
      for (const auto& platform : selection_->platforms) text += platform + "\n";
      out.push_back({layout::platforms_file(root_), "", text, 0644});
    }
    if (selection_ && !selection_->providers.empty()) {
      auto lock = selection_lock(store_, selection_->providers, selection_->platforms, placed_packages_);
      try {
        out.push_back({layout::lock_file(root_), "", lockfile::render_lock_file(lock, lockfile::parse_engine(selection_->engine)), 0644});
      } catch (const Error& error) {
        refuse({RowRef::Kind::selection, 0, ""}, std::string("the tf selection: cannot write its lock file: ") + error.what());
      }
    }
    out.push_back({layout::tfrc_file(root_), "", lockfile::render_filesystem_mirror_tfrc(layout::providers_dir(root_)), 0644});
    return out;
  }

  std::vector<ViewFile> provider_files() {
    std::vector<ViewFile> out;
    std::map<fs::path, std::vector<Artifact>> placed;  // provider dir → its packages placed
    for (const auto& a : laid_out_[View::provider_zip]) {
      fs::path dir = layout::providers_dir(root_) / fs::path(a.address);
      std::string zip = provider_package_name(a);
      if (!place({{RowRef::Kind::artifact, a.id, ""}, describe(a), {{dir / zip, a.digest, std::nullopt, 0444}}, {}}, out)) continue;
      placed[dir].push_back(a);
      placed_packages_.push_back(a);
    }
    // The listings follow from the packages placed; their names (index.json, <version>.json)
    // cannot meet a package's (.zip), and a canonical version is never "index".
    Candidate listings{{RowRef::Kind::selection, 0, ""}, "the provider listings", {}, {}};
    for (const auto& [dir, packages] : placed) {
      auto documents = provider_mirror_documents(packages);
      for (auto& [version, listing] : documents.versions) {
        listings.files.push_back({dir / (version + ".json"), "", std::move(listing), 0444});
      }
      listings.files.push_back({dir / "index.json", "", std::move(documents.index), 0444});
    }
    claims_.take(listings);
    for (auto& file : listings.files) out.push_back(std::move(file));
    return out;
  }

  std::vector<ViewFile> module_files() {
    std::vector<ViewFile> out;
    // Oldest first, whatever the selection: a later fill never takes an earlier package's path.
    auto trees = store_.module_trees();
    std::stable_sort(trees.begin(), trees.end(), [](const ModuleTree& a, const ModuleTree& b) { return a.id < b.id; });
    std::size_t files = 1;  // and current-version
    for (const auto& tree : trees) files += tree.files.size();
    out.reserve(files);
    for (const auto& tree : trees) {
      RowRef row{RowRef::Kind::module_tree, tree.id, ""};
      try {
        check_module_tree_layout(tree);
      } catch (const Error& error) {
        refuse(row, error.what());
        continue;
      }
      fs::path base = module_view_dir(root_, tree, trees);
      Candidate candidate{row, describe(tree), {}, base};
      for (const auto& file : tree.files) candidate.files.push_back({base / fs::path(file.path), file.digest, std::nullopt, file.mode});
      (void)place(std::move(candidate), out);
    }
    if (selection_ && !selection_->module_version.empty()) {
      out.push_back({layout::current_version_file(root_), "", selection_->module_version + "\n", 0644});
    }
    return out;
  }

  std::vector<ViewFile> vmconfig_files() {
    std::vector<ViewFile> out;
    std::map<std::string, Artifact> latest;  // by manifest name: the most recently indexed
    for (const auto& a : laid_out_[View::vmconfig_manifest_newest]) {
      auto [it, inserted] = latest.emplace(a.address, a);
      if (!inserted && a.id > it->second.id) it->second = a;
    }
    for (const auto& [name, a] : latest) {
      (void)place({{RowRef::Kind::artifact, a.id, ""}, describe(a),
                   {{layout::vmconfig_manifests_dir(root_) / (name + ".json"), a.digest, std::nullopt, 0444}}, {}},
                  out);
    }
    // Podplane's plain path and each arch's base (vmconfig_artifact_paths): the same paths
    // `mirror serve` answers, so the deps root served over HTTP is a mirror too.
    std::vector<Artifact> files = laid_out_[View::vmconfig_artifact];
    files.insert(files.end(), laid_out_[View::vmconfig_boot_file].begin(), laid_out_[View::vmconfig_boot_file].end());
    for (const auto& [path, a] : vmconfig_artifact_paths(files)) {
      (void)place({{RowRef::Kind::artifact, a.id, ""}, describe(a), {{root_ / fs::path(path), a.digest, std::nullopt, 0444}}, {}},
                  out);
    }
    return out;
  }

  // The newest seeds.json as seeds/manifests/seeds.json, and every snapshot at
  // seeds/snapshots/<name>/<version>/<file> (the path a generated stack's seed resource names).
  std::vector<ViewFile> seed_files() {
    std::vector<ViewFile> out;
    const Artifact* newest = nullptr;
    for (const auto& a : laid_out_[View::seeds_manifest_newest]) {
      if (newest == nullptr || a.id > newest->id) newest = &a;
    }
    if (newest != nullptr) {
      (void)place({{RowRef::Kind::artifact, newest->id, ""}, describe(*newest),
                   {{layout::seeds_manifest_file(root_), newest->digest, std::nullopt, 0444}}, {}},
                  out);
    }
    for (const auto& a : laid_out_[View::seed_snapshot]) {
      fs::path path = layout::seeds_snapshots_dir(root_) / a.address / a.version / a.filename;
      (void)place({{RowRef::Kind::artifact, a.id, ""}, describe(a), {{path, a.digest, std::nullopt, 0444}}, {}}, out);
    }
    return out;
  }

  const Store& store_;
  fs::path root_;
  Claims claims_;
  ViewPlan plan_;
  std::optional<TfSelection> selection_;
  std::vector<Artifact> rows_;             // artifacts that pass the row rules
  std::map<View, std::vector<Artifact>> laid_out_;  // of those, the ones each View lays out
  std::vector<Artifact> placed_packages_;  // provider packages whose view is planned
};

// ---------------------------------------------------------------------------------------------
// Writing

bool same_inode(const fs::path& a, const fs::path& b) {
  struct stat sa {}, sb {};
  return ::lstat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool regular_with_mode(const fs::path& path, std::uint32_t mode) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && (info.st_mode & 07777) == mode;
}

// A copy where a link fails: the same protocol as write_file_durably (base/durable_write.hpp),
// streamed from the object instead of held in memory.
void publish_copy(const fs::path& object, const fs::path& path, std::uint32_t mode) {
  const std::string temp = temp_path_beside(path).string();
  UniqueFd in(::open(object.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw Error("cannot read " + object.string() + ": " + std::strerror(errno));
  UniqueFd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out) throw Error("cannot create " + temp + ": " + std::strerror(errno));
  try {
    char buffer[1 << 16];
    for (;;) {
      ssize_t n = ::read(in.get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error("cannot read " + object.string() + ": " + std::strerror(errno));
      if (n == 0) break;
      write_all(out.get(), std::string_view(buffer, static_cast<std::size_t>(n)), temp);
    }
    if (::fchmod(out.get(), mode) != 0 || ::fsync(out.get()) != 0) throw Error("cannot write " + temp + ": " + std::strerror(errno));
    out.close_checked(temp);
    if (::rename(temp.c_str(), path.c_str()) != 0) throw Error("cannot replace " + path.string() + ": " + std::strerror(errno));
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  sync_directory(path.parent_path());
}

// content_to_write: a document view whose bytes changed, left to the caller, which writes
// them all at once (write_files_durably: their syncs overlap, each directory synced once).
enum class Published { written, present, object_missing, content_to_write };

Published publish_view(const Store& store, const ViewFile& view) {
  const fs::path path(view.path);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw Error("cannot create " + path.parent_path().string() + ": " + ec.message());
  if (view.content) {
    return file_holds(path, *view.content) ? Published::present : Published::content_to_write;
  }
  fs::path object = store.object_path(view.object_digest);
  // An object quarantined by `deps verify --repair` (or lost) has no view until it is taken
  // again; the row stays, and verify names the object.
  struct stat object_info {};
  if (::stat(object.c_str(), &object_info) != 0) return Published::object_missing;
  // Objects are 0444; a link serves any file that needs no execute bit, and an executable
  // module script becomes a copy with its recorded mode.
  bool linkable = (view.mode & 0111) == 0;
  if (linkable && same_inode(path, object)) return Published::present;
  if (regular_with_mode(path, linkable ? 0444 : view.mode) && file_digest_hex(path) == view.object_digest) {
    return Published::present;  // a copy made where links fail
  }
  if (linkable) {
    const std::string temp = temp_path_beside(path).string();
    if (::link(object.c_str(), temp.c_str()) == 0) {
      if (::rename(temp.c_str(), path.c_str()) != 0) {
        int saved = errno;
        ::unlink(temp.c_str());
        throw Error("cannot replace " + path.string() + ": " + std::strerror(saved));
      }
      // When a concurrent rebuild linked the view to the same object first, temp and view are
      // links to one inode and rename() does nothing (POSIX): drop the extra link. After a
      // real rename temp is gone and this is a no-op.
      ::unlink(temp.c_str());
      return Published::written;
    }
    // EXDEV (views on another filesystem), EPERM, EMLINK: fall back to a copy.
  }
  publish_copy(object, path, linkable ? 0444 : view.mode);
  return Published::written;
}

}  // namespace

std::vector<std::string> package_lock_hashes(const Artifact& package) {
  std::vector<std::string> hashes;
  if (!package.h1.empty()) hashes.push_back(package.h1);
  hashes.push_back(zh_of(package));
  return hashes;
}

std::vector<std::string> release_lock_hashes(const Store& store, const Artifact& package) {
  auto hashes = package_lock_hashes(package);
  if (package.trust != Trust::signed_upstream) return hashes;
  for (const auto& provenance : store.provenance_of(package.id)) {
    if (provenance.result != "signed" || provenance.shasums_digest.empty() || !store.has_object(provenance.shasums_digest)) {
      continue;
    }
    try {
      auto lines = lockfile::shasums_zh_hashes(store.read_object(provenance.shasums_digest),
                                               "the stored SHA256SUMS of " + package.address + " " + package.version);
      hashes.insert(hashes.end(), lines.begin(), lines.end());
    } catch (const Error&) {
      // A document that no longer reads as SHA256SUMS adds nothing, as in the engines;
      // `deps verify` names it.
    }
  }
  return hashes;
}

lockfile::LockFile selection_lock(const Store& store, const std::vector<TfSelection::Provider>& providers,
                                  const std::vector<std::string>& platforms, const std::vector<Artifact>& packages) {
  lockfile::LockFile lock;
  for (const auto& provider : providers) {
    lockfile::ProviderLock entry{provider.address, provider.version, provider.constraints, {}};
    for (const auto& package : packages) {
      // Not a stage's choice but the lock format's: a lock holds the hashes of provider packages alone.
      bool wanted = package.kind == ArtifactKind::provider_package && package.address == provider.address &&
                    package.version == provider.version &&
                    std::find(platforms.begin(), platforms.end(), package.platform) != platforms.end();
      if (!wanted) continue;
      for (auto& hash : release_lock_hashes(store, package)) entry.hashes.push_back(std::move(hash));
    }
    // Sorted and without duplicates, as the engines keep them (render_lock_file does too).
    std::sort(entry.hashes.begin(), entry.hashes.end());
    entry.hashes.erase(std::unique(entry.hashes.begin(), entry.hashes.end()), entry.hashes.end());
    lock.providers.push_back(std::move(entry));
  }
  return lock;
}

ProviderMirrorDocuments provider_mirror_documents(const std::vector<Artifact>& packages) {
  std::map<std::string, nlohmann::json> archives;  // version → platform → archive entry
  for (const auto& package : packages) {
    archives[package.version][package.platform] = {{"hashes", package_lock_hashes(package)}, {"url", package.filename}};
  }
  ProviderMirrorDocuments documents;
  nlohmann::json index = {{"versions", nlohmann::json::object()}};
  for (const auto& [version, entries] : archives) {
    index["versions"][version] = nlohmann::json::object();
    documents.versions[version] = nlohmann::json{{"archives", entries}}.dump(2);
  }
  documents.index = index.dump(2);
  return documents;
}

bool vmconfig_artifact_wins(const Artifact& a, const Artifact& b) {
  return a.platform != b.platform ? a.platform < b.platform : a.id < b.id;
}

fs::path module_view_dir(const fs::path& deps_root, const ModuleTree& tree, const std::vector<ModuleTree>& trees) {
  const fs::path address_dir = layout::tf_dir(deps_root) / "modules" / fs::path(tree.address) / tree.version;
  if (!is_nstance(tree)) return address_dir;
  // The Podplane path goes to the oldest Nstance package of this version whose tree can be
  // laid out at all (a refused row never holds it).
  for (const auto& other : trees) {
    if (other.version != tree.version || !is_nstance(other) || other.id >= tree.id) continue;
    try {
      check_module_tree_layout(other);
    } catch (const Error&) {
      continue;
    }
    return address_dir;
  }
  return layout::nstance_modules_dir(deps_root) / tree.version;
}

std::string vmconfig_arch_base(std::string_view arch) { return "arch/" + std::string(arch); }

std::map<std::string, Artifact> vmconfig_artifact_paths(const std::vector<Artifact>& artifacts) {
  std::map<std::string, Artifact> paths;
  auto offer = [&paths](std::string path, const Artifact& a) {
    auto [it, inserted] = paths.emplace(std::move(path), a);
    if (!inserted && vmconfig_artifact_wins(a, it->second)) it->second = a;
  };
  for (const auto& a : artifacts) {
    const View view = kind_info(a).view;
    if (view != View::vmconfig_artifact && view != View::vmconfig_boot_file) continue;
    try {
      check_artifact_layout(a);
    } catch (const Error&) {
      continue;  // the views report it; no path is ever built from such a row
    }
    std::string tail = std::string(kVmconfigArtifactsPath) + "/" + a.address + "/" + a.version + "/" +
                       (view == View::vmconfig_boot_file ? "boot/" + a.filename : vmconfig_view_name(a));
    offer(tail, a);
    if (a.platform.rfind("linux_", 0) == 0) offer(vmconfig_arch_base(a.platform.substr(6)) + "/" + tail, a);
  }
  return paths;
}

namespace {

// Calls `visit` with every file of the view trees: regular files and anything else that is
// not a directory. Streams: a built store holds as many view files as objects.
void for_each_file_below(const std::vector<fs::path>& dirs, const std::function<void(const fs::path&)>& visit) {
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (!it->is_directory(type_ec) || it->is_symlink(type_ec)) visit(it->path());
    }
  }
}

}  // namespace

std::set<fs::path> unplanned_view_files(const ViewPlan& plan) {
  std::vector<std::string_view> planned;
  planned.reserve(plan.files.size());
  for (const auto& view : plan.files) planned.push_back(view.path);
  std::sort(planned.begin(), planned.end());
  std::set<fs::path> unplanned;
  for_each_file_below(plan.directories, [&](const fs::path& file) {
    if (!std::binary_search(planned.begin(), planned.end(), std::string_view(file.native()))) unplanned.insert(file);
  });
  return unplanned;
}

std::vector<std::string> remove_unplanned_views(const ViewPlan& plan, const fs::path& root) {
  std::vector<std::string> removed;
  for (const auto& file : unplanned_view_files(plan)) {
    if (::unlink(file.c_str()) == 0) removed.push_back(file.lexically_relative(root).generic_string());
  }
  return removed;
}

ViewPlan plan_views(const Store& store) { return Planner(store).run(); }

std::vector<ViewFile> planned_views(const Store& store) { return plan_views(store).files; }

void finish_interrupted_views(Store& store) { (void)rebuild_views(store); }

ViewStats rebuild_views(Store& store) {
  ViewStats stats;
  if (store.read_only()) return stats;
  const fs::path tf = layout::tf_dir(store.root());
  const fs::path vmconfig = store.root() / "vmconfig";
  const fs::path arch_bases = layout::vmconfig_arch_bases_dir(store.root());
  const fs::path seeds = layout::seeds_dir(store.root());
  auto plan = plan_views(store);
  for (const auto& unplaced : plan.unplaced) stats.skipped_rows.push_back(unplaced.reason);
  std::vector<FileToWrite> documents;
  for (const auto& view : plan.files) {
    auto inside = [&](const fs::path& dir) {
      auto relative = fs::path(view.path).lexically_relative(dir);
      return !relative.empty() && *relative.begin() != "..";
    };
    if (!inside(tf) && !inside(vmconfig) && !inside(arch_bases) && !inside(seeds))
      throw Error("refusing to write a view outside tf/, vmconfig/, arch/ and seeds/: " + view.path);
    switch (publish_view(store, view)) {
      case Published::written: ++stats.files_written; break;
      case Published::present: ++stats.files_present; break;
      case Published::object_missing: ++stats.objects_missing; break;
      case Published::content_to_write: documents.push_back({view.path, *view.content, FileMode{view.mode}}); break;
    }
  }
  // Readers and concurrent rebuilds see the old or the new file, never half of one.
  write_files_durably(documents);
  stats.files_written += documents.size();
  return stats;
}

void check_written_rows_lay_out(const Store& store) {
  const auto& written = StoreInternals::of(store).written;
  if (written.module_trees.empty() && !written.selection) return;
  for (const auto& unplaced : plan_views(store).unplaced) {
    const RowRef& row = unplaced.row;
    bool ours = row.kind == RowRef::Kind::module_tree ? written.module_trees.count(row.id) > 0
                                                       : row.kind != RowRef::Kind::artifact && written.selection;
    if (ours) throw Error("cannot index " + unplaced.reason);
  }
}

}  // namespace podplane::cache
