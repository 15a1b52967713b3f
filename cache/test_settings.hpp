#pragma once
// Settings that exist for the tests alone, compiled out of the binary scripts/package ships:
// CMake's PODPLANE_TEST_SETTINGS (on for the build the tests run, `podplane`) decides whether
// they are read; `podplane-release`, the binary that is packaged, is linked with a copy of this
// file compiled with it off (cli/CMakeLists.txt). Thread-safe (reads the environment only).
#include <optional>
#include <string>

namespace podplane::cache {

// The armored key file PODPLANE_TOOLS_KEYRING_FOR_TESTS names, which replaces the pinned engine
// release keys (docs/tools.md); nullopt when unset, empty, or compiled out.
[[nodiscard]] std::optional<std::string> tools_keyring_for_tests();

// Whether this binary reads test settings at all.
[[nodiscard]] bool test_settings_compiled_in();

}  // namespace podplane::cache
