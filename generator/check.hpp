#pragma once
// `cluster check`: proves from the store alone that `init` of a generated stack will succeed
// offline for each platform. The lock has an entry, allowed by the constraints, for every
// provider the stack and its modules require. Per platform, every provider of the stack's lock has a package
// in the store whose view zip hashes (h1 and zh) match the lock and the index; every module
// source exists and its package tree's h1 matches the store; every artifact of each pinned
// vmconfig manifest is in the store; the store's tfrc points at its own providers; the store
// holds packages of the stack's engine (its lock's registry host); and, where that engine is
// installed, the engine's own offline `init -lockfile=readonly` accepts the stack. A Proxmox
// stack's check replays each node's downloads (the node script's paths and digests against
// what the store publishes) and says that the boot kernel/initrd inside the image are not
// checked on their own.
#include <filesystem>
#include <string>
#include <vector>

#include "base/check_report.hpp"
#include "cache/store.hpp"
#include "lockfile/platform.hpp"

namespace podplane::generator {

using CheckRow = podplane::CheckRow;
using CheckReport = podplane::CheckReport;
using podplane::render_check_table;

// Whether the check also runs the stack's engine (`init -backend=false -lockfile=readonly`,
// offline, in a scratch copy) where that engine is on PATH.
enum class EngineInit { when_present, skip };

// `platforms` empty → every platform the store holds. Throws podplane::Error only when the
// stack cannot be read at all (not generated, unreadable lock).
[[nodiscard]] CheckReport check_stack(const cache::Store& store, const std::filesystem::path& config_file,
                                      const std::vector<std::string>& platforms,
                                      EngineInit engine_init = EngineInit::when_present);

// The engine itself as the judge, for any root: `<engine> init -backend=false -lockfile=readonly`
// in a scratch copy of `root_dir` (local module sources made absolute), with the store's tfrc
// alone and this machine's HOME, caches and credentials out of reach. One row; where the engine
// is not on PATH the row says so and passes. `recheck` is the command to run after a fix.
void check_engine_init(const cache::Store& store, const std::filesystem::path& root_dir, lockfile::Engine engine,
                       CheckReporter& out, const std::string& recheck = "podplane cluster check");

}  // namespace podplane::generator
