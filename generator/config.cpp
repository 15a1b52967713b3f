#include "generator/config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "generator/jsonc.hpp"
#include "generator/schema.hpp"

namespace podplane::generator {

namespace {

using nlohmann::json;

std::string str(const json& object, const char* key, std::string fallback = "") {
  auto found = object.find(key);
  return found == object.end() ? fallback : found->get<std::string>();
}

bool boolean(const json& object, const char* key, bool fallback) {
  auto found = object.find(key);
  return found == object.end() ? fallback : found->get<bool>();
}

std::vector<std::string> strings(const json& object, const char* key) {
  auto found = object.find(key);
  if (found == object.end()) return {};
  return found->get<std::vector<std::string>>();
}

// An error about one value of the config, in the same shape as schema violations.
[[noreturn]] void fail(const JsoncDocument& document, std::string_view source, const std::string& pointer,
                       const std::string& message) {
  throw Error(std::string(source) + ":" + std::to_string(document.line_of(pointer)) + ": " + display_path(pointer) +
              ": " + message);
}

// An integer field at `pointer`, or `fallback` when absent. The schema accepts any whole
// number (4294967296 and 1e20 included, as JSON Schema says), and nlohmann's get<int>() would
// silently truncate those, so the range is checked here.
int integer(const JsoncDocument& document, std::string_view source, const std::string& pointer, int fallback) {
  const json::json_pointer at(pointer);
  if (!document.value.contains(at)) return fallback;
  const json& value = document.value.at(at);
  constexpr auto lowest = std::numeric_limits<int>::min();
  constexpr auto highest = std::numeric_limits<int>::max();
  if (value.is_number_unsigned()) {
    if (value.get<std::uint64_t>() <= static_cast<std::uint64_t>(highest)) return value.get<int>();
  } else if (value.is_number_integer()) {
    auto number = value.get<std::int64_t>();
    if (number >= lowest && number <= highest) return static_cast<int>(number);
  } else if (value.is_number_float()) {
    double number = value.get<double>();
    if (number >= lowest && number <= highest && number == std::floor(number)) return static_cast<int>(number);
  }
  fail(document, source, pointer,
       "is out of range: " + value.dump() + " (expected a whole number from " + std::to_string(lowest) + " to " +
           std::to_string(highest) + ")");
}

// ---- one function per section of the config; each fails at the first value it refuses ----
void read_oidc(const json& oidc, ClusterConfig& config) {
  config.oidc.issuer_url = oidc["issuer_url"].get<std::string>();
  config.oidc.client_id = str(oidc, "client_id", config.oidc.client_id);
  config.oidc.username_claim = str(oidc, "username_claim", config.oidc.username_claim);
  config.oidc.groups_claim = str(oidc, "groups_claim", config.oidc.groups_claim);
  config.oidc.ca_cert = str(oidc, "ca_cert");
  config.oidc.signing_algs = strings(oidc, "signing_algs");
}

// The pools, and their names for the sections that refer to them.
std::set<std::string> read_pools(const JsoncDocument& document, std::string_view source_name, const json& c,
                                 ClusterConfig& config) {
  for (const auto& item : c["pools"].items()) {  // nlohmann keeps keys sorted
    config.pools.push_back({item.key(), item.value()["arch"].get<std::string>(),
                            item.value()["instance_type"].get<std::string>(),
                            integer(document, source_name, "/cluster/pools/" + json_pointer_token(item.key()) + "/size", 0)});
  }
  std::set<std::string> pool_names;
  for (const auto& pool : config.pools) pool_names.insert(pool.name);
  if (!pool_names.count("control-plane"))
    fail(document, source_name, "/cluster/pools", "needs a pool named \"control-plane\" (it runs the knc VMs)");
  return pool_names;
}

void read_proxmox(const JsoncDocument& document, std::string_view source_name, const json& x, ProxmoxConfig& proxmox) {
  const std::string at = "/cluster/providers/0/proxmox/";
  proxmox.api_url = str(x, "api_url");
  proxmox.insecure_tls = boolean(x, "insecure_tls", false);
  proxmox.storage = str(x, "storage");
  proxmox.cloud_init_iso_storage = str(x, "cloud_init_iso_storage", proxmox.cloud_init_iso_storage);
  proxmox.bridge = str(x, "bridge");
  proxmox.vlan = integer(document, source_name, at + "vlan", 0);
  proxmox.template_vmid = integer(document, source_name, at + "template_vmid", proxmox.template_vmid);
  proxmox.cores = integer(document, source_name, at + "cores", proxmox.cores);
  proxmox.memory_mb = integer(document, source_name, at + "memory_mb", proxmox.memory_mb);
  proxmox.disk_size = str(x, "disk_size", proxmox.disk_size);
  proxmox.vip = str(x, "vip");
  proxmox.manage_api_token = boolean(x, "manage_api_token", false);
  proxmox.object_storage_endpoint = str(x["object_storage"], "endpoint");
  while (!proxmox.object_storage_endpoint.empty() && proxmox.object_storage_endpoint.back() == '/')
    proxmox.object_storage_endpoint.pop_back();
  proxmox.bucket = str(x["object_storage"], "bucket");
}

// The provider's kind and region, and what only that kind takes: an account, a project or a
// Proxmox site.
void read_provider_kind(const JsoncDocument& document, std::string_view source_name, const json& p, ProviderConfig& provider) {
  provider.kind = p["kind"] == "aws" ? ProviderKind::aws : p["kind"] == "google" ? ProviderKind::google : ProviderKind::proxmox;
  provider.region = p["region"].get<std::string>();
  auto only_for = [&](const char* key, const char* kinds) {
    if (p.contains(key)) fail(document, source_name, std::string("/cluster/providers/0/") + key, std::string("is for ") + kinds + " providers only");
  };
  if (provider.kind == ProviderKind::aws) {
    if (!p.contains("account")) fail(document, source_name, "/cluster/providers/0", "an aws provider needs \"account\"");
    only_for("project", "google");
    only_for("proxmox", "proxmox");
    provider.account = p["account"].get<std::string>();
  } else if (provider.kind == ProviderKind::google) {
    if (!p.contains("project")) fail(document, source_name, "/cluster/providers/0", "a google provider needs \"project\"");
    for (const char* key : {"account", "profile", "enable_ssm"}) only_for(key, "aws");
    only_for("proxmox", "proxmox");
    provider.account = p["project"].get<std::string>();
  } else {
    if (!p.contains("proxmox")) fail(document, source_name, "/cluster/providers/0", "a proxmox provider needs \"proxmox\"");
    for (const char* key : {"account", "profile", "enable_ssm", "load_balancers", "dns"}) only_for(key, "aws and google");
    only_for("project", "google");
    read_proxmox(document, source_name, p["proxmox"], provider.proxmox);
  }
}

void read_zones(const JsoncDocument& document, std::string_view source_name, const json& p,
                const std::set<std::string>& pool_names, ProviderConfig& provider) {
  for (const auto& zone : p["zones"].items()) {
    ZoneConfig zone_config{zone.key(), {}};
    std::size_t index = 0;
    for (const auto& subnet : zone.value()) {
      SubnetConfig s{subnet["v4cidr"].get<std::string>(), str(subnet, "v6cidr"), boolean(subnet, "public", false),
                     strings(subnet, "services"), str(subnet, "pool")};
      if (!s.pool.empty() && !pool_names.count(s.pool))
        fail(document, source_name, "/cluster/providers/0/zones/" + zone.key() + "/" + std::to_string(index) + "/pool",
             "names the pool \"" + s.pool + "\", which is not in cluster.pools");
      zone_config.subnets.push_back(std::move(s));
      ++index;
    }
    provider.zones.push_back(std::move(zone_config));
  }
  if (provider.zones.empty()) fail(document, source_name, "/cluster/providers/0/zones", "needs at least one zone");
  if (provider.kind == ProviderKind::proxmox) {
    // A Proxmox zone is an Nstance shard: its name becomes a file name and a shard id.
    for (const auto& zone : provider.zones) {
      bool plain = !zone.name.empty() && zone.name.size() <= 63 && std::isalnum(static_cast<unsigned char>(zone.name[0])) &&
                   zone.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
      if (!plain)
        fail(document, source_name, "/cluster/providers/0/zones/" + json_pointer_token(zone.name),
             "is not a valid shard name (expected lower-case letters, digits and '-', up to 63, e.g. site-a-1)");
    }
  }
}

void read_load_balancers(const JsoncDocument& document, std::string_view source_name, const json& p,
                         const std::set<std::string>& pool_names, ProviderConfig& provider) {
  for (const auto& lb : p["load_balancers"].items()) {
    LoadBalancerConfig balancer{lb.key(), boolean(lb.value(), "public", false), str(lb.value(), "subnets", "private"), {}};
    std::size_t index = 0;
    for (const auto& listener : lb.value()["listeners"]) {
      std::string at = "/cluster/providers/0/load_balancers/" + json_pointer_token(lb.key()) + "/listeners/" +
                       std::to_string(index);
      int port = integer(document, source_name, at + "/port", 0);
      ListenerConfig l{port, integer(document, source_name, at + "/target_port", port), listener["pool"].get<std::string>()};
      if (!pool_names.count(l.pool))
        fail(document, source_name,
             "/cluster/providers/0/load_balancers/" + lb.key() + "/listeners/" + std::to_string(index) + "/pool",
             "names the pool \"" + l.pool + "\", which is not in cluster.pools");
      balancer.listeners.push_back(l);
      ++index;
    }
    provider.load_balancers.push_back(std::move(balancer));
  }
}

void read_provider(const JsoncDocument& document, std::string_view source_name, const json& p,
                   const std::set<std::string>& pool_names, ProviderConfig& provider) {
  read_provider_kind(document, source_name, p, provider);
  provider.profile = str(p, "profile");
  provider.enable_ssm = provider.kind == ProviderKind::aws && boolean(p, "enable_ssm", true);
  if (p.contains("vpc")) {
    provider.vpc_id = str(p["vpc"], "id");
    provider.vpc_v4cidr = str(p["vpc"], "v4cidr");
    provider.vpc_v6cidr = str(p["vpc"], "v6cidr");
  }
  if (provider.kind != ProviderKind::proxmox && provider.vpc_id.empty() && provider.vpc_v4cidr.empty())
    fail(document, source_name, "/cluster/providers/0", "needs \"vpc\" with \"id\" (an existing VPC) or \"v4cidr\"");
  read_zones(document, source_name, p, pool_names, provider);
  if (p.contains("load_balancers")) read_load_balancers(document, source_name, p, pool_names, provider);
  if (p.contains("dns")) provider.dns_zone = p["dns"]["zone"].get<std::string>();
}

void read_kubernetes(const JsoncDocument& document, std::string_view source_name, const json& k, ClusterConfig& config) {
  auto& kubernetes = config.kubernetes;
  kubernetes.api_hostname = k["api_hostname"].get<std::string>();
  kubernetes.api_port = integer(document, source_name, "/cluster/kubernetes/api_port", kubernetes.api_port);
  kubernetes.cluster_cidr = strings(k, "cluster_cidr");
  kubernetes.service_cidr = strings(k, "service_cidr");
  kubernetes.node_cidr_mask_size_ipv4 =
      integer(document, source_name, "/cluster/kubernetes/node_cidr_mask_size_ipv4", kubernetes.node_cidr_mask_size_ipv4);
  kubernetes.node_cidr_mask_size_ipv6 =
      integer(document, source_name, "/cluster/kubernetes/node_cidr_mask_size_ipv6", kubernetes.node_cidr_mask_size_ipv6);
  kubernetes.log_level = integer(document, source_name, "/cluster/kubernetes/log_level", kubernetes.log_level);
}

}  // namespace

std::string_view to_string(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::aws: return "aws";
    case ProviderKind::google: return "google";
    case ProviderKind::proxmox: return "proxmox";
  }
  return "?";
}

