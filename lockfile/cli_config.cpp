#include "lockfile/cli_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "base/split.hpp"
#include "lockfile/hcl.hpp"

extern char** environ;

namespace podplane::lockfile {
namespace {

std::string at(std::string_view source_name, const hcl::SourcePos& pos) {
  return std::string(source_name) + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": ";
}

std::string string_value(const hcl::Attribute& attribute, std::string_view source_name) {
  const std::string* text = attribute.value.as_string();
  if (text == nullptr) throw Error(at(source_name, attribute.value.pos) + "\"" + attribute.name + "\" must be a string");
  return *text;
}

// ParseMultiSourceMatchingPatterns: [host/]ns/type, '*' only as a whole segment, a host '*'
// only in "*/*/*", a namespace '*' only with a type '*'.
std::string validate_pattern(const std::string& pattern, std::string_view source_name, const hcl::SourcePos& pos) {
  auto parts = split(pattern, '/');
  auto fail = [&](const std::string& why) -> std::string {
    throw Error(at(source_name, pos) + "invalid provider pattern \"" + pattern + "\": " + why +
                " (expected [HOST/]NAMESPACE/TYPE, e.g. \"registry.opentofu.org/hashicorp/*\")");
  };
  if (parts.size() != 2 && parts.size() != 3) return fail("needs two or three parts");
  for (const auto& part : parts) {
    if (part.empty()) return fail("empty part");
    if (part != "*" && part.find('*') != std::string::npos) return fail("\"*\" must be a whole part");
  }
  std::size_t ns = parts.size() - 2;
  if (parts.size() == 3 && parts[0] == "*" && (parts[1] != "*" || parts[2] != "*")) {
    return fail("a \"*\" host needs \"*\" namespace and type");
  }
  if (parts[ns] == "*" && parts[ns + 1] != "*") return fail("a \"*\" namespace needs a \"*\" type");
  return ascii_lower(pattern);
}

std::vector<std::string> pattern_list(const hcl::Attribute& attribute, std::string_view source_name) {
  const auto* items = std::get_if<hcl::Tuple>(&attribute.value.data);
  if (items == nullptr) throw Error(at(source_name, attribute.value.pos) + "\"" + attribute.name + "\" must be a list of strings");
  std::vector<std::string> patterns;
  for (const auto& item : *items) {
    const std::string* text = item.as_string();
    if (text == nullptr) throw Error(at(source_name, item.pos) + "each pattern must be a string");
    patterns.push_back(validate_pattern(*text, source_name, item.pos));
  }
  return patterns;
}

bool pattern_matches(const std::string& pattern, const ProviderAddress& address, Engine engine) {
  auto parts = split(pattern, '/');
  std::string host = parts.size() == 3 ? parts[0] : std::string(default_registry_host(engine));
  const std::string& ns = parts[parts.size() - 2];
  const std::string& type = parts[parts.size() - 1];
  return (host == "*" || host == address.host) && (ns == "*" || ns == address.ns) && (type == "*" || type == address.type);
}

InstallationMethod decode_method(const hcl::Block& block, std::string_view source_name) {
  InstallationMethod method;
  const char* location_name = nullptr;
  if (block.type == "filesystem_mirror") {
    method.kind = InstallationMethod::Kind::filesystem_mirror;
    location_name = "path";
  } else if (block.type == "network_mirror") {
    method.kind = InstallationMethod::Kind::network_mirror;
    location_name = "url";
  } else {
    method.kind = InstallationMethod::Kind::direct;
  }
  if (!block.labels.empty()) throw Error(at(source_name, block.pos) + "\"" + block.type + "\" takes no labels");
  for (const auto& attribute : block.body.attributes) {
    if (attribute.name == "include") {
      method.include = pattern_list(attribute, source_name);
    } else if (attribute.name == "exclude") {
      method.exclude = pattern_list(attribute, source_name);
    } else if (location_name != nullptr && attribute.name == location_name) {
      method.location = string_value(attribute, source_name);
    }
    // Other settings (trust_all_hashes, download_retry_count, …) do not concern us.
  }
  if (location_name != nullptr && method.location.empty()) {
    throw Error(at(source_name, block.pos) + "\"" + block.type + "\" needs a \"" + location_name + "\"");
  }
  if (method.kind == InstallationMethod::Kind::network_mirror && method.location.rfind("https://", 0) != 0) {
    throw Error(at(source_name, block.pos) + "network_mirror url must use https: \"" + method.location + "\"");
  }
  return method;
}

void decode_provider_installation(const hcl::Block& block, CliConfig& config, std::string_view source_name) {
  if (!block.body.attributes.empty()) {
    const auto& attribute = block.body.attributes.front();
    throw Error(at(source_name, attribute.pos) + "unexpected argument \"" + attribute.name + "\" in provider_installation");
  }
  for (const auto& method : block.body.blocks) {
    if (method.type == "filesystem_mirror" || method.type == "network_mirror" || method.type == "direct") {
      config.provider_installation.push_back(decode_method(method, source_name));
    } else if (method.type == "dev_overrides" || method.type == "oci_mirror") {
      continue;  // development-only, or a Tofu OCI mirror: nothing podplane serves or follows
    } else {
      throw Error(at(source_name, method.pos) + "unknown provider installation method \"" + method.type +
                  "\" (expected filesystem_mirror, network_mirror or direct)");
    }
  }
}

void decode_host(const hcl::Block& block, CliConfig& config, std::string_view source_name) {
  if (block.labels.size() != 1) throw Error(at(source_name, block.pos) + "a host block needs one label, the hostname");
  const hcl::Attribute* services = block.body.attribute("services");
  auto& entry = config.host_services[ascii_lower(block.labels[0])];
  if (services == nullptr) return;
  const auto* members = std::get_if<hcl::Object>(&services->value.data);
  if (members == nullptr) throw Error(at(source_name, services->value.pos) + "\"services\" must be an object of strings");
  for (const auto& [id, url] : *members) {
    const std::string* text = url.as_string();
    if (text == nullptr) throw Error(at(source_name, url.pos) + "service \"" + id + "\" must be a URL string");
    entry[id] = *text;
  }
}

void decode_credentials(const hcl::Block& block, CliConfig& config, std::string_view source_name) {
  if (block.labels.size() != 1) {
    throw Error(at(source_name, block.pos) + "a credentials block needs one label, the hostname");
  }
  const hcl::Attribute* token = block.body.attribute("token");
  if (token == nullptr) return;  // other credential shapes are not ours to interpret
  // The token itself never goes into a message.
  if (!token->value.is_string()) throw Error(at(source_name, token->value.pos) + "\"token\" must be a string");
  config.credentials[ascii_lower(block.labels[0])] = *token->value.as_string();
}

std::optional<std::string> read_optional_file(const std::filesystem::path& file) {
  if (!std::ifstream(file, std::ios::binary)) return std::nullopt;  // absent or unreadable: as if none
  return read_file_within_limits(file, "CLI config");
}

}  // namespace

bool InstallationMethod::matches(std::string_view provider_address) const {
  return matches(provider_address, Engine::tofu);
}

bool InstallationMethod::matches(std::string_view provider_address, Engine engine) const {
  ProviderAddress address = ProviderAddress::parse(provider_address, default_registry_host(engine));
  auto any = [&](const std::vector<std::string>& patterns) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& pattern) { return pattern_matches(pattern, address, engine); });
  };
  if (any(exclude)) return false;
  return include.empty() || any(include);
}

