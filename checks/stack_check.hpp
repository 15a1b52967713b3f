#pragma once
// `podplane stack check DIR…`: each root checked by check_root (podplane's own reading), then,
// where the root resolves from the store, by the engine itself (check_engine_init) unless the
// root calls remote modules, which the engine would fetch online; the roots' reports merged
// into one verdict. The command line only wires its flags to this.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "checks/check_report.hpp"
#include "checks/root_check.hpp"

namespace podplane::checks {

// The source of `--mirror URL`: the URL without trailing slashes. A URL that is not http(s) is a
// UsageError.
[[nodiscard]] RootCheckSource mirror_source(const std::string& url);

// Checks every root against `source`, handing each root's report to `on_root` as soon as it is
// done (the command prints it), and returns all the rows and remedies merged.
[[nodiscard]] CheckReport check_roots(
    const RootCheckSource& source, const std::vector<std::filesystem::path>& roots,
    const std::vector<std::string>& platforms,
    const std::function<void(const std::filesystem::path& root, const CheckReport& report)>& on_root);

}  // namespace podplane::checks
