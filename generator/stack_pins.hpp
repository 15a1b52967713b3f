#pragma once
// What a cluster's stack pins in the store, for `deps prune --keep-config`: whatever a later
// `cluster create` (which restores a pinned stack) or `cluster check` reads must survive a
// prune. Reads the config and the generated files beside it; nothing else. Errors are
// podplane::Error naming the file.
#include <filesystem>

#include "cache/prune.hpp"

namespace podplane::generator {

// The providers of the stack's .terraform.lock.hcl, the module version its main.tf names, the
// vmconfig manifests it copied (by the sha256 of their bytes) and the seed snapshot the config
// names. A stack not generated yet pins only the seed: the store's current manifests, module
// and selection, which its first `cluster create` takes, are kept by every prune anyway.
struct StackPins {
  std::vector<cache::ItemPin> items;
  std::vector<std::pair<std::string, std::string>> manifests;  // sha256, who pins it
};
[[nodiscard]] StackPins stack_pins(const std::filesystem::path& config_file);

}  // namespace podplane::generator