const InstallationMethod* CliConfig::network_mirror_for(std::string_view provider_address) const {
  return network_mirror_for(provider_address, Engine::tofu);
}

const InstallationMethod* CliConfig::network_mirror_for(std::string_view provider_address, Engine engine) const {
  for (const auto& method : provider_installation) {
    if (method.kind == InstallationMethod::Kind::network_mirror && method.matches(provider_address, engine)) return &method;
  }
  return nullptr;
}

CliConfig parse_cli_config(std::string_view text, std::string_view source_name) {
  hcl::Body body = hcl::parse(text, source_name);
  CliConfig config;
  const auto installations = body.blocks_of_type("provider_installation");
  if (installations.size() > 1) {
    throw Error(at(source_name, installations[1]->pos) + "only one provider_installation block is allowed");
  }
  for (const hcl::Block* block : installations) decode_provider_installation(*block, config, source_name);
  for (const hcl::Block* block : body.blocks_of_type("host")) decode_host(*block, config, source_name);
  for (const hcl::Block* block : body.blocks_of_type("credentials")) decode_credentials(*block, config, source_name);
  if (const hcl::Attribute* checkpoint = body.attribute("disable_checkpoint")) {
    const bool* value = std::get_if<bool>(&checkpoint->value.data);
    if (value == nullptr) throw Error(at(source_name, checkpoint->value.pos) + "\"disable_checkpoint\" must be true or false");
    config.disable_checkpoint = *value;
  }
  return config;
}

