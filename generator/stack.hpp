#pragma once
// StackGenerator: writes a cluster's OpenTofu/Terraform stack beside its
// podplane.cluster.jsonc from the dependency store alone (no network code at all).
//   create  restores: a pinned stack keeps its module version, lock and vmconfig manifests;
//           a new stack takes the store's current selection. Unchanged files are not rewritten.
//   upgrade takes the newest module, providers and manifests the store holds that the
//           constraints allow, and rewrites the lock and every generated file.
// Only files podplane generated are ever written or removed: .tf files carrying the managed
// header, and the JSON/lock files recorded in .podplane.cluster.state.json. A generated file
// whose content no longer matches the sha256 recorded there was edited by hand and is refused
// unless Force::yes. Errors are podplane::Error and leave every file as it was: a run first
// plans every file (reading only), refuses what it may not do, then writes the files staged
// and renames them into place all or nothing (generator/staged_write.hpp).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "lockfile/platform.hpp"
#include "generator/config.hpp"
#include "generator/staged_write.hpp"

namespace podplane::generator {

enum class Command { create, upgrade };
enum class Force { no, yes };

inline constexpr const char* state_file_name = ".podplane.cluster.state.json";

struct StackOptions {
  std::filesystem::path config_file;
  Command command = Command::create;
  Force force = Force::no;
  std::string env_deps_url;  // $PODPLANE_DEPS_URL as the CLI read it; used when the config has none
};

struct FileOutcome {
  enum class Change { created, updated, unchanged, removed };
  std::string name;
  Change change = Change::unchanged;
};
std::string_view to_string(FileOutcome::Change change);

struct VersionChange {
  std::string item;  // "nstance-dev/nstance/aws", "registry.opentofu.org/hashicorp/aws", a manifest name
  std::string from;  // "" when added
  std::string to;    // "" when removed
};

struct StackResult {
  std::filesystem::path stack_dir;
  bool new_stack = false;
  std::string module_version;
  std::vector<FileOutcome> files;
  std::vector<VersionChange> version_changes;  // upgrade: each item whose version moved
  std::vector<std::string> impacts;            // inputs files changed by a config edit, with their impact
  std::vector<std::string> warnings;
  std::filesystem::path tfrc;                  // the store's podplane.tfrc, for init/apply

  bool changed() const;
};

[[nodiscard]] StackResult generate_stack(const cache::Store& store, const StackOptions& options);
// The same through `disk`, the seam tests use to fail a write between two files.
[[nodiscard]] StackResult generate_stack(const cache::Store& store, const StackOptions& options, Disk& disk);

// Where a module package lives in the store's views: cache::module_view_dir, absolute.
std::filesystem::path module_package_dir(const cache::Store& store, const cache::ModuleTree& tree);

// The engine a stack is for, read from its lock: the header's "terraform init" / "tofu init",
// else the registry host of its entries (registry.terraform.io → terraform), else tofu.
lockfile::Engine stack_engine(const std::string& lock_text);

// The module version a generated main.tf is pinned to (the path in its cluster module
// source), if it is one.
std::optional<std::string> pinned_module_version(const std::string& main_tf);

// The registry host of the lock entries: the engine the store's selection was filled for
// (registry.opentofu.org for tofu, also when there is no selection).
std::string engine_host(const std::optional<cache::TfSelection>& selection);

// sha256 hex of bytes (for the state file and tests).
std::string content_hash(const std::string& bytes);

}  // namespace podplane::generator
