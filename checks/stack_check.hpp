#pragma once
// `podplane stack check DIR…`: each root checked by check_root (podplane's own reading), then
// by the engine itself: `init -lockfile=readonly` offline, through the mirror given (--mirror)
// or, without one, through a mirror of the store started on loopback for the engine alone
// (host blocks, git insteadOf, a CA made for it), so registry providers, registry modules and
// git modules resolve exactly as they will on the site. The roots' reports merged into one
// verdict. The command line only wires its flags to this.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "checks/check_report.hpp"
#include "checks/engine_init.hpp"
#include "checks/root_check.hpp"

namespace podplane::checks {

// The source of `--mirror URL`: the URL without trailing slashes. A URL that is not http(s) is a
// UsageError.
[[nodiscard]] RootCheckSource mirror_source(const std::string& url);

struct StackCheckOptions {
  RootCheckOptions root;
  EngineInit engine = EngineInit::required;
  // Without --mirror: starts a mirror of the store for the engine (called at most once, when
  // the first root is ready for its engine run); the mirror lives as long as the returned value.
  std::function<std::shared_ptr<const EngineMirror>()> start_store_mirror;
};

// Checks every root against `source`, handing each root's report to `on_root` as soon as it is
// done (the command prints it), and returns all the rows and remedies merged.
[[nodiscard]] CheckReport check_roots(
    const RootCheckSource& source, const std::vector<std::filesystem::path>& roots, const StackCheckOptions& options,
    const std::function<void(const std::filesystem::path& root, const CheckReport& report)>& on_root);

}  // namespace podplane::checks
