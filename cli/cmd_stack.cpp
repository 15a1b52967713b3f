// podplane stack check DIR…: whether `init` of any OpenTofu/Terraform root finds everything
// offline, from the store or from a running mirror.
#include <iostream>
#include <memory>

#include "base/error.hpp"
#include "cli/commands.hpp"
#include "cli/open_store.hpp"
#include "generator/check.hpp"
#include "lockfile/tf_config.hpp"
#include "mirror/root_check.hpp"

namespace podplane::cli {

namespace {

namespace fs = std::filesystem;

struct StackCheckOptions {
  std::vector<std::string> roots;
  std::vector<std::string> platforms;
  std::string mirror_url;
};

// Whether the root (or a local module it calls) calls a registry, git or archive module: the
// engine's offline init would have to fetch it, so only podplane's own rows can speak for it.
bool calls_remote_modules(const fs::path& root) {
  try {
    return !lockfile::read_module_requirements(root).remote_modules.empty();
  } catch (const Error&) {
    return false;  // check_root reports a root it cannot read; the engine run shows its own error
  }
}

void run_stack_check(const StackCheckOptions& options) {
  std::optional<cache::Store> store;
  mirror::RootCheckSource source;
  if (options.mirror_url.empty()) {
    store.emplace(open_existing_store());
    source.store = &*store;
  } else {
    source.mirror_url = options.mirror_url;
    while (source.mirror_url.ends_with('/')) source.mirror_url.pop_back();
    if (!source.mirror_url.starts_with("https://") && !source.mirror_url.starts_with("http://"))
      throw UsageError("--mirror: expected the URL of a `podplane mirror serve`, such as https://mirror.site:8443, got '" +
                       options.mirror_url + "'");
    source.http = mirror::HttpOptions::from_environment();
  }
  CheckReport all;
  for (const auto& root_text : options.roots) {
    const fs::path root = fs::absolute(root_text).lexically_normal();
    CheckReport report;
    CheckReporter out(report);
    mirror::check_root(source, root, options.platforms, out);
    // The engine is the judge where it is installed; through the store's tfrc, as `init` on the site runs.
    if (store && fs::exists(root / ".terraform.lock.hcl")) {
      if (calls_remote_modules(root))
        out.ok("-", "engine init -lockfile=readonly (offline)",
               "not run: the root calls remote modules, which the engine would fetch from their registry; the module "
               "rows above are podplane's reading of the store");
      else
        generator::check_engine_init(*store, root, mirror::root_engine(root), out, "podplane stack check " + root.string());
    }
    std::cout << "Root " << root.string() << "\n" << render_check_table(report) << "\n";
    all.rows.insert(all.rows.end(), report.rows.begin(), report.rows.end());
    for (const auto& remedy : report.remedies)
      if (std::find(all.remedies.begin(), all.remedies.end(), remedy) == all.remedies.end()) all.remedies.push_back(remedy);
  }
  if (all.ok()) {
    std::cout << "All checks passed: `init -lockfile=readonly` of " << (options.roots.size() == 1 ? "this root" : "these roots")
              << " needs nothing beyond " << (store ? "the store" : options.mirror_url) << ".\n";
    return;
  }
  std::string message = "stack check failed; to fix:";
  for (const auto& remedy : all.remedies) message += "\n  " + remedy;
  throw Error(message);
}

}  // namespace

void register_stack_commands(CLI::App& group, const GlobalOptions& /*global*/) {
  auto options = std::make_shared<StackCheckOptions>();
  auto* check = group.add_subcommand(
      "check", "Prove that `init` of any OpenTofu/Terraform root needs nothing beyond the store (or a mirror), per platform");
  check->add_option("DIR", options->roots, "Root module directory (with its .terraform.lock.hcl); repeatable")
      ->required()
      ->check(CLI::ExistingDirectory);
  check->add_option("--platform", options->platforms,
                    "Platform OS_ARCH to check (repeatable; default: every platform the store holds of the lock's "
                    "providers, else this machine's)")
      ->delimiter(',');
  check->add_option("--mirror", options->mirror_url,
                    "Check against a running `podplane mirror serve` at this URL instead of the store (SSL_CERT_FILE "
                    "trusts its CA)");
  check->callback([options] { run_stack_check(*options); });
}

}  // namespace podplane::cli
