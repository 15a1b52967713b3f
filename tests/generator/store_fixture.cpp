#include "tests/generator/store_fixture.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "cache/row_rules.hpp"
#include "cache/views.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/version.hpp"
#include "tests/support/every_kind.hpp"

namespace podplane::test {

namespace {

struct ModuleRequirement {
  std::string local_name, source, constraints;
};

// What each Nstance submodule requires (docs/podplane-layout.md §4.3 for aws; google by analogy).
std::vector<ModuleRequirement> module_requirements(const std::string& kind, const std::string& module) {
  std::string cloud = kind;
  std::vector<ModuleRequirement> out{{cloud, "hashicorp/" + cloud, ">= 5.0"}};
  if (module == "cluster" || module == "shard") {
    out.push_back({"random", "hashicorp/random", ">= 3.0"});
    if (kind == "aws") out.push_back({"null", "hashicorp/null", ">= 3.0"});
  }
  if (module == "shard") {
    out.push_back({"tls", "hashicorp/tls", ">= 4.0"});
    out.push_back({"cloudinit", "hashicorp/cloudinit", ">= 2.0"});
  }
  return out;
}

std::vector<std::string> module_variables(const std::string& module) {
  if (module == "cluster") return {"cluster_id", "name_prefix"};
  if (module == "account") return {"cluster", "enable_ssm", "project", "region", "node_role"};
  if (module == "network") return {"cluster", "account", "vpc_id", "vpc_cidr_ipv4", "enable_ipv6", "subnets", "load_balancers"};
  return {"cluster", "account", "network", "zone", "pools"};
}

std::map<std::string, std::string> module_files(const std::string& kind, const std::string& version) {
  std::map<std::string, std::string> files;
  files["README.md"] = "# terraform-" + kind + "-nstance " + version + "\n";
  for (const std::string module : {"cluster", "account", "network", "shard"}) {
    std::string versions = "terraform {\n  required_version = \">= 1.6.0\"\n\n  required_providers {\n";
    for (const auto& r : module_requirements(kind, module))
      versions += "    " + r.local_name + " = {\n      source  = \"" + r.source + "\"\n      version = \"" + r.constraints +
                  "\"\n    }\n";
    versions += "  }\n}\n";
    files["modules/" + module + "/versions.tf"] = versions;
    std::string variables;
    for (const auto& name : module_variables(module)) variables += "variable \"" + name + "\" {\n  default = null\n}\n\n";
    variables += "output \"id\" {\n  value = \"" + module + "-" + version + "\"\n}\n";
    if (module == "network")
      variables += "\noutput \"kubernetes_api_dns_name\" {\n  value = \"api.example\"\n}\n\noutput \"load_balancers\" {\n  value = {}\n}\n";
    files["modules/" + module + "/main.tf"] = variables;
  }
  return files;
}

// Zips are the same bytes in every fixture of a test binary: made once, in one temp dir.
const fs::path& zip_cache() {
  static TempDir dir;
  return dir.path();
}

std::string module_address(const std::string& kind) { return "registry.opentofu.org/nstance-dev/nstance/" + kind; }

}  // namespace

StoreFixture::StoreFixture(const fs::path& dir, StoreFixtureOptions options)
    : root_(dir / "deps"), scratch_(dir / "fixture-scratch"), options_(std::move(options)),
      store_(cache::Store::open(dir / "deps")) {
  for (const auto& provider : options_.providers)
    for (const auto& platform : options_.platforms) add_provider_package(provider, platform);
  for (const auto& version : options_.aws_module_versions) add_module("aws", version);
  for (const auto& version : options_.google_module_versions) add_module("google", version);
  for (const auto& arch : options_.vm_archs)
    for (const std::string kind : {"knc", "knd"}) add_vmconfig(kind, arch, options_.vmconfig_version);
  if (options_.seed) add_seed();
  const auto& versions = options_.selection_module == "aws" ? options_.aws_module_versions : options_.google_module_versions;
  select(options_.selection_module, versions.back());
}

void StoreFixture::add_provider_package(const FakeProvider& provider, const std::string& platform) {
  std::string type = provider.ns_type.substr(provider.ns_type.find('/') + 1);
  std::string filename = "terraform-provider-" + type + "_" + provider.version + "_" + platform + ".zip";
  fs::path work = zip_cache() / (provider.ns_type + "-" + provider.version + "-" + platform);
  if (!fs::exists(work / filename)) {
    fs::create_directories(work);
    std::string binary = "terraform-provider-" + type + "_v" + provider.version;
    write_file(work / binary, "#!/bin/sh\n# fake " + provider.ns_type + " " + provider.version + " " + platform + "\nexit 1\n");
    fs::permissions(work / binary, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    // Fixed mtimes keep the zips (and so their hashes) the same from run to run.
    run({"touch", "-d", "2026-01-01T00:00:00Z", (work / binary).string()});
    auto zipped = run({"zip", "-q", "-X", "-D", (work / (filename + ".tmp")).string(), binary}, {{}, {}, work, ""});
    if (zipped.exit_code != 0) throw std::runtime_error("zip failed: " + zipped.err);
    fs::rename(work / (filename + ".tmp"), work / filename);
  }
  cache::Artifact artifact =
      podplane::test::provider_package_row(store_.add_file(work / filename), platform, host() + "/" + provider.ns_type, provider.version);
  artifact.filename = filename;
  artifact.size = static_cast<std::int64_t>(fs::file_size(work / filename));
  if (options_.package_h1 == PackageH1::recorded) artifact.h1 = lockfile::h1_hash_of_zip(work / filename);
  artifact.zh = lockfile::zh_hash_of_file(work / filename);
  artifact.upstream_url = "https://example.invalid/" + filename;
  (void)store_.add_artifact(artifact);
  if (!artifact.h1.empty()) hash_labels_[artifact.h1] = artifact.address + " " + provider.version + " " + platform + " h1";
  hash_labels_[artifact.zh] = artifact.address + " " + provider.version + " " + platform + " zh";
}

void StoreFixture::add_provider(const FakeProvider& provider) {
  for (const auto& platform : options_.platforms) add_provider_package(provider, platform);
  options_.providers.push_back(provider);
}

void StoreFixture::add_module(const std::string& kind, const std::string& version) {
  cache::ModuleTree tree;
  tree.address = module_address(kind);
  tree.version = version;
  tree.upstream_url = "https://example.invalid/nstance-" + kind + "-" + version + ".tar.gz";
  std::vector<std::pair<std::string, std::string>> hashed;
  auto files = module_files(kind, version);
  if (options_.edit_module) options_.edit_module(version, files);
  for (const auto& [path, content] : files) {
    cache::ModuleFile file;
    file.path = path;
    file.mode = 0644;
    file.digest = store_.add_bytes(content);
    file.size = static_cast<std::int64_t>(content.size());
    tree.files.push_back(file);
    hashed.emplace_back(path, file.digest);
  }
  tree.h1 = lockfile::h1_hash(hashed);
  (void)store_.add_module_tree(tree);
}

void StoreFixture::add_vmconfig(const std::string& kind, const std::string& arch, const std::string& version) {
  std::string name = "vmconfig_" + kind + "_debian-13_" + arch;
  nlohmann::ordered_json dependencies = nlohmann::ordered_json::object();
  auto add_item = [&](const std::string& item, const std::string& item_version, const std::string& url) {
    std::string content = item + " " + item_version + " for " + arch + "\n";
    cache::Artifact artifact = podplane::test::vmconfig_artifact_row(store_.add_bytes(content), item, item_version, url, "linux_" + arch);
    artifact.filename = url.substr(url.rfind('/') + 1);
    artifact.size = static_cast<std::int64_t>(content.size());
    (void)store_.add_artifact(artifact);
    return nlohmann::ordered_json{{"version", item_version}, {"url", url}, {"type", "tar.gz"},
                                  {"digest", artifact.upstream_digest}, {"size", artifact.size}};
  };
  nlohmann::ordered_json image = add_item("os-image", "20260512-2476",
                                          "https://cloud.example/debian-13-genericcloud-" + arch + "-20260512-2476.qcow2");
  image["type"] = "qcow2";
  dependencies["containerd"] =
      add_item("containerd", "2.3.1", "https://github.example/containerd-2.3.1-linux-" + arch + ".tar.gz");
  dependencies["netsy"] = add_item("netsy", "1.1.0", "https://github.example/netsy_1.1.0_linux_" + arch + ".tar.gz");
  if (options_.nstance_server) {
    dependencies["nstance-server"] = add_item("nstance-server", "1.2.3",
                                              "https://github.example/nstance-server_1.2.3_linux_" + arch);
    dependencies["nstance-server"]["type"] = "binary";
    dependencies["nstance-server"]["providers"] = nlohmann::ordered_json::array({"proxmox"});
  }
  if (kind == "knc")
    dependencies["kube-apiserver"] = add_item("kube-apiserver", "1.36.1", "https://dl.example/" + arch + "/kube-apiserver");
  dependencies["vmconfig"] = add_item("vmconfig", version, "https://github.example/vmconfig_" + version + "_" + kind +
                                                               "_debian-13_" + arch + ".tar.gz");
  nlohmann::ordered_json manifest{
      {"vmconfig",
       {{"version", version},
        {"kind", kind},
        {"os", {{"name", "debian-13"}, {"arch", arch}, {"image", image}}},
        {"dependencies", dependencies},
        {"images", options_.images ? nlohmann::ordered_json::array({add_image(arch)}) : nlohmann::ordered_json::array()}}}};
  std::string bytes = manifest.dump(2) + "\n";
  cache::Artifact artifact = podplane::test::vmconfig_manifest_row(store_.add_bytes(bytes), name, version);
  artifact.filename = name + ".json";
  artifact.size = static_cast<std::int64_t>(bytes.size());
  artifact.upstream_url = "https://deps.example/manifests/" + name + ".json";
  (void)store_.add_artifact(artifact);
}

nlohmann::ordered_json StoreFixture::add_image(const std::string& arch) {
  if (auto it = image_entries_.find(arch); it != image_entries_.end()) return it->second;
  const std::string address = "registry.example/pause";
  auto row = [&](cache::ArtifactKind kind, const std::string& version, const std::string& platform, const std::string& bytes) {
    const std::string digest = "sha256:" + store_.add_bytes(bytes);
    cache::Artifact artifact = cache::image_row(kind, address, version, platform, digest, static_cast<std::int64_t>(bytes.size()),
                                                "https://registry.example/v2/pause/blobs/" + digest);
    (void)store_.add_artifact(artifact);
    return artifact;
  };
  auto descriptor = [](const char* media_type, const std::string& bytes) {
    return nlohmann::ordered_json{{"mediaType", media_type}, {"digest", "sha256:" + sha256_hex(bytes)}, {"size", bytes.size()}};
  };
  std::string config = nlohmann::ordered_json{{"architecture", arch}, {"os", "linux"}}.dump();
  std::string layer = "pause layer for " + arch + "\n";
  std::string manifest = nlohmann::ordered_json{{"schemaVersion", 2},
                                                {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                                                {"config", descriptor("application/vnd.oci.image.config.v1+json", config)},
                                                {"layers", {descriptor("application/vnd.oci.image.layer.v1.tar", layer)}}}
                             .dump();
  auto manifest_descriptor = descriptor("application/vnd.oci.image.manifest.v1+json", manifest);
  manifest_descriptor["platform"] = {{"architecture", arch}, {"os", "linux"}};
  std::string index = nlohmann::ordered_json{{"schemaVersion", 2},
                                             {"mediaType", "application/vnd.oci.image.index.v1+json"},
                                             {"manifests", {manifest_descriptor}}}
                          .dump();
  const std::string platform = "linux_" + arch;
  auto index_row = row(cache::ArtifactKind::image_index, "3.10.2", "", index);
  auto manifest_row = row(cache::ArtifactKind::image_manifest, "3.10.2", platform, manifest);
  (void)row(cache::ArtifactKind::image_blob, manifest_row.filename, platform, config);
  auto layer_row = row(cache::ArtifactKind::image_blob, manifest_row.filename, platform, layer);
  image_.manifest[arch] = manifest_row.filename;
  image_.layer[arch] = layer_row.filename;
  return image_entries_[arch] = {{"image", image_.reference},
                                 {"digest", manifest_row.filename},
                                 {"size", manifest.size()},
                                 {"platform", "linux/" + arch},
                                 {"index", index_row.filename}};
}

void StoreFixture::add_seed() {
  std::string bytes = "netsy snapshot recommended v1.2.3-1\n";
  Hasher sha512(DigestAlgorithm::sha512);
  sha512.update(bytes);
  cache::Artifact artifact =
      podplane::test::seed_snapshot_row(store_.add_bytes(bytes), "recommended", "v1.2.3-1", "recommended.netsy", sha512.finish_hex());
  artifact.size = static_cast<std::int64_t>(bytes.size());
  artifact.upstream_url = "https://deps.example/seeds/recommended/v1.2.3-1/recommended.netsy";
  (void)store_.add_artifact(artifact);
}

void StoreFixture::select(const std::string& module_kind, const std::string& module_version) {
  cache::TfSelection selection;
  selection.platforms = options_.platforms;
  std::sort(selection.platforms.begin(), selection.platforms.end());
  selection.module_address = module_address(module_kind);
  selection.module_version = module_version;
  selection.engine = options_.engine;
  std::map<std::string, std::vector<lockfile::Constraints>> wanted;
  wanted["podplane/podplane"].push_back(lockfile::Constraints::parse(">= 1.2.0"));
  wanted["hashicorp/" + module_kind].push_back(lockfile::Constraints::parse(">= 6.0"));
  for (const std::string module : {"cluster", "account", "network", "shard"})
    for (const auto& r : module_requirements(module_kind, module))
      wanted[r.source].push_back(lockfile::Constraints::parse(r.constraints));
  for (const auto& [ns_type, constraints] : wanted) {
    std::vector<lockfile::Version> versions;
    for (const auto& provider : options_.providers)
      if (provider.ns_type == ns_type) versions.push_back(lockfile::Version::parse(provider.version));
    auto merged = lockfile::Constraints::merge(constraints);
    auto newest = lockfile::newest_allowed(versions, merged);
    if (!newest) throw std::runtime_error("fixture has no version of " + ns_type);
    selection.providers.push_back({host() + "/" + ns_type, newest->str(), merged.canonical()});
  }
  store_.set_tf_selection(selection);
  rebuild_views();
}

void StoreFixture::rebuild_views() { (void)cache::rebuild_views(store_); }

std::string StoreFixture::label_hashes(std::string lock_text) const {
  for (const auto& [hash, label] : hash_labels_) {
    for (auto at = lock_text.find(hash); at != std::string::npos; at = lock_text.find(hash, at))
      lock_text.replace(at, hash.size(), label);
  }
  // The engines sort hashes by value; labels are sorted again so the order is stable too.
  std::vector<std::string> lines, run;
  std::string out;
  std::size_t start = 0;
  auto flush = [&] {
    std::sort(run.begin(), run.end());
    for (const auto& line : run) out += line + "\n";
    run.clear();
  };
  while (start < lock_text.size()) {
    std::size_t end = lock_text.find('\n', start);
    if (end == std::string::npos) end = lock_text.size();
    std::string line = lock_text.substr(start, end - start);
    if (line.rfind("    \"", 0) == 0) {
      run.push_back(line);
    } else {
      flush();
      out += line + "\n";
    }
    start = end + 1;
  }
  flush();
  return out;
}

}  // namespace podplane::test
