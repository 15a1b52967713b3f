#include "tests/support/test_support.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

extern char** environ;

namespace podplane::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/podplane-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Objects in the store are read-only; make everything writable so it can be removed. A
  // gpg-agent that a test's gpg started in a home here is stopped first: while it runs, it
  // can add files as remove_all empties the home, which then fails and leaves the whole
  // directory in /tmp.
  std::vector<fs::path> gpg_homes;
  for (auto it = fs::recursive_directory_iterator(path_, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // A gpg home has a keyring (its agent's socket may be under /run/user instead).
    if (it->path().filename() == "pubring.kbx") gpg_homes.push_back(it->path().parent_path());
    if (!it->is_symlink()) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  for (const auto& home : gpg_homes) {
    try {
      (void)run({"gpgconf", "--homedir", home.string(), "--kill", "all"});
    } catch (const std::exception&) {
      // No gpgconf: remove_all below may still succeed.
    }
  }
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  // gpgconf returns once it has asked the agent to go, which may still remove its socket as
  // remove_all empties the home (ENOTEMPTY, or ENOENT for what it took first): try again, a
  // few times, rather than leave the rest in /tmp.
  for (int attempt = 1; attempt <= 5; ++attempt) {
    ec.clear();
    fs::remove_all(path_, ec);
    if (!ec || !fs::exists(path_)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
  }
}

PreparedExec::PreparedExec(const std::vector<std::string>& argv, const ProcessOptions& options) : argv_strings_(argv) {
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    auto equals = text.find('=');
    if (equals != std::string_view::npos) env.emplace(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
  }
  for (const auto& name : options.unset_env) env.erase(name);
  for (const auto& [name, value] : options.env) env[name] = value;
  for (const auto& [name, value] : env) env_strings_.push_back(name + "=" + value);
  program_ = argv.at(0);
  if (program_.find('/') == std::string::npos && env.count("PATH")) {
    // As execvp would, but on the child's PATH.
    std::istringstream dirs(env["PATH"]);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program_;
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) {
        program_ = candidate;
        break;
      }
    }
  }
  for (auto& arg : argv_strings_) argv_.push_back(arg.data());
  argv_.push_back(nullptr);
  for (auto& entry : env_strings_) envp_.push_back(entry.data());
  envp_.push_back(nullptr);
  if (options.cwd) cwd_ = options.cwd->string();
  failure_ = "exec " + argv.at(0) + " failed\n";
}

void PreparedExec::exec() const {
  if (!cwd_.empty() && ::chdir(cwd_.c_str()) != 0) ::_exit(127);
  ::execve(program_.c_str(), argv_.data(), envp_.data());
  (void)!::write(2, failure_.data(), failure_.size());
  ::_exit(127);
}

ProcessResult run(const std::vector<std::string>& argv, const ProcessOptions& options) {
  const PreparedExec child(argv, options);
  // Close-on-exec, so that a child started by another thread at the same time does not hold
  // these pipes open (dup2 onto 0, 1 and 2 clears the flag on the child's copies).
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(in_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    child.exec();
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  // Feed stdin and drain both outputs together so no pipe fills up and blocks the child.
  std::size_t written = 0;
  if (options.stdin_data.empty()) close(in_pipe[1]), in_pipe[1] = -1;
  else fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  ProcessResult result;
  bool out_open = true, err_open = true;
  char buffer[65536];
  while (out_open || err_open) {
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[n++] = {err_pipe[0], POLLIN, 0};
    if (in_pipe[1] >= 0) fds[n++] = {in_pipe[1], POLLOUT, 0};
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_pipe[1]) {
        ssize_t w = write(in_pipe[1], options.stdin_data.data() + written, options.stdin_data.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 || written == options.stdin_data.size()) close(in_pipe[1]), in_pipe[1] = -1;
        continue;
      }
      ssize_t r = read(fds[i].fd, buffer, sizeof buffer);
      bool is_out = fds[i].fd == out_pipe[0];
      if (r <= 0) {
        (is_out ? out_open : err_open) = false;
      } else {
        (is_out ? result.out : result.err).append(buffer, static_cast<std::size_t>(r));
      }
    }
  }
  if (in_pipe[1] >= 0) close(in_pipe[1]);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return result;
}

std::string show(const ProcessResult& result) {
  return "exit " + std::to_string(result.exit_code) + "\nstdout:\n" + result.out + "\nstderr:\n" + result.err;
}

ProcessResult run_podplane(const std::vector<std::string>& args, const ProcessOptions& options) {
  std::vector<std::string> argv{podplane_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

ProcessOptions with_deps_root(const fs::path& root) {
  ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = root.string();
  return options;
}

ProcessOptions traceable(ProcessOptions options) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  if (asan != nullptr && options.env.count("ASAN_OPTIONS") == 0) options.env["ASAN_OPTIONS"] = std::string(asan) + ":detect_leaks=0";
  return options;
}

pid_t start_podplane(const std::vector<std::string>& args, const ProcessOptions& options) {
  std::vector<std::string> argv{podplane_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const PreparedExec child(argv, options);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDWR);
    for (int fd : {0, 1, 2}) dup2(null_fd, fd);
    child.exec();
  }
  return pid;
}

fs::path podplane_binary() { return PODPLANE_BINARY; }
fs::path source_dir() { return PODPLANE_SOURCE_DIR; }
fs::path test_data_dir() { return PODPLANE_TEST_DATA_DIR; }
fs::path build_dir() { return PODPLANE_BUILD_DIR; }

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file(const fs::path& file, const std::string& content) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

bool have_program(const std::string& name) {
  return run({"sh", "-c", "command -v " + name + " >/dev/null"}).exit_code == 0;
}

fs::path make_archive(const fs::path& path, const std::string& script) {
  std::string program = "import io,sys,tarfile,zipfile\npath=sys.argv[1]\n";
  if (path.extension() == ".zip") {
    program += "z=zipfile.ZipFile(path,'w')\n" + script + "\nz.close()\n";
  } else {
    program +=
        "t=tarfile.open(path,'w:gz')\n"
        "def add(name, data=b'x', kind=tarfile.REGTYPE, link='', mode=0o644):\n"
        "    i=tarfile.TarInfo(name); i.type=kind; i.linkname=link; i.mode=mode; i.size=len(data) if kind==tarfile.REGTYPE else 0\n"
        "    t.addfile(i, io.BytesIO(data) if kind==tarfile.REGTYPE else None)\n" +
        script + "\nt.close()\n";
  }
  fs::create_directories(path.parent_path());
  auto result = run({"python3", "-c", program, path.string()});
  if (result.exit_code != 0) throw std::runtime_error("python3 failed: " + result.err);
  return path;
}

ScopedEnv::ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) old_ = old;
  if (value) setenv(name_.c_str(), value->c_str(), 1);
  else unsetenv(name_.c_str());
}

ScopedEnv::~ScopedEnv() {
  if (old_) setenv(name_.c_str(), old_->c_str(), 1);
  else unsetenv(name_.c_str());
}

std::string mirror_serve_host_blocks(const std::string& base) {
  std::string text;
  for (const char* host : {"registry.opentofu.org", "registry.terraform.io"}) {
    text += std::string("host \"") + host + "\" {\n  services = {\n    \"providers.v1\" = \"" + base + "v1/providers/" +
            host + "/\"\n    \"modules.v1\" = \"" + base + "v1/modules/" + host + "/\"\n  }\n}\n";
  }
  return text;
}

}  // namespace podplane::test
