// Fuzz target: JSONC with line tracking, the cluster config (schema validation and the checks
// beyond it), and the bounded JSON reader every JSON document from outside goes through.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "generator/config.hpp"
#include "generator/jsonc.hpp"

using namespace podplane;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto document = generator::parse_jsonc(text, "fuzz.jsonc");
    for (const auto& [pointer, line] : document.lines) (void)generator::display_path(pointer), (void)line;
  } catch (const Error&) {
  }
  try {
    (void)generator::parse_cluster_config(text, "fuzz.jsonc");
  } catch (const Error&) {
  }
  try {
    (void)parse_json_within_limits(text, "fuzz.json");
  } catch (const Error&) {
  }
  return 0;
}
