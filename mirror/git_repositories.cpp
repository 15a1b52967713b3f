#include "mirror/git_repositories.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "base/ascii.hpp"
#include "base/child_process.hpp"
#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/run_tool.hpp"
#include "base/unique_fd.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;

namespace {

// The most an answer of http-backend may hold in memory: a module repository's pack is a few
// MiB; a repository that would need more is not a module's.
constexpr std::size_t kMostAnswerBytes = std::size_t{512} << 20;

void git(const fs::path& dir, std::vector<std::string> args, const std::string& repository) {
  args.insert(args.begin(), {"git", "-C", dir.string()});
  auto run = run_tool(args);
  if (run.exit_code != 0)
    throw Error("cannot rebuild the git repository " + repository + ": git " + args[3] + " failed: " +
                (run.missing ? "git is not installed" : run.err));
}

// http-backend's CGI answer: "Status: 404 Not Found", other headers, a blank line, the body.
GitAnswer parse_cgi_answer(const std::string& out) {
  GitAnswer answer;
  std::size_t at = 0;
  while (at < out.size()) {
    std::size_t end = out.find('\n', at);
    if (end == std::string::npos) throw Error("git http-backend answered without a blank line after its headers");
    std::string line = out.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (ascii_iequals(name, "Status")) {
      answer.status = std::atoi(value.c_str());
      continue;
    }
    answer.headers.emplace_back(std::move(name), std::move(value));
  }
  answer.body = out.substr(std::min(at, out.size()));
  return answer;
}

// Runs git http-backend as a CGI program: `body` on its standard input, its standard output
// read whole (up to kMostAnswerBytes).
std::string run_http_backend(const std::vector<std::string>& env, const fs::path& body_file) {
  std::vector<std::string> argv_strings{"git", "http-backend"};
  std::vector<std::string> env_strings = env;
  auto argv = exec_array(argv_strings);
  auto envp = exec_array(env_strings);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(std::string("cannot start git http-backend: ") + std::strerror(errno));
  UniqueFd out(pipe_fds[0]);
  UniqueFd child_out(pipe_fds[1]);
  UniqueFd in(::open(body_file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw Error("cannot read " + body_file.string() + ": " + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("cannot start git http-backend: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(in.get(), 0);
    ::dup2(child_out.get(), 1);
    const int null_err = ::open("/dev/null", O_WRONLY);
    if (null_err >= 0) ::dup2(null_err, 2);
    ::execvpe(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  child_out.reset();
  std::string output;
  char buffer[65536];
  bool too_much = false;
  for (;;) {
    const ssize_t n = ::read(out.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output.size() + static_cast<std::size_t>(n) > kMostAnswerBytes) too_much = true;
    if (!too_much) output.append(buffer, static_cast<std::size_t>(n));
  }
  out.reset();
  const int code = wait_exit_code(pid, "git http-backend");
  if (too_much) throw Error("git http-backend answered more than 512 MiB");
  if (code != 0 && output.empty()) throw Error("git http-backend failed (exit " + std::to_string(code) + ")");
  return output;
}

// The checksum a pack file ends with (SHA-1, or SHA-256 in a sha256 repository), in hex.
std::string pack_checksum_hex(const fs::path& pack, const std::string& object_format) {
  const std::size_t size = object_format == "sha256" ? 32 : 20;
  std::ifstream in(pack, std::ios::binary);
  in.seekg(-static_cast<std::streamoff>(size), std::ios::end);
  std::string checksum(size, '\0');
  if (!in.read(checksum.data(), static_cast<std::streamsize>(size)))
    throw Error("cannot read the checksum at the end of " + pack.string() + ": it is shorter than a pack");
  return to_hex(checksum);
}

}  // namespace

GitRepositories::GitRepositories(std::vector<StoredGitSnapshot> snapshots) {
  for (auto& snapshot : snapshots) {
    auto& repository = by_repository_[snapshot.repository];
    if (!repository) repository = std::make_unique<Repository>();
    repository->snapshots.push_back(std::move(snapshot));
  }
}

std::vector<std::string> GitRepositories::repositories() const {
  std::vector<std::string> out;
  for (const auto& [name, repository] : by_repository_) out.push_back(name);
  return out;
}

std::optional<std::pair<std::string, std::string>> GitRepositories::find(const std::string& path) const {
  // The longest held repository that the path starts with, followed by ".git/" or "/".
  std::optional<std::pair<std::string, std::string>> found;
  for (const auto& [name, repository] : by_repository_) {
    for (const std::string& prefix : {name + ".git/", name + "/"}) {
      if (path.rfind(prefix, 0) != 0) continue;
      if (!found || name.size() > found->first.size()) found = std::make_pair(name, path.substr(prefix.size()));
    }
  }
  return found;
}

void GitRepositories::build(const std::string& repository, const std::vector<StoredGitSnapshot>& snapshots,
                            const fs::path& dir) {
  fs::create_directories(dir);
  git(dir, {"init", "--quiet", "--bare", "--object-format=" + snapshots.front().ref.object_format}, repository);
  std::set<std::string> shallow;
  // Oldest first, so that the newest snapshot of a branch names its commit last.
  std::vector<const StoredGitSnapshot*> ordered;
  for (const auto& snapshot : snapshots) ordered.push_back(&snapshot);
  std::sort(ordered.begin(), ordered.end(), [](auto* a, auto* b) { return a->row_id < b->row_id; });
  for (const auto* snapshot : ordered) {
    // Named as git names a pack, by its trailing checksum: git's dumb HTTP protocol (a static
    // web server or a bucket serving an export) fetches only packs so named.
    const fs::path pack = dir / "objects" / "pack" / ("pack-" + pack_checksum_hex(snapshot->pack, snapshot->ref.object_format) + ".pack");
    if (fs::exists(pack)) continue;  // the same pack as an earlier snapshot's
    fs::copy_file(snapshot->pack, pack);
    fs::permissions(pack, fs::perms::owner_read | fs::perms::owner_write);
    // The store object is what its row says it is before git reads a byte of it (as every
    // object mirror serve hands out).
    if (const std::string got = file_digest_hex(pack); got != snapshot->pack_sha256)
      throw Error(mismatch_message("the pack of " + repository + " in the store is damaged (run podplane deps verify)",
                                   "sha256:" + snapshot->pack_sha256, "sha256:" + got));
    // index-pack checks every object of the pack against its id as it indexes it.
    git(dir, {"index-pack", pack.string()}, repository);
    shallow.insert(snapshot->ref.shallow.begin(), snapshot->ref.shallow.end());
  }
  if (!shallow.empty()) {
    std::ofstream file(dir / "shallow", std::ios::binary);
    for (const auto& id : shallow) file << id << "\n";
  }
  std::string head;
  for (const auto* snapshot : ordered) {
    const std::string refname = snapshot->ref.refname();
    git(dir, {"update-ref", refname, snapshot->ref.commit}, repository);
    if (refname.rfind("refs/heads/", 0) == 0 && (head.empty() || snapshot->ref.kind == cache::GitRef::Kind::branch))
      head = refname;
  }
  // A clone without --branch takes HEAD's branch: the newest stored branch, else a commit's.
  if (!head.empty()) git(dir, {"symbolic-ref", "HEAD", head}, repository);
  // A client may ask for a stored commit by its id (git fetch origin <id>).
  git(dir, {"config", "uploadpack.allowAnySHA1InWant", "true"}, repository);
  git(dir, {"config", "http.receivepack", "false"}, repository);
  git(dir, {"update-server-info"}, repository);
}

fs::path GitRepositories::scratch_root() {
  std::lock_guard lock(scratch_mutex_);
  if (!scratch_) scratch_ = std::make_unique<ScratchDir>("podplane-git-");
  return scratch_->path();
}

GitAnswer GitRepositories::answer(const GitRequest& request) {
  const auto found = find(request.path);
  if (!found) return {404, {{"Content-Type", "text/plain"}}, "not found\n"};
  const auto& [name, rest] = *found;
  const bool upload_pack =
      (request.method == "GET" && rest == "info/refs" && request.query == "service=git-upload-pack") ||
      (request.method == "POST" && rest == "git-upload-pack");
  if (request.method != "GET" && request.method != "POST")
    return {405, {{"Allow", "GET, POST"}, {"Content-Type", "text/plain"}}, "method not allowed\n"};
  // Only fetching is served: no push, no dumb-protocol file of the repository.
  if (!upload_pack) return {403, {{"Content-Type", "text/plain"}}, "only git-upload-pack is served here\n"};

  const fs::path root = scratch_root();
  auto& repository = *by_repository_.at(name);
  {
    std::lock_guard lock(repository.mutex);
    if (!repository.built) {
      const fs::path dir = root / "repositories" / (name + ".git");
      fs::remove_all(dir);
      build(name, repository.snapshots, dir);
      repository.built = true;
    }
  }
  // The request body goes to http-backend's standard input from a file of its own.
  static std::atomic<std::uint64_t> requests{0};
  const fs::path body_file = root / ("request-" + std::to_string(++requests));
  {
    std::ofstream file(body_file, std::ios::binary);
    file << request.body;
  }
  struct Remove {
    fs::path path;
    ~Remove() {
      std::error_code ignored;
      fs::remove(path, ignored);
    }
  } remove_body{body_file};
  std::vector<std::string> env{"GIT_PROJECT_ROOT=" + (root / "repositories").string(),
                               "GIT_HTTP_EXPORT_ALL=1",
                               "GIT_CONFIG_NOSYSTEM=1",
                               "HOME=" + root.string(),
                               "PATH=/usr/bin:/bin",
                               "REQUEST_METHOD=" + request.method,
                               "PATH_INFO=/" + name + ".git/" + rest,
                               "QUERY_STRING=" + request.query,
                               "CONTENT_TYPE=" + request.content_type,
                               "CONTENT_LENGTH=" + std::to_string(request.body.size()),
                               "REMOTE_ADDR=" + request.remote_addr};
  if (!request.content_encoding.empty()) env.push_back("HTTP_CONTENT_ENCODING=" + request.content_encoding);
  // http-backend takes the Git-Protocol header (protocol v2) as a CGI variable.
  if (!request.git_protocol.empty()) env.push_back("HTTP_GIT_PROTOCOL=" + request.git_protocol);
  return parse_cgi_answer(run_http_backend(env, body_file));
}

void GitRepositories::write_bare_repositories(const fs::path& dir) {
  for (const auto& [name, repository] : by_repository_) build(name, repository->snapshots, dir / bare_repository_path(name));
}

}  // namespace podplane::mirror
