#pragma once
// Running a command the way the benchmarks time it: fork/exec with stdout and stderr to
// /dev/null, and wait4 for the child's own wall time, CPU time and peak RSS (ru_maxrss, which
// a benchmark's own resident pages would inflate if it measured itself). A command that fails
// ends the benchmark: a timing of a failed run means nothing. Header-only; each benchmark is
// one executable.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace podplane::bench {

struct MeasuredRun {
  double seconds = 0;
  double cpu_seconds = -1;  // user + system; -1 when not known (e.g. a server still running)
  long max_rss_kib = 0;
};

inline double seconds_of(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

// Runs `argv` with `env` added to this process's environment.
inline MeasuredRun run_measured(const std::vector<std::string>& argv,
                                const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::fflush(stdout);  // or the child inherits and repeats our buffered lines
  std::fflush(stderr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::FILE* out = std::freopen("/dev/null", "w", stdout);
    std::FILE* err = std::freopen("/dev/null", "w", stderr);
    (void)out, (void)err;
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  MeasuredRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.cpu_seconds = seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
  run.max_rss_kib = usage.ru_maxrss;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "command failed (status %d):", status);
    for (const auto& a : argv) std::fprintf(stderr, " %s", a.c_str());
    std::fprintf(stderr, "\n");
    std::exit(1);
  }
  return run;
}

}  // namespace podplane::bench
