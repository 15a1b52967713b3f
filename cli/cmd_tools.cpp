// podplane tools install: an engine's program, or podplane itself, offline, from the store or a site mirror.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "base/error.hpp"
#include "cache/store.hpp"
#include "cli/commands.hpp"
#include "cli/open_store.hpp"
#include "cache/podplane_releases.hpp"
#include "fetch/podplane_install.hpp"
#include "fetch/tool_install.hpp"
#include "lockfile/version.hpp"

namespace podplane::cli {

namespace {

struct InstallArgs {
  std::string engine;
  std::string version;
  std::string to;
  std::string platform;
  std::string from;
  std::vector<std::string> trust;  // podplane --from: release keys
  bool allow_unsigned_release = false;
};

// podplane itself: its release tarball unpacked under --to (docs/tools.md).
void install_podplane_tree(const InstallArgs& args) {
  fetch::PodplaneInstallOptions options;
  try {
    options.version = lockfile::Version::parse(args.version).str();
    options.platform = args.platform.empty() ? lockfile::host_platform().str() : lockfile::Platform::parse(args.platform).str();
  } catch (const Error& error) {
    throw UsageError(error.what());
  }
  options.to = args.to;
  options.from_url = args.from;
  options.http = net::HttpOptions::from_environment();
  options.trusted_keys.assign(args.trust.begin(), args.trust.end());
  options.unsigned_releases = args.allow_unsigned_release ? fetch::UnsignedReleases::allow : fetch::UnsignedReleases::refuse;
  std::optional<cache::Store> store;
  if (options.from_url.empty()) store = open_for_reading(cache::default_deps_root());
  (void)fetch::install_podplane(store ? &*store : nullptr, options, std::cout);
}

}  // namespace

void register_tools_commands(CLI::App& group, const GlobalOptions& /*global*/) {
  auto args = std::make_shared<InstallArgs>();
  auto* install = group.add_subcommand(
      "install",
      "Put terraform or tofu (or podplane itself) in a directory from the store (or --from a site mirror), its digest checked "
      "first");
  install->add_option("ENGINE", args->engine, "terraform or tofu; podplane for podplane's own release tarball")
      ->required()
      ->check(CLI::IsMember({"terraform", "tofu", "podplane"}));
  install->add_option("VERSION", args->version, "The release, e.g. 1.9.8")->required();
  install
      ->add_option("--to", args->to,
                   "Directory to write the program into (created when missing); podplane: its release tree "
                   "podplane-<version>-<os>-<arch>/ goes there")
      ->required();
  install->add_option("--platform", args->platform, "Release platform OS_ARCH (default: this machine's)");
  install->add_option("--from", args->from,
                      "Base URL of a site's `mirror serve` or `mirror export` to take the release from instead of the store");
  auto* from = install->get_option("--from");
  install
      ->add_option("--trust", args->trust,
                   "podplane --from: a release key's public key (PEM, from `bundle keygen`) one of which must have signed "
                   "the release (`deps tools --podplane-release DIR --sign KEY`); repeatable")
      ->check(CLI::ExistingFile)
      ->needs(from);
  install
      ->add_flag("--allow-unsigned-release", args->allow_unsigned_release,
                 "podplane --from: install a release that carries no signature (its SHA256SUMS is then only the "
                 "server's word)")
      ->needs(from);
  install->callback([args] {
    if (args->engine != cache::kPodplaneReleaseAddress && (!args->trust.empty() || args->allow_unsigned_release))
      throw UsageError("--trust and --allow-unsigned-release are for `tools install podplane`: an engine release is checked "
                       "against its project's pinned key");
    if (args->engine == cache::kPodplaneReleaseAddress) {
      install_podplane_tree(*args);
      return;
    }
    fetch::ToolInstallOptions options;
    try {
      options.engine = lockfile::parse_engine(args->engine);
      options.version = lockfile::Version::parse(args->version).str();
      options.platform = args->platform.empty() ? lockfile::host_platform().str() : lockfile::Platform::parse(args->platform).str();
    } catch (const Error& error) {
      throw UsageError(error.what());
    }
    options.to = args->to;
    options.from_url = args->from;
    options.http = net::HttpOptions::from_environment();
    std::optional<cache::Store> store;
    if (options.from_url.empty()) store = open_for_reading(cache::default_deps_root());
    (void)fetch::install_tool(store ? &*store : nullptr, options, std::cout);
  });
}

}  // namespace podplane::cli
