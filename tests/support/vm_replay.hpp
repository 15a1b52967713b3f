#pragma once
// What a VM does at boot, replayed against a site: for a podplane_userdata data source of a
// generated stack, each artifact URL built exactly as Podplane's userdata builds it
// (<deps_mirror_url>/vmconfig/artifacts/<name>/<version>/<basename(url)>, docs/podplane-layout.md
// §2.5), fetched with `curl --parallel` and checked with `sha256sum -c` / `sha512sum -c`.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace podplane::test {

// One podplane_userdata data source of a generated main.tf, read with a plain regex (not the
// product's HCL reader, so the replay does not share its reading of the stack).
struct Userdata {
  std::string label;          // knc_arm64
  std::string manifest_file;  // podplane.cluster.vmconfig_knc_debian-13_arm64.json
  std::string mirror_url;     // deps_mirror_url
};

std::vector<Userdata> userdata_of(const std::string& main_tf);

// What the userdata script does with one manifest: the files it names on the VM, the URLs it
// fetches, and the checksum lines it hands to sha256sum/sha512sum (any other prefix aborts).
struct VmReplay {
  std::size_t items = 0;
  ProcessResult curl, sha256, sha512;
  bool ok() const { return curl.exit_code == 0 && sha256.exit_code == 0 && sha512.exit_code == 0; }
  std::string describe() const;
};

// Fetches every item of `manifest` for a VM of `provider_kind` ("aws") from `base` into `dir`,
// trusting `ca_file` when given (an https base: the site CA a VM image carries).
VmReplay replay_vm(const nlohmann::json& manifest, const std::string& provider_kind, const std::string& base,
                   const std::filesystem::path& dir, const std::filesystem::path& ca_file = {});

}  // namespace podplane::test
