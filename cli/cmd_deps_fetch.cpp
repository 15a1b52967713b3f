// podplane deps tf | download | images | tools | status: the online commands that fill the store.
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "base/ed25519.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "cache/layout.hpp"
#include "cache/store.hpp"
#include "cli/commands.hpp"
#include "cli/flags.hpp"
#include "generator/config.hpp"
#include "generator/engine.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/provider_names.hpp"
#include "fetch/deps_download.hpp"
#include "fetch/deps_tf.hpp"
#include "fetch/images.hpp"
#include "fetch/deps_tools.hpp"
#include "lockfile/version.hpp"

namespace podplane::cli {
namespace {

struct TfArgs {
  std::vector<std::string> platforms;
  std::string engine;  // empty: the engine on PATH (generator::engine_on_path)
  std::vector<std::string> stacks;
  std::string repo_root;
  std::string cluster_config;
  int jobs = 8;
  bool allow_unverified = false;
  bool write_lock = false;
  bool upgrade = false;
};

struct DownloadArgs {
  std::vector<std::string> archs;
  std::vector<std::string> kinds;
  std::vector<std::string> providers;
  std::string cluster_config;
  bool dry_run = false;
  bool skip_seeds = false;
  int jobs = 8;
  std::string authfile;
  CosignArgs cosign;
};

net::Progress progress_of(const GlobalOptions& global) {
  return global.quiet ? net::Progress::quiet : net::Progress::automatic;
}

constexpr const char* kClusterConfigHere = "podplane.cluster.jsonc";

// The provider-specific vmconfig items `deps download` takes when --providers is not given:
// those of the cluster it fetches for (-f, else a podplane.cluster.jsonc in this directory),
// else every provider's, so that no cluster made later lacks its items. Returns the list and
// why it was chosen.
std::pair<std::vector<std::string>, std::string> default_providers(const DownloadArgs& args) {
  std::error_code ec;
  std::string config = args.cluster_config;
  if (config.empty() && std::filesystem::is_regular_file(kClusterConfigHere, ec)) config = kClusterConfigHere;
  if (config.empty()) return {{"all"}, "no cluster config here or -f; --providers to choose"};
  auto kind = std::string(generator::to_string(generator::load_cluster_config(config).provider.kind));
  return {{kind}, "the provider of " + config + "; --providers to choose"};
}

fetch::DepsDownloadOptions download_options(const DownloadArgs& args, const GlobalOptions& global) {
  fetch::DepsDownloadOptions options;
  options.archs = fetch::split_list(args.archs);
  auto kinds = fetch::split_list(args.kinds);
  if (!kinds.empty()) options.kinds = kinds;
  options.providers = fetch::split_list(args.providers);
  options.providers_reason = "--providers";
  options.mode = args.dry_run ? fetch::DepsDownloadOptions::Mode::dry_run : fetch::DepsDownloadOptions::Mode::fetch;
  options.seeds = args.skip_seeds ? fetch::DepsDownloadOptions::Seeds::skip : fetch::DepsDownloadOptions::Seeds::fetch;
  options.download.jobs = args.jobs;
  // deps.podplane.dev (or its mirror) serves every manifest, artifact and seed: let --jobs apply to it.
  options.download.per_host = args.jobs;
  options.download.progress = progress_of(global);
  options.download.http = net::HttpOptions::from_environment();  // PODPLANE_HTTP_* budgets
  if (!args.authfile.empty()) options.registry_auth.authfile = args.authfile;
  args.cosign.apply(options.cosign_keys, options.cosign_policy, options.cosign_keyless);
  return options;
}

// Each command's CLI11 wiring: one statement per option, in the order --help lists them.
void register_tf(CLI::App& deps, const GlobalOptions& global) {
  auto tf_args = std::make_shared<TfArgs>();
  auto* tf = deps.add_subcommand("tf", "Fetch the OpenTofu/Terraform providers and modules of a stack into the store");
  tf->add_option("--platform", tf_args->platforms,
                 "Target provider platform OS_ARCH (repeatable or comma-separated; adds to the store's platforms)");
  tf->add_option("--engine", tf_args->engine,
                 "Lock entries for tofu (registry.opentofu.org) or terraform (registry.terraform.io); default: the "
                 "engine on PATH (tofu first, then terraform), else tofu")
      ->check(CLI::IsMember({"tofu", "terraform"}));
  tf->add_option("--stack", tf_args->stacks, "Root module directory to fetch for instead of Podplane's stack (repeatable)")
      ->check(CLI::ExistingDirectory);
  tf->add_option("--repo-root", tf_args->repo_root,
                 "The directory the --stack roots' local module calls (`../modules/x`) may lead into (default: each "
                 "root's git repository, else the root itself)")
      ->check(CLI::ExistingDirectory)
      ->needs("--stack");
  tf->add_flag("--write-lock", tf_args->write_lock,
               "Write or update each --stack root's .terraform.lock.hcl for the platforms asked for, as "
               "`providers lock` would")
      ->needs("--stack");
  tf->add_flag("--upgrade", tf_args->upgrade,
               "Choose each --stack root's versions afresh within its constraints instead of keeping its lock's")
      ->needs("--stack");
  tf->add_option("-f,--cluster-config", tf_args->cluster_config,
                 "Fetch what this cluster config's provider kind needs (aws or google) instead of the AWS default")
      ->check(CLI::ExistingFile)
      ->excludes("--stack");
  tf->add_option("--jobs", tf_args->jobs, "Parallel transfers")->transform(whole_number(1, 64));
  tf->add_flag("--allow-unverified", tf_args->allow_unverified,
               "Take packages that have no signing keys or mirror hashes (recorded as unverified)");
  tf->callback([tf_args, &global] {
    fetch::DepsTfOptions options;
    options.platforms = fetch::split_list(tf_args->platforms);
    for (const auto& platform : options.platforms) {
      try {
        (void)lockfile::Platform::parse(platform);
      } catch (const Error& error) {
        throw UsageError(error.what());  // a typo on the command line, not a failed fetch
      }
    }
    if (tf_args->engine.empty()) {
      auto user = generator::engine_on_path();
      options.engine = user.engine;
      options.engine_reason = user.reason + "; pass --engine to choose";
    } else {
      options.engine = lockfile::parse_engine(tf_args->engine);
      options.engine_reason = "--engine";
    }
    for (const auto& stack : tf_args->stacks) options.stacks.emplace_back(stack);
    if (!tf_args->repo_root.empty()) options.repo_root = std::filesystem::absolute(tf_args->repo_root).lexically_normal();
    if (tf_args->write_lock) options.root_locks = fetch::RootLocks::write;
    if (tf_args->upgrade) options.locked_versions = fetch::LockedVersions::upgrade;
    // The stack of the config's provider kind, as the generator writes it (cache/podplane_stack.hpp).
    if (!tf_args->cluster_config.empty()) {
      options.default_stack = generator::load_cluster_config(tf_args->cluster_config).provider.kind;
    }
    options.verification =
        tf_args->allow_unverified ? fetch::Verification::allow_unverified : fetch::Verification::required;
    options.download.jobs = tf_args->jobs;
    // Registries serve every package of a release from one host: let --jobs apply to it.
    options.download.per_host = tf_args->jobs;
    options.download.progress = progress_of(global);
    options.download.http = net::HttpOptions::from_environment();  // PODPLANE_HTTP_* budgets
    auto store = cache::Store::open(cache::default_deps_root());
    (void)fetch::deps_tf(store, options, std::cout, std::cerr);
  });
}

void register_download(CLI::App& deps, const GlobalOptions& global) {
  auto download_args = std::make_shared<DownloadArgs>();
  auto* download = deps.add_subcommand("download", "Fetch vmconfig manifests (knc, knd), the artifacts and container images they list, and the seed snapshots");
  download->add_option("--arch", download_args->archs, "amd64,arm64 (default: $PODPLANE_ARCH or this machine)");
  download->add_option("--kind", download_args->kinds, "knc,knd (default: both)");
  download->add_option("--providers", download_args->providers,
                       "Provider-specific artifacts to include: aws, google, proxmox, … or all (default: the "
                       "provider of the cluster config of -f or of ./podplane.cluster.jsonc, else all)");
  download->add_option("-f,--cluster-config", download_args->cluster_config,
                       "Take the provider-specific artifacts of this cluster config's provider")
      ->check(CLI::ExistingFile)
      ->excludes("--providers");
  download->add_flag("--dry-run", download_args->dry_run, "Print what would be downloaded; write nothing");
  download->add_flag("--skip-seeds", download_args->skip_seeds, "Skip the seeds manifest and snapshots");
  download->add_option("--jobs", download_args->jobs, "Parallel transfers")->transform(whole_number(1, 64));
  add_authfile_option(*download, download_args->authfile);
  add_cosign_options(*download, download_args->cosign);
  download->callback([download_args, &global] {
    auto options = download_options(*download_args, global);
    if (options.providers.empty()) std::tie(options.providers, options.providers_reason) = default_providers(*download_args);
    auto store = cache::Store::open(cache::default_deps_root());
    fetch::deps_download(store, options, std::cout, std::cerr);
  });
}

void register_images(CLI::App& deps, const GlobalOptions& global) {
  struct ImagesArgs {
    std::string list_file;
    std::vector<std::string> archs;
    int jobs = 8;
    std::string authfile;
    CosignArgs cosign;
  };
  auto images_args = std::make_shared<ImagesArgs>();
  auto* images = deps.add_subcommand("images", "Fetch the container images of a list (application images) into the store");
  images->add_option("-f,--file", images_args->list_file,
                     "Image list: one reference a line (registry/repository:tag or @sha256:…), # comments; - for stdin")
      ->required();
  images->add_option("--arch", images_args->archs,
                     "Platforms of a multi-arch image: amd64,arm64, all, or os/arch[/variant] (default: $PODPLANE_ARCH or this machine)");
  images->add_option("--jobs", images_args->jobs, "Parallel transfers")->transform(whole_number(1, 64));
  add_authfile_option(*images, images_args->authfile);
  add_cosign_options(*images, images_args->cosign);
  images->callback([images_args, &global] {
    fetch::DepsImagesOptions options;
    // The list is read here, where "-" means this process's standard input.
    const std::string& list = images_args->list_file;
    options.list_name = list;
    options.list_text = list == "-" ? read_stream_within_limits(std::cin, "<stdin>")
                                    : read_file_within_limits(list, "the image list");
    options.archs = fetch::split_list(images_args->archs);
    if (options.archs.empty()) options.archs = {fetch::default_vmconfig_arch()};
    options.download.jobs = images_args->jobs;
    // A registry serves every blob of its images from one host: let --jobs apply to it.
    options.download.per_host = images_args->jobs;
    options.download.progress = progress_of(global);
    options.download.http = net::HttpOptions::from_environment();
    if (!images_args->authfile.empty()) options.registry_auth.authfile = images_args->authfile;
    images_args->cosign.apply(options.cosign_keys, options.cosign_policy, options.cosign_keyless);
    auto store = cache::Store::open(cache::default_deps_root());
    fetch::deps_images(store, options, std::cout, std::cerr);
  });
}

struct ToolsArgs {
  std::vector<std::string> engines;
  std::string version;
  std::vector<std::string> stacks;
  std::string cluster_config;
  std::vector<std::string> platforms;
  int jobs = 4;
  std::string podplane_release;
  std::string sign, pkcs11_module;
};

// The engine releases `deps tools` is asked for. The defaults that need what fetch/ cannot see
// are taken here: the engine on PATH (said on stdout) and the cloud of the cluster config.
fetch::DepsToolsRequest::EngineReleases engine_releases(const ToolsArgs& args, const GlobalOptions& global) {
  fetch::DepsToolsRequest::EngineReleases asked;
  try {
    if (!args.version.empty()) asked.version = lockfile::Version::parse(args.version).str();
    for (const auto& engine : fetch::split_list(args.engines)) asked.engines.push_back(lockfile::parse_engine(engine));
    asked.fetch.platforms = fetch::split_list(args.platforms);
    for (const auto& platform : asked.fetch.platforms) (void)lockfile::Platform::parse(platform);
  } catch (const Error& error) {
    throw UsageError(error.what());  // a typo on the command line, not a failed fetch
  }
  asked.fetch.download.jobs = args.jobs;
  asked.fetch.download.per_host = args.jobs;
  asked.fetch.download.progress = progress_of(global);
  asked.fetch.download.http = net::HttpOptions::from_environment();  // PODPLANE_HTTP_* budgets
  if (asked.engines.empty()) {
    auto user = generator::engine_on_path();
    asked.engines.push_back(user.engine);
    std::cout << "engine: " << lockfile::engine_name(user.engine) << " (" << user.reason << "; pass --engine to choose)\n";
  }
  asked.stacks.assign(args.stacks.begin(), args.stacks.end());
  if (!asked.version && !args.cluster_config.empty()) {
    auto kind = generator::load_cluster_config(args.cluster_config).provider.kind;
    asked.config_stack =
        fetch::ConfigStack{kind, "Podplane's " + std::string(generator::to_string(kind)) + " stack, " + args.cluster_config};
  }
  return asked;
}

void register_tools(CLI::App& deps, const GlobalOptions& global) {
  auto tools_args = std::make_shared<ToolsArgs>();
  auto* tools = deps.add_subcommand("tools", "Fetch terraform or tofu release zips, checked against their signed SHA256SUMS, into the store");
  auto* engine_option = tools->add_option(
      "--engine", tools_args->engines,
      "terraform or tofu (repeatable or comma-separated); default: the engine on PATH (tofu first, then terraform), else tofu");
  auto* version_option = tools->add_option(
      "--version", tools_args->version,
      "The release to fetch, e.g. 1.9.8 (the same for every --engine); default: the newest release upstream lists that "
      "every --stack root's required_version allows (Podplane's stacks' when no --stack)");
  auto* stack_option =
      tools->add_option("--stack", tools_args->stacks, "Root module directory whose required_version chooses the release (repeatable)")
          ->excludes(version_option);
  auto* config_option =
      tools->add_option("-f,--cluster-config", tools_args->cluster_config,
                        "Choose the release that Podplane's stack for this cluster config's cloud requires")
          ->check(CLI::ExistingFile)
          ->excludes(version_option)
          ->excludes(stack_option);
  tools->add_option("--platform", tools_args->platforms,
                    "Release platform OS_ARCH (repeatable or comma-separated; default linux_amd64)");
  tools->add_option("--jobs", tools_args->jobs, "Parallel transfers")->transform(whole_number(1, 64));
  auto* podplane_option = tools->add_option(
      "--podplane-release", tools_args->podplane_release,
      "Also (or only) add podplane's own release files of one version from DIR (scripts/package's dist/: tarball, deb, "
      "OCI image), listed in a SHA256SUMS the store writes");
  podplane_option->type_name("DIR");
  auto* sign_option =
      tools->add_option("--sign", tools_args->sign,
                        "Sign the podplane release's SHA256SUMS with this Ed25519 release key (a file from `bundle keygen`, or "
                        "a pkcs11: URI), so that `tools install podplane --from` can check it with --trust")
          ->needs(podplane_option);
  tools->add_option("--pkcs11-module", tools_args->pkcs11_module, "The PKCS#11 module of --sign's token")
      ->check(CLI::ExistingFile)
      ->needs(sign_option);
  tools->callback([tools_args, engine_option, version_option, stack_option, config_option, podplane_option, &global] {
    fetch::DepsToolsRequest request;
    // The release key is opened (a token's PIN checked) before anything is fetched or added.
    std::optional<ed25519::SigningKey> key;
    if (!tools_args->sign.empty())
      key = ed25519::SigningKey::load(tools_args->sign, tools_args->pkcs11_module.empty()
                                                            ? std::nullopt
                                                            : std::optional<std::filesystem::path>(tools_args->pkcs11_module));
    request.release_key = key ? &*key : nullptr;
    if (podplane_option->count() > 0) request.podplane_release = tools_args->podplane_release;
    // --podplane-release alone adds podplane's release and nothing else. Without it, or with
    // any option about an engine release, the engine run happens too, choosing its engine and
    // version as documented when they are not given.
    const bool engine_run = podplane_option->count() == 0 || engine_option->count() > 0 || version_option->count() > 0 ||
                            stack_option->count() > 0 || config_option->count() > 0 || !tools_args->platforms.empty();
    if (engine_run) request.engine_releases = engine_releases(*tools_args, global);
    fetch::run_deps_tools(cache::default_deps_root(), request, std::cout);
  });
}

void register_status(CLI::App& deps, const GlobalOptions& global) {
  auto status_args = std::make_shared<DownloadArgs>();
  auto* status = deps.add_subcommand("status", "Compare the stored vmconfig manifests with upstream");
  status->add_option("--arch", status_args->archs, "amd64,arm64 (default: $PODPLANE_ARCH or this machine)");
  status->add_option("--kind", status_args->kinds, "knc,knd (default: both)");
  status->callback([status_args, &global] {
    auto options = download_options(*status_args, global);
    // Status only reads: without a store yet, everything upstream counts as new.
    auto root = cache::default_deps_root();
    if (!std::filesystem::exists(cache::layout::index_db(root))) {
      (void)fetch::deps_status(nullptr, options, std::cout);
      return;
    }
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    (void)fetch::deps_status(&store, options, std::cout);
  });
}

}  // namespace

void register_deps_fetch_commands(CLI::App& deps, const GlobalOptions& global) {
  register_tf(deps, global);
  register_download(deps, global);
  register_images(deps, global);
  register_tools(deps, global);
  register_status(deps, global);
}

}  // namespace podplane::cli
