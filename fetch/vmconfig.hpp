#pragma once
// vmconfig manifests (docs/podplane-layout.md §2): parsing, the provider filter of `deps
// download` (§2.3), validation of every listed artifact, and comparison ignoring "cached" markers.
// Pure functions; errors are podplane::Error naming the manifest and the item.
//
// How they are indexed (fetch/deps_download.cpp):
//   vmconfig_manifest: address = manifest name ("vmconfig_knc_debian-13_amd64"),
//     version = vmconfig.version, platform = "linux_<arch>",
//     filename = "<name>_<UTC YYYYMMDDTHHMMSSZ>_<sha256[:12]>.json" (Podplane's historical
//     copy name); the newest row of a name is the current manifest.
//   vmconfig_artifact: address = item name ("containerd", "os-image"), version = item
//     version, platform = "linux_<arch>", filename = basename(url), upstream_digest =
//     the manifest's "sha256:…"/"sha512:…".
//   vmconfig_boot_file: a kernel or initrd read out of the os image (os.boot): address =
//     "os-image", version = the image's version, platform = "linux_<arch>", filename =
//     basename(os.boot.<part>.path), upstream_digest = os.boot.<part>.digest.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>  // whole: VmconfigManifest holds a json by value

namespace podplane::fetch {

struct VmconfigItem {
  std::string name;       // dependency key, or "os-image" for os.image
  std::string version;
  std::string url;
  std::string type;       // binary | tar.gz | deb | qcow2
  std::string digest;     // "sha256:<64 hex>" | "sha512:<128 hex>"
  std::uint64_t size = 0;
  std::vector<std::string> providers;  // empty: for every provider

  std::string basename() const;  // of the URL path
  std::string view_path() const;  // vmconfig/artifacts/<name>/<version>/<basename>
};

// A file os.boot names inside the os image: the kernel or the initrd a VM boots directly.
struct VmconfigBootFile {
  std::string part;     // "kernel" | "initrd"
  int partition = 0;    // 1-based partition number of the image's disk
  std::string path;     // absolute path in that partition's ext2/3/4 file system
  std::string digest;   // "sha256:<64 hex>" | "sha512:<128 hex>"

  std::string file_name() const;  // the last segment of `path`
  // vmconfig/artifacts/os-image/<image version>/boot/<file name> (Podplane's cache layout)
  std::string view_path(const std::string& image_version) const;
};

struct VmconfigManifest {
  std::string name;     // vmconfig_<kind>_debian-13_<arch>
  std::string kind;     // knc | knd
  std::string arch;     // amd64 | arm64
  std::string version;  // vmconfig.version
  std::vector<VmconfigItem> items;  // os image first, then dependencies by name
  std::vector<VmconfigBootFile> boot_files;  // os.boot entries that carry a digest: kernel, initrd
  nlohmann::json document;
};

// "vmconfig_<kind>_debian-13_<arch>".
std::string vmconfig_manifest_name(std::string_view kind, std::string_view arch);

// Parses a published manifest. An unreleased stub (an item with empty url and digest) is
// an Error, as are a kind/arch that disagree with `expected_name` when it is given.
[[nodiscard]] VmconfigManifest parse_vmconfig_manifest(std::string_view bytes, std::string_view expected_name);

// Items with no providers list always; others when one of `providers` is listed, or "all".
[[nodiscard]] std::vector<VmconfigItem> select_vmconfig_items(const VmconfigManifest& manifest,
                                                              const std::vector<std::string>& providers);

// Every item needs a sha256:/sha512: digest with the right hex length, a non-empty url and
// size > 0. Throws naming the manifest and item.
void validate_vmconfig_items(const VmconfigManifest& manifest, const std::vector<VmconfigItem>& items);

// Equal when the documents match after removing every "cached" member.
bool vmconfig_manifests_equal(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace podplane::fetch
