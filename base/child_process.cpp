#include "base/child_process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/error.hpp"

extern char** environ;

namespace podplane {

std::vector<char*> exec_array(std::vector<std::string>& strings) {
  std::vector<char*> array;
  array.reserve(strings.size() + 1);
  for (auto& entry : strings) array.push_back(entry.data());
  array.push_back(nullptr);
  return array;
}

std::vector<std::string> environment_without(const std::vector<std::string_view>& drop) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    bool dropped = false;
    for (auto name : drop) {
      bool prefix = !name.empty() && name.back() == '_';
      if (text.starts_with(name) && (prefix || (text.size() > name.size() && text[name.size()] == '='))) dropped = true;
    }
    if (!dropped) env.emplace_back(text);
  }
  return env;
}

void restore_host_loader_environment() {
  for (const char* name : {"LD_PRELOAD", "LD_AUDIT"}) {
    const std::string moved = std::string("PODPLANE_HOST_") + name;
    if (const char* value = std::getenv(moved.c_str()); value != nullptr) {
      ::setenv(name, value, 1);
      ::unsetenv(moved.c_str());
    }
  }
}

int wait_exit_code(pid_t pid, std::string_view what) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error("waiting for " + std::string(what) + ": " + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace podplane
