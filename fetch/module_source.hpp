#pragma once
// Module source addresses (docs/protocols.md §6.2) and fetching the package a remote source
// names: git over HTTPS through the `git` CLI (SSL_CERT_FILE is passed on as GIT_SSL_CAINFO),
// archive URLs (.zip, .tar.gz, .tgz, .tar.bz2, .tar.xz, or forced with ?archive=) unpacked
// with libarchive, and plain HTTP(S) URLs followed through X-Terraform-Get. A "//subdir"
// (globs such as "//*" included) picks a directory inside the package.
// Not thread-safe. Errors are podplane::Error; URLs in messages never show user:password.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "cache/git_refs.hpp"
#include "cache/store.hpp"
#include "net/download.hpp"
#include "net/http.hpp"
#include "fetch/registry.hpp"

namespace podplane::fetch {

struct ModuleSource {
  enum class Kind { local, registry, git, archive, http };
  Kind kind = Kind::local;
  std::string text;            // as written
  ModuleAddress registry;      // Kind::registry (subdir also in `subdir`)
  std::string url;             // git: clone URL (no ref); archive/http: URL without archive= and subdir
  std::string ref;             // git ?ref=, "" for the default branch
  std::string archive_format;  // Kind::archive: "zip", "tar.gz", "tar.bz2", "tar.xz"
  std::string subdir;          // after "//", "" when none

  // Local paths (./, ../), registry addresses ([host/]ns/name/system), git::https://…,
  // github.com/org/repo, http(s) URLs. Other getters (s3::, gcs::, hg::, ssh git, oci://,
  // absolute paths) are an Error saying so.
  static ModuleSource parse(std::string_view text, std::string_view default_registry_host);

  // The package identity without subdir, e.g. "git::https://host/repo.git?ref=v1.0.0".
  std::string package_address() const;

  // The address a non-registry package is indexed under: a plain '/'-separated path made of
  // the URL's host and path, without scheme, credentials, query, ".git" or archive suffix
  // ("git::https://host/org/repo.git?ref=v1" → "host/org/repo"); for registry sources the
  // registry address. Safe as a relative path (the views use it below tf/modules/).
  std::string store_address() const;
};

// Joins two subdirs as the engines do for a registry address's //subdir on top of the
// package location's own //subdir.
std::string join_subdir(std::string_view first, std::string_view second);

// Resolves `subdir` (globs allowed per component, each must match exactly one directory)
// below `root`. Errors name the pattern.
std::filesystem::path resolve_subdir(const std::filesystem::path& root, std::string_view subdir);

class ModuleFetcher {
 public:
  // `work_dir` receives one fresh directory per fetch; the caller removes it.
  ModuleFetcher(net::HttpClient& http, net::Downloader& downloader, std::filesystem::path work_dir);

  // A git source's objects as the clone held them (cache/git_refs.hpp): one pack, and which ref
  // of the repository it was, so that the site can serve the repository with the same commit ids.
  struct GitSnapshot {
    std::filesystem::path pack;  // in the fetch's work dir
    cache::GitRef ref;
  };
  struct Package {
    std::filesystem::path root;   // the package with the location's own //subdir applied
    std::string upstream_url;     // redacted
    std::optional<GitSnapshot> git;  // a git source's snapshot
  };
  // Fetches a git, archive or http source. Kind::registry and Kind::local are an Error
  // (resolve them first).
  [[nodiscard]] Package fetch(const ModuleSource& source);

 private:
  Package fetch_git(const ModuleSource& source, const std::filesystem::path& into);
  Package fetch_archive(const ModuleSource& source, const std::filesystem::path& into);

  net::HttpClient& http_;
  net::Downloader& downloader_;
  std::filesystem::path work_dir_;
  int counter_ = 0;
};

// Adds a git snapshot's pack and refs document to the store as objects and returns their rows
// (git_pack, git_refs) for the module tree of `address` and `version`; the caller indexes them
// with the tree.
[[nodiscard]] std::vector<cache::Artifact> git_snapshot_rows(cache::Store& store, const std::string& address,
                                                             const std::string& version, const std::string& upstream_url,
                                                             const ModuleFetcher::GitSnapshot& snapshot);

}  // namespace podplane::fetch
