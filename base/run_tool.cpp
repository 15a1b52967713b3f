#include "base/run_tool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <unistd.h>

#include <cctype>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/unique_fd.hpp"

extern char** environ;

namespace podplane {
namespace {

constexpr std::size_t kMaxOut = 4u << 20;
constexpr std::size_t kMaxErr = 64u << 10;

// posix_spawn file actions as a handle of their own, destroyed on every path.
class SpawnActions {
 public:
  SpawnActions() { ::posix_spawn_file_actions_init(&actions_); }
  ~SpawnActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_{};
};

std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("cannot make a pipe: ") + std::strerror(errno));
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace

ToolRun run_tool(const std::vector<std::string>& argv, const std::vector<std::string>& environment) {
  if (argv.empty()) throw Error("run_tool: no program given");
  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();
  SpawnActions actions;
  ::posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(actions.get(), out_write.get(), 1);
  ::posix_spawn_file_actions_adddup2(actions.get(), err_write.get(), 2);
  std::vector<std::string> strings = argv;
  std::vector<char*> args = exec_array(strings);
  std::vector<std::string_view> replaced;
  for (const auto& variable : environment) replaced.push_back(std::string_view(variable).substr(0, variable.find('=')));
  std::vector<std::string> environment_strings = environment_without(replaced);
  environment_strings.insert(environment_strings.end(), environment.begin(), environment.end());
  std::vector<char*> envp = exec_array(environment_strings);
  pid_t pid = 0;
  int spawned = ::posix_spawnp(&pid, args[0], actions.get(), nullptr, args.data(), environment.empty() ? environ : envp.data());
  ToolRun run;
  if (spawned == ENOENT) {
    run.exit_code = 127;
    run.missing = true;
    return run;
  }
  if (spawned != 0) throw Error("cannot start " + argv[0] + ": " + std::strerror(spawned));
  out_write.reset();
  err_write.reset();

  // Both pipes at once: a tool that fills one while we block on the other would never end.
  pollfd fds[2] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  const std::size_t limits[2] = {kMaxOut, kMaxErr};
  int open_pipes = 2;
  char buffer[1 << 16];
  while (open_pipes > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_pipes;
        continue;
      }
      std::size_t room = limits[i] - std::min(limits[i], sinks[i]->size());
      sinks[i]->append(buffer, std::min(room, static_cast<std::size_t>(n)));
    }
  }
  run.exit_code = wait_exit_code(pid, argv[0]);
  while (!run.err.empty() && std::isspace(static_cast<unsigned char>(run.err.back()))) run.err.pop_back();
  return run;
}

}  // namespace podplane
