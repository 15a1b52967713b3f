#include "generator/stack_apply.hpp"

#include <algorithm>
#include <fstream>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "generator/engine.hpp"
#include "generator/proxmox_stack.hpp"
#include "lockfile/provider_names.hpp"

namespace podplane::generator {
namespace {

namespace fs = std::filesystem;

bool has_proxmox_node_init(const StackResult& result) {
  return std::any_of(result.files.begin(), result.files.end(),
                     [](const FileOutcome& file) { return file.name == proxmox_node_init_file; });
}

// What the run wrote and moved, and where the stack is.
void report_stack(const StackResult& result, const StackRunOptions& options, const StackConsole& console) {
  std::ostream& out = console.out;
  for (const auto& warning : result.warnings) console.warnings << "podplane: warning: " << warning << "\n";
  for (const auto& file : result.files) {
    if (file.change != FileOutcome::Change::unchanged && options.file_list == FileList::shown)
      out << "  " << to_string(file.change) << " " << file.name << "\n";
  }
  for (const auto& change : result.version_changes) {
    out << "  " << change.item << " " << (change.from.empty() ? "(new)" : change.from) << " → "
        << (change.to.empty() ? "(removed)" : change.to) << "\n";
  }
  for (const auto& impact : result.impacts) out << "  " << impact << "\n";
  if (options.stack.command == Command::upgrade) {
    out << (result.version_changes.empty() ? "Already at the newest versions the store holds in "
                                           : "Upgraded Podplane OpenTofu/Terraform dependencies in ")
        << result.stack_dir.string() << "\n";
  } else if (result.changed()) {
    out << (has_proxmox_node_init(result) ? "Generated the Podplane Proxmox VE stack in "
                                          : "Generated Podplane OpenTofu/Terraform files in ")
        << result.stack_dir.string() << "\n";
  } else {
    out << "No changes: the stack in " << result.stack_dir.string() << " matches the config and the store\n";
  }
}

lockfile::Engine other_engine(lockfile::Engine engine) {
  return engine == lockfile::Engine::terraform ? lockfile::Engine::tofu : lockfile::Engine::terraform;
}

// The engine the stack's lock is for, said with a note when only the other one is here; the
// program to run it with, unless it is absent or not to be run.
std::optional<fs::path> stack_engine_program(const StackResult& result, Apply apply, std::ostream& out) {
  const fs::path lock = result.stack_dir / ".terraform.lock.hcl";
  const std::string lock_text = std::ifstream(lock) ? read_file_within_limits(lock, "lock file") : std::string();
  const lockfile::Engine engine = stack_engine(lock_text);
  const std::string engine_name(lockfile::engine_name(engine));
  const std::string other_name(lockfile::engine_name(other_engine(engine)));
  out << "Engine: " << engine_name << " (the stack's lock has entries for " << lockfile::default_registry_host(engine)
      << ")\n";
  if (!find_engine(engine)) {
    if (auto other = find_engine(other_engine(engine))) {
      // The store (and so the stack) was filled for the other engine than the one installed here.
      out << "Note: this machine has " << other->string() << ", not " << engine_name << "; for a " << other_name
          << " stack run `podplane deps tf --engine " << other_name
          << "` (online, or import a bundle filled for it), then `podplane cluster upgrade`\n";
    }
  }
  auto program = apply == Apply::no ? std::nullopt : find_engine(engine);
  if (!program) {
    out << "To apply it offline, run:\n";
    for (const auto& line : manual_engine_commands(result.stack_dir, result.tfrc, engine_name)) out << "  " << line << "\n";
  }
  return program;
}

// init, the question unless approved, apply.
void apply_stack(const StackResult& result, const fs::path& engine, const StackRunOptions& options,
                 const StackConsole& console) {
  if (int code = run_engine(engine, {"init", "-lockfile=readonly", "-input=false"}, result.stack_dir, result.tfrc);
      code != 0)
    throw Error(engine.filename().string() + " init failed (exit " + std::to_string(code) + ") in " +
                result.stack_dir.string());
  if (options.apply != Apply::auto_approve) {
    console.out << (options.stack.command == Command::upgrade ? "Apply upgraded OpenTofu/Terraform dependencies?"
                                                              : "Apply generated OpenTofu/Terraform changes?")
                << " [y/N]: " << std::flush;
    std::string answer;
    if (!std::getline(console.answers, answer) || (answer != "y" && answer != "Y" && answer != "yes")) {
      console.out << "Not applied.\n";
      return;
    }
  }
  std::vector<std::string> apply{"apply"};
  if (options.apply == Apply::auto_approve) apply.push_back("-auto-approve");
  if (int code = run_engine(engine, apply, result.stack_dir, result.tfrc); code != 0)
    throw Error(engine.filename().string() + " apply failed (exit " + std::to_string(code) + ") in " +
                result.stack_dir.string());
}

}  // namespace

void create_or_upgrade_stack(const cache::Store& store, const StackRunOptions& options, const StackConsole& console) {
  const StackResult result = generate_stack(store, options.stack);
  report_stack(result, options, console);
  // A Proxmox stack has no OpenTofu files: the nodes run the generated script instead.
  if (has_proxmox_node_init(result)) {
    console.out << "Next, on every Proxmox VE node (as root): bash " << proxmox_node_init_file
                << " [--shard ZONE]\nand upload each podplane.cluster.proxmox.shard.<zone>.jsonc to "
                   "s3://<bucket>/shard/<zone>/config.jsonc (docs/cluster.md).\n";
    // Only with proxmox.manage_api_token is there an OpenTofu root (and its lock) to apply.
    if (!fs::exists(result.stack_dir / ".terraform.lock.hcl")) return;
  }
  if (const auto engine = stack_engine_program(result, options.apply, console.out))
    apply_stack(result, *engine, options, console);
}

}  // namespace podplane::generator
