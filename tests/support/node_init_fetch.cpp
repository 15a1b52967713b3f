#include "tests/support/node_init_fetch.hpp"

namespace podplane::test {
namespace {

// `text` as one bash word.
std::string quoted(const std::string& text) {
  std::string word = "'";
  for (char c : text) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return word + "'";
}

}  // namespace

ProcessResult run_node_init_fetch(const fs::path& driver, const std::vector<NodeInitFile>& files,
                                  const NodeInitFetchOptions& options) {
  const fs::path script = source_dir() / "generator" / "proxmox_node_init.sh";
  std::string text = "set -euo pipefail\nsource <(sed -n -e '/^log() {/p' -e '/^fatal() {/p' -e '/^# digest_ok FILE/,/^# --- end of fetch ---/p' " +
                     quoted(script.string()) + ")\nMIRROR_URLS=(";
  for (const auto& mirror : options.mirrors) text += " " + quoted(mirror);
  text += " )\nWORK_DIR=" + quoted(options.work_dir.string()) + "\nDRY_RUN=false\n";
  for (const auto& file : files) text += "fetch " + quoted(file.path) + " " + quoted(file.digest) + " " + quoted(file.file) + "\n";
  write_file(driver, text);

  ProcessOptions run_options;
  run_options.env["CURL_HOME"] = (options.curl_home.empty() ? driver.parent_path() : options.curl_home).string();
  if (!options.ca_file.empty()) {
    run_options.env["SSL_CERT_FILE"] = options.ca_file.string();
    run_options.env["CURL_CA_BUNDLE"] = options.ca_file.string();
  }
  run_options.unset_env = {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"};
  return run({"bash", driver.string()}, run_options);
}

}  // namespace podplane::test
