#pragma once
// Clients of the registry protocols (docs/protocols.md §1, §2, §6.1): service discovery with
// the CLI config's host-block overrides, the provider registry (versions, download answers
// with every client rule of §1.3), the provider network mirror, and the module registry.
// The registry token (TF_TOKEN_<host>, credentials blocks) goes only to discovery and the
// JSON endpoints, never into a returned value, a message or a log. Not thread-safe: one
// client per thread. Errors are podplane::Error naming the URL (without credentials).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockfile/cli_config.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/version.hpp"
#include "net/http.hpp"

namespace podplane::fetch {

struct ProviderVersion {
  lockfile::Version version;
  std::vector<std::string> protocols;           // "5.1", "6.0"; empty when not given
  std::vector<lockfile::Platform> platforms;    // a hint only
};

// Plugin protocols the engines accept: any MAJOR.MINOR with 5 <= MAJOR < 7, or none listed.
bool protocols_supported(const std::vector<std::string>& protocols);

struct SigningKey {
  std::string ascii_armor;
  std::string trust_signature;
  std::string key_id;  // informational
};

// The answer to GET <providers.v1>ns/type/version/download/os/arch, checked and resolved.
struct ProviderDownload {
  std::string filename;
  std::string download_url;            // absolute
  std::string shasums_url;             // absolute
  std::string shasums_signature_url;   // absolute
  std::string shasum;                  // 64 lower-case hex
  std::vector<std::string> protocols;
  std::vector<SigningKey> signing_keys;
  std::string signing_keys_json;       // the signing_keys object as received, for the store
  // OpenTofu `packages`: platform → hashes ("h1:…", "zh:…") and package_size (0 when absent).
  std::map<std::string, std::vector<std::string>> package_hashes;
  std::map<std::string, std::uint64_t> package_sizes;
};

// Parsers, public for tests. `url` is the URL the document came from (relative URLs resolve
// against it); errors name it.
[[nodiscard]] std::map<std::string, std::string> parse_discovery(std::string_view body, const std::string& url);
[[nodiscard]] std::vector<ProviderVersion> parse_provider_versions(std::string_view body, const std::string& url);
[[nodiscard]] ProviderDownload parse_provider_download(std::string_view body, const std::string& url,
                                                       const lockfile::Platform& requested);
[[nodiscard]] std::vector<lockfile::Version> parse_module_versions(std::string_view body, const std::string& url);

// A network mirror's <version>.json entry for one platform.
struct MirrorArchive {
  std::string url;                  // absolute
  std::vector<std::string> hashes;  // "h1:…", "zh:…" (other schemes dropped)
};
[[nodiscard]] std::vector<lockfile::Version> parse_mirror_index(std::string_view body, const std::string& url);
[[nodiscard]] std::map<std::string, MirrorArchive> parse_mirror_version(std::string_view body, const std::string& url);

// A registry module address: [host/]ns/name/system[//subdir].
struct ModuleAddress {
  std::string host;
  std::string ns;
  std::string name;
  std::string system;
  std::string subdir;  // "" when none
  std::string str() const { return host + "/" + ns + "/" + name + "/" + system; }  // without subdir
};

class RegistryClient {
 public:
  // `config` supplies host blocks and credentials; both must outlive the client.
  RegistryClient(net::HttpClient& http, const lockfile::CliConfig& config);

  // The base URL (always ending in '/') of `service_id` on `host`: a host block of the CLI
  // config wins, else /.well-known/terraform.json. Cached per host.
  [[nodiscard]] std::string service_url(const std::string& host, const std::string& service_id);

  [[nodiscard]] std::vector<ProviderVersion> provider_versions(const lockfile::ProviderAddress& provider);
  [[nodiscard]] ProviderDownload provider_download(const lockfile::ProviderAddress& provider,
                                                   const lockfile::Version& version, const lockfile::Platform& platform);

  // Network mirror (base URL from a network_mirror block; https only).
  [[nodiscard]] std::vector<lockfile::Version> mirror_versions(const std::string& base_url,
                                                               const lockfile::ProviderAddress& provider);
  [[nodiscard]] std::map<std::string, MirrorArchive> mirror_archives(const std::string& base_url,
                                                                     const lockfile::ProviderAddress& provider,
                                                                     const lockfile::Version& version);

  [[nodiscard]] std::vector<lockfile::Version> module_versions(const ModuleAddress& module);
  // The package location the registry names (X-Terraform-Get header or JSON "location"),
  // resolved against the download endpoint when relative. The address's //subdir is
  // appended to the location's own subdir by the caller (module_source.hpp).
  [[nodiscard]] std::string module_location(const ModuleAddress& module, const lockfile::Version& version);

 private:
  net::HttpResponse get_json(const std::string& url, const std::string& auth_host, std::string_view what);
  // Throws the error `what` (from `url`) deserves unless the answer is a 200 or 204.
  static void expect_answer(const net::HttpResponse& response, const std::string& url, const std::string& auth_host,
                            std::string_view what);
  std::vector<std::string> auth_headers(const std::string& host) const;

  net::HttpClient& http_;
  const lockfile::CliConfig& config_;
  std::map<std::string, std::map<std::string, std::string>> discovered_;
};

}  // namespace podplane::fetch
