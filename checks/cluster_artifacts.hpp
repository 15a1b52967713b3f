#pragma once
// The part of `cluster check` about what the VMs, the nodes and apply fetch, beside `init`:
// every artifact of the stack's pinned vmconfig manifests, the container images they pin, the
// seed snapshot, each VM's userdata downloads and a Proxmox node's, replayed against what the
// store publishes, each object hashed against its digest. One function per item, each adding
// its rows; none throws for a file of the stack it cannot read (its row says so).
#include <filesystem>
#include <string>

#include "cache/store.hpp"
#include "checks/check_report.hpp"
#include "generator/config.hpp"

namespace podplane::checks {

// `provider_kind` "" (the config cannot be read) counts every item of a manifest, not only those
// the cluster's provider installs.
void check_manifests(const cache::Store& store, const std::filesystem::path& stack_dir, const std::string& provider_kind,
                     CheckReporter& out);
void check_images(const cache::Store& store, const std::filesystem::path& stack_dir, CheckReporter& out);
// `config` null (it cannot be read): the seed's name, version and pin are not known.
void check_seed(const cache::Store& store, const std::filesystem::path& stack_dir, const std::string& main_text,
                const generator::ClusterConfig* config, CheckReporter& out);
void check_vm_fetches(const cache::Store& store, const std::filesystem::path& stack_dir, const std::string& main_text,
                      const std::string& provider_kind, CheckReporter& out);
// `script`: the text of the stack's Proxmox node-init script.
void check_node_fetches(const cache::Store& store, const std::string& script, CheckReporter& out);
void check_boot_files(const cache::Store& store, const std::filesystem::path& stack_dir, CheckReporter& out);

}  // namespace podplane::checks