std::vector<std::pair<std::string, std::string>> ClusterConfig::vm_flavours() const {
  std::set<std::pair<std::string, std::string>> flavours;
  for (const auto& pool : pools) flavours.insert({pool.vm_kind(), pool.arch});
  return {flavours.begin(), flavours.end()};
}

std::string vmconfig_manifest_name(const std::string& kind, const std::string& arch) {
  return "vmconfig_" + kind + "_debian-13_" + arch;
}

ClusterConfig parse_cluster_config(std::string_view text, std::string_view source_name) {
  JsoncDocument document = parse_jsonc(text, source_name);
  validate_or_throw(json::parse(cluster_schema_text()), document, source_name);

  const json& c = document.value["cluster"];
  ClusterConfig config;
  config.id = c["id"].get<std::string>();
  config.name = str(c, "name", config.id);
  config.deps_mirror_url = str(c, "deps_mirror_url");
  while (!config.deps_mirror_url.empty() && config.deps_mirror_url.back() == '/') config.deps_mirror_url.pop_back();
  for (auto url : strings(c, "deps_mirror_fallback_urls")) {
    while (!url.empty() && url.back() == '/') url.pop_back();
    config.deps_mirror_fallback_urls.push_back(std::move(url));
  }
  config.ssh_authorized_keys = strings(c, "ssh_authorized_keys");
  config.immutable_ssh_authorized_keys = strings(c, "immutable_ssh_authorized_keys");
  read_oidc(c["oidc"], config);
  auto pool_names = read_pools(document, source_name, c, config);
  read_provider(document, source_name, c["providers"][0], pool_names, config.provider);
  read_kubernetes(document, source_name, c["kubernetes"], config);
  if (c.contains("telemetry")) config.telemetry_endpoint = str(c["telemetry"], "endpoint");
  if (c.contains("registry")) config.registry_hostname = str(c["registry"], "hostname");
  if (c.contains("seed")) {
    config.seed = {str(c["seed"], "name"), str(c["seed"], "version"), str(c["seed"], "digest"), str(c["seed"], "path")};
  }
  return config;
}

