#include "mirror/export.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>

#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/remove_on_signal.hpp"
#include "base/unique_fd.hpp"
#include "mirror/export_plan.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;

namespace {

// A temp dir beside the target, removed unless released: a failed export leaves nothing.
class StagingDir {
 public:
  explicit StagingDir(const fs::path& target) {
    std::string pattern = (target.parent_path() / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw Error("cannot create a temp dir beside " + target.string() + ": " + std::strerror(errno));
    path_ = pattern;
    remove_on_signal_.emplace(path_);
  }
  ~StagingDir() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  const fs::path& path() const { return path_; }
  void release() {  // the dir was renamed into place: nothing to remove
    path_.clear();
    remove_on_signal_.reset();
  }

 private:
  fs::path path_;
  std::optional<RemoveOnSignal> remove_on_signal_;
};

bool replaceable(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  if (!fs::is_directory(dir, ec)) return false;
  return fs::is_empty(dir, ec) || fs::exists(dir / kExportMarker, ec);
}

}  // namespace

namespace {

// One file of the plan into the staging tree: store objects hard-linked (copied where links
// fail: another file system), documents written durably, module packages built as they are written.
void place_file(const ExportFile& planned, const fs::path& file, ObjectChecks& checks, ExportStats& stats) {
  fs::create_directories(file.parent_path());
  switch (planned.source) {
    case FileSource::bytes:
      write_file_durably(file, planned.bytes);
      stats.bytes += planned.bytes.size();
      return;
    case FileSource::store_object:
    case FileSource::generated_file: {
      if (planned.source == FileSource::store_object) checks.check("/" + planned.path, planned.object, planned.sha256, planned.size);
      std::error_code ec;
      fs::create_hard_link(planned.object, file, ec);
      if (!ec) {
        ++stats.linked;
      } else {
        // Objects are immutable: a copy is as good as a link.
        fs::copy_file(planned.object, file, ec);
        if (ec) throw Error("cannot copy " + planned.object.string() + " to " + file.string() + ": " + ec.message());
        fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
      }
      stats.bytes += static_cast<std::uint64_t>(planned.size);
      return;
    }
    case FileSource::module_package: {
      checks.check_package("/" + planned.path, *planned.module);
      // Written through a descriptor so that a failed write says why (a full disk: ENOSPC).
      UniqueFd out(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      if (!out) throw Error("cannot create " + file.string() + ": " + std::strerror(errno));
      write_module_tar_gz(*planned.module, [&](const char* data, std::size_t size) {
        write_all(out.get(), std::string_view(data, size), file);
        stats.bytes += size;
      });
      out.close_checked(file.string());
      return;
    }
  }
}

}  // namespace

ExportStats export_site(const fs::path& deps_root, const fs::path& dir_in, const SiteOptions& options) {
  if (dir_in.empty()) throw UsageError("mirror export needs a target DIR");
  fs::path dir = fs::absolute(dir_in).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  if (!replaceable(dir))
    throw Error("refusing to replace " + dir.string() + ": it is neither empty nor an earlier podplane export (no " +
                kExportMarker + ")");
  fs::path root = fs::absolute(deps_root).lexically_normal();
  if (dir == root || root.string().rfind(dir.string() + "/", 0) == 0 || dir.string().rfind(root.string() + "/", 0) == 0)
    throw Error("mirror export DIR must be outside the deps root " + root.string() + "; got " + dir.string());
  fs::create_directories(dir.parent_path());

  auto store = cache::Store::open(deps_root, cache::Store::Access::read_only);
  auto plan = plan_export(store, options);
  for (const auto& reason : plan.skipped) std::cerr << "podplane: mirror export: skipped " << reason << "\n";

  StagingDir staging(dir);
  ExportStats stats;
  stats.skipped_rows = plan.skipped.size();
  stats.images = plan.images;
  stats.git_repositories = plan.git_repositories;
  ObjectChecks checks;
  for (const auto& planned : plan.files) {
    place_file(planned, staging.path() / planned.path, checks, stats);
    if (planned.stage != PublishStage::marker && planned.source != FileSource::generated_file) ++stats.files;
  }
  for (const auto& directory : plan.directories) fs::create_directories(staging.path() / directory);
  // Exported trees are world-readable like any web root, whatever the umask says.
  for (auto it = fs::recursive_directory_iterator(staging.path()); it != fs::recursive_directory_iterator(); ++it)
    if (it->is_directory()) fs::permissions(it->path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(staging.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);

  if (!fs::exists(dir)) {
    if (::rename(staging.path().c_str(), dir.c_str()) != 0)
      throw Error("cannot move the export into " + dir.string() + ": " + std::strerror(errno));
    staging.release();
  } else {
    // One atomic exchange: the staging path then holds the old tree, which the StagingDir removes.
    if (::renameat2(AT_FDCWD, staging.path().c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0)
      throw Error("cannot swap the export into " + dir.string() + ": " + std::strerror(errno));
  }
  return stats;
}

}  // namespace podplane::mirror
