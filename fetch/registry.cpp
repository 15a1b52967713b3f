#include "fetch/registry.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/input_limits.hpp"
#include "base/url.hpp"
#include "lockfile/hash.hpp"

namespace podplane::fetch {
namespace {

using nlohmann::json;

// Sent as the engines send it: registries may use it to pick answers for a CLI generation.
constexpr const char* kTerraformVersionHeader = "X-Terraform-Version: 1.9.0";

// Size, nesting and number range are bounded (base/input_limits.hpp): a hostile upstream
// cannot exhaust the stack of nlohmann's recursive copy and dump.
json parse_json(std::string_view body, const std::string& url, std::string_view what) {
  return parse_json_within_limits(body, std::string(what) + " from " + url);
}

std::string string_field(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::vector<std::string> string_list(const json& object, const char* name) {
  std::vector<std::string> out;
  auto it = object.find(name);
  if (it == object.end() || !it->is_array()) return out;
  for (const auto& item : *it) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::string with_trailing_slash(std::string url) {
  // The provider client of the engines does not add it; a base without it resolves one
  // level too high (docs/protocols.md §1.1), so we always add it.
  if (url.empty() || url.back() != '/') url += '/';
  return url;
}

std::string checked_http_url(const std::string& base, const std::string& reference, std::string_view field,
                             const std::string& document_url) {
  if (reference.empty()) throw Error("registry answer from " + document_url + " has no " + std::string(field));
  std::string resolved = net::resolve_url(base, reference);
  if (!has_http_scheme(resolved)) {
    throw Error("registry answer from " + document_url + ": " + std::string(field) + " must be an http(s) URL, got " +
                reference);
  }
  return resolved;
}

// "host[:port]" of an absolute URL as a credentials key names it (the default port dropped).
std::string url_host(const std::string& url) {
  const auto parts = split_url(url);
  return parts ? host_as_written(*parts) : "";
}

}  // namespace

bool protocols_supported(const std::vector<std::string>& protocols) {
  if (protocols.empty()) return true;
  for (const auto& protocol : protocols) {
    try {
      auto major = std::stoi(protocol.substr(0, protocol.find('.')));
      if (major >= 5 && major < 7) return true;
    } catch (const std::exception&) {
      // Not a MAJOR.MINOR string: ignored, as the engines ignore it.
    }
  }
  return false;
}

std::map<std::string, std::string> parse_discovery(std::string_view body, const std::string& url) {
  auto document = parse_json(body, url, "service discovery document");
  if (!document.is_object()) throw Error("service discovery document from " + url + " is not a JSON object");
  std::map<std::string, std::string> services;
  for (const auto& [id, value] : document.items()) {
    if (value.is_string()) services[id] = value.get<std::string>();
  }
  return services;
}

std::vector<ProviderVersion> parse_provider_versions(std::string_view body, const std::string& url) {
  auto document = parse_json(body, url, "provider versions");
  if (!document.is_object() || !document.contains("versions") || !document["versions"].is_array()) {
    throw Error("provider versions from " + url + " have no \"versions\" list");
  }
  std::vector<ProviderVersion> out;
  for (const auto& entry : document["versions"]) {
    if (!entry.is_object()) continue;
    ProviderVersion version;
    try {
      version.version = lockfile::Version::parse(string_field(entry, "version"));
    } catch (const Error&) {
      continue;  // the engines skip versions they cannot parse
    }
    version.protocols = string_list(entry, "protocols");
    if (auto it = entry.find("platforms"); it != entry.end() && it->is_array()) {
      for (const auto& platform : *it) {
        if (!platform.is_object()) continue;
        try {
          version.platforms.push_back(
              lockfile::Platform::parse(string_field(platform, "os") + "_" + string_field(platform, "arch")));
        } catch (const Error&) {
        }
      }
    }
    out.push_back(std::move(version));
  }
  return out;
}

ProviderDownload parse_provider_download(std::string_view body, const std::string& url,
                                         const lockfile::Platform& requested) {
  auto document = parse_json(body, url, "provider download answer");
  if (!document.is_object()) throw Error("provider download answer from " + url + " is not a JSON object");
  auto got_os = string_field(document, "os");
  auto got_arch = string_field(document, "arch");
  if (got_os != requested.os || got_arch != requested.arch) {
    throw Error(mismatch_message("provider download answer from " + url + " is for an incorrect target",
                                 requested.str(), got_os + "_" + got_arch));
  }
  ProviderDownload answer;
  answer.filename = string_field(document, "filename");
  if (answer.filename.empty() || answer.filename.find('/') != std::string::npos ||
      answer.filename.find('\\') != std::string::npos || answer.filename == "." || answer.filename == "..") {
    throw Error("provider download answer from " + url + " has an invalid filename: \"" + answer.filename + "\"");
  }
  answer.download_url = checked_http_url(url, string_field(document, "download_url"), "download_url", url);
  answer.shasums_url = checked_http_url(url, string_field(document, "shasums_url"), "shasums_url", url);
  answer.shasums_signature_url =
      checked_http_url(url, string_field(document, "shasums_signature_url"), "shasums_signature_url", url);
  answer.shasum = string_field(document, "shasum");
  if (answer.shasum.size() != 64 || !is_hex(answer.shasum)) {
    throw Error("provider download answer from " + url + ": shasum must be 64 hex characters, got \"" +
                answer.shasum + "\"");
  }
  answer.shasum = ascii_lower(answer.shasum);
  answer.protocols = string_list(document, "protocols");
  if (!protocols_supported(answer.protocols)) {
    std::string listed;
    for (const auto& protocol : answer.protocols) listed += (listed.empty() ? "" : ", ") + protocol;
    throw Error("provider package " + answer.filename + " speaks plugin protocol " + listed +
                "; OpenTofu/Terraform need protocol 5 or 6 (pick another version)");
  }
  if (auto keys = document.find("signing_keys"); keys != document.end() && keys->is_object()) {
    answer.signing_keys_json = keys->dump();
    if (auto list = keys->find("gpg_public_keys"); list != keys->end() && list->is_array()) {
      for (const auto& key : *list) {
        if (!key.is_object()) continue;
        SigningKey signing_key{string_field(key, "ascii_armor"), string_field(key, "trust_signature"),
                               string_field(key, "key_id")};
        if (!signing_key.ascii_armor.empty()) answer.signing_keys.push_back(std::move(signing_key));
      }
    }
  }
  if (auto packages = document.find("packages"); packages != document.end() && packages->is_object()) {
    for (const auto& [platform, entry] : packages->items()) {
      if (!entry.is_object()) continue;
      answer.package_hashes[platform] = string_list(entry, "hashes");
      if (auto size = entry.find("package_size"); size != entry.end() && size->is_number_unsigned()) {
        answer.package_sizes[platform] = size->get<std::uint64_t>();
      }
    }
    // OpenTofu's rule: the requested platform's entry must name the same zip (zh == shasum).
    auto it = answer.package_hashes.find(requested.str());
    if (it == answer.package_hashes.end()) {
      throw Error("provider download answer from " + url + " lists packages but none for " + requested.str());
    }
    auto expected = lockfile::zh_hash(answer.shasum);
    bool has_zh = false;
    for (const auto& hash : it->second) {
      if (!hash.starts_with("zh:")) continue;
      has_zh = true;
      if (ascii_lower(hash) != expected) {
        throw Error(mismatch_message("registry packages hash disagrees with shasum for " + answer.filename,
                                     expected, hash));
      }
    }
    (void)has_zh;
  }
  return answer;
}

std::vector<lockfile::Version> parse_module_versions(std::string_view body, const std::string& url) {
  auto document = parse_json(body, url, "module versions");
  if (!document.is_object() || !document.contains("modules") || !document["modules"].is_array() ||
      document["modules"].empty() || !document["modules"][0].is_object()) {
    throw Error("module versions from " + url + " have no \"modules\" list");
  }
  std::vector<lockfile::Version> out;
  const auto& first = document["modules"][0];  // only modules[0] is used, as the engines do
  if (auto it = first.find("versions"); it != first.end() && it->is_array()) {
    for (const auto& entry : *it) {
      if (!entry.is_object()) continue;
      try {
        out.push_back(lockfile::Version::parse(string_field(entry, "version")));
      } catch (const Error&) {
      }
    }
  }
  return out;
}

std::vector<lockfile::Version> parse_mirror_index(std::string_view body, const std::string& url) {
  auto document = parse_json(body, url, "network mirror index");
  if (!document.is_object() || !document.contains("versions") || !document["versions"].is_object()) {
    throw Error("network mirror index " + url + " has no \"versions\" object");
  }
  std::vector<lockfile::Version> out;
  for (const auto& [text, _] : document["versions"].items()) {
    try {
      out.push_back(lockfile::Version::parse(text));
    } catch (const Error&) {
      // Keys that are not versions are ignored, as the engines ignore them.
    }
  }
  return out;
}

std::map<std::string, MirrorArchive> parse_mirror_version(std::string_view body, const std::string& url) {
  auto document = parse_json(body, url, "network mirror version document");
  if (!document.is_object() || !document.contains("archives") || !document["archives"].is_object()) {
    throw Error("network mirror document " + url + " has no \"archives\" object");
  }
  std::map<std::string, MirrorArchive> out;
  for (const auto& [platform, entry] : document["archives"].items()) {
    if (!entry.is_object()) continue;
    MirrorArchive archive;
    archive.url = checked_http_url(url, string_field(entry, "url"), "archives." + platform + ".url", url);
    for (auto& hash : string_list(entry, "hashes")) {
      if (hash.starts_with("h1:") || hash.starts_with("zh:")) archive.hashes.push_back(std::move(hash));
    }
    out[platform] = std::move(archive);
  }
  return out;
}

RegistryClient::RegistryClient(net::HttpClient& http, const lockfile::CliConfig& config) : http_(http), config_(config) {}

std::vector<std::string> RegistryClient::auth_headers(const std::string& host) const {
  std::vector<std::string> headers{"Accept: application/json", kTerraformVersionHeader};
  if (auto token = lockfile::token_for_host(config_, host)) headers.push_back("Authorization: Bearer " + *token);
  return headers;
}

net::HttpResponse RegistryClient::get_json(const std::string& url, const std::string& auth_host, std::string_view what) {
  auto response = http_.get(url, auth_headers(auth_host));
  expect_answer(response, url, auth_host, what);
  return response;
}

void RegistryClient::expect_answer(const net::HttpResponse& response, const std::string& url, const std::string& auth_host,
                                   std::string_view what) {
  if (response.status == 200 || response.status == 204) return;
  std::string prefix = std::string(what) + " (" + net::redact_url(url) + "): ";
  if (response.status == 404) throw Error(prefix + "not found (HTTP 404)");
  if (response.status == 401 || response.status == 403) {
    throw Error(prefix + "unauthorized (HTTP " + std::to_string(response.status) +
                "); set TF_TOKEN_<host> or a credentials block for " + auth_host);
  }
  throw Error(prefix + response.status_text());
}

std::string RegistryClient::service_url(const std::string& host_in, const std::string& service_id) {
  auto host = ascii_lower(host_in);
  if (auto block = config_.host_services.find(host); block != config_.host_services.end()) {
    auto it = block->second.find(service_id);
    if (it == block->second.end()) {
      throw Error("host block for " + host + " in the CLI config does not offer " + service_id);
    }
    return with_trailing_slash(it->second);
  }
  auto cached = discovered_.find(host);
  if (cached == discovered_.end()) {
    std::string url = "https://" + host + "/.well-known/terraform.json";
    auto response = http_.get(url, auth_headers(host));
    if (response.status == 404) throw Error("host " + host + " offers no services (HTTP 404 from " + url + ")");
    if (response.status != 200) {
      throw Error("service discovery for " + host + " failed: " + response.status_text() + " from " + url);
    }
    if (response.content_type() != "application/json") {
      throw Error(mismatch_message("service discovery for " + host + " answered with the wrong content type",
                                   "application/json", response.content_type()));
    }
    auto services = parse_discovery(response.body, url);
    // Relative service URLs resolve against the final URL after redirects.
    std::string base = response.final_url.empty() ? url : response.final_url;
    for (auto& [id, value] : services) value = net::resolve_url(base, value);
    cached = discovered_.emplace(host, std::move(services)).first;
  }
  auto it = cached->second.find(service_id);
  if (it == cached->second.end()) {
    std::string family = service_id.substr(0, service_id.find('.'));
    for (const auto& [id, _] : cached->second) {
      if (id.starts_with(family + ".")) {
        throw Error("host " + host + " offers " + id + " but not " + service_id + " (version not supported)");
      }
    }
    throw Error("host " + host + " does not offer " + service_id);
  }
  return with_trailing_slash(it->second);
}

std::vector<ProviderVersion> RegistryClient::provider_versions(const lockfile::ProviderAddress& provider) {
  auto url = service_url(provider.host, "providers.v1") + provider.ns + "/" + provider.type + "/versions";
  auto response = http_.get(url, auth_headers(provider.host));
  if (response.status == 404) throw Error("provider " + provider.str() + " is not known to its registry (HTTP 404 from " + url + ")");
  expect_answer(response, url, provider.host, "provider versions");
  return parse_provider_versions(response.body, response.final_url.empty() ? url : response.final_url);
}

ProviderDownload RegistryClient::provider_download(const lockfile::ProviderAddress& provider,
                                                   const lockfile::Version& version,
                                                   const lockfile::Platform& platform) {
  auto url = service_url(provider.host, "providers.v1") + provider.ns + "/" + provider.type + "/" + version.str() +
             "/download/" + platform.os + "/" + platform.arch;
  auto response = http_.get(url, auth_headers(provider.host));
  if (response.status == 404) {
    throw Error("the registry has no package of " + provider.str() + " " + version.str() + " for platform " +
                platform.str() + " (HTTP 404 from " + url + ")");
  }
  expect_answer(response, url, provider.host, "provider download answer");
  return parse_provider_download(response.body, response.final_url.empty() ? url : response.final_url, platform);
}

std::vector<lockfile::Version> RegistryClient::mirror_versions(const std::string& base_url,
                                                               const lockfile::ProviderAddress& provider) {
  if (!ascii_istarts_with(base_url, "https://")) {
    throw Error("network_mirror url must be https: " + base_url);
  }
  auto url = with_trailing_slash(base_url) + provider.host + "/" + provider.ns + "/" + provider.type + "/index.json";
  auto response = get_json(url, url_host(url), "network mirror index");
  return parse_mirror_index(response.body, response.final_url.empty() ? url : response.final_url);
}

std::map<std::string, MirrorArchive> RegistryClient::mirror_archives(const std::string& base_url,
                                                                     const lockfile::ProviderAddress& provider,
                                                                     const lockfile::Version& version) {
  auto url = with_trailing_slash(base_url) + provider.host + "/" + provider.ns + "/" + provider.type + "/" +
             version.str() + ".json";
  auto response = get_json(url, url_host(url), "network mirror version document");
  return parse_mirror_version(response.body, response.final_url.empty() ? url : response.final_url);
}

std::vector<lockfile::Version> RegistryClient::module_versions(const ModuleAddress& module) {
  auto url = service_url(module.host, "modules.v1") + module.ns + "/" + module.name + "/" + module.system + "/versions";
  auto response = http_.get(url, auth_headers(module.host));
  if (response.status == 404) throw Error("module " + module.str() + " is not known to its registry (HTTP 404 from " + url + ")");
  expect_answer(response, url, module.host, "module versions");
  return parse_module_versions(response.body, response.final_url.empty() ? url : response.final_url);
}

std::string RegistryClient::module_location(const ModuleAddress& module, const lockfile::Version& version) {
  auto url = service_url(module.host, "modules.v1") + module.ns + "/" + module.name + "/" + module.system + "/" +
             version.str() + "/download";
  auto response = get_json(url, module.host, "module download");
  std::string location;
  if (response.status == 200 && !response.body.empty() && response.content_type() == "application/json") {
    location = string_field(parse_json(response.body, url, "module download answer"), "location");
  }
  if (location.empty()) {
    auto header = response.headers.find("x-terraform-get");
    if (header != response.headers.end()) location = header->second;
  }
  if (location.empty()) {
    throw Error("module download answer from " + url + " names no location (no X-Terraform-Get header or JSON location)");
  }
  if (location.starts_with("/") || location.starts_with("./") || location.starts_with("../")) {
    location = net::resolve_url(response.final_url.empty() ? url : response.final_url, location);
  }
  return location;
}

}  // namespace podplane::fetch
