#include "generator/proxmox_stack.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "base/url.hpp"
#include "cache/podplane_stack.hpp"
#include "cache/views.hpp"
#include "generator/hcl_emitter.hpp"
#include "generator/render.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "podplane/proxmox_node_init.hpp"

namespace podplane::generator {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// One artifact a node fetches: where the site mirror serves it and the digest it must have.
struct NodeArtifact {
  std::string path;    // [arch/<arch>/]vmconfig/artifacts/<name>/<version>/<file>, relative to the mirror root
  std::string digest;  // sha256:<hex> | sha512:<hex>, as the manifest gives it
  std::string file;    // the file name on the node
};

struct ArchArtifacts {
  std::string arch;
  std::string image_version;
  NodeArtifact image;
  NodeArtifact server;
};

std::string text_of(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The manifest item must be in the store (so `mirror serve` has it) with the digest the
// manifest names; returns where the mirror serves it.
NodeArtifact stored_item(const cache::Store& store, const std::string& manifest, const std::string& arch,
                         const std::string& name, const json& entry) {
  std::string version = text_of(entry, "version");
  std::string digest = text_of(entry, "digest");
  std::string file = url_basename(text_of(entry, "url"));
  std::string fetch = "run `podplane deps download --providers proxmox --arch " + arch +
                      "` while online, or import a bundle that has it";
  if (version.empty() || digest.empty() || file.empty())
    throw Error("vmconfig manifest " + manifest + ": item " + name + " lacks a version, digest or url");
  auto row = store.find_artifact(cache::ArtifactKind::vmconfig_artifact, name, version, "linux_" + arch, file);
  if (!row || row->upstream_digest != digest || !store.has_object(row->digest))
    throw Error(name + " " + version + " for linux_" + arch + " (" + file + ") is not in the store; " + fetch);
  for (const std::string& part : {name, version, file}) {
    if (part.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-") != std::string::npos)
      throw Error("vmconfig manifest " + manifest + ": item " + name + " has an unsafe path segment \"" + part + "\"");
  }
  return {"vmconfig/artifacts/" + name + "/" + version + "/" + file, digest, file};
}

// The image and nstance-server of one arch, from the knc manifest of the arch if the stack has
// it, else the knd one (both list the same image).
ArchArtifacts arch_artifacts(const cache::Store& store, const ProxmoxInputs& inputs, const std::string& arch) {
  for (const char* kind : {"knc", "knd"}) {
    std::string name = vmconfig_manifest_name(kind, arch);
    auto found = inputs.manifests.find(name);
    if (found == inputs.manifests.end()) continue;
    json document = parse_json_within_limits(found->second, "vmconfig manifest " + name);
    const json& root = document.at("vmconfig");
    const json image = root.value("os", json::object()).value("image", json::object());
    if (!image.is_object() || image.empty()) throw Error("vmconfig manifest " + name + " has no os.image");
    const json dependencies = root.value("dependencies", json::object());
    if (!dependencies.contains(proxmox_server_item))
      throw Error("vmconfig manifest " + name + " lists no " + proxmox_server_item +
                  "; a Proxmox stack needs a vmconfig release that has it (run `podplane deps download "
                  "--providers proxmox` while online)");
    ArchArtifacts out;
    out.arch = arch;
    out.image_version = text_of(image, "version");
    out.image = stored_item(store, name, arch, proxmox_image_item, image);
    out.server = stored_item(store, name, arch, proxmox_server_item, dependencies.at(proxmox_server_item));
    // From the arch's own base of the site mirror (<deps_mirror_url>/arch/<arch>/, docs/mirror.md),
    // as that arch's VMs fetch: the plain path of an item whose arches share a file name serves
    // one arch's bytes only. The public mirror has Podplane's plain layout alone.
    if (inputs.deps_url != kPublicDepsUrl) {
      for (auto* artifact : {&out.image, &out.server}) artifact->path = cache::vmconfig_arch_base(arch) + "/" + artifact->path;
    }
    return out;
  }
  throw Error("no vmconfig manifest for " + arch + " in the stack");
}

// Single-quoted for bash: the value reads back exactly.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
}

// The script is generator/proxmox_node_init.sh (embedded at build time), with @NAME@
// placeholders. Values are filled in shell-quoted; everything the node fetches is named by path
// and digest here, so a node never asks anything but the site mirror. The per-arch case arms
// take the place of a whole comment line, so that the template itself is a bash program that
// bash -n and shellcheck read (tests/generator/node_init_script_test.cpp).
constexpr std::string_view arch_cases_line = "  # @ARCH_CASES@ (one case per arch, filled in by generator/proxmox_stack.cpp)\n";

std::string arch_case(const ClusterConfig& config, const ArchArtifacts& a) {
  std::string out;
  out += "  " + a.arch + ")\n";
  out += "    readonly IMAGE_VERSION=" + shell_quote(a.image_version) + "\n";
  out += "    readonly IMAGE_PATH=" + shell_quote(a.image.path) + "\n";
  out += "    readonly IMAGE_DIGEST=" + shell_quote(a.image.digest) + "\n";
  out += "    readonly IMAGE_FILE=" + shell_quote(a.image.file) + "\n";
  out += "    readonly SERVER_PATH=" + shell_quote(a.server.path) + "\n";
  out += "    readonly SERVER_DIGEST=" + shell_quote(a.server.digest) + "\n";
  out += "    readonly SERVER_FILE=" + shell_quote("nstance-server-" + a.server.digest.substr(a.server.digest.find(':') + 1, 12)) + "\n";
  out += "    readonly TEMPLATE_NAME=" + shell_quote(proxmox_template_name(config, a.arch)) + "\n";
  out += "    ;;\n";
  return out;
}

std::string node_init_script(const ClusterConfig& config, const std::vector<std::string>& mirror_urls,
                             const std::vector<ArchArtifacts>& archs) {
  const ProxmoxConfig& p = config.provider.proxmox;
  std::string shards;
  for (const auto& zone : config.provider.zones) shards += (shards.empty() ? "" : " ") + shell_quote(zone.name);
  std::string cases;
  for (const auto& a : archs) cases += arch_case(config, a);
  std::string script(embedded::proxmox_node_init);
  replace_all(script, std::string(arch_cases_line), cases);
  replace_all(script, "@SHARDS@", shards);
  std::string listed, quoted;
  for (const auto& url : mirror_urls) {
    listed += (listed.empty() ? "" : " then ") + url;
    quoted += (quoted.empty() ? "" : " ") + shell_quote(url);
  }
  replace_all(script, "@MIRROR_URL_TEXT@", listed);
  replace_all(script, "@MIRROR_URLS@", quoted);
  replace_all(script, "@CLUSTER_ID_Q@", shell_quote(config.id));
  replace_all(script, "@CLUSTER_ID@", config.id);
  replace_all(script, "@STORAGE@", shell_quote(p.storage));
  replace_all(script, "@BRIDGE@", shell_quote(p.bridge));
  replace_all(script, "@VLAN@", shell_quote(p.vlan > 0 ? std::to_string(p.vlan) : ""));
  replace_all(script, "@TEMPLATE_VMID@", std::to_string(p.template_vmid));
  replace_all(script, "@CORES@", std::to_string(p.cores));
  replace_all(script, "@MEMORY_MB@", std::to_string(p.memory_mb));
  replace_all(script, "@BUCKET@", shell_quote(p.bucket));
  replace_all(script, "@S3_ENDPOINT@", shell_quote(p.object_storage_endpoint));
  replace_all(script, "@API_URL@", shell_quote(p.api_url));
  return script;
}

// The shard config Nstance reads for one zone (JSONC; uploaded to
// s3://<bucket>/shard/<zone>/config.jsonc): VMs are clones of the node templates by name.
std::string shard_config(const ClusterConfig& config, const ZoneConfig& zone) {
  const ProxmoxConfig& p = config.provider.proxmox;
  ordered_json doc;
  doc["cluster"] = {{"id", config.id},
                    {"secrets",
                     {{"provider", "object-storage"},
                      {"prefix", "secret/"},
                      {"encryption_key", {{"provider", "file"}, {"source", "/etc/nstance/encryption.key"}}}}}};
  ordered_json shard;
  shard["id"] = zone.name;
  shard["infra"] = {{"provider", "proxmox"},
                    {"region", config.provider.region},
                    {"zone", zone.name},
                    {"options",
                     {{"api_url", p.api_url},
                      {"cloud_init_iso_storage", p.cloud_init_iso_storage},
                      {"insecure_tls", p.insecure_tls}}}};
  shard["bind"] = {{"health_addr", "0.0.0.0:8990"},   {"election_addr", "0.0.0.0:8991"},
                   {"registration_addr", "0.0.0.0:8992"}, {"operator_addr", "0.0.0.0:8993"},
                   {"agent_addr", "0.0.0.0:8994"}};
  shard["advertise"] = {{"health_addr", ":8990"},
                        {"election_addr", ":8991"},
                        {"registration_addr", p.vip + ":8992"},
                        {"operator_addr", p.vip + ":8993"},
                        {"agent_addr", p.vip + ":8994"}};
  // Every pool with a subnet in this zone: on Proxmox a subnet pool is the bridge.
  std::set<std::string> zone_pools;
  for (const auto& subnet : zone.subnets)
    if (!subnet.pool.empty()) zone_pools.insert(subnet.pool);
  ordered_json subnet_pools = ordered_json::object();
  for (const auto& pool : zone_pools) subnet_pools[pool] = ordered_json::array({p.bridge});
  shard["subnet_pools"] = subnet_pools;
  doc["shard"] = shard;
  ordered_json args = {{"StoragePool", p.storage}, {"Bridge", p.bridge}};
  if (p.vlan > 0) args["VLAN"] = p.vlan;
  args["Cores"] = p.cores;
  args["Memory"] = p.memory_mb;
  args["DiskSize"] = p.disk_size;
  args["StartOnBoot"] = true;
  doc["defaults"] = {{"args", args}, {"vars", {{"ClusterID", config.id}}}};
  ordered_json templates = ordered_json::object();
  ordered_json groups = ordered_json::object();
  for (const auto& pool : config.pools) {
    if (!zone_pools.count(pool.name)) continue;
    templates[pool.name] = {{"kind", pool.vm_kind()},
                            {"arch", pool.arch},
                            {"args", {{"TemplateName", proxmox_template_name(config, pool.arch)}}},
                            {"vars", {{"InstanceType", pool.instance_type}}},
                            {"subnet_pool", pool.name}};
    groups[pool.name] = {{"template", pool.name}, {"size", pool.size}, {"subnet_pool", pool.name}};
  }
  doc["templates"] = templates;
  doc["groups"] = {{"default", groups}};
  return "// Nstance shard config for shard " + zone.name + " of cluster " + config.id +
         ", generated by `podplane cluster create`.\n// Upload it to s3://" + p.bucket + "/shard/" + zone.name +
         "/config.jsonc; edit podplane.cluster.jsonc, not this file.\n" + doc.dump(2) + "\n";
}

// The OpenTofu root of a Proxmox stack: the role, user and API token nstance-server uses,
// with the privileges cloning and managing VMs needs. The provider reads the site's admin
// credentials from its environment (PROXMOX_VE_API_TOKEN, or PROXMOX_VE_USERNAME/PASSWORD).
std::string proxmox_root(const ClusterConfig& config) {
  const ProxmoxConfig& p = config.provider.proxmox;
  const cache::PodplaneStack stack = cache::podplane_stack(ProviderKind::proxmox);
  std::string endpoint = p.api_url;
  if (auto at = endpoint.find("/api2/json"); at != std::string::npos) endpoint.erase(at);
  const std::string role = "PodplaneNstance";
  HclFile file;
  file.block("terraform", [&](HclBody& b) {
    b.attr("required_version", str(stack.required_engine_version));
    b.block("required_providers", [&](HclBody& r) {
      for (const auto& provider : stack.providers)
        r.object(provider.local_name, [&](HclBody& o) {
          o.attr("source", str(provider.source));
          o.attr("version", str(provider.constraints));
        });
    });
  });
  file.block("provider", {"proxmox"}, [&](HclBody& b) {
    b.attr("endpoint", str(endpoint));
    b.attr("insecure", boolean(p.insecure_tls));
  });
  file.heading("What nstance-server needs to clone, configure, start and remove VMs.");
  file.block("resource", {"proxmox_virtual_environment_role", "nstance"}, [&](HclBody& b) {
    b.attr("role_id", str(role + "-" + config.id));
    b.attr("privileges", str_list({"Datastore.AllocateSpace", "Datastore.Audit", "SDN.Use", "Sys.Audit", "VM.Allocate",
                                   "VM.Audit", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit",
                                   "VM.Config.Disk", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options",
                                   "VM.PowerMgmt"}));
  });
  file.block("resource", {"proxmox_virtual_environment_user", "nstance"}, [&](HclBody& b) {
    b.attr("user_id", str("podplane-" + config.id + "@pve"));
    b.attr("comment", str("nstance-server of podplane cluster " + config.id));
    b.block("acl", [&](HclBody& acl) {
      acl.attr("path", str("/"));
      acl.attr("propagate", boolean(true));
      acl.attr("role_id", expr("proxmox_virtual_environment_role.nstance.role_id"));
    });
  });
  file.block("resource", {"proxmox_virtual_environment_user_token", "nstance"}, [&](HclBody& b) {
    b.attr("user_id", expr("proxmox_virtual_environment_user.nstance.user_id"));
    b.attr("token_name", str("nstance"));
    b.attr("privileges_separation", boolean(false));
    b.attr("comment", str("PROXMOX_TOKEN_ID and PROXMOX_TOKEN_SECRET of /etc/nstance/server.env"));
  });
  file.block("output", {"proxmox_token_id"}, [&](HclBody& b) {
    b.attr("value", expr("proxmox_virtual_environment_user_token.nstance.id"));
  });
  file.block("output", {"proxmox_token_secret"}, [&](HclBody& b) {
    b.attr("value", expr("proxmox_virtual_environment_user_token.nstance.value"));
    b.attr("sensitive", boolean(true));
  });
  return std::string(managed_header) + file.text();
}

}  // namespace

std::string proxmox_template_name(const ClusterConfig& config, const std::string& arch) {
  return "podplane-" + config.id + "-debian-13-" + arch;
}

std::map<std::string, std::string> render_proxmox_stack(const cache::Store& store, const ProxmoxInputs& inputs) {
  const ClusterConfig& config = *inputs.config;
  std::set<std::string> archs;
  for (const auto& pool : config.pools) archs.insert(pool.arch);
  std::vector<ArchArtifacts> artifacts;
  for (const auto& arch : archs) artifacts.push_back(arch_artifacts(store, inputs, arch));
  std::map<std::string, std::string> files;
  std::vector<std::string> mirror_urls{inputs.deps_url};
  mirror_urls.insert(mirror_urls.end(), inputs.fallback_urls.begin(), inputs.fallback_urls.end());
  files[proxmox_node_init_file] = node_init_script(config, mirror_urls, artifacts);
  for (const auto& zone : config.provider.zones)
    files["podplane.cluster.proxmox.shard." + zone.name + ".jsonc"] = shard_config(config, zone);
  if (config.provider.proxmox.manage_api_token) files[proxmox_root_file] = proxmox_root(config);
  return files;
}

}  // namespace podplane::generator
