#include "tests/support/upstream.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace podplane::test {

namespace {

std::vector<std::string> build_args_of(const FixtureOptions& options) {
  std::vector<std::string> args;
  for (const auto& name : options.corrupt_zip) args.insert(args.end(), {"--corrupt-zip", name});
  for (const auto& name : options.wrong_key) args.insert(args.end(), {"--wrong-key", name});
  for (const auto& name : options.shasums_mismatch) args.insert(args.end(), {"--shasums-mismatch", name});
  for (const auto& spec : options.add_provider) args.insert(args.end(), {"--add-provider", spec});
  for (const auto& spec : options.add_version) args.insert(args.end(), {"--add-version", spec});
  if (options.zip_size) args.insert(args.end(), {"--zip-size", std::to_string(*options.zip_size)});
  if (options.os_image_mib) args.insert(args.end(), {"--os-image-mib", std::to_string(*options.os_image_mib)});
  if (options.runnable_plugin) args.insert(args.end(), {"--runnable-plugin", *options.runnable_plugin});
  if (!options.boot_fault.empty()) args.insert(args.end(), {"--boot-fault", options.boot_fault});
  return args;
}

// Trees built during this test binary's run, by their build arguments. Building takes a
// second or two (key generation, git); most tests can share one tree and vary only the server.
std::shared_ptr<TempDir> shared_tree(const std::vector<std::string>& args) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::shared_ptr<TempDir>> trees;
  std::lock_guard lock(mutex);
  auto& tree = trees[args];
  if (!tree) {
    auto dir = std::make_shared<TempDir>();
    build_fixture(dir->path() / "upstream", args);
    tree = dir;
  }
  return tree;
}

nlohmann::json read_json(const fs::path& file) { return nlohmann::json::parse(read_file(file)); }

}  // namespace

fs::path FixtureUpstream::build_script() { return source_dir() / "tests" / "tools" / "upstream" / "build_fixture.py"; }
fs::path FixtureUpstream::serve_script() { return source_dir() / "tests" / "tools" / "upstream" / "serve.py"; }

void build_fixture(const fs::path& out_dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"python3", FixtureUpstream::build_script().string(), out_dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = run(argv);
  if (result.exit_code != 0) {
    throw std::runtime_error("build_fixture.py failed (exit " + std::to_string(result.exit_code) + "):\n" + result.out +
                             result.err);
  }
}

FixtureUpstream::FixtureUpstream(FixtureOptions fixture, ServeOptions serve) {
  if (!have_program("python3")) throw std::runtime_error("python3 is needed for the fixture upstream (scripts/setup)");
  auto args = build_args_of(fixture);
  if (fixture.sharing == FixtureOptions::Sharing::shared) {
    tree_dir_ = shared_tree(args);
  } else {
    tree_dir_ = std::make_shared<TempDir>();
    build_fixture(tree_dir_->path() / "upstream", args);
  }
  root_ = tree_dir_->path() / "upstream";
  fixture_ = read_json(root_ / "fixture.json");
  run_dir_ = std::make_unique<TempDir>();
  log_file_ = run_dir_->path() / "access.log";
  start(serve);
}

FixtureUpstream::~FixtureUpstream() { stop(); }

void FixtureUpstream::start(const ServeOptions& serve) {
  std::vector<std::string> argv{"python3", serve_script().string(), "--root", root_.string(), "--port", "0",
                                "--log", log_file_.string()};
  if (serve.scheme == ServeOptions::Scheme::http) argv.push_back("--plain");
  if (serve.delay_ms > 0) argv.insert(argv.end(), {"--delay-ms", std::to_string(serve.delay_ms)});
  for (const auto& spec : serve.fail_first) argv.insert(argv.end(), {"--fail-first", spec});
  for (const auto& spec : serve.cut_after) argv.insert(argv.end(), {"--cut-after", spec});
  for (const auto& spec : serve.ignore_range) argv.insert(argv.end(), {"--ignore-range", spec});
  for (const auto& spec : serve.drip) argv.insert(argv.end(), {"--drip", spec});
  for (const auto& spec : serve.lie_length) argv.insert(argv.end(), {"--lie-length", spec});
  for (const auto& spec : serve.stream) argv.insert(argv.end(), {"--stream", spec});
  for (const auto& spec : serve.hold_until) argv.insert(argv.end(), {"--hold-until", spec});
  if (!serve.proxy_to.empty()) argv.insert(argv.end(), {"--proxy-to", serve.proxy_to});
  if (!serve.location_to.empty()) argv.insert(argv.end(), {"--location-to", serve.location_to});
  if (!serve.registry_to.empty()) argv.insert(argv.end(), {"--registry-to", serve.registry_to});
  if (serve.registry_token) argv.push_back("--registry-token");
  if (!serve.api_token.empty()) argv.insert(argv.end(), {"--api-token", serve.api_token});
  if (!serve.token_login.empty()) argv.insert(argv.end(), {"--token-login", serve.token_login});
  if (!serve.git_login.empty()) argv.insert(argv.end(), {"--git-login", serve.git_login});

  const fs::path stderr_file = run_dir_->path() / "serve.stderr";
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // The server must not outlive a test binary that crashes or is killed.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    int err = open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int null_in = open("/dev/null", O_RDONLY);
    dup2(null_in, 0);
    dup2(out_pipe[1], 1);
    if (err >= 0) dup2(err, 2);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  pid_ = pid;
  stdout_fd_ = out_pipe[0];

  // Readiness: serve.py prints "listening <base>" once its socket accepts connections.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd fd{stdout_fd_, POLLIN, 0};
    int ready = poll(&fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char buffer[256];
    ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, static_cast<std::size_t>(n));
  }
  const std::string prefix = "listening ";
  if (line.rfind(prefix, 0) != 0 || line.find('\n') == std::string::npos) {
    stop();
    std::string err;
    try {
      err = read_file(stderr_file);
    } catch (...) {
    }
    throw std::runtime_error("serve.py did not become ready; stdout: " + line + "\nstderr: " + err);
  }
  base_url_ = line.substr(prefix.size(), line.find('\n') - prefix.size());
  port_ = std::stoi(base_url_.substr(base_url_.rfind(':') + 1));
}

