#pragma once
// Helpers shared by every test: a fresh temp dir per test, running programs (the podplane
// binary, gpg, git, go) with captured output, and small file utilities.
#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace podplane::test {

namespace fs = std::filesystem;

// A fresh directory under $TMPDIR, removed (made writable first) when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

struct ProcessResult {
  int exit_code = -1;   // -signal when killed by a signal
  std::string out;
  std::string err;
};

// A finished program in words, for a failed assertion: its exit code, then its stdout and its
// stderr, each under its own heading.
std::string show(const ProcessResult& result);

struct ProcessOptions {
  std::map<std::string, std::string> env;  // added to (or replacing in) the inherited environment
  std::vector<std::string> unset_env;
  std::optional<fs::path> cwd;
  std::string stdin_data;
};

// What a forked child needs to exec argv with `options` (the environment, argv[0] looked up on
// the child's PATH, the working directory), all of it made before the fork: tests fork from
// several threads at once, and a child of a multi-threaded process may only call
// async-signal-safe functions until it execs (setenv's malloc in the child deadlocked under
// AddressSanitizer, whose allocator lock another thread held at the fork).
class PreparedExec {
 public:
  PreparedExec(const std::vector<std::string>& argv, const ProcessOptions& options);
  // In the forked child: chdir and execve only; exits 127 when they fail.
  [[noreturn]] void exec() const;

 private:
  std::vector<std::string> argv_strings_, env_strings_;
  std::vector<char*> argv_, envp_;
  std::string program_, cwd_, failure_;
};

// Runs argv[0] (looked up on PATH) to completion, capturing stdout and stderr.
ProcessResult run(const std::vector<std::string>& argv, const ProcessOptions& options = {});
// Runs the podplane binary under test.
ProcessResult run_podplane(const std::vector<std::string>& args, const ProcessOptions& options = {});
// Starts it and returns at once, its stdin, stdout and stderr on /dev/null: for a test that
// kills it midway (the caller kills and reaps the pid).
pid_t start_podplane(const std::vector<std::string>& args, const ProcessOptions& options = {});
// Options that point podplane at the store under `root` (PODPLANE_DEPS_CACHE_DIR).
ProcessOptions with_deps_root(const fs::path& root);
// `options` for a program run under strace: in a sanitizer build (scripts/test-sanitize sets
// ASAN_OPTIONS), leak checking is turned off for it, since LeakSanitizer stops with a fatal
// error under ptrace. Elsewhere `options` is returned as it is.
ProcessOptions traceable(ProcessOptions options);
fs::path podplane_binary();
fs::path source_dir();
fs::path test_data_dir();
fs::path build_dir();

std::string read_file(const fs::path& file);
void write_file(const fs::path& file, const std::string& content);  // creates parent dirs
bool have_program(const std::string& name);  // on PATH

// Builds an archive at `path` with python's tarfile/zipfile (a ".zip" name makes a zip, any
// other a tar.gz); `script` adds members to `z` (zipfile.ZipFile) or, for a tar, through
// add(name, data=b'x', kind=tarfile.REGTYPE, link='', mode=0o644). Returns `path`.
fs::path make_archive(const fs::path& path, const std::string& script);

// Sets (or, with std::nullopt, unsets) an environment variable of this process for one scope
// and restores the old value after it. Tests run one per process under CTest.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// A CLI config whose host blocks send both origin registries (registry.opentofu.org and
// registry.terraform.io) to a `podplane mirror serve` at `base` (ending in '/').
std::string mirror_serve_host_blocks(const std::string& base);

}  // namespace podplane::test
