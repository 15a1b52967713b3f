#include "generator/stack_pins.hpp"

#include "base/digest.hpp"
#include "base/input_limits.hpp"
#include "generator/config.hpp"
#include "generator/stack.hpp"

namespace podplane::generator {

namespace fs = std::filesystem;

StackPins stack_pins(const fs::path& config_file) {
  const ClusterConfig config = load_cluster_config(config_file);
  const fs::path stack_dir = config_file.parent_path().empty() ? fs::path(".") : config_file.parent_path();
  const std::string source = "cluster " + config_file.string();
  StackPins pins;
  std::error_code ec;
  if (fs::path lock = stack_dir / ".terraform.lock.hcl"; fs::exists(lock, ec)) {
    for (auto& pin : cache::lock_file_pins(lock)) {
      pin.source = source;
      pins.items.push_back(std::move(pin));
    }
  }
  if (fs::path main_tf = stack_dir / "podplane.cluster.main.tf"; fs::exists(main_tf, ec)) {
    if (auto version = pinned_module_version(read_file_within_limits(main_tf, "stack main.tf")))
      pins.items.push_back({cache::ItemFamily::module, "", *version, source});
  }
  for (const auto& [kind, arch] : config.vm_flavours()) {
    fs::path copy = stack_dir / ("podplane.cluster." + vmconfig_manifest_name(kind, arch) + ".json");
    if (fs::exists(copy, ec)) pins.manifests.emplace_back(file_digest_hex(copy), source);
  }
  if (!config.seed.name.empty() && config.seed.name != "none" && config.seed.path.empty() && !config.seed.version.empty())
    pins.items.push_back({cache::ItemFamily::seed_snapshot, config.seed.name, config.seed.version, source});
  return pins;
}

}  // namespace podplane::generator