ClusterConfig load_cluster_config(const std::filesystem::path& file) {
  std::error_code error;
  if (!std::filesystem::exists(file, error))
    throw Error("cluster config " + file.string() + " does not exist; write one with `podplane cluster init`");
  return parse_cluster_config(read_file_within_limits(file, "cluster config"), file.filename().string());
}

namespace {

// The providers[0] of a starter Proxmox config: one shard (zone) with the site's settings.
std::string proxmox_starter_provider(const std::string& region) {
  std::string out;
  out += "      {\n";
  out += "        \"kind\": \"proxmox\",\n";
  out += "        \"region\": \"" + region + "\",\n";
  out += "        // What the site provides: the Proxmox API (an API token goes in /etc/nstance/server.env on each\n";
  out += "        // node), a storage pool, a bridge, a free VIP and S3-compatible object storage (docs/cluster.md).\n";
  out += "        \"proxmox\": {\n";
  out += "          \"api_url\": \"https://pve1.internal:8006/api2/json\",\n";
  out += "          \"storage\": \"local-lvm\",\n";
  out += "          \"bridge\": \"vmbr0\",\n";
  out += "          \"vip\": \"10.0.0.100\",\n";
  out += "          \"object_storage\": { \"endpoint\": \"http://s3.internal:8333\", \"bucket\": \"nstance\" }\n";
  out += "        },\n";
  out += "        // One Nstance shard per zone; the zone name is the shard id.\n";
  out += "        \"zones\": {\n";
  out += "          \"" + region + "-1\": [\n";
  out += "            { \"v4cidr\": \"10.0.1.0/24\", \"pool\": \"control-plane\" },\n";
  out += "            { \"v4cidr\": \"10.0.2.0/24\", \"pool\": \"ingress\" }\n";
  out += "          ]\n";
  out += "        }\n";
  out += "      }\n";
  return out;
}

}  // namespace

