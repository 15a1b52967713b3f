#pragma once
// The CPU time a running process has spent so far (user + system, all its threads, from
// /proc/PID/stat), and optionally that of its children: how the benchmarks charge a server
// (a fixture, nginx) for the work of one measured row, as the difference of two readings.
// Header-only.
#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace podplane::bench {

// utime + stime of `pid`, and of its direct children when `with_children`. 0 for a process
// that is gone.
inline double process_cpu_seconds(pid_t pid, bool with_children = false) {
  auto read_stat = [](const std::string& name, pid_t& parent) -> double {
    std::ifstream in("/proc/" + name + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 4) parent = static_cast<pid_t>(std::stol(field));
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  };
  pid_t parent = 0;
  double total = read_stat(std::to_string(pid), parent);
  if (!with_children) return total;
  if (DIR* proc = ::opendir("/proc")) {
    while (dirent* entry = ::readdir(proc)) {
      std::string name = entry->d_name;
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      pid_t of = 0;
      double cpu = read_stat(name, of);
      if (of == pid) total += cpu;
    }
    ::closedir(proc);
  }
  return total;
}

}  // namespace podplane::bench