void FixtureUpstream::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (stdout_fd_ >= 0) {
    close(stdout_fd_);
    stdout_fd_ = -1;
  }
}

void FixtureUpstream::restart(ServeOptions serve) {
  stop();
  start(serve);
}

void FixtureUpstream::rebuild(const std::vector<std::string>& build_args) {
  if (tree_dir_.use_count() > 1 || !fs::exists(root_)) {
    throw std::runtime_error("FixtureUpstream::rebuild needs FixtureOptions::Sharing::private_copy");
  }
  build_fixture(root_, build_args);
  fixture_ = read_json(root_ / "fixture.json");
}

std::vector<AccessLogEntry> FixtureUpstream::access_log() const {
  std::vector<AccessLogEntry> entries;
  std::ifstream in(log_file_);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;  // a line being written right now
    AccessLogEntry entry;
    entry.method = j.value("method", "");
    entry.path = j.value("path", "");
    entry.status = j.value("status", 0);
    entry.bytes = j.value("bytes", std::uint64_t{0});
    if (j.contains("range") && j["range"].is_string()) entry.range = j["range"].get<std::string>();
    if (j.contains("fault") && j["fault"].is_string()) entry.fault = j["fault"].get<std::string>();
    entry.authorization = j.value("authorization", false);
    entry.start = j.value("start", 0.0);
    entry.end = j.value("end", 0.0);
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::vector<AccessLogEntry> FixtureUpstream::requests(const std::string& path_regex, std::optional<int> status) const {
  std::regex re(path_regex);
  std::vector<AccessLogEntry> matching;
  for (auto& entry : access_log()) {
    if (std::regex_search(entry.path, re) && (!status || entry.status == *status)) matching.push_back(std::move(entry));
  }
  return matching;
}

std::size_t max_concurrency(const std::vector<AccessLogEntry>& entries) {
  std::vector<std::pair<double, int>> events;
  for (const auto& e : entries) {
    events.emplace_back(e.start, +1);
    events.emplace_back(e.end, -1);
  }
  std::sort(events.begin(), events.end());  // at equal times an end (-1) sorts before a start
  std::size_t best = 0;
  long now = 0;
  for (const auto& [time, delta] : events) {
    now += delta;
    best = std::max(best, static_cast<std::size_t>(std::max(now, 0L)));
  }
  return best;
}

fs::path FixtureUpstream::write_cli_config(const fs::path& file, const CliConfigOptions& options) const {
  std::ostringstream out;
  for (const char* host : {"registry.opentofu.org", "registry.terraform.io"}) {
    out << "host \"" << host << "\" {\n"
        << "  services = {\n"
        << "    \"providers.v1\" = \"" << base_url_ << "/v1/providers/\"\n"
        << "    \"modules.v1\" = \"" << base_url_ << "/v1/modules/\"\n"
        << "  }\n"
        << "}\n\n";
  }
  if (options.providers == CliConfigOptions::ProviderSource::network_mirror) {
    out << "provider_installation {\n"
        << "  network_mirror {\n"
        << "    url = \"" << base_url_ << "/mirror/\"\n"
        << "  }\n"
        << "}\n";
  }
  for (const auto& line : options.extra_lines) out << line << "\n";
  write_file(file, out.str());
  return file;
}

std::map<std::string, std::string> FixtureUpstream::env(const fs::path& deps_root, const fs::path& cli_config) const {
  return {{"TF_CLI_CONFIG_FILE", cli_config.string()},
          {"SSL_CERT_FILE", ca_file().string()},
          {"PODPLANE_DEPS_URL", base_url_},
          {"PODPLANE_DEPS_CACHE_DIR", deps_root.string()}};
}

}  // namespace podplane::test
