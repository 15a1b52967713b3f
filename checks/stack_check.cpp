#include "checks/stack_check.hpp"

#include "base/error.hpp"
#include "checks/engine_init.hpp"
#include "lockfile/tf_config.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;

namespace {

// Whether the root (or a local module it calls) calls a registry, git or archive module: the
// engine's offline init would have to fetch it, so only podplane's own rows can speak for it.
bool calls_remote_modules(const fs::path& root) {
  try {
    return !lockfile::read_module_requirements(root).remote_modules.empty();
  } catch (const Error&) {
    return false;  // check_root reports a root it cannot read; the engine run shows its own error
  }
}

}  // namespace

RootCheckSource mirror_source(const std::string& url) {
  RootCheckSource source;
  source.mirror_url = url;
  while (source.mirror_url.ends_with('/')) source.mirror_url.pop_back();
  if (!source.mirror_url.starts_with("https://") && !source.mirror_url.starts_with("http://"))
    throw UsageError("--mirror: expected the URL of a `podplane mirror serve`, such as https://mirror.site:8443, got '" +
                     url + "'");
  source.http = mirror::HttpOptions::from_environment();
  return source;
}

CheckReport check_roots(const RootCheckSource& source, const std::vector<fs::path>& roots,
                        const std::vector<std::string>& platforms,
                        const std::function<void(const fs::path& root, const CheckReport& report)>& on_root) {
  CheckReport all;
  for (const auto& root_dir : roots) {
    const fs::path root = fs::absolute(root_dir).lexically_normal();
    CheckReport report;
    CheckReporter out(report);
    check_root(source, root, platforms, out);
    // The engine is the judge where it is installed; through the store's tfrc, as `init` on the site runs.
    if (source.store != nullptr && source.mirror_url.empty() && fs::exists(root / ".terraform.lock.hcl")) {
      if (calls_remote_modules(root))
        out.ok("-", "engine init -lockfile=readonly (offline)",
               "not run: the root calls remote modules, which the engine would fetch from their registry; the module "
               "rows above are podplane's reading of the store");
      else
        check_engine_init(*source.store, root, root_engine(root), out, "podplane stack check " + root.string());
    }
    on_root(root, report);
    all.add(report);
  }
  return all;
}

}  // namespace podplane::checks
