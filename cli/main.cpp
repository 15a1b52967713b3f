// podplane: parse, dispatch, and turn errors into "podplane: error: …" and an exit code.
#include <algorithm>
#include <iostream>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/remove_on_signal.hpp"
#include "base/terminal_text.hpp"
#include "cli/commands.hpp"

namespace {

int usage_error(const std::string& command_path, const std::string& message) {
  std::cerr << "podplane: error: " << message << "\n";
  std::cerr << "Try '" << command_path << " --help' for more information.\n";
  return 2;
}

// The command path ("podplane deps verify") of the deepest subcommand that was given.
std::string given_command_path(const CLI::App& app) {
  std::string command_path = "podplane";
  const CLI::App* current = &app;
  while (current != nullptr) {
    auto chosen = current->get_subcommands();
    if (chosen.empty()) break;
    current = chosen.front();
    command_path += " " + current->get_name();
  }
  return command_path;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A word where a command group (podplane, deps, bundle, …) expects one of its subcommands and
// none matches: "unknown command 'vrify'; did you mean 'verify'?". Found by walking argv through
// the command tree, since CLI11 only says that a subcommand is required.
struct UnknownCommand {
  std::string command_path;  // of the group
  std::string message;
};

std::optional<UnknownCommand> find_unknown_command(const CLI::App& app, int argc, char** argv) {
  const CLI::App* current = &app;
  std::string command_path = "podplane";
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--") return std::nullopt;
    if (word.empty() || word[0] == '-') continue;  // the groups' own flags take no value
    auto subcommands = current->get_subcommands([](const CLI::App*) { return true; });
    if (subcommands.empty()) return std::nullopt;  // a command: the rest are its arguments
    auto found = std::find_if(subcommands.begin(), subcommands.end(),
                              [&](const CLI::App* sub) { return sub->check_name(word); });
    if (found != subcommands.end()) {
      current = *found;
      command_path += " " + current->get_name();
      continue;
    }
    std::string closest, names;
    std::size_t best = word.size();
    for (const CLI::App* sub : subcommands) {
      const std::string& name = sub->get_name();
      names += (names.empty() ? "" : ", ") + name;
      std::size_t distance = name.rfind(word, 0) == 0 ? 1 : edit_distance(word, name);
      if (distance <= 2 && distance < best) {
        best = distance;
        closest = name;
      }
    }
    std::string message = "unknown command '" + word + "'";
    message += closest.empty() ? " (" + command_path + " has: " + names + ")" : "; did you mean '" + closest + "'?";
    return UnknownCommand{command_path, message};
  }
  return std::nullopt;
}

// Every byte main and the commands print goes through podplane::printable(): strings from
// upstreams, bundles and files cannot drive the terminal. Restores the streams when done.
class PrintableStandardStreams {
 public:
  PrintableStandardStreams() : out_(std::cout.rdbuf()), err_(std::cerr.rdbuf()) {
    std::cout.rdbuf(&out_);
    std::cerr.rdbuf(&err_);
  }
  ~PrintableStandardStreams() {
    std::cout.flush();
    std::cerr.flush();
    std::cout.rdbuf(original_out_);
    std::cerr.rdbuf(original_err_);
  }
  PrintableStandardStreams(const PrintableStandardStreams&) = delete;
  PrintableStandardStreams& operator=(const PrintableStandardStreams&) = delete;

 private:
  std::streambuf* original_out_ = std::cout.rdbuf();
  std::streambuf* original_err_ = std::cerr.rdbuf();
  podplane::PrintableStreambuf out_;
  podplane::PrintableStreambuf err_;
};

int run(int argc, char** argv) {
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
  auto* stack = app.add_subcommand("stack", "Check any OpenTofu/Terraform root against the store (offline)")->require_subcommand(1);
  auto* tools = app.add_subcommand("tools", "Install the OpenTofu/Terraform engine, or podplane itself, from the store (offline)")->require_subcommand(1);
  for (auto* group : {deps, lock, bundle, cluster, mirror, stack, tools}) group->fallthrough();

  podplane::cli::register_deps_fetch_commands(*deps, global);
  podplane::cli::register_deps_store_commands(*deps, global);
  podplane::cli::register_deps_prune_commands(*deps, global);
  podplane::cli::register_lock_commands(*lock, global);
  podplane::cli::register_bundle_commands(*bundle, global);
  podplane::cli::register_cluster_commands(*cluster, global);
  podplane::cli::register_mirror_commands(*mirror, global);
  podplane::cli::register_stack_commands(*stack, global);
  podplane::cli::register_tools_commands(*tools, global);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    if (auto unknown = find_unknown_command(app, argc, argv)) return usage_error(unknown->command_path, unknown->message);
    return usage_error(given_command_path(app), error.what());
  } catch (const podplane::UsageError& error) {
    return usage_error(given_command_path(app), error.message());
  } catch (const podplane::Error& error) {
    std::cerr << "podplane: error: " << error.message() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "podplane: error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // What the launcher of the tarball kept from the carried loader, back for the programs we run.
  podplane::restore_host_loader_environment();
  // Temp dirs (deps tf and download scratch, export staging, bundle volumes being written) go
  // when SIGINT, SIGTERM or SIGHUP ends a command.
  podplane::install_remove_on_signal_handlers();
  PrintableStandardStreams streams;
  return run(argc, argv);
}
