#include "fetch/module_source.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "base/ascii.hpp"
#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/input_limits.hpp"
#include "base/run_tool.hpp"
#include "base/unique_fd.hpp"
#include "base/url.hpp"
#include "fetch/module_archive.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;

bool valid_registry_part(std::string_view part) {
  if (part.empty() || part.size() > 64) return false;
  return std::all_of(part.begin(), part.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0 || c == '-' || c == '_'; });
}

// go-getter's SourceDirSubdir: "//" after the scheme separates the subdir, which ends at '?'.
// The module address grammar, not a URL's: the marker sits inside the URL's path.
void split_subdir(std::string& url, std::string& subdir) {
  std::size_t search_from = 0;
  if (const auto scheme = url_scheme(url); !scheme.empty()) search_from = scheme.size() + std::string_view("://").size();
  auto query_start = url.find('?');
  auto marker = url.find("//", search_from);
  if (marker == std::string::npos || (query_start != std::string::npos && marker > query_start)) return;
  auto end = query_start == std::string::npos ? url.size() : query_start;
  subdir = url.substr(marker + 2, end - marker - 2);
  url = url.substr(0, marker) + url.substr(end);
}

// Removes `name=value` from the query of `url` and returns the value ("" when absent).
std::string take_query_param(std::string& url, const std::string& name) {
  auto query_start = url.find('?');
  if (query_start == std::string::npos) return "";
  std::string base = url.substr(0, query_start);
  std::string query = url.substr(query_start + 1);
  std::string kept;
  std::string value;
  std::stringstream parts(query);
  std::string part;
  while (std::getline(parts, part, '&')) {
    if (part.starts_with(name + "=")) {
      value = part.substr(name.size() + 1);
    } else if (!part.empty()) {
      kept += (kept.empty() ? "" : "&") + part;
    }
  }
  url = kept.empty() ? base : base + "?" + kept;
  return value;
}

std::string archive_format_of_path(std::string_view url) {
  std::string path(url.substr(0, url.find('?')));
  path = ascii_lower(path);
  for (auto [suffix, format] : {std::pair{".tar.gz", "tar.gz"}, {".tgz", "tar.gz"}, {".tar.bz2", "tar.bz2"},
                                {".tbz2", "tar.bz2"}, {".tar.tbz2", "tar.bz2"}, {".tar.xz", "tar.xz"},
                                {".txz", "tar.xz"}, {".zip", "zip"}}) {
    if (path.ends_with(suffix)) return format;
  }
  return "";
}

std::string unsupported(std::string_view text, std::string_view why) {
  return "unsupported module source \"" + std::string(text) + "\": " + std::string(why);
}

// Waits for `pid`; kills its process group and returns false when `deadline` passes first.
bool wait_until(pid_t pid, std::chrono::steady_clock::time_point deadline, int& status) {
  const UniqueFd pidfd_owner(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  const int pidfd = pidfd_owner.get();
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      throw Error(std::string("cannot wait for git: ") + std::strerror(errno));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(-pid, SIGKILL);  // git and its git-remote-https helper
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return false;
    }
    // A pidfd becomes readable when the child exits; without one (old kernels), look again soon.
    const int slice = static_cast<int>(std::min<long long>(left.count(), pidfd >= 0 ? 1000 : 20));
    if (pidfd >= 0) {
      pollfd fd{pidfd, POLLIN, 0};
      (void)::poll(&fd, 1, slice);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(slice));
    }
  }
  return true;
}

