// Fuzz target: the bundle manifest, its signature block and the inventory (bundle/manifest.hpp),
// which parse hostile bundle bytes. A document that parses must serialise deterministically.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "bundle/manifest.hpp"

using namespace podplane;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto manifest = bundle::BundleManifest::parse(text);
    std::string bytes = manifest.serialize();
    if (bundle::BundleManifest::parse(bytes).serialize() != bytes) __builtin_trap();
  } catch (const Error&) {
  }
  try {
    auto block = bundle::SignatureBlock::parse(text);
    (void)block.serialize();
  } catch (const Error&) {
  }
  try {
    auto inventory = bundle::Inventory::parse(text);
    (void)inventory.serialize();
  } catch (const Error&) {
  }
  return 0;
}
