// Fuzz target: what an upstream answers, read by mirror/: service discovery, provider versions
// and download answers, the module registry, network mirror documents, vmconfig manifests,
// and module source addresses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.hpp"
#include "fetch/module_source.hpp"
#include "fetch/registry.hpp"
#include "fetch/vmconfig.hpp"

using namespace podplane;

namespace {

template <typename Parse>
void quietly(Parse&& parse) {
  try {
    parse();
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  const std::string url = "https://registry.example/v1/providers/hashicorp/aws/6.2.0/download/linux/amd64";
  quietly([&] { (void)fetch::parse_discovery(body, url); });
  quietly([&] { (void)fetch::parse_provider_versions(body, url); });
  quietly([&] { (void)fetch::parse_provider_download(body, url, lockfile::Platform{"linux", "amd64"}); });
  quietly([&] { (void)fetch::parse_module_versions(body, url); });
  quietly([&] { (void)fetch::parse_mirror_index(body, url); });
  quietly([&] { (void)fetch::parse_mirror_version(body, url); });
  quietly([&] {
    auto manifest = fetch::parse_vmconfig_manifest(body, "");
    auto items = fetch::select_vmconfig_items(manifest, {"all"});
    fetch::validate_vmconfig_items(manifest, items);
    for (const auto& item : items) (void)item.view_path();
    (void)fetch::vmconfig_manifests_equal(manifest.document, manifest.document);
  });
  quietly([&] {
    auto source = fetch::ModuleSource::parse(body.substr(0, body.find('\n')), "registry.opentofu.org");
    (void)source.package_address();
    (void)source.store_address();
  });
  return 0;
}
