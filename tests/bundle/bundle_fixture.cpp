#include "tests/bundle/bundle_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/digest.hpp"
#include "cache/layout.hpp"
#include "tests/support/every_kind.hpp"

namespace podplane::bundle::test {

std::string synthetic_bytes(const std::string& seed, std::size_t size) {
  std::string out;
  out.reserve(size + 64);
  std::string block = sha256_hex(seed);
  while (out.size() < size) {
    out += block;
    block = sha256_hex(block);
  }
  out.resize(size);
  return out;
}

std::vector<std::string> add_provider(cache::Store& store, const std::string& type, const std::string& version,
                                      const std::vector<std::string>& platforms, std::size_t zip_size,
                                      const std::string& added_at) {
  const std::string address = "registry.opentofu.org/hashicorp/" + type;
  const std::string base = "terraform-provider-" + type + "_" + version;
  std::vector<std::pair<std::string, std::string>> zips;
  std::string sums;
  for (const auto& platform : platforms) {
    std::string bytes = "PK\x03\x04" + synthetic_bytes(base + platform, zip_size);
    std::string digest = store.add_bytes(bytes);
    zips.emplace_back(platform, digest);
    sums += digest + "  " + base + "_" + platform + ".zip\n";
  }
  std::string sums_digest = store.add_bytes(sums);
  std::string sig_digest = store.add_bytes(synthetic_bytes("sig" + base, 566));
  std::string keys_digest = store.add_bytes("{\"gpg_public_keys\":[{\"key_id\":\"34365D9472D7468F\"}]}");

  auto add = [&](cache::ArtifactKind kind, const std::string& platform, const std::string& filename,
                 const std::string& digest) {
    cache::Artifact a = kind == cache::ArtifactKind::provider_package
                            ? podplane::test::provider_package_row(digest, platform, address, version)
                            : podplane::test::provider_document_row(kind, digest, address, version);
    a.filename = filename;
    a.upstream_url = "https://example.invalid/" + filename;
    a.added_at = added_at.empty() ? "2026-11-0" + std::to_string(1 + version.size() % 8) + "T10:00:00Z" : added_at;
    return store.add_artifact(a);
  };
  add(cache::ArtifactKind::provider_shasums, "", base + "_SHA256SUMS", sums_digest);
  add(cache::ArtifactKind::provider_signature, "", base + "_SHA256SUMS.sig", sig_digest);
  add(cache::ArtifactKind::provider_keys, "", base + "_signing_keys.json", keys_digest);
  std::vector<std::string> digests;
  for (const auto& [platform, digest] : zips) {
    std::int64_t id = add(cache::ArtifactKind::provider_package, platform, base + "_" + platform + ".zip", digest);
    cache::Provenance p;
    p.artifact_id = id;
    p.shasums_digest = sums_digest;
    p.signature_digest = sig_digest;
    p.keys_digest = keys_digest;
    p.key_fingerprint = "34365D9472D7468F";
    p.result = "signed";
    p.checked_at = "2026-11-01T10:00:01Z";
    store.add_provenance(p);
    digests.push_back(digest);
  }
  return digests;
}

void add_module(cache::Store& store, const std::string& version) {
  cache::ModuleTree tree;
  tree.address = "registry.opentofu.org/nstance-dev/nstance/aws";
  tree.version = version;
  tree.upstream_url = "https://example.invalid/nstance-" + version + ".tar.gz";
  tree.added_at = "2026-11-02T09:00:00Z";
  for (const auto& path : {"main.tf", "modules/cluster/main.tf", "modules/network/variables.tf", "README.md"}) {
    cache::ModuleFile file;
    file.path = path;
    file.mode = 0644;
    std::string content = "# " + std::string(path) + " of nstance " + version + "\n" + synthetic_bytes(path + version, 3000);
    file.digest = store.add_bytes(content);
    file.size = static_cast<std::int64_t>(content.size());
    tree.files.push_back(file);
  }
  store.add_module_tree(tree);
}

void add_vmconfig(cache::Store& store) {
  std::string artifact = synthetic_bytes("kernel", 30000);
  std::string artifact_digest = store.add_bytes(artifact);
  std::string manifest = "{\"vmconfig\":{\"version\":\"13.2\"},\"items\":[{\"name\":\"kernel\",\"sha256\":\"" +
                         artifact_digest + "\"}]}";
  std::string manifest_digest = store.add_bytes(manifest);
  cache::Artifact m = podplane::test::vmconfig_manifest_row(manifest_digest, "vmconfig_knc_debian-13_amd64", "13.2");
  m.filename = "vmconfig_knc_debian-13_amd64.json";
  m.trust = cache::Trust::checksum;
  m.upstream_url.clear();
  m.added_at = "2026-11-03T08:00:00Z";
  store.add_artifact(m);
  cache::Artifact a = podplane::test::vmconfig_artifact_row(artifact_digest, "kernel", "6.12.1", "");
  a.filename = "vmlinuz-6.12.1";
  a.added_at = "2026-11-03T08:00:01Z";
  store.add_artifact(a);
}

void set_selection(cache::Store& store, const std::string& aws_version) {
  cache::TfSelection s;
  s.providers = {{"registry.opentofu.org/hashicorp/aws", aws_version, "~> 6.0"},
                 {"registry.opentofu.org/hashicorp/random", "3.7.1", ">= 3.0.0"}};
  s.platforms = kPlatforms;
  s.module_address = "registry.opentofu.org/nstance-dev/nstance/aws";
  s.module_version = "2.0.1";
  s.engine = "tofu";
  store.set_tf_selection(s);
}

void fill_store(cache::Store& store, std::size_t zip_size) {
  add_provider(store, "aws", "6.2.0", kPlatforms, zip_size);
  add_provider(store, "random", "3.7.1", kPlatforms, zip_size / 2);
  add_module(store, "2.0.1");
  add_vmconfig(store);
  set_selection(store, "6.2.0");
}

void expect_objects_intact(const fs::path& deps_root) {
  std::error_code ec;
  fs::path objects = cache::layout::objects_dir(deps_root);
  if (!fs::exists(objects)) return;
  for (auto it = fs::recursive_directory_iterator(objects, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    std::string name = it->path().parent_path().filename().string() + it->path().filename().string();
    EXPECT_EQ(file_digest_hex(it->path()), name) << "unverified bytes in " << it->path();
  }
}

std::vector<std::string> artifact_lines(const cache::Store& store) {
  std::vector<std::string> lines;
  for (const auto& a : store.artifacts()) {
    std::string line = std::string(cache::to_string(a.kind)) + " " + a.address + " " + a.version + " " + a.platform + " " +
                       a.filename + " " + a.digest + " provenance=" + std::to_string(store.provenance_of(a.id).size());
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::string> module_lines(const cache::Store& store) {
  std::vector<std::string> lines;
  for (const auto& t : store.module_trees()) lines.push_back(t.address + " " + t.version + " " + t.h1 + " files=" + std::to_string(t.files.size()));
  std::sort(lines.begin(), lines.end());
  return lines;
}

fs::path cyclonedx_library() {
  return podplane::test::source_dir() / "tests" / "tools" / "cyclonedx" / "node_modules" / "@cyclonedx" / "cyclonedx-library";
}

podplane::test::ProcessResult validate_cyclonedx(const fs::path& report) {
  const fs::path validator = podplane::test::source_dir() / "tests" / "tools" / "cyclonedx" / "validate.js";
  return podplane::test::run({"node", validator.string(), report.string()});
}

}  // namespace podplane::bundle::test