// The login of a git URL (https://user:password@host/…), taken out of it: git's argv is
// world-readable (/proc/<pid>/cmdline, ps), so the password reaches git through its
// environment and a credential helper instead (git_login_config).
struct GitLogin {
  std::string url;        // without user and password
  std::string authority;  // host[:port] as the URL writes them: what git calls a credential's host
  std::string user, password;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = ascii_lower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

std::string percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 && hex_digit(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

GitLogin split_git_login(const std::string& url) {
  GitLogin login{url, "", "", ""};
  const auto parts = split_url(url);
  if (!parts) return login;
  // git's credential helpers name a server by host and port as the URL writes them.
  login.authority = authority(*parts);
  if (parts->userinfo.empty()) return login;
  const auto colon = parts->userinfo.find(':');
  login.user = percent_decoded(parts->userinfo.substr(0, colon));
  if (colon != std::string::npos) login.password = percent_decoded(parts->userinfo.substr(colon + 1));
  for (const std::string* part : {&login.user, &login.password, &login.authority}) {
    if (part->find_first_of(std::string("\n\0", 2)) != std::string::npos)
      throw Error("git module source " + net::redact_url(url) + ": its login holds a line break or a NUL");
  }
  login.url = parts->scheme + "://" + login.authority + parts->path + (parts->query.empty() ? "" : "?" + parts->query) +
              (parts->fragment.empty() ? "" : "#" + parts->fragment);
  return login;
}

// git -c options that hand `login` to git from the environment (git_login_environment) through
// a credential helper, and only for its own host: the helpers of the user's git config are
// dropped for this run (none may store the password), and no password is in the options.
std::vector<std::string> git_login_config(const GitLogin& login) {
  if (login.user.empty() && login.password.empty()) return {};
  return {"-c", "credential.helper=", "-c",
          "credential.helper=!f() { test \"$1\" = get || exit 0; host=; while IFS= read -r line && test -n \"$line\"; do "
          "case \"$line\" in host=*) host=${line#host=};; esac; done; test \"$host\" = \"$PODPLANE_GIT_HOST\" || exit 0; "
          "printf 'username=%s\\npassword=%s\\n' \"$PODPLANE_GIT_USERNAME\" \"$PODPLANE_GIT_PASSWORD\"; }; f"};
}

std::vector<std::string> git_login_environment(const GitLogin& login) {
  if (login.user.empty() && login.password.empty()) return {};
  return {"PODPLANE_GIT_HOST=" + login.authority, "PODPLANE_GIT_USERNAME=" + login.user, "PODPLANE_GIT_PASSWORD=" + login.password};
}

// Runs git, capturing its stderr for the message. No shell is involved. Git gets the transfer
// limits of every other request: the low-speed limit (GIT_HTTP_LOW_SPEED_*) and the deadline,
// after which it is killed. `login` reaches it through the environment, never the argv.
void run_git(const std::vector<std::string>& args, const fs::path& stderr_file, std::string_view what,
             const net::HttpOptions& http, const GitLogin& login) {
  // SSL_CERT_FILE is the one CA setting podplane honours for every transfer, so it also wins
  // over an inherited GIT_SSL_CAINFO: git then trusts exactly what the HTTP client trusts.
  const char* ca = std::getenv("SSL_CERT_FILE");
  bool override_ca = ca != nullptr && *ca != '\0';
  std::vector<std::string> env = environment_without(
      override_ca ? std::vector<std::string_view>{"GIT_TERMINAL_PROMPT", "GIT_HTTP_LOW_SPEED_", "GIT_SSL_CAINFO", "PODPLANE_GIT_"}
                  : std::vector<std::string_view>{"GIT_TERMINAL_PROMPT", "GIT_HTTP_LOW_SPEED_", "PODPLANE_GIT_"});
  env.emplace_back("GIT_TERMINAL_PROMPT=0");  // never wait for a password on a terminal
  env.emplace_back("GIT_HTTP_LOW_SPEED_LIMIT=" + std::to_string(std::max(1L, http.low_speed_limit)));
  env.emplace_back("GIT_HTTP_LOW_SPEED_TIME=" + std::to_string(std::max<long long>(1, http.low_speed_timeout.count())));
  if (override_ca) env.emplace_back(std::string("GIT_SSL_CAINFO=") + ca);
  for (auto& variable : git_login_environment(login)) env.push_back(std::move(variable));
  std::vector<std::string> argv_strings{"git"};
  for (auto& option : git_login_config(login)) argv_strings.push_back(std::move(option));
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  auto argv = exec_array(argv_strings);
  auto envp = exec_array(env);

  const auto deadline = std::chrono::steady_clock::now() + http.deadline;
  pid_t pid = fork();
  if (pid < 0) throw Error("cannot start git for " + std::string(what));
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so that a kill at the deadline reaches its helpers too
    int fd = open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
      close(fd);
    }
    int null_in = open("/dev/null", O_RDONLY);
    if (null_in >= 0) dup2(null_in, 0);
    execvpe("git", argv.data(), envp.data());
    _exit(127);
  }
  ::setpgid(pid, pid);  // also from here: whichever runs first
  int status = 0;
  const bool in_time = wait_until(pid, deadline, status);
  if (in_time && WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  // git's own words for the error, read within the input limits: past them (a server that
  // floods progress lines) the error says so instead.
  std::string output;
  try {
    output = read_file_within_limits(stderr_file, "git's output");
  } catch (const Error& e) {
    if (fs::exists(stderr_file)) output = e.what();  // none when git never started
  }
  while (!output.empty() && std::isspace(static_cast<unsigned char>(output.back()))) output.pop_back();
  if (!in_time) {
    throw Error("git did not finish " + std::string(what) + " within the transfer deadline of " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(http.deadline).count()) +
                " s and was stopped" + (output.empty() ? "" : ":\n" + net::redact_url(output)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && output.empty()) {
    throw Error("git is not installed (needed for " + std::string(what) + ")");
  }
  throw Error("git failed for " + std::string(what) + (output.empty() ? "" : ":\n" + net::redact_url(output)));
}

bool is_commit_id(std::string_view ref) {
  return ref.size() >= 7 && ref.size() <= 40 && is_hex(ref);
}

// git's output of one local command in the clone (no network: run_tool is enough).
std::string git_in(const fs::path& checkout, std::vector<std::string> args, std::string_view what) {
  args.insert(args.begin(), {"git", "-C", checkout.string()});
  auto run = run_tool(args);
  if (run.exit_code != 0) throw Error("git " + args[3] + " failed for " + std::string(what) + ": " + run.err);
  while (!run.out.empty() && std::isspace(static_cast<unsigned char>(run.out.back()))) run.out.pop_back();
  return run.out;
}

// Every object of the clone in one pack, moved out of the clone before its .git goes, and which
// ref of the repository it is: the ref as the source wrote it ("" is the default branch).
ModuleFetcher::GitSnapshot snapshot_clone(const fs::path& checkout, const std::string& ref, const fs::path& into,
                                          std::string_view what) {
  (void)git_in(checkout, {"repack", "-a", "-d", "-q"}, what);
  ModuleFetcher::GitSnapshot snapshot;
  for (const auto& entry : fs::directory_iterator(checkout / ".git" / "objects" / "pack")) {
    if (entry.path().extension() != ".pack") continue;
    if (!snapshot.pack.empty()) throw Error("git repack left more than one pack for " + std::string(what));
    snapshot.pack = into / "objects.pack";
    fs::rename(entry.path(), snapshot.pack);
  }
  if (snapshot.pack.empty()) throw Error("git repack left no pack for " + std::string(what));
  cache::GitRef& stored = snapshot.ref;
  stored.commit = git_in(checkout, {"rev-parse", "HEAD"}, what);
  stored.object_format = git_in(checkout, {"rev-parse", "--show-object-format"}, what);
  if (ref.empty()) {
    stored.kind = cache::GitRef::Kind::branch;
    stored.name = git_in(checkout, {"symbolic-ref", "--short", "HEAD"}, what);
  } else if (is_commit_id(ref)) {
    stored.kind = cache::GitRef::Kind::commit;
    stored.name = ref;
  } else {
    // `clone --branch` leaves HEAD on the branch it names, and detached at a tag.
    const bool tag = run_tool({"git", "-C", checkout.string(), "symbolic-ref", "-q", "HEAD"}).exit_code != 0;
    stored.kind = tag ? cache::GitRef::Kind::tag : cache::GitRef::Kind::branch;
    stored.name = ref;
  }
  if (auto shallow = read_file_if_present_within_limits(checkout / ".git" / "shallow", "git's shallow file")) {
    std::istringstream lines(*shallow);
    for (std::string id; std::getline(lines, id);)
      if (!id.empty()) stored.shallow.push_back(id);
  }
  // What the store keeps must read back as it is written (ids, names).
  (void)cache::parse_git_refs_document(cache::git_refs_document(stored), std::string(what));
  return snapshot;
}

}  // namespace

std::string join_subdir(std::string_view first, std::string_view second) {
  std::string a(first), b(second);
  while (!a.empty() && a.back() == '/') a.pop_back();
  while (!b.empty() && b.front() == '/') b.erase(0, 1);
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

ModuleSource ModuleSource::parse(std::string_view text_in, std::string_view default_registry_host) {
  ModuleSource source;
  source.text = std::string(text_in);
  std::string text = source.text;
  if (text.empty()) throw Error("empty module source");
  if (text.starts_with("./") || text.starts_with("../") || text.starts_with(".\\") || text.starts_with("..\\")) {
    source.kind = Kind::local;
    source.url = text;
    return source;
  }
  if (text.starts_with("/") || (text.size() > 2 && text[1] == ':' && (text[2] == '\\' || text[2] == '/'))) {
    throw Error(unsupported(text, "absolute paths are machine-specific; use a ./relative path"));
  }
  std::string forced;
  if (auto marker = text.find("::"); marker != std::string::npos && text.find("://") > marker) {
    forced = ascii_lower(text.substr(0, marker));
    text = text.substr(marker + 2);
  }
  if (forced.empty() && text.starts_with("github.com/")) {
    forced = "git";
    text = "https://" + text;
    auto end = text.find_first_of("/?", std::string("https://github.com/").size());
    end = text.find_first_of("/?", end == std::string::npos ? text.size() : end + 1);
    std::string repo = text.substr(0, end == std::string::npos ? text.size() : end);
    if (!repo.ends_with(".git")) text.insert(repo.size(), ".git");
  }
  if (forced == "git") {
    if (!has_http_scheme(text)) {
      throw Error(unsupported(source.text, "only git over HTTPS is supported (no ssh)"));
    }
    source.kind = Kind::git;
    split_subdir(text, source.subdir);
    source.ref = take_query_param(text, "ref");
    // The whole history is kept whatever depth= says: the site then serves any depth, and a
    // site git server takes the repository (a shallow one it refuses).
    (void)take_query_param(text, "depth");
    source.url = text;
    return source;
  }
  if (!forced.empty()) throw Error(unsupported(source.text, "getter \"" + forced + "::\" is not supported"));
  if (const auto written_scheme = url_scheme(text); !written_scheme.empty()) {
    const auto scheme = ascii_lower(written_scheme);
    if (scheme != "https" && scheme != "http") {
      throw Error(unsupported(source.text, "scheme \"" + scheme + "\" is not supported"));
    }
    split_subdir(text, source.subdir);
    std::string forced_archive = take_query_param(text, "archive");
    source.url = text;
    source.archive_format = forced_archive.empty() ? archive_format_of_path(text) : forced_archive;
    if (source.archive_format == "tgz") source.archive_format = "tar.gz";
    source.kind = source.archive_format.empty() ? Kind::http : Kind::archive;
    return source;
  }
  // A registry address: [host/]namespace/name/system[//subdir].
  std::string address = text;
  if (auto marker = address.find("//"); marker != std::string::npos) {
    source.subdir = address.substr(marker + 2);
    address = address.substr(0, marker);
  }
  std::vector<std::string> parts;
  std::stringstream split(address);
  for (std::string part; std::getline(split, part, '/');) parts.push_back(part);
  if (parts.size() == 3) parts.insert(parts.begin(), std::string(default_registry_host));
  if (parts.size() != 4 || !valid_registry_part(parts[1]) || !valid_registry_part(parts[2]) ||
      !valid_registry_part(parts[3]) || parts[0].empty()) {
    throw Error(unsupported(source.text, "not a local path, a registry address or a remote URL"));
  }
  source.kind = Kind::registry;
  source.registry = ModuleAddress{ascii_lower(parts[0]), parts[1], parts[2], parts[3], source.subdir};
  return source;
}

std::string ModuleSource::package_address() const {
  switch (kind) {
    case Kind::registry: return registry.str();
    case Kind::git: return "git::" + net::redact_url(url) + (ref.empty() ? "" : (url.find('?') == std::string::npos ? "?ref=" : "&ref=") + ref);
    case Kind::archive:
    case Kind::http:
    case Kind::local: return net::redact_url(url);
  }
  return text;
}

std::string ModuleSource::store_address() const {
  if (kind == Kind::registry) return registry.str();
  std::string rest = authority_and_path_as_written(net::redact_url(url));
  std::string lowered = ascii_lower(rest);
  for (const char* suffix : {".git", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".zip"}) {
    if (lowered.ends_with(suffix)) {
      rest.resize(rest.size() - std::string_view(suffix).size());
      break;
    }
  }
  std::string out;
  std::stringstream parts(rest);
  for (std::string part; std::getline(parts, part, '/');) {
    if (part.empty() || part == ".") continue;
    if (part == "..") part = "_";
    for (auto& c : part) {
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '_';
    }
    out += (out.empty() ? "" : "/") + part;
  }
  return out.empty() ? "unnamed" : out;
}

fs::path resolve_subdir(const fs::path& root, std::string_view subdir) {
  fs::path current = root;
  std::stringstream split{std::string(subdir)};
  for (std::string part; std::getline(split, part, '/');) {
    if (part.empty() || part == ".") continue;
    if (part == "..") throw Error("module subdir must not contain \"..\": " + std::string(subdir));
    if (part.find_first_of("*?[") == std::string::npos) {
      current /= part;
      continue;
    }
    std::vector<fs::path> matches;
    for (const auto& entry : fs::directory_iterator(current)) {
      if (entry.is_directory() && !entry.is_symlink() &&
          fnmatch(part.c_str(), entry.path().filename().c_str(), FNM_PERIOD) == 0) {
        matches.push_back(entry.path());
      }
    }
    if (matches.size() != 1) {
      throw Error("module subdir pattern \"" + std::string(subdir) + "\" must match exactly one directory, matched " +
                  std::to_string(matches.size()));
    }
    current = matches.front();
  }
  if (!fs::is_directory(current)) throw Error("module subdir \"" + std::string(subdir) + "\" is not in the package");
  return current;
}

ModuleFetcher::ModuleFetcher(net::HttpClient& http, net::Downloader& downloader, fs::path work_dir)
    : http_(http), downloader_(downloader), work_dir_(std::move(work_dir)) {}

ModuleFetcher::Package ModuleFetcher::fetch(const ModuleSource& source_in) {
  ModuleSource source = source_in;
  // Plain HTTP(S): ask the URL where the package is (X-Terraform-Get), at most 10 hops.
  for (int hop = 0; source.kind == ModuleSource::Kind::http; ++hop) {
    if (hop == 10) throw Error("too many X-Terraform-Get redirections for module source " + net::redact_url(source_in.text));
    std::string url = source.url + (source.url.find('?') == std::string::npos ? "?" : "&") + "terraform-get=1";
    auto response = http_.get(url);
    if (response.status < 200 || response.status > 299) {
      throw Error("module source " + net::redact_url(source.url) + ": " + response.status_text());
    }
    std::string next;
    if (auto header = response.headers.find("x-terraform-get"); header != response.headers.end()) next = header->second;
    if (next.empty()) {
      static const std::regex meta(R"re(<meta\s+name="terraform-get"\s+content="([^"]+)")re");
      std::smatch match;
      if (std::regex_search(response.body, match, meta)) next = match[1];
    }
    if (next.empty()) {
      throw Error("module source " + net::redact_url(source.url) + " is no archive and names no X-Terraform-Get location");
    }
    if (next.starts_with("/") || next.starts_with("./") || next.starts_with("../")) {
      next = net::resolve_url(response.final_url.empty() ? url : response.final_url, next);
    }
    std::string outer_subdir = source.subdir;
    source = ModuleSource::parse(next, "registry.opentofu.org");
    source.subdir = join_subdir(source.subdir, outer_subdir);
    if (source.kind == ModuleSource::Kind::registry || source.kind == ModuleSource::Kind::local) {
      throw Error("X-Terraform-Get location must be a direct remote package address, got " + net::redact_url(next));
    }
  }
  fs::path into = work_dir_ / ("package-" + std::to_string(++counter_));
  fs::remove_all(into);
  switch (source.kind) {
    case ModuleSource::Kind::git: return fetch_git(source, into);
    case ModuleSource::Kind::archive: return fetch_archive(source, into);
    default: throw Error("module source " + net::redact_url(source.text) + " is not a remote package address");
  }
}

ModuleFetcher::Package ModuleFetcher::fetch_git(const ModuleSource& source, const fs::path& into) {
  std::string what = "module source " + source.package_address();
  fs::path log = work_dir_ / ("git-" + std::to_string(counter_) + ".log");
  fs::path checkout = into / "repo";
  fs::create_directories(into);
  const GitLogin login = split_git_login(source.url);
  if (source.ref.empty() || !is_commit_id(source.ref)) {
    std::vector<std::string> args{"-c", "advice.detachedHead=false", "clone", "--quiet"};
    if (!source.ref.empty()) args.insert(args.end(), {"--branch", source.ref});
    args.insert(args.end(), {"--", login.url, checkout.string()});
    run_git(args, log, what, http_.options(), login);
  } else {
    run_git({"clone", "--quiet", "--", login.url, checkout.string()}, log, what, http_.options(), login);
    run_git({"-c", "advice.detachedHead=false", "-C", checkout.string(), "checkout", "--quiet", source.ref}, log, what,
            http_.options(), GitLogin{});
  }
  auto snapshot = snapshot_clone(checkout, source.ref, into, what);
  fs::remove_all(checkout / ".git");
  return Package{resolve_subdir(checkout, source.subdir), source.package_address(), std::move(snapshot)};
}

std::vector<cache::Artifact> git_snapshot_rows(cache::Store& store, const std::string& address, const std::string& version,
                                              const std::string& upstream_url, const ModuleFetcher::GitSnapshot& snapshot) {
  const std::string document = cache::git_refs_document(snapshot.ref);
  const std::string& commit = snapshot.ref.commit;
  auto pack = cache::git_snapshot_row(cache::ArtifactKind::git_pack, address, version, commit, store.add_file(snapshot.pack), upstream_url);
  auto refs = cache::git_snapshot_row(cache::ArtifactKind::git_refs, address, version, commit, store.add_bytes(document), upstream_url);
  return {pack, refs};
}

ModuleFetcher::Package ModuleFetcher::fetch_archive(const ModuleSource& source, const fs::path& into) {
  fs::create_directories(into);
  fs::path archive = into / ("package." + source.archive_format);
  net::DownloadItem item;
  item.url = source.url;
  item.label = net::redact_url(source.url);
  downloader_.fetch_to_file(item, archive);
  fs::path tree = into / "tree";
  extract_archive(archive, tree, "module package " + net::redact_url(source.url));
  fs::remove(archive);
  return Package{resolve_subdir(tree, source.subdir), source.package_address(), std::nullopt};
}

}  // namespace podplane::fetch
