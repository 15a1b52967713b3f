// podplane cluster init|create|upgrade|check: generate and check stacks from the store alone.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "cache/layout.hpp"
#include "cache/store.hpp"
#include "checks/cluster_check.hpp"
#include "cli/commands.hpp"
#include "cli/open_store.hpp"
#include "generator/config.hpp"
#include "generator/schema.hpp"
#include "generator/stack.hpp"
#include "generator/stack_apply.hpp"

namespace podplane::cli {

namespace {

namespace fs = std::filesystem;
namespace gen = podplane::generator;

constexpr const char* default_config = "podplane.cluster.jsonc";

struct ClusterOptions {
  std::string config = default_config;
  bool no_apply = false;
  bool yes = false;
  bool force = false;
  std::vector<std::string> platforms;
  std::string provider = "aws";
  std::string id = gen::InitOptions{}.id;
  std::string arch;  // cluster init: the pools' arch (empty: the provider's default)
  // cluster init: the site's `mirror serve` URLs, primary first (none: a commented example)
  std::vector<std::string> deps_mirror_urls;
  bool without_engine = false;  // cluster check: accept podplane's own reading when the engine is absent
};

bool interactive() { return ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO); }

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The schema beside the config: written when absent or still a generated copy.
void write_schema_beside(const fs::path& config_file) {
  fs::path schema = config_file.parent_path() / "podplane.cluster.schema.json";
  std::string content = gen::cluster_schema_file_content();
  if (std::ifstream(schema, std::ios::binary)) {
    const std::string current = read_file_within_limits(schema, "the config schema");
    if (current == content || current.find("Podplane generated schema support file") == std::string::npos) return;
  }
  write_file_durably(schema, content);
}

std::string ask(const std::string& question, const std::string& fallback) {
  std::cout << question << " [" << fallback << "]: " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) throw UsageError("no answer; write a config with `podplane cluster init`");
  return answer.empty() ? fallback : answer;
}

gen::ProviderKind provider_kind(const std::string& name) {
  if (name == "aws") return gen::ProviderKind::aws;
  if (name == "google") return gen::ProviderKind::google;
  if (name == "proxmox") return gen::ProviderKind::proxmox;
  throw UsageError("--provider must be aws, google or proxmox, not \"" + name + "\"");
}

// No config yet: ask on a terminal, refuse elsewhere.
void ensure_config(const fs::path& config_file) {
  if (fs::exists(config_file)) return;
  if (!interactive())
    throw UsageError("no cluster config at " + config_file.string() +
                     "; write one with `podplane cluster init [--provider aws|google|proxmox] [--id ID]`, edit it, then rerun");
  std::cout << "No " << config_file.filename().string() << " here yet; a few questions to write one.\n";
  gen::InitOptions init;
  std::string provider = ask("Provider (aws, google, proxmox)", "aws");
  init.provider = provider_kind(provider);
  const gen::InitOptions defaults = gen::starter_defaults(init.provider);
  init.id = ask("Cluster id", defaults.id);
  init.region = ask(provider == "proxmox" ? "Site name" : "Region", defaults.region);
  if (provider != "proxmox")
    init.account = ask(provider == "aws" ? "AWS account ID" : "Google Cloud project ID", defaults.account);
  init.arch = ask(provider == "proxmox" ? "Node architecture (amd64, arm64)" : "VM architecture (amd64, arm64)",
                  defaults.arch);
  init.api_hostname = ask("Kubernetes API host name", defaults.api_hostname);
  init.issuer_url = ask("OIDC issuer URL", defaults.issuer_url);
  std::string text = gen::starter_config(init);
  (void)gen::parse_cluster_config(text, config_file.filename().string());  // the answers must validate
  write_file_durably(config_file, text);
  write_schema_beside(config_file);
  std::cout << "Wrote " << config_file.string() << "\n";
}

void run_generation(const ClusterOptions& options, const GlobalOptions& global, gen::Command command) {
  fs::path config_file = fs::absolute(options.config);
  ensure_config(config_file);
  cache::Store store = open_existing_store();
  gen::StackRunOptions run;
  run.stack.config_file = config_file;
  run.stack.command = command;
  run.stack.force = options.force ? gen::Force::yes : gen::Force::no;
  run.stack.env_deps_url = env("PODPLANE_DEPS_URL");
  run.apply = options.no_apply ? gen::Apply::no : options.yes ? gen::Apply::auto_approve : gen::Apply::ask;
  run.file_list = global.quiet ? gen::FileList::quiet : gen::FileList::shown;
  gen::create_or_upgrade_stack(store, run, {std::cout, std::cerr, std::cin});
}

