#include "cache/test_settings.hpp"

#include <cstdlib>

#ifndef PODPLANE_TEST_SETTINGS
#error "cache/CMakeLists.txt defines PODPLANE_TEST_SETTINGS for this file (0 or 1)"
#endif

namespace podplane::cache {

std::optional<std::string> tools_keyring_for_tests() {
#if PODPLANE_TEST_SETTINGS
  const char* file = std::getenv("PODPLANE_TOOLS_KEYRING_FOR_TESTS");
  if (file != nullptr && *file != '\0') return std::string(file);
#endif
  return std::nullopt;
}

bool test_settings_compiled_in() { return PODPLANE_TEST_SETTINGS != 0; }

}  // namespace podplane::cache
