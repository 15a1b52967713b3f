#pragma once
// Each command group registers its subcommands here. A subcommand parses, calls one
// library function, prints, and lets errors propagate to main(), which maps them to
// exit codes (podplane::Error → 1, podplane::UsageError / CLI11 errors → 2).
#include <CLI/CLI.hpp>

namespace podplane::cli {

struct GlobalOptions {
  bool quiet = false;  // silence progress on stderr
};

void register_lock_commands(CLI::App& lock, const GlobalOptions& global);
void register_deps_store_commands(CLI::App& deps, const GlobalOptions& global);  // ls, verify, gc
void register_deps_prune_commands(CLI::App& deps, const GlobalOptions& global);  // prune, du
void register_deps_fetch_commands(CLI::App& deps, const GlobalOptions& global);  // tf, download, images, tools, status
void register_bundle_commands(CLI::App& bundle, const GlobalOptions& global);
void register_cluster_commands(CLI::App& cluster, const GlobalOptions& global);
void register_mirror_commands(CLI::App& mirror, const GlobalOptions& global);
void register_stack_commands(CLI::App& stack, const GlobalOptions& global);  // check
void register_tools_commands(CLI::App& tools, const GlobalOptions& global);  // install

}  // namespace podplane::cli
