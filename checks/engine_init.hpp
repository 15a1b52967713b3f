#pragma once
// The engine itself as the judge, for `cluster check` and `stack check` alike:
// `<engine> init -backend=false -lockfile=readonly` in a scratch copy of a root (only its .tf,
// .tf.json, lock and podplane.cluster.* files; local module sources made absolute), from the
// store's tfrc alone, with this machine's HOME, plugin caches and credentials out of reach, so
// any network use fails.
#include <filesystem>
#include <string>

#include "cache/store.hpp"
#include "checks/check_report.hpp"
#include "lockfile/platform.hpp"

namespace podplane::checks {

// Whether a check also runs the root's engine where that engine is on PATH.
enum class EngineInit { when_present, skip };

// One row. Where the engine is not on PATH the row says so and passes; where `init` rewrites the
// lock it fails (the lock is not what the engine writes). `recheck` is the command to run after
// a fix.
void check_engine_init(const cache::Store& store, const std::filesystem::path& root_dir, lockfile::Engine engine,
                       CheckReporter& out, const std::string& recheck = "podplane cluster check");

}  // namespace podplane::checks
