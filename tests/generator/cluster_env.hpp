#pragma once
// One generator test's world: a temp dir holding a synthetic store (deps/) and a stack dir
// (stack/) with a sample config, and helpers to run `podplane cluster …` against them.
#include <sys/stat.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/generator/store_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {

struct ClusterEnv {
  explicit ClusterEnv(const std::string& sample = "aws", StoreFixtureOptions options = {})
      : fixture(std::make_unique<StoreFixture>(dir.path(), std::move(options))), stack(dir / "stack") {
    fs::create_directories(stack);
    fs::copy_file(test_data_dir() / "generator" / sample / "podplane.cluster.jsonc", config());
  }

  fs::path config() const { return stack / "podplane.cluster.jsonc"; }
  fs::path deps() const { return fixture->root(); }

  ProcessOptions options() const {
    ProcessOptions o;
    o.env["PODPLANE_DEPS_CACHE_DIR"] = deps().string();
    o.env["PODPLANE_DEPS_URL"] = "http://deps-from-env.internal:8080";
    o.unset_env = {"TF_CLI_CONFIG_FILE", "PODPLANE_TF_CMD"};
    o.cwd = stack;
    return o;
  }

  // `cluster check` judges by podplane's own reading here (--without-engine): the synthetic
  // store's stacks are tofu stacks of placeholder zips, which no engine could install.
  ProcessResult cluster(std::vector<std::string> args, std::optional<ProcessOptions> custom = std::nullopt) const {
    if (!args.empty() && args.front() == "check") args.push_back("--without-engine");
    args.insert(args.begin(), "cluster");
    return run_podplane(args, custom ? *custom : options());
  }

  // name → bytes of every regular file in the stack dir.
  std::map<std::string, std::string> snapshot() const {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(stack))
      if (entry.is_regular_file()) files[entry.path().filename().string()] = read_file(entry.path());
    return files;
  }

  // name → mtime in nanoseconds.
  std::map<std::string, long long> mtimes() const {
    std::map<std::string, long long> times;
    for (const auto& entry : fs::directory_iterator(stack)) {
      struct stat st {};
      ::stat(entry.path().c_str(), &st);
      times[entry.path().filename().string()] = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    }
    return times;
  }

  TempDir dir;
  std::unique_ptr<StoreFixture> fixture;
  fs::path stack;
};

}  // namespace podplane::test
