#pragma once
// A program running in the background for a test (a server): stdout is a pipe whose first
// line says it is ready, stderr goes to a file. Stopped (SIGTERM) when destroyed, and killed
// with the test process if that dies first.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace podplane::test {

class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::filesystem::path& err_file);
  ~Background() { stop(); }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  // The first line on stdout, or "" when the process ends or `timeout` passes first.
  std::string first_line(std::chrono::seconds timeout = std::chrono::seconds(60));
  // Sends `signal` and waits; returns the exit code (-signal when killed). Idempotent.
  int stop(int signal = 15 /* SIGTERM */);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int status_ = -1;
};

}  // namespace podplane::test
