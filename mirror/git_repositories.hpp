#pragma once
// The git repositories of the store's git snapshots (docs/ci.md "Git sources"), as git's smart
// HTTP protocol serves them at /git/<host[:port]>/<path>: each repository is rebuilt once, on
// its first request, as a bare repository in a private scratch directory (every snapshot's
// pack indexed, each ref named as upstream, the shallow boundary kept), and git's own
// http-backend answers (GET info/refs, POST git-upload-pack), so commit ids and the protocol are
// git's. Nothing is ever pushed to them. Thread-safe: one lock per repository while it is built;
// answers run in parallel. Errors are podplane::Error.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/scratch_dir.hpp"
#include "cache/git_refs.hpp"

namespace podplane::mirror {

// One stored snapshot: its repository (the store address of the git source, "host/org/repo"),
// its pack (a store object) and its refs document, read.
struct StoredGitSnapshot {
  std::string repository;
  std::filesystem::path pack;
  std::string pack_sha256;  // the pack object's digest: checked before git reads it
  cache::GitRef ref;
  std::int64_t row_id = 0;  // newer snapshots (of a branch) win over older ones
};

// What http-backend answered, as an HTTP response.
struct GitAnswer {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// What a smart-HTTP request asks, from the request line and headers.
struct GitRequest {
  std::string method;     // GET or POST
  std::string path;       // below /git/: "<host>/<org>/<repo>[.git]/info/refs" or ".../git-upload-pack"
  std::string query;      // service=git-upload-pack
  std::string content_type;
  std::string content_encoding;  // gzip when the client compressed its request
  std::string git_protocol;      // the Git-Protocol header (version=2)
  std::string remote_addr;
  std::string body;
};

// Where `mirror export` writes the bare repository of `repository` ("host/org/repo"), below
// the directory it is given: "host/org/repo.git".
[[nodiscard]] inline std::string bare_repository_path(const std::string& repository) { return repository + ".git"; }

class GitRepositories {
 public:
  explicit GitRepositories(std::vector<StoredGitSnapshot> snapshots);
  GitRepositories(const GitRepositories&) = delete;
  GitRepositories& operator=(const GitRepositories&) = delete;

  // The repositories held, by address ("host/org/repo").
  [[nodiscard]] std::vector<std::string> repositories() const;
  [[nodiscard]] bool empty() const { return by_repository_.empty(); }

  // The repository a request path below /git/ names, with what follows it ("info/refs",
  // "git-upload-pack"); nullopt when none held matches. A ".git" after the name is optional,
  // as git hosts serve both.
  [[nodiscard]] std::optional<std::pair<std::string, std::string>> find(const std::string& path) const;

  // Answers one request by git http-backend; 404 for a repository not held, 403 for anything
  // but upload-pack (nothing is received), 405 for another method.
  [[nodiscard]] GitAnswer answer(const GitRequest& request);

  // Writes every repository as a bare repository below `dir` (<dir>/bare_repository_path(…),
  // `git update-server-info` run, so a static web server serves it too): `mirror export`.
  void write_bare_repositories(const std::filesystem::path& dir);

 private:
  struct Repository {
    std::vector<StoredGitSnapshot> snapshots;
    std::mutex mutex;
    bool built = false;
  };
  // Builds the repository under `root` (once under the scratch dir, or for export).
  static void build(const std::string& repository, const std::vector<StoredGitSnapshot>& snapshots,
                    const std::filesystem::path& dir);
  std::filesystem::path scratch_root();

  std::map<std::string, std::unique_ptr<Repository>> by_repository_;
  std::mutex scratch_mutex_;
  std::unique_ptr<ScratchDir> scratch_;  // made on the first request
};

}  // namespace podplane::mirror
