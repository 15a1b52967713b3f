#include "mirror/export_plan.hpp"

#include <algorithm>
#include <tuple>

#include "base/error.hpp"
#include "base/scratch_dir.hpp"
#include "mirror/catalogue.hpp"
#include "mirror/oci_layout.hpp"
#include "mirror/serve_objects.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// A JSON document that lists other documents: the registry's `versions` answers and a network
// mirror's index.json (which lists the <version>.json files).
bool is_listing(std::string_view url_path) {
  return ends_with(url_path, "/versions") ||
         (url_path.starts_with(site_paths::network_mirror) && ends_with(url_path, "/index.json"));
}

PublishStage stage_of(const std::string& url_path, const SiteResource& resource) {
  switch (resource.kind) {
    case ResourceKind::object:
      // A stored JSON file (a vmconfig manifest) names the artifacts its readers fetch next.
      return resource.content_type == "application/json" ? PublishStage::document : PublishStage::content;
    case ResourceKind::module_package:
      return PublishStage::content;
    case ResourceKind::module_download:
      return PublishStage::document;
    case ResourceKind::catalogue_page:
      return PublishStage::entry_point;
    case ResourceKind::document:
      if (url_path == site_paths::well_known || url_path == site_paths::healthz || url_path == site_paths::catalogue_json)
        return PublishStage::entry_point;
      return is_listing(url_path) ? PublishStage::listing : PublishStage::document;
  }
  return PublishStage::entry_point;
}

ExportFile file_of(const std::string& url_path, const SiteResource& resource, const SiteOptions& options) {
  ExportFile file;
  // Keys are built from safe segments only (serve_site.cpp), so the path stays inside any target.
  file.path = url_path.substr(1);
  if (url_path.back() == '/') file.path += "index.html";  // a page: what web servers answer for a directory
  file.content_type = resource.content_type;
  file.stage = stage_of(url_path, resource);
  switch (resource.kind) {
    case ResourceKind::catalogue_page: {
      // Rendered once, unfiltered: a static host ignores ?q=, and the page's script filters instead.
      CataloguePage page{resource.catalogue_section, url_path, options.public_url, {}};
      file.bytes = render_catalogue_html(*resource.catalogue, page);
      break;
    }
    case ResourceKind::document:
    case ResourceKind::module_download:  // the JSON 200 form; docs/mirror.md adds the header in nginx
      file.bytes = resource.body;
      break;
    case ResourceKind::object:
      file.source = FileSource::store_object;
      file.object = resource.object;
      file.sha256 = resource.digest;
      file.size = resource.size;
      break;
    case ResourceKind::module_package:
      file.source = FileSource::module_package;
      file.module = resource.module;
      break;
  }
  return file;
}

// One OCI image layout per mirror name, as Podplane's registry cache lays them out.
void add_image(const PublishedImage& image, std::vector<ExportFile>& files) {
  const std::string dir = "registry/" + image.repository + "/";
  auto layout = oci_layout(image);
  for (const auto& blob : layout.blobs) {
    ExportFile file;
    file.path = dir + "blobs/sha256/" + blob.digest.substr(7);  // validated as sha256:<64 hex> by the site
    file.content_type = blob.media_type.empty() ? "application/octet-stream" : blob.media_type;
    file.source = FileSource::store_object;
    file.object = blob.object;
    file.sha256 = blob.digest.substr(7);
    file.size = blob.size;
    files.push_back(std::move(file));
  }
  ExportFile marker_file{dir + "oci-layout", "application/json", PublishStage::content, FileSource::bytes, layout.oci_layout, {}, {}, 0, {}};
  files.push_back(std::move(marker_file));
  ExportFile index{dir + "index.json", "application/json", PublishStage::document, FileSource::bytes, layout.index_json, {}, {}, 0, {}};
  files.push_back(std::move(index));
}

// A git repository's files: the objects (packs and their indexes) name nothing; HEAD, the refs
// and update-server-info's info/refs and objects/info/packs name them.
PublishStage git_stage(std::string_view path) {
  const bool object = path.find("/objects/") != std::string_view::npos && path.find("/objects/info/") == std::string_view::npos;
  return object ? PublishStage::content : PublishStage::document;
}

// The bare repositories of the site's git snapshots, written by git into the plan's scratch dir.
void add_git_repositories(GitRepositories& git, ExportPlan& plan) {
  plan.generated = std::make_shared<ScratchDir>("podplane-export-");
  const fs::path root = plan.generated->path();
  git.write_bare_repositories(root / "git");
  plan.git_repositories = git.repositories().size();
  for (auto it = fs::recursive_directory_iterator(root / "git"); it != fs::recursive_directory_iterator(); ++it) {
    const std::string path = fs::relative(it->path(), root).string();
    if (it->is_directory() && !it->is_symlink()) {
      plan.directories.push_back(path);
    } else if (it->is_regular_file() && !it->is_symlink()) {
      ExportFile file{path, "application/octet-stream", git_stage(path), FileSource::generated_file, {}, it->path(), {},
                      static_cast<std::int64_t>(it->file_size()), {}};
      plan.files.push_back(std::move(file));
    } else {
      throw Error("not exporting " + path + ": git wrote something that is neither a file nor a directory");
    }
  }
}

}  // namespace

ExportPlan plan_export(const cache::Store& store, const SiteOptions& options) {
  auto site = MirrorSite::build(store, options);
  ExportPlan plan;
  plan.skipped = site.skipped();
  plan.files.push_back({kExportMarker, "text/plain", PublishStage::marker, FileSource::bytes, "podplane mirror export\n", {}, {}, 0, {}});
  for (const auto& [url_path, resource] : site.resources()) {
    // The registry API needs a registry: images go out as OCI layouts (registry/).
    if (resource.registry_api) continue;
    plan.files.push_back(file_of(url_path, resource, options));
  }
  for (const auto& image : site.images()) {
    add_image(image, plan.files);
    ++plan.images;
  }
  if (!site.git()->empty()) add_git_repositories(*site.git(), plan);
  std::stable_sort(plan.files.begin(), plan.files.end(), [](const ExportFile& a, const ExportFile& b) {
    return std::tie(a.stage, a.path) < std::tie(b.stage, b.path);
  });
  return plan;
}

void ObjectChecks::check(const std::string& path, const std::filesystem::path& object, const std::string& sha256,
                         std::int64_t size) {
  if (checked_.contains(sha256)) return;
  if (auto problem = object_problem(object, sha256, size); !problem.empty()) throw Error("not exporting " + path + ": " + problem);
  checked_.insert(sha256);
}

void ObjectChecks::check_package(const std::string& path, const ModulePackage& package) {
  for (const auto& entry : package.entries)
    if (!entry.object.empty()) check(path, entry.object, entry.digest, entry.size);
}

}  // namespace podplane::mirror
