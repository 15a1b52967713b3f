#pragma once
// A private temp dir for files that must be read or checked before they enter the store;
// removed with everything in it when destroyed, or by the signal handler of main() when
// SIGINT/SIGTERM/SIGHUP ends the process first. Not shared between threads.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>

#include "base/remove_on_signal.hpp"

namespace podplane {

namespace detail {

// "<pid>-<n>", both decimal numbers and the pid positive: the pid.
inline std::optional<pid_t> pid_of_run_suffix(std::string_view suffix) {
  const auto dash = suffix.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == suffix.size()) return std::nullopt;
  if (suffix.find_first_not_of("0123456789", dash + 1) != std::string_view::npos) return std::nullopt;
  pid_t pid = 0;
  auto [end, error] = std::from_chars(suffix.data(), suffix.data() + dash, pid);
  if (error != std::errc{} || end != suffix.data() + dash || pid <= 0) return std::nullopt;
  return pid;
}

}  // namespace detail

// The pid of the run that made the scratch dir called `name` ("<prefix><pid>-<n>", whatever
// the prefix); nothing when the name is not of that form.
inline std::optional<pid_t> scratch_dir_pid(std::string_view name) {
  const auto last = name.rfind('-');
  if (last == std::string_view::npos || last == 0) return std::nullopt;
  const auto before = name.rfind('-', last - 1);
  return detail::pid_of_run_suffix(name.substr(before == std::string_view::npos ? 0 : before + 1));
}

// Whether no process runs with `pid` any more. A process of another user answers EPERM, not
// ESRCH: it counts as running.
inline bool run_is_gone(pid_t pid) { return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH; }

// Removes from `parent` the scratch dirs "<prefix><pid>-<n>" that a run killed by SIGKILL (or
// the OOM killer) left behind: those whose pid no longer runs and that belong to this user. No
// handler runs on SIGKILL, and a killed `deps download` would otherwise leave its os images,
// hundreds of MiB, in /tmp for good. Dirs of other users are never touched (and their live
// processes answer EPERM, not ESRCH). Not covered: a live run of the same user in another pid
// namespace that shares this /tmp (a container without a /tmp of its own), whose pid is not
// seen here.
inline void remove_scratch_of_dead_runs(const std::filesystem::path& parent, const std::string& prefix) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const auto pid = detail::pid_of_run_suffix(std::string_view(name).substr(prefix.size()));
    if (!pid) continue;
    struct stat info{};
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid()) continue;
    if (!run_is_gone(*pid)) continue;
    std::error_code ignored;
    std::filesystem::remove_all(it->path(), ignored);
  }
}

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) : ScratchDir(std::filesystem::temp_directory_path(), prefix) {}
  // Under `parent` instead: what is made there can be renamed into place on its file system.
  ScratchDir(const std::filesystem::path& parent, const std::string& prefix) {
    std::random_device random;
    remove_scratch_of_dead_runs(parent, prefix);
    path_ = parent / (prefix + std::to_string(getpid()) + "-" + std::to_string(random()));
    remove_on_signal_.emplace(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::optional<RemoveOnSignal> remove_on_signal_;
};

}  // namespace podplane
