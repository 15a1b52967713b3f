#pragma once
// A synthetic dependency store for generator tests, filled through the Store API (no
// network): provider zips for several platforms with their real h1/zh, Nstance module trees
// with versions.tf files, vmconfig manifests and their artifacts, a TfSelection, and views.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/store.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {

struct FakeProvider {
  std::string ns_type;  // hashicorp/aws
  std::string version;  // 6.2.0
};

// Whether provider package rows record an h1 (rows may lack one: the zh is always known).
enum class PackageH1 { recorded, missing };

struct StoreFixtureOptions {
  std::vector<std::string> platforms{"darwin_arm64", "linux_amd64", "linux_arm64"};
  std::vector<FakeProvider> providers{{"hashicorp/aws", "6.2.0"},    {"hashicorp/google", "6.10.0"},
                                      {"hashicorp/random", "3.6.3"}, {"hashicorp/null", "3.2.3"},
                                      {"hashicorp/tls", "4.0.6"},    {"hashicorp/cloudinit", "2.3.5"},
                                      {"podplane/podplane", "1.2.2"}};
  std::vector<std::string> aws_module_versions{"2.0.1"};
  std::vector<std::string> google_module_versions{"2.0.1"};
  std::vector<std::string> vm_archs{"amd64", "arm64"};
  std::string vmconfig_version = "1.0.0";
  std::string selection_module = "aws";  // whose package the TfSelection names
  std::string engine = "tofu";
  PackageH1 package_h1 = PackageH1::recorded;
  // Changes the files of each Nstance module version before it is stored (path → content).
  std::function<void(const std::string& version, std::map<std::string, std::string>& files)> edit_module;
  bool nstance_server = false;  // the manifests list an nstance-server (providers: proxmox) too
  // The manifests pin a container image (registry.example/pause:3.10.2, an index and one
  // manifest per arch, a config and a layer each) that the store holds as `deps download` stores it.
  bool images = false;
  // A Netsy seed snapshot (recommended v1.2.3-1) stored as `deps download` stores it.
  bool seed = false;
};

// What the image and seed options stored, for tests that break them.
struct FixtureImage {
  std::string reference = "registry.example/pause:3.10.2";
  std::map<std::string, std::string> manifest;  // arch → "sha256:…"
  std::map<std::string, std::string> layer;     // arch → "sha256:…"
};

// The host of every provider address in the fixture: registry.opentofu.org (tofu).
class StoreFixture {
 public:
  // Fills <dir>/deps; `dir` must outlive the fixture.
  explicit StoreFixture(const fs::path& dir, StoreFixtureOptions options = {});

  const fs::path& root() const { return root_; }
  cache::Store& store() { return store_; }

  // More content later (what a second `deps tf` or a bundle import adds), then the selection
  // and views are refreshed.
  void add_provider(const FakeProvider& provider);
  void add_module(const std::string& provider_kind, const std::string& version);
  void add_vmconfig(const std::string& kind, const std::string& arch, const std::string& version);
  void select(const std::string& module_kind, const std::string& module_version);
  void rebuild_views();

  // "h1:…" / "zh:…" → "<address> <version> <platform> h1" for every package, so that lock
  // files can be compared with golden copies whatever bytes `zip` produced.
  std::string label_hashes(std::string lock_text) const;

  std::string host() const { return "registry.opentofu.org"; }
  const FixtureImage& image() const { return image_; }

 private:
  nlohmann::ordered_json add_image(const std::string& arch);
  void add_seed();
  void add_provider_package(const FakeProvider& provider, const std::string& platform);
  fs::path root_;
  fs::path scratch_;
  StoreFixtureOptions options_;
  cache::Store store_;
  std::map<std::string, std::string> hash_labels_;
  std::map<std::string, std::string> selected_versions_;  // address → version in the selection
  std::string module_kind_, module_version_;
  FixtureImage image_;
  std::map<std::string, nlohmann::ordered_json> image_entries_;  // arch → the manifests' images entry
};

}  // namespace podplane::test
