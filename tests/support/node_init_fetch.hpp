#pragma once
// The Proxmox node-init script's downloads, run as a node runs them: a bash driver sources the
// script's own log, fatal, digest_ok and fetch (generator/proxmox_node_init.sh, from `log() {`
// to `# --- end of fetch ---`, lines the generator renders unchanged) and calls fetch for each
// file. Shared by mirror.FleetTest and mirror.BalancerRetryTest, so that both run the code
// nodes run rather than a copy of it.
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/test_support.hpp"

namespace podplane::test {

// One file a node fetches: its path below the mirror, its digest (sha256:HEX or sha512:HEX)
// and its name in the work dir.
struct NodeInitFile {
  std::string path, digest, file;
};

struct NodeInitFetchOptions {
  std::vector<std::string> mirrors;  // MIRROR_URLS, tried in this order
  fs::path work_dir;                 // WORK_DIR: the files, and a partial download as <file>.part
  fs::path ca_file;                  // trusted for an https mirror; empty: curl's default
  fs::path curl_home;                // CURL_HOME (its .curlrc applies); empty: the driver's dir, no .curlrc
};

// Writes the driver to `driver` and runs it with bash: exit 0 when every file was fetched and
// checked, the script's log on stdout and its fatal error on stderr.
ProcessResult run_node_init_fetch(const fs::path& driver, const std::vector<NodeInitFile>& files,
                                  const NodeInitFetchOptions& options);

}  // namespace podplane::test