void merge_credentials_json(CliConfig& config, std::string_view json_text, std::string_view source_name) {
  nlohmann::json document = parse_json_within_limits(json_text, source_name);
  if (!document.is_object()) throw Error(std::string(source_name) + ": expected a JSON object");
  auto credentials = document.find("credentials");
  if (credentials == document.end()) return;
  if (!credentials->is_object()) throw Error(std::string(source_name) + ": \"credentials\" must be an object");
  for (const auto& [host, entry] : credentials->items()) {
    if (!entry.is_object() || !entry.contains("token") || !entry["token"].is_string()) {
      throw Error(std::string(source_name) + ": credentials for \"" + host + "\" need a string \"token\"");
    }
    config.credentials.emplace(ascii_lower(host), entry["token"].get<std::string>());
  }
}

CliConfig load_cli_config_file(const std::filesystem::path& file) {
  auto text = read_optional_file(file);
  if (!text) throw Error("cannot open CLI config " + file.string());
  return parse_cli_config(*text, file.string());
}

CliConfig load_cli_config_from_environment() {
  namespace fs = std::filesystem;
  const char* home_env = std::getenv("HOME");
  fs::path home = home_env != nullptr ? fs::path(home_env) : fs::path();
  std::vector<fs::path> candidates;
  if (const char* explicit_file = std::getenv("TF_CLI_CONFIG_FILE"); explicit_file != nullptr && *explicit_file) {
    candidates.emplace_back(explicit_file);
  } else if (!home.empty()) {
    candidates.push_back(home / ".tofurc");
    candidates.push_back(home / ".terraformrc");
  }
  CliConfig config;
  for (const auto& candidate : candidates) {
    if (auto text = read_optional_file(candidate)) {
      config = parse_cli_config(*text, candidate.string());
      break;
    }
  }
  if (!home.empty()) {
    fs::path json = home / ".terraform.d" / "credentials.tfrc.json";
    if (auto text = read_optional_file(json)) merge_credentials_json(config, *text, json.string());
  }
  return config;
}

std::optional<std::string> token_for_host(const CliConfig& config, std::string_view host) {
  std::string wanted = ascii_lower(host);
  // TF_TOKEN_<host>: "__" stands for "-", then "_" for "."; a port cannot be written.
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view variable(*entry);
    constexpr std::string_view prefix = "TF_TOKEN_";
    if (variable.substr(0, prefix.size()) != prefix) continue;
    auto equals = variable.find('=');
    if (equals == std::string_view::npos) continue;
    std::string encoded(variable.substr(prefix.size(), equals - prefix.size()));
    std::string decoded;
    for (std::size_t i = 0; i < encoded.size(); ++i) {
      if (encoded[i] == '_' && i + 1 < encoded.size() && encoded[i + 1] == '_') {
        decoded.push_back('-');
        ++i;
      } else if (encoded[i] == '_') {
        decoded.push_back('.');
      } else {
        decoded.push_back(encoded[i]);
      }
    }
    std::string_view token = variable.substr(equals + 1);
    if (ascii_lower(decoded) == wanted && !token.empty()) return std::string(token);
  }
  if (auto it = config.credentials.find(wanted); it != config.credentials.end()) return it->second;
  return std::nullopt;
}

std::string render_filesystem_mirror_tfrc(const std::filesystem::path& providers_dir) {
  if (!providers_dir.is_absolute()) {
    throw Error("the provider mirror path in a CLI config must be absolute: " + providers_dir.string());
  }
  // Podplane's podplane.tfrc byte for byte, then disable_checkpoint: no "direct" block, so
  // nothing is ever fetched from a registry.
  return "provider_installation {\n"
         "  filesystem_mirror {\n"
         "    path = " +
         hcl::quote(providers_dir.generic_string()) +
         "\n"
         "  }\n"
         "}\n"
         "\n"
         "disable_checkpoint = true\n";
}

}  // namespace podplane::lockfile
