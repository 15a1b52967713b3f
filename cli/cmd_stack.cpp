// podplane stack check DIR…: whether `init` of any OpenTofu/Terraform root finds everything
// offline, from the store or from a running mirror.
#include <iostream>
#include <memory>
#include <optional>

#include "base/error.hpp"
#include "checks/stack_check.hpp"
#include "fetch/root_needs.hpp"
#include "fetch/vendor_modules.hpp"
#include "cli/commands.hpp"
#include "cli/open_store.hpp"
#include "mirror/loopback_mirror.hpp"

namespace podplane::cli {

namespace {

namespace fs = std::filesystem;

struct StackCheckFlags {
  std::vector<std::string> roots;
  std::vector<std::string> platforms;
  std::string mirror_url;
  std::string repo_root;
  bool without_engine = false;
};

// A loopback mirror of the store and what the engine child needs of it, alive together.
struct StoreMirror {
  explicit StoreMirror(const fs::path& deps_root) : server(deps_root), engine{server.url(), server.ca_file()} {}
  mirror::LoopbackMirror server;
  checks::EngineMirror engine;
};

// The flags a printed command repeats so that it checks what this run checked.
std::string repeated_flags(const StackCheckFlags& flags) {
  std::string out;
  if (!flags.mirror_url.empty()) out += " --mirror " + flags.mirror_url;
  for (const auto& platform : flags.platforms) out += " --platform " + platform;
  return out;
}

void run_stack_check(const StackCheckFlags& flags) {
  std::optional<cache::Store> store;
  checks::RootCheckSource source;
  if (flags.mirror_url.empty()) {
    store.emplace(open_existing_store());
    source.store = &*store;
  } else {
    source = checks::mirror_source(flags.mirror_url);
  }
  checks::StackCheckOptions options;
  options.root.platforms = flags.platforms;
  if (!flags.repo_root.empty()) options.root.repo_root = fs::absolute(flags.repo_root).lexically_normal();
  options.root.flags = repeated_flags(flags) + (options.root.repo_root ? " --repo-root " + options.root.repo_root->string() : "");
  options.engine = flags.without_engine ? checks::EngineInit::skip : checks::EngineInit::required;
  if (store)
    options.start_store_mirror = [root = store->root()]() -> std::shared_ptr<const checks::EngineMirror> {
      auto mirror = std::make_shared<StoreMirror>(root);
      return {mirror, &mirror->engine};
    };
  const std::vector<fs::path> roots(flags.roots.begin(), flags.roots.end());
  auto print = [](const fs::path& root, const checks::CheckReport& report) {
    std::cout << "Root " << root.string() << "\n" << checks::render_check_table(report) << "\n";
  };
  const checks::CheckReport all = checks::check_roots(source, roots, options, print);
  const std::string these = flags.roots.size() == 1 ? "this root" : "these roots";
  if (all.proven()) {
    std::cout << "All checks passed: `init -lockfile=readonly` of " << these << " needs nothing beyond "
              << (store ? "the store" : flags.mirror_url) << ", and the engine itself proved it.\n";
    return;
  }
  if (all.ok() && flags.without_engine) {
    std::cout << "No check failed, without the engine (--without-engine): podplane's own reading says `init "
                 "-lockfile=readonly` of " << these << " needs nothing beyond " << (store ? "the store" : flags.mirror_url)
              << "; the engine did not prove it.\n";
    return;
  }
  std::string message = all.ok() ? "stack check is not proven: a check did not run; to run it:" : "stack check failed; to fix:";
  for (const auto& remedy : all.remedies) message += "\n  " + remedy;
  throw Error(message);
}

// `stack vendor ROOT`: the archive URL calls a check cannot redirect, written into the root.
void register_vendor(CLI::App& group, const GlobalOptions& global) {
  struct VendorFlags {
    std::string root, repo_root;
  };
  auto flags = std::make_shared<VendorFlags>();
  auto* vendor = group.add_subcommand(
      "vendor", "Write the stored packages of a root's archive-URL module calls into ROOT/vendor/modules/ and point the "
                "calls there (offline)");
  vendor->add_option("DIR", flags->root, "Root module directory")->required()->check(CLI::ExistingDirectory);
  vendor->add_option("--repo-root", flags->repo_root,
                     "The directory local module calls may lead into (default: the root's git repository, else the root)")
      ->check(CLI::ExistingDirectory);
  vendor->callback([flags, &global] {
    auto store = open_existing_store();
    std::optional<fs::path> repo_root;
    if (!flags->repo_root.empty()) repo_root = fs::absolute(flags->repo_root).lexically_normal();
    const auto result = fetch::vendor_archive_modules(store, flags->root, fetch::module_boundary(fs::absolute(flags->root), repo_root));
    for (const auto& call : result.vendored)
      std::cout << call.file.string() << ": source \"" << call.old_source << "\" -> \"" << call.new_source << "\"\n";
    if (!global.quiet && result.vendored.empty() && result.left.empty())
      std::cerr << "podplane: no module call of " << flags->root << " is by archive URL: nothing to vendor\n";
    if (!result.left.empty()) {
      std::string message = std::to_string(result.left.size()) + " archive call(s) left as they were:";
      for (const auto& left : result.left) message += "\n  " + left;
      throw Error(message);
    }
  });
}

}  // namespace

void register_stack_commands(CLI::App& group, const GlobalOptions& global) {
  register_vendor(group, global);
  auto options = std::make_shared<StackCheckFlags>();
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
  check->add_option("--repo-root", options->repo_root,
                    "The directory local module calls (`../modules/x`) may lead into (default: the root's git "
                    "repository, else the root itself)")
      ->check(CLI::ExistingDirectory);
  check->add_flag("--without-engine", options->without_engine,
                  "Accept podplane's own reading when the engine (tofu or terraform) is not on PATH, instead of "
                  "failing: the check then proves less");
  check->callback([options] { run_stack_check(*options); });
}

}  // namespace podplane::cli
