// podplane stack check DIR…: whether `init` of any OpenTofu/Terraform root finds everything
// offline, from the store or from a running mirror.
#include <iostream>
#include <memory>
#include <optional>

#include "base/error.hpp"
#include "checks/stack_check.hpp"
#include "cli/commands.hpp"
#include "cli/open_store.hpp"

namespace podplane::cli {

namespace {

namespace fs = std::filesystem;

struct StackCheckOptions {
  std::vector<std::string> roots;
  std::vector<std::string> platforms;
  std::string mirror_url;
};

void run_stack_check(const StackCheckOptions& options) {
  std::optional<cache::Store> store;
  checks::RootCheckSource source;
  if (options.mirror_url.empty()) {
    store.emplace(open_existing_store());
    source.store = &*store;
  } else {
    source = checks::mirror_source(options.mirror_url);
  }
  const std::vector<fs::path> roots(options.roots.begin(), options.roots.end());
  auto print = [](const fs::path& root, const checks::CheckReport& report) {
    std::cout << "Root " << root.string() << "\n" << checks::render_check_table(report) << "\n";
  };
  const checks::CheckReport all = checks::check_roots(source, roots, options.platforms, print);
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
