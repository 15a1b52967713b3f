#include "checks/stack_check.hpp"

#include <memory>

#include "base/error.hpp"
#include "base/url.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;

namespace {

std::string engine_flag(lockfile::Engine engine) {
  return engine == lockfile::Engine::terraform ? " --engine terraform" : "";
}

}  // namespace

RootCheckSource mirror_source(const std::string& url) {
  RootCheckSource source;
  source.mirror_url = without_trailing_slashes(url);
  if (!has_http_scheme(source.mirror_url))
    throw UsageError("--mirror: expected the URL of a `podplane mirror serve`, such as https://mirror.site:8443, got '" +
                     url + "'");
  source.http = net::HttpOptions::from_environment();
  return source;
}

CheckReport check_roots(const RootCheckSource& source, const std::vector<fs::path>& roots,
                        const StackCheckOptions& options,
                        const std::function<void(const fs::path& root, const CheckReport& report)>& on_root) {
  CheckReport all;
  std::shared_ptr<const EngineMirror> store_mirror;  // started for the first root that reaches its engine run
  for (const auto& root_dir : roots) {
    const fs::path root = fs::absolute(root_dir).lexically_normal();
    CheckReport report;
    CheckReporter out(report);
    const auto needs = check_root(source, root, options.root, out);
    if (needs) {
      // Through the mirror given, else through the store's own, started once for all roots.
      auto setup = [&]() {
        EngineMirror mirror{source.mirror_url, std::nullopt};
        if (source.mirror_url.empty()) {
          if (!store_mirror) store_mirror = options.start_store_mirror();
          mirror = *store_mirror;
        }
        return through_mirror(mirror, {needs->registry_hosts, needs->git_hosts});
      };
      const std::string repo_root =
          options.root.repo_root ? " --repo-root " + options.root.repo_root->string() : "";
      const EngineRemedies remedies{"podplane stack check " + root.string() + options.root.flags,
                                    "podplane deps tf" + engine_flag(needs->engine) + " --stack " + root.string() +
                                        repo_root + " --write-lock (online)"};
      check_engine_init(setup, root, needs->boundary, needs->engine, options.engine, remedies, out);
    }
    on_root(root, report);
    all.add(report);
  }
  return all;
}

}  // namespace podplane::checks