InitOptions starter_defaults(ProviderKind provider) {
  const bool aws = provider == ProviderKind::aws;
  const bool proxmox = provider == ProviderKind::proxmox;
  InitOptions defaults;  // its id is already the starter one
  defaults.provider = provider;
  defaults.region = aws ? "us-east-1" : proxmox ? "site-a" : "europe-west1";
  defaults.account = aws ? "123456789012" : "example-project";
  // Proxmox VE nodes are x86-64 hosts that run VMs of their own arch: an arm64 pool there would be emulated.
  defaults.arch = proxmox ? "amd64" : "arm64";
  defaults.api_hostname = "k8s.example.com";
  defaults.issuer_url = "https://auth.example.com";
  return defaults;
}

std::string starter_config(const InitOptions& options) {
  const bool aws = options.provider == ProviderKind::aws;
  const bool proxmox = options.provider == ProviderKind::proxmox;
  const InitOptions defaults = starter_defaults(options.provider);
  auto or_default = [](const std::string& value, const std::string& fallback) { return value.empty() ? fallback : value; };
  std::string region = or_default(options.region, defaults.region);
  std::string account = or_default(options.account, defaults.account);
  std::string zone = aws ? region + "a" : region + "-b";
  std::string arch = or_default(options.arch, defaults.arch);
  std::string instance = proxmox ? "standard" : aws ? (arch == "arm64" ? "t4g.medium" : "t3.medium")
                             : (arch == "arm64" ? "t2a-standard-2" : "e2-standard-2");
  std::string hostname = or_default(options.api_hostname, defaults.api_hostname);
  std::string issuer = or_default(options.issuer_url, defaults.issuer_url);
  std::string out;
  out += "// Podplane cluster configuration. `podplane cluster create` generates the OpenTofu/Terraform\n";
  out += "// stack beside this file from it, offline, using only the dependency store.\n";
  out += "// Editors validate and complete it with podplane.cluster.schema.json (written beside it).\n";
  out += "{\n";
  out += "  \"$schema\": \"./podplane.cluster.schema.json\",\n";
  out += "  \"cluster\": {\n";
  out += "    // Identity: changing id, provider kind, account/project or region needs a new cluster.\n";
  out += "    \"id\": \"" + options.id + "\",\n";
  out += "    \"name\": \"" + options.id + "\",\n";
  out += "    // Where VMs fetch vmconfig artifacts: your site's `podplane mirror serve`.\n";
  out += "    // Without it, $PODPLANE_DEPS_URL (else https://deps.podplane.dev) is used.\n";
  if (options.deps_mirror_url.empty()) out += "    // \"deps_mirror_url\": \"http://mirror.internal:8080\",\n";
  else out += "    \"deps_mirror_url\": " + nlohmann::json(options.deps_mirror_url).dump() + ",\n";
  if (!options.deps_mirror_fallback_urls.empty()) {
    out += "    // Tried in turn when deps_mirror_url fails (what can list several mirrors: docs/operations.md).\n";
    out += "    \"deps_mirror_fallback_urls\": " + nlohmann::json(options.deps_mirror_fallback_urls).dump() + ",\n";
  }
  out += "    \"oidc\": { \"issuer_url\": \"" + issuer + "\" },\n";
  out += "    // control-plane runs knc VMs; every other pool runs knd VMs.\n";
  out += "    \"pools\": {\n";
  out += "      \"control-plane\": { \"arch\": \"" + arch + "\", \"instance_type\": \"" + instance + "\", \"size\": 1 },\n";
  out += "      \"ingress\": { \"arch\": \"" + arch + "\", \"instance_type\": \"" + instance + "\", \"size\": 1 }\n";
  out += "    },\n";
  out += "    \"providers\": [\n";
  if (options.provider == ProviderKind::proxmox) {
    out += proxmox_starter_provider(region);
  } else {
    out += "      {\n";
    out += "        \"kind\": \"" + std::string(to_string(options.provider)) + "\",\n";
    out += "        \"region\": \"" + region + "\",\n";
    if (aws) {
      out += "        \"account\": \"" + account + "\",\n";
      out += "        \"profile\": \"default\",\n";
    } else {
      out += "        \"project\": \"" + account + "\",\n";
    }
    out += "        \"vpc\": { \"v4cidr\": \"172.18.0.0/16\" },\n";
    out += "        \"zones\": {\n";
    out += "          \"" + zone + "\": [\n";
    out += "            { \"v4cidr\": \"172.18.10.0/28\", \"services\": [\"nat\", \"nlb\"], \"public\": true },\n";
    out += "            { \"v4cidr\": \"172.18.20.0/28\", \"services\": [\"nstance\"] },\n";
    out += "            { \"v4cidr\": \"172.18.1.0/24\", \"pool\": \"control-plane\" },\n";
    out += "            { \"v4cidr\": \"172.18.2.0/24\", \"pool\": \"ingress\" }\n";
    out += "          ]\n";
    out += "        },\n";
    out += "        \"load_balancers\": {\n";
    out += "          \"main\": { \"public\": true, \"subnets\": \"public\", \"listeners\": [{ \"port\": 443, \"pool\": \"ingress\" }] }\n";
    out += "        }\n";
    out += "      }\n";
  }
  out += "    ],\n";
  out += "    \"kubernetes\": {\n";
  out += "      \"api_hostname\": \"" + hostname + "\",\n";
  out += "      \"cluster_cidr\": [\"100.64.0.0/10\"],\n";
  out += "      \"service_cidr\": [\"198.18.0.0/15\"]\n";
  out += "    }\n";
  out += "  }\n";
  out += "}\n";
  return out;
}

}  // namespace podplane::generator
