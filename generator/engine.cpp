#include "generator/engine.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "lockfile/provider_names.hpp"

namespace podplane::generator {

namespace fs = std::filesystem;

namespace {

std::optional<fs::path> on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return fs::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    fs::path candidate = fs::path(dirs.substr(start, colon - start).empty() ? "." : dirs.substr(start, colon - start)) / name;
    if (::access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate)) return candidate;
    start = colon + 1;
  }
  return std::nullopt;
}

std::string shell_quote(const std::string& text) {
  if (text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:+,") == std::string::npos)
    return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::optional<fs::path> find_engine() {
  if (const char* command = std::getenv("PODPLANE_TF_CMD"); command != nullptr && *command != '\0') {
    auto found = on_path(command);
    if (!found) throw Error(std::string("PODPLANE_TF_CMD command \"") + command + "\" not found");
    return found;
  }
  for (const char* name : {"tofu", "terraform"}) {
    if (auto found = on_path(name)) return found;
  }
  return std::nullopt;
}

UserEngine engine_on_path() {
  for (auto engine : {lockfile::Engine::tofu, lockfile::Engine::terraform}) {
    if (auto found = find_engine(engine)) return {engine, found, "found " + found->string()};
  }
  return {lockfile::Engine::tofu, std::nullopt, "neither tofu nor terraform is on PATH; the default"};
}

std::optional<fs::path> find_engine(lockfile::Engine engine) {
  const std::string name(lockfile::engine_name(engine));
  const std::string other(lockfile::engine_name(engine == lockfile::Engine::terraform ? lockfile::Engine::tofu
                                                                                      : lockfile::Engine::terraform));
  if (const char* command = std::getenv("PODPLANE_TF_CMD"); command != nullptr && *command != '\0') {
    // The user's engine command, unless its name says it is the other engine.
    if (fs::path(command).filename().string().find(other) == std::string::npos) {
      auto found = on_path(command);
      if (!found) throw Error(std::string("PODPLANE_TF_CMD command \"") + command + "\" not found");
      return found;
    }
  }
  return on_path(name);
}

int run_engine(const fs::path& engine, const std::vector<std::string>& args, const fs::path& dir, const fs::path& tfrc) {
  std::vector<std::string> env_strings = environment_without({"TF_CLI_CONFIG_FILE"});
  env_strings.push_back("TF_CLI_CONFIG_FILE=" + tfrc.string());
  std::vector<std::string> argv_strings{engine.string()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  auto envp = exec_array(env_strings);
  auto argv = exec_array(argv_strings);

  pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("cannot start ") + engine.string() + ": " + std::strerror(errno));
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(127);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return wait_exit_code(pid, engine.string());
}

EngineOutput run_engine_captured(const fs::path& engine, const std::vector<std::string>& args, const fs::path& dir,
                                 const std::vector<std::string>& env) {
  std::vector<std::string> env_strings = env;
  std::vector<std::string> argv_strings{engine.string()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  auto envp = exec_array(env_strings);
  auto argv = exec_array(argv_strings);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(std::string("cannot start ") + engine.string() + ": " + std::strerror(errno));
  UniqueFd output(pipe_fds[0]);
  UniqueFd child_output(pipe_fds[1]);
  pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("cannot start ") + engine.string() + ": " + std::strerror(errno));
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(child_output.get(), 1);
    ::dup2(child_output.get(), 2);
    if (::chdir(dir.c_str()) != 0) ::_exit(127);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  child_output.reset();  // the read below ends when the child's copies close
  EngineOutput result;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(output.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (result.output.size() < (1u << 20)) result.output.append(buffer, static_cast<std::size_t>(n));
  }
  output.reset();
  result.exit_code = wait_exit_code(pid, engine.string());
  return result;
}

std::vector<std::string> manual_engine_commands(const fs::path& dir, const fs::path& tfrc, const std::string& engine_name) {
  std::string prefix = "cd " + shell_quote(dir.string()) + " && TF_CLI_CONFIG_FILE=" + shell_quote(tfrc.string()) + " " +
                       engine_name + " ";
  return {prefix + "init -lockfile=readonly", prefix + "apply"};
}

}  // namespace podplane::generator
