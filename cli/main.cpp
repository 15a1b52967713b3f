// podplane: parse, dispatch, and turn errors into "podplane: error: …" and an exit code.
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "lockfile/error.hpp"

namespace {

int usage_error(const CLI::App& app, const std::string& message) {
  std::cerr << "podplane: error: " << message << "\n";
  // Point at the help of the deepest subcommand that was given.
  std::string command_path = "podplane";
  const CLI::App* current = &app;
  while (current != nullptr) {
    auto chosen = current->get_subcommands();
    if (chosen.empty()) break;
    current = chosen.front();
    command_path += " " + current->get_name();
  }
  std::cerr << "Try '" << command_path << " --help' for more information.\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"podplane: offline dependency mirror and air-gap bundler", "podplane"};
  app.require_subcommand(1);
  podplane::cli::GlobalOptions global;
  app.add_flag("-q,--quiet", global.quiet, "Silence progress output")->configurable(false);
  app.set_version_flag("--version", "podplane " + std::string(PODPLANE_VERSION));

  auto* deps = app.add_subcommand("deps", "Fill, inspect and maintain the dependency store")->require_subcommand(1);
  auto* lock = app.add_subcommand("lock", "Provider lock-file helpers (offline)")->require_subcommand(1);
  auto* bundle = app.add_subcommand("bundle", "Carry the store across an air gap")->require_subcommand(1);
  auto* cluster = app.add_subcommand("cluster", "Generate and check cluster stacks from the store")->require_subcommand(1);
  auto* mirror = app.add_subcommand("mirror", "Serve, export or push the store for the site")->require_subcommand(1);
  for (auto* group : {deps, lock, bundle, cluster, mirror}) group->fallthrough();

  podplane::cli::register_deps_fetch_commands(*deps, global);
  podplane::cli::register_deps_store_commands(*deps, global);
  podplane::cli::register_lock_commands(*lock, global);
  podplane::cli::register_bundle_commands(*bundle, global);
  podplane::cli::register_cluster_commands(*cluster, global);
  podplane::cli::register_mirror_commands(*mirror, global);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    return usage_error(app, error.what());
  } catch (const podplane::UsageError& error) {
    return usage_error(app, error.what());
  } catch (const podplane::Error& error) {
    std::cerr << "podplane: error: " << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "podplane: error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
