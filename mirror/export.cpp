#include "mirror/export.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>

#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/remove_on_signal.hpp"
#include "base/unique_fd.hpp"
#include "mirror/catalogue.hpp"
#include "mirror/oci_layout.hpp"
#include "mirror/serve_objects.hpp"

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

// Kept whole: every step fills the one staging tree that the last step swaps in, and shares its cleanup.
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
  auto site = MirrorSite::build(store, options);
  for (const auto& reason : site.skipped()) std::cerr << "podplane: mirror export: skipped " << reason << "\n";

  // Every object is hashed before it goes out, as mirror serve does: an export never carries
  // bytes that do not match the digest they are published under. Each object once.
  std::set<std::string> checked;
  auto check = [&checked](const std::string& url_path, const fs::path& object, const std::string& digest, std::int64_t size) {
    if (!checked.insert(digest).second) return;
    if (auto problem = object_problem(object, digest, size); !problem.empty())
      throw Error("not exporting " + url_path + ": " + problem);
  };

  StagingDir staging(dir);
  ExportStats stats;
  stats.skipped_rows = site.skipped().size();
  auto place = [&](const fs::path& object, const std::string& digest, std::int64_t size, const fs::path& file) {
    check(file.string(), object, digest, size);
    std::error_code ec;
    fs::create_hard_link(object, file, ec);
    if (!ec) {
      ++stats.linked;
    } else {
      fs::copy_file(object, file, ec);
      if (ec) throw Error("cannot copy " + object.string() + " to " + file.string() + ": " + ec.message());
      fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    }
    stats.bytes += static_cast<std::uint64_t>(size);
  };
  for (const auto& [url_path, resource] : site.resources()) {
    // The registry API needs a registry: images go out as OCI layouts below (registry/).
    if (resource.registry_api) continue;
    // Keys are built from safe segments only (serve_site.cpp), so this stays inside staging.
    fs::path file = staging.path() / url_path.substr(1);
    if (url_path.back() == '/') file /= "index.html";  // a page: what web servers answer for a directory
    fs::create_directories(file.parent_path());
    switch (resource.kind) {
      case ResourceKind::catalogue_page: {
        // Rendered once, unfiltered: nginx ignores ?q=, and the page's script filters instead.
        CataloguePage page{resource.catalogue_section, url_path, options.public_url, {}};
        auto html = render_catalogue_html(*resource.catalogue, page);
        write_file_durably(file, html);
        stats.bytes += html.size();
        break;
      }
      case ResourceKind::document:
      case ResourceKind::module_download:  // the JSON 200 form; docs/mirror.md adds the header in nginx
        write_file_durably(file, resource.body);
        stats.bytes += resource.body.size();
        break;
      case ResourceKind::object: {
        check(url_path, resource.object, resource.digest, resource.size);
        std::error_code ec;
        fs::create_hard_link(resource.object, file, ec);
        if (!ec) {
          ++stats.linked;
        } else {
          // Another file system, or links not allowed: copy (objects are immutable either way).
          fs::copy_file(resource.object, file, ec);
          if (ec) throw Error("cannot copy " + resource.object.string() + " to " + file.string() + ": " + ec.message());
          fs::permissions(file, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
        }
        stats.bytes += static_cast<std::uint64_t>(resource.size);
        break;
      }
      case ResourceKind::module_package: {
        for (const auto& entry : resource.module->entries)
          if (!entry.object.empty()) check(url_path, entry.object, entry.digest, entry.size);
        // Written through a descriptor so that a failed write says why (a full disk: ENOSPC).
        UniqueFd out(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (!out) throw Error("cannot create " + file.string() + ": " + std::strerror(errno));
        write_module_tar_gz(*resource.module, [&](const char* data, std::size_t size) {
          write_all(out.get(), std::string_view(data, size), file);
          stats.bytes += size;
        });
        out.close_checked(file.string());
        break;
      }
    }
    ++stats.files;
  }
  // Images: one OCI image layout per mirror name, as Podplane's registry cache lays them out.
  for (const auto& image : site.images()) {
    stats.files += write_oci_layout(image, staging.path() / "registry" / image.repository, place) + 2;
    ++stats.images;
  }
  // Git repositories: each a bare repository under git/<host>/<path>.git, with the files a
  // static web server needs (git update-server-info), for a site git server to take (docs/ci.md).
  if (!site.git()->empty()) {
    site.git()->write_bare_repositories(staging.path() / "git");
    stats.git_repositories = site.git()->repositories().size();
  }
  write_file_durably(staging.path() / kExportMarker, "podplane mirror export\n");
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
