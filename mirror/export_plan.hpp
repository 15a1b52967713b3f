#pragma once
// What `mirror export` writes, whatever it writes to: every file of the static site, where its
// bytes come from and its media type, in publishing order. The directory writer
// (mirror/export.hpp) and the object-storage writer (mirror/s3_export.hpp) consume the same
// plan, so a bucket holds exactly the files a directory export holds. Errors: podplane::Error.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "mirror/serve_site.hpp"

namespace podplane {
class ScratchDir;
}

namespace podplane::mirror {

// The marker file that identifies an export (so that re-export may replace or update it).
inline constexpr const char* kExportMarker = ".podplane-export";

enum class FileSource {
  bytes,           // ExportFile::bytes
  store_object,    // a store object, checked against its digest on the way out
  module_package,  // the deterministic tar.gz of ExportFile::module (write_module_tar_gz)
  generated_file,  // a file written for this export into ExportPlan::generated (a git repository's)
};

// When a file is published. A target that fills up file by file (a bucket) writes the stages in
// this order, so a reader never finds a document that names a file not there yet.
enum class PublishStage {
  marker,       // the export marker: claims the target before anything else is written
  content,      // names nothing: provider zips, SHA256SUMS, module packages, artifacts, blobs
  document,     // names content: download answers, <version>.json, vmconfig manifests, OCI index.json
  listing,      // names documents: the `versions` lists, a network mirror's index.json
  entry_point,  // names listings or everything: .well-known, the catalogue, /healthz
};

struct ExportFile {
  std::string path;  // relative, '/'-separated, no leading '/': "v1/mirror/…/index.json", "catalogue/index.html"
  std::string content_type;
  PublishStage stage = PublishStage::content;
  FileSource source = FileSource::bytes;
  std::string bytes;                            // bytes
  std::filesystem::path object;                 // store_object: the file in the store; generated_file: the file
  std::string sha256;                           // store_object: the hex digest it must have
  std::int64_t size = 0;                        // store_object, generated_file: its size
  std::shared_ptr<const ModulePackage> module;  // module_package
};

struct ExportPlan {
  std::vector<ExportFile> files;     // by stage, then by path; paths are unique
  std::vector<std::string> skipped;  // index rows the site left out, with the reason
  std::size_t images = 0;            // OCI image layouts under registry/
  std::size_t git_repositories = 0;  // bare repositories under git/
  // Every directory of the generated trees, empty ones included (a bare repository's refs/),
  // for a target that has directories; a bucket has none.
  std::vector<std::string> directories;
  std::shared_ptr<ScratchDir> generated;  // where the generated files are, as long as the plan lives
};

// The plan of the store's site: every path of MirrorSite but the /v2/ API, whose images become
// OCI image layouts under registry/<mirror name>/, and whose git repositories are written as
// bare repositories under git/<host>/<path>.git (git update-server-info run, so a static host
// serves them too: their packs are content, their refs and info files documents); a page
// ("…/") becomes "…/index.html"; the catalogue pages are rendered once, unfiltered (the page's
// script filters).
[[nodiscard]] ExportPlan plan_export(const cache::Store& store, const SiteOptions& options);

// Checks each store object once: an export never carries bytes that do not match the digest they
// are published under. Throws "not exporting <path>: <problem>". Not thread-safe.
class ObjectChecks {
 public:
  void check(const std::string& path, const std::filesystem::path& object, const std::string& sha256, std::int64_t size);
  // Every file of a module package, before the package is built from them.
  void check_package(const std::string& path, const ModulePackage& package);
  // The object's bytes were hashed elsewhere (while being read for upload) and matched.
  void record(const std::string& sha256) { checked_.insert(sha256); }

 private:
  std::set<std::string> checked_;
};

}  // namespace podplane::mirror
