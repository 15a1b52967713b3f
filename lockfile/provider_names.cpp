#include "lockfile/provider_names.hpp"

namespace podplane::lockfile {

std::string_view engine_name(Engine engine) { return engine == Engine::terraform ? "terraform" : "tofu"; }

std::string provider_package_filename(std::string_view type, std::string_view version, std::string_view platform) {
  return "terraform-provider-" + std::string(type) + "_" + std::string(version) + "_" + std::string(platform) + ".zip";
}

std::string provider_signing_keys_filename(std::string_view type, std::string_view version) {
  return "terraform-provider-" + std::string(type) + "_" + std::string(version) + "_signing_keys.json";
}

}  // namespace podplane::lockfile
