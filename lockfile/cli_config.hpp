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

namespace podplane::lockfile {

struct InstallationMethod {
  enum class Kind { filesystem_mirror, network_mirror, direct };
  Kind kind = Kind::direct;
  std::string location;               // path for filesystem_mirror, url for network_mirror
  std::vector<std::string> include;   // patterns "[host/]ns/type"
  std::vector<std::string> exclude;

  // tf-protocols.md §3.2: no include means everything; exclude beats include.
  bool matches(std::string_view provider_address) const;
};

struct CliConfig {
  std::vector<InstallationMethod> provider_installation;
  std::map<std::string, std::map<std::string, std::string>> host_services;  // host → id → URL
  std::map<std::string, std::string> credentials;  // host[:port] → token (never logged)
  bool disable_checkpoint = false;

  // The first network_mirror whose patterns match, if any.
  const InstallationMethod* network_mirror_for(std::string_view provider_address) const;
};

[[nodiscard]] CliConfig parse_cli_config(std::string_view text, std::string_view source_name);

// Reads the file the engines would read: $TF_CLI_CONFIG_FILE, else ~/.tofurc, else
// ~/.terraformrc; merged with ~/.terraform.d/credentials.tfrc.json. Missing files → empty config.
[[nodiscard]] CliConfig load_cli_config_from_environment();

// TF_TOKEN_<host> for the host ("__" → "-", "_" → "."), else the credentials block.
std::optional<std::string> token_for_host(const CliConfig& config, std::string_view host);

// The tfrc podplane writes: only a filesystem_mirror at `providers_dir` (absolute,
// forward slashes), no direct block, disable_checkpoint = true.
[[nodiscard]] std::string render_filesystem_mirror_tfrc(const std::filesystem::path& providers_dir);

}  // namespace podplane::lockfile
