#pragma once
// The OpenTofu/Terraform CLI configuration (TF_CLI_CONFIG_FILE, ~/.tofurc, ~/.terraformrc):
// provider_installation, host blocks (service-discovery overrides) and credentials.
// Parse errors are podplane::Error with file:line:column.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockfile/platform.hpp"

namespace podplane::lockfile {

struct InstallationMethod {
  enum class Kind { filesystem_mirror, network_mirror, direct };
  Kind kind = Kind::direct;
  std::string location;               // path for filesystem_mirror, url for network_mirror
  std::vector<std::string> include;   // patterns "[host/]ns/type"
  std::vector<std::string> exclude;

  // docs/protocols.md §3.2: no include means everything; exclude beats include.
  // A two-part pattern ("ns/type", "*/*") names the engine's default registry; the
  // one-argument form assumes tofu. `provider_address` may be "ns/type" or "host/ns/type".
  bool matches(std::string_view provider_address) const;
  bool matches(std::string_view provider_address, Engine engine) const;
};

struct CliConfig {
  std::vector<InstallationMethod> provider_installation;
  std::map<std::string, std::map<std::string, std::string>> host_services;  // host → id → URL
  std::map<std::string, std::string> credentials;  // host[:port] → token (never logged)
  bool disable_checkpoint = false;

  // The first network_mirror whose patterns match, if any (the one-argument form assumes tofu).
  const InstallationMethod* network_mirror_for(std::string_view provider_address) const;
  const InstallationMethod* network_mirror_for(std::string_view provider_address, Engine engine) const;
};

[[nodiscard]] CliConfig parse_cli_config(std::string_view text, std::string_view source_name);

// Reads the file the engines would read: $TF_CLI_CONFIG_FILE, else ~/.tofurc, else
// ~/.terraformrc; merged with ~/.terraform.d/credentials.tfrc.json. Missing files → empty config.
[[nodiscard]] CliConfig load_cli_config_from_environment();
// One explicit CLI config file (missing → Error); no credentials.tfrc.json merge.
[[nodiscard]] CliConfig load_cli_config_file(const std::filesystem::path& file);
// {"credentials": {"host": {"token": "…"}}} as `terraform login` writes it, merged into
// `config` (blocks already in `config` win). Errors name the file.
void merge_credentials_json(CliConfig& config, std::string_view json_text, std::string_view source_name);

// TF_TOKEN_<host> for the host ("__" → "-", "_" → "."), else the credentials block.
std::optional<std::string> token_for_host(const CliConfig& config, std::string_view host);

// The tfrc podplane writes: only a filesystem_mirror at `providers_dir` (absolute,
// forward slashes), no direct block, disable_checkpoint = true.
[[nodiscard]] std::string render_filesystem_mirror_tfrc(const std::filesystem::path& providers_dir);

}  // namespace podplane::lockfile
