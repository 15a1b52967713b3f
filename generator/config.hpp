#pragma once
// podplane.cluster.jsonc: loaded, checked against the embedded schema (errors name the JSON
// path and the line), then checked for what the schema cannot say (pool references, the
// provider's account or project). Errors are podplane::Error.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/podplane_stack.hpp"

namespace podplane::generator {

using cache::ProviderKind;  // aws | google | proxmox, owned with the stack it selects
std::string_view to_string(ProviderKind kind);

struct PoolConfig {
  std::string name;
  std::string arch;           // amd64 | arm64
  std::string instance_type;
  int size = 0;
  std::string vm_kind() const { return name == "control-plane" ? "knc" : "knd"; }
};

struct SubnetConfig {
  std::string v4cidr;
  std::string v6cidr;
  bool is_public = false;
  std::vector<std::string> services;
  std::string pool;
};

struct ZoneConfig {
  std::string name;
  std::vector<SubnetConfig> subnets;
};

struct ListenerConfig {
  int port = 0;
  int target_port = 0;
  std::string pool;
};

struct LoadBalancerConfig {
  std::string name;
  bool is_public = false;
  std::string subnets;  // public | private
  std::vector<ListenerConfig> listeners;
};

// Proxmox VE (provider kind proxmox): what the node-init script and the shard configs need.
struct ProxmoxConfig {
  std::string api_url;
  bool insecure_tls = false;
  std::string storage;                           // VM templates and VM disks
  std::string cloud_init_iso_storage = "local";
  std::string bridge;
  int vlan = 0;                                  // 0: untagged
  int template_vmid = 9000;                      // lowest VMID a template gets
  int cores = 2;
  int memory_mb = 4096;
  std::string disk_size = "20G";
  std::string vip;
  bool manage_api_token = false;                 // podplane.cluster.proxmox.tf creates role, user, token
  std::string object_storage_endpoint;
  std::string bucket;
};

struct ProviderConfig {
  ProviderKind kind = ProviderKind::aws;
  std::string region;
  std::string account;   // aws account ID, or the google project ID
  std::string profile;   // aws only
  bool enable_ssm = true;
  std::string vpc_id, vpc_v4cidr, vpc_v6cidr;
  std::vector<ZoneConfig> zones;                 // sorted by name
  std::vector<LoadBalancerConfig> load_balancers;  // sorted by name
  std::string dns_zone;
  ProxmoxConfig proxmox;                         // proxmox only
};

struct ClusterConfig {
  std::string id;
  std::string name;
  std::string deps_mirror_url;  // from the config; empty → $PODPLANE_DEPS_URL → default
  // Further site mirrors, tried in order when deps_mirror_url fails (by what can list several:
  // the Proxmox node-init script; docs/operations.md "Client failover"). No trailing '/'.
  std::vector<std::string> deps_mirror_fallback_urls;
  std::vector<std::string> ssh_authorized_keys;
  std::vector<std::string> immutable_ssh_authorized_keys;
  struct {
    std::string issuer_url, client_id = "kubernetes", username_claim = "email", groups_claim = "groups", ca_cert;
    std::vector<std::string> signing_algs;
  } oidc;
  std::vector<PoolConfig> pools;  // sorted by name
  ProviderConfig provider;
  struct {
    std::string api_hostname;
    int api_port = 6443;
    std::vector<std::string> cluster_cidr, service_cidr;
    int node_cidr_mask_size_ipv4 = 24, node_cidr_mask_size_ipv6 = 64, log_level = 2;
  } kubernetes;
  std::string telemetry_endpoint;
  std::string registry_hostname;
  struct {
    std::string name, version, digest, path;
  } seed;

  // (kind, arch) pairs the pools need, e.g. {"knc","arm64"}, sorted and unique.
  std::vector<std::pair<std::string, std::string>> vm_flavours() const;
};

// The name of the vmconfig manifest for a flavour: vmconfig_<kind>_debian-13_<arch>.
std::string vmconfig_manifest_name(const std::string& kind, const std::string& arch);

[[nodiscard]] ClusterConfig parse_cluster_config(std::string_view text, std::string_view source_name);
[[nodiscard]] ClusterConfig load_cluster_config(const std::filesystem::path& file);

struct InitOptions {
  ProviderKind provider = ProviderKind::aws;
  std::string id = "example-cluster";
  std::string region;      // empty → a sensible default per provider
  std::string account;     // empty → a placeholder per provider
  std::string arch;        // empty → amd64 for Proxmox VE (x86-64 nodes), arm64 elsewhere
  std::string api_hostname;  // empty → k8s.example.com
  std::string issuer_url;    // empty → https://auth.example.com
  std::string deps_mirror_url;  // empty → a commented example (VMs then use $PODPLANE_DEPS_URL)
  std::vector<std::string> deps_mirror_fallback_urls;  // cluster.deps_mirror_fallback_urls
};

// What a starter config of `provider` holds where InitOptions leaves a field empty: the one
// list of defaults that starter_config fills in and `cluster init`'s questions offer.
[[nodiscard]] InitOptions starter_defaults(ProviderKind provider);

// A commented starting config that validates against the schema.
[[nodiscard]] std::string starter_config(const InitOptions& options);

}  // namespace podplane::generator