void run_init(const ClusterOptions& options) {
  fs::path config_file = fs::absolute(options.config);
  gen::InitOptions init;
  init.provider = provider_kind(options.provider);
  init.id = options.id;
  init.arch = options.arch;
  if (!options.deps_mirror_urls.empty()) {
    init.deps_mirror_url = options.deps_mirror_urls.front();
    init.deps_mirror_fallback_urls.assign(options.deps_mirror_urls.begin() + 1, options.deps_mirror_urls.end());
  }
  std::string text = gen::starter_config(init);
  (void)gen::parse_cluster_config(text, config_file.filename().string());  // --id must be valid
  if (fs::exists(config_file)) throw Error(config_file.string() + " already exists; not overwritten");
  write_file_durably(config_file, text);
  write_schema_beside(config_file);
  std::cout << "Wrote " << config_file.string() << " and podplane.cluster.schema.json\n"
            << "Edit it, then run `podplane cluster create`.\n";
}

void run_check(const ClusterOptions& options) {
  fs::path config_file = fs::absolute(options.config);
  cache::Store store = open_existing_store();
  checks::CheckReport report = checks::check_cluster(
      store, config_file, options.platforms, options.without_engine ? checks::EngineInit::skip : checks::EngineInit::required);
  std::cout << checks::render_check_table(report);
  if (report.proven()) {
    std::cout << "All checks passed: `init` of this stack needs nothing beyond the store, and the engine itself proved it.\n";
    return;
  }
  if (report.ok() && options.without_engine) {
    std::cout << "No check failed, without the engine (--without-engine): podplane's own reading says `init` of this "
                 "stack needs nothing beyond the store; the engine did not prove it.\n";
    return;
  }
  std::string message = report.ok() ? "cluster check is not proven: a check did not run; to run it:" : "cluster check failed; to fix:";
  for (const auto& remedy : report.remedies) message += "\n  " + remedy;
  throw Error(message);
}

}  // namespace

void register_cluster_commands(CLI::App& group, const GlobalOptions& global) {
  auto options = std::make_shared<ClusterOptions>();

  auto* init = group.add_subcommand("init", "Write a commented starting podplane.cluster.jsonc and its schema");
  init->add_option("--provider", options->provider, "Infrastructure provider: aws, google or proxmox")->capture_default_str();
  init->add_option("--id", options->id, "Cluster id")->capture_default_str();
  init->add_option("--arch", options->arch,
                   "The pools' VM architecture (default: amd64 for proxmox, whose nodes run VMs of their own arch; "
                   "arm64 otherwise)")
      ->check(CLI::IsMember({"amd64", "arm64"}));
  init->add_option("--deps-mirror-url", options->deps_mirror_urls,
                   "Where the VMs fetch vmconfig artifacts: the site's `podplane mirror serve` URL (cluster.deps_mirror_url); "
                   "repeatable: the first is the primary, the others (cluster.deps_mirror_fallback_urls) are tried in turn "
                   "by the Proxmox node-init script when one fails")
      ->take_all();
  init->add_option("-f,--cluster-config", options->config, "Config file to write")->capture_default_str();
  init->callback([options] { run_init(*options); });

  auto add_generation = [&](const char* name, const char* help, gen::Command command) {
    auto* sub = group.add_subcommand(name, help);
    sub->add_option("-f,--cluster-config", options->config, "Cluster config")->capture_default_str();
    sub->add_flag("--no-apply", options->no_apply, "Write the files only; do not run init and apply");
    sub->add_flag("-y,--auto-approve", options->yes, "Apply without asking");
    sub->add_flag("--force", options->force, "Overwrite generated files that were edited by hand");
    sub->callback([options, &global, command] { run_generation(*options, global, command); });
  };
  add_generation("create", "Generate (or restore) the cluster stack from the store, offline", gen::Command::create);
  add_generation("upgrade", "Move the stack to the newest module and providers the store holds", gen::Command::upgrade);

  auto* check = group.add_subcommand("check", "Prove the stack's dependencies are all in the store, per platform");
  check->add_option("-f,--cluster-config", options->config, "Cluster config")->capture_default_str();
  check->add_option("--platform", options->platforms, "Platform OS_ARCH to check (repeatable; default: all the store has)")->delimiter(',');
  check->add_flag("--without-engine", options->without_engine,
                  "Accept podplane's own reading when the stack's engine (tofu or terraform) is not on PATH, instead of "
                  "failing: the check then proves less");
  check->callback([options] { run_check(*options); });
}

}  // namespace podplane::cli
