#pragma once
// The engine itself as the judge, for `cluster check` and `stack check` alike:
// `<engine> init -backend=false -lockfile=readonly` in a scratch copy of a root (only its .tf,
// .tf.json, lock and podplane.cluster.* files, and those of the local modules it calls, laid
// out as in the repository so `../modules/x` calls resolve as they do there), with this
// machine's HOME, plugin caches and credentials out of reach, and every connection but the
// store's sent to a proxy that does not exist, so any fetch from an origin fails as it would
// on the site.
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "checks/check_report.hpp"
#include "lockfile/platform.hpp"

namespace podplane::checks {

// Whether a check also runs the root's engine. `required`: an engine that is not on PATH is a
// row that did not run, and the check is not passed. `skip` (--without-engine): the check
// stands on podplane's own reading, and says so.
enum class EngineInit { required, skip };

// A running mirror the engine child installs from.
struct EngineMirror {
  std::string url;                              // https://host:port, without a trailing slash
  std::optional<std::filesystem::path> ca_file;  // the CA that signed it; nullopt: SSL_CERT_FILE of this process
};

// The origins a root's `init` reaches, each sent to the mirror: registries (providers and
// registry modules; the two default registries are always added) and git hosts (host[:port]).
struct OriginHosts {
  std::set<std::string> registries;
  std::set<std::string> git;
};

// How the engine child is set up: its CLI config, its environment beyond the fixed part, and
// how the row says where it installed from.
struct EngineSetup {
  std::string cli_config;        // TF_CLI_CONFIG_FILE's content
  std::vector<std::string> env;  // NAME=value
  std::string through;           // "the store's tfrc", "https://127.0.0.1:4431"
};

// Providers from the store's tfrc (its filesystem mirror of tf/providers): a generated cluster
// stack, whose modules are local paths into the store's views, installs this way on the site.
[[nodiscard]] EngineSetup through_store_tfrc(const cache::Store& store);
// Everything through a mirror: host blocks for each registry, git's url.<mirror>/git/<host>/
// .insteadOf https://<host>/ for each git host (as the catalogue prints them), the CA.
[[nodiscard]] EngineSetup through_mirror(const EngineMirror& mirror, const OriginHosts& hosts);

// The commands a row's remedies name, as the user would type them.
struct EngineRemedies {
  std::string recheck;       // the check itself: "podplane stack check infra/prod"
  std::string rewrite_lock;  // the command that writes the lock the engine would: "podplane cluster upgrade"
};

// One row. Where the engine is not on PATH the row did not run (with EngineInit::skip it is
// not run either, by request); where `init` rewrites the lock it fails (the lock is not what
// the engine writes). `boundary` is the directory local module calls stay inside
// (lockfile::repository_of, or "/" for a generated stack that calls the store's views).
// `make_setup` is called only when the engine runs (it may start a mirror).
void check_engine_init(const std::function<EngineSetup()>& make_setup, const std::filesystem::path& root_dir,
                       const std::filesystem::path& boundary, lockfile::Engine engine, EngineInit mode,
                       const EngineRemedies& remedies, CheckReporter& out);

}  // namespace podplane::checks
