#pragma once
// `cluster check`: proves from the store alone that `init` of a generated stack will succeed
// offline for each platform. The lock has an entry, allowed by the constraints, for every
// provider the stack and its modules require. Per platform, every provider of the stack's lock
// has a package in the store that the lock accepts (any one of its hashes is in the lock) and
// whose view zip still hashes to what the index recorded; every module
// source exists and its package tree's h1 matches the store; every artifact of each pinned
// vmconfig manifest is in the store; the store's tfrc points at its own providers; the store
// holds packages of the stack's engine (its lock's registry host); and, where that engine is
// installed, the engine's own offline `init -lockfile=readonly` accepts the stack. A Proxmox
// stack's check replays each node's downloads (the node script's paths and digests against
// what the store publishes) and says that the boot kernel/initrd inside the image are not
// checked on their own.
// A config that cannot be read does not stop the check: one failing row says so, and the rest
// is checked without what the config narrows (docs/checks.md).
#include <filesystem>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "checks/check_report.hpp"
#include "checks/engine_init.hpp"

namespace podplane::checks {

// `platforms` empty → the store selection's platforms, else every platform the store holds.
// Throws podplane::Error only when the stack cannot be read at all (not generated, unreadable
// lock).
[[nodiscard]] CheckReport check_cluster(const cache::Store& store, const std::filesystem::path& config_file,
                                        const std::vector<std::string>& platforms,
                                        EngineInit engine_init = EngineInit::required);

}  // namespace podplane::checks
