#include "tests/tools/tfplugin/provider_schemas.hpp"

#include <stdexcept>

namespace podplane::tfplugin {
namespace {

const std::string kString = "\"string\"";
const std::string kBool = "\"bool\"";

AttributeSchema required(const std::string& name, const std::string& type = kString) {
  return {name, type, Presence::required};
}
AttributeSchema optional(const std::string& name, const std::string& type = kString) {
  return {name, type, Presence::optional};
}
AttributeSchema computed(const std::string& name, const std::string& type = kString) {
  return {name, type, Presence::computed};
}

// podplane_netsy_seed_s3 and _gcs share every argument but the cloud's own ones.
BlockSchema netsy_seed(const std::string& type_name, std::vector<AttributeSchema> cloud) {
  BlockSchema block{type_name,
                    {computed("id"), required("cluster_config_path"), optional("seed_path"), optional("values_file"),
                     optional("values_content"), required("bucket"), optional("prefix")}};
  block.attributes.insert(block.attributes.end(), cloud.begin(), cloud.end());
  return block;
}

ProviderSchemas podplane() {
  ProviderSchemas schemas;
  schemas.data_sources.push_back(
      {"podplane_userdata",
       {required("manifest_json"), optional("deps_mirror_url"), required("provider_kind"), optional("aws_account_id"),
        optional("google_project_id"), optional("immutable_ssh_authorized_keys"), optional("enable_ssm", kBool),
        computed("content")}});
  schemas.resources.push_back(netsy_seed("podplane_netsy_seed_s3", {optional("region"), optional("profile")}));
  schemas.resources.push_back(netsy_seed("podplane_netsy_seed_gcs", {optional("project")}));
  return schemas;
}

}  // namespace

ProviderSchemas provider_schemas(const std::string& type) {
  if (type == "podplane") return podplane();
  if (type == "random" || type == "null" || type == "tls" || type == "cloudinit") return {};
  throw std::invalid_argument("the fixture provider plugin does not play provider type \"" + type + "\"");
}

}  // namespace podplane::tfplugin
