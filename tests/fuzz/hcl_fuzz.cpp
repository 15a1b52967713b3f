// Fuzz target: the HCL subset reader and what is built on it (lock files, CLI configs), plus
// the version, constraint, platform and provider address parsers that read their values.
// Any exception other than podplane::Error, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/hcl.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/version.hpp"

using namespace podplane;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)lockfile::hcl::parse(text, "fuzz.hcl");
  } catch (const Error&) {
  }
  try {
    auto lock = lockfile::parse_lock_file(text, "fuzz.lock.hcl");
    (void)lockfile::render_lock_file(lock, lockfile::Engine::tofu);
  } catch (const Error&) {
  }
  try {
    (void)lockfile::parse_cli_config(text, "fuzz.tfrc");
  } catch (const Error&) {
  }
  // The first line as a single value of each kind.
  std::string_view line = text.substr(0, text.find('\n'));
  try {
    (void)lockfile::Version::parse(line);
  } catch (const Error&) {
  }
  try {
    auto constraints = lockfile::Constraints::parse(line);
    (void)constraints.allows(lockfile::Version::parse("1.2.3"));
  } catch (const Error&) {
  }
  try {
    (void)lockfile::Platform::parse(line);
  } catch (const Error&) {
  }
  try {
    (void)lockfile::ProviderAddress::parse(line, "registry.opentofu.org");
  } catch (const Error&) {
  }
  return 0;
}
