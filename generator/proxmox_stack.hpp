#pragma once
// The Proxmox VE stack (provider kind proxmox): what `cluster create` writes beside the config
// instead of OpenTofu files.
//   podplane.cluster.proxmox.node-init.sh       one script for every PVE node: fetches the Debian
//       cloud image and nstance-server from the site mirror (deps_mirror_url), checks each
//       digest before use, keeps or rebuilds the VM template of the node's arch, and installs
//       nstance-server as a systemd unit. Nothing it needs comes from the internet.
//   podplane.cluster.proxmox.shard.<zone>.jsonc  the shard config Nstance reads, one per zone.
//   podplane.cluster.proxmox.tf                  only with proxmox.manage_api_token: an OpenTofu root
//       (bpg/proxmox) creating the role, user and API token of the nstance-servers; the
//       generator adds its lock from the store, as for the other stacks.
// Inputs are the config and the vmconfig manifests the stack already holds (their bytes, by
// manifest name); the store must hold the image and nstance-server of every arch, which is
// checked here so a stack never points nodes at files the site mirror cannot serve.
// Errors are podplane::Error naming what is missing and the command that fetches it.
#include <map>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "generator/config.hpp"

namespace podplane::generator {

inline constexpr const char* proxmox_node_init_file = "podplane.cluster.proxmox.node-init.sh";
inline constexpr const char* proxmox_server_item = "nstance-server";  // the vmconfig item nodes run
inline constexpr const char* proxmox_image_item = "os-image";
inline constexpr const char* proxmox_root_file = "podplane.cluster.proxmox.tf";

// The VM template of an arch on every node: cloned by name (VMIDs are cluster-wide, names are not).
std::string proxmox_template_name(const ClusterConfig& config, const std::string& arch);

struct ProxmoxInputs {
  const ClusterConfig* config = nullptr;
  std::string deps_url;                          // the site mirror the nodes fetch from
  std::vector<std::string> fallback_urls;        // further mirrors, tried in order when it fails
  std::map<std::string, std::string> manifests;  // "vmconfig_knc_debian-13_amd64" → its JSON
};

// name → content of every Proxmox file of the stack.
[[nodiscard]] std::map<std::string, std::string> render_proxmox_stack(const cache::Store& store,
                                                                      const ProxmoxInputs& inputs);

}  // namespace podplane::generator
