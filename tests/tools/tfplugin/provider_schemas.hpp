// The schemas the fixture provider plugin announces, in one place. The Podplane provider's are
// those of the published terraform-provider-podplane (provider.go, data_source_userdata.go,
// resource_netsy_seed_{s3,gcs}.go): written from the real provider, not from what
// generator/render.cpp emits, so a stack that uses an argument the provider lacks, or misses
// one it requires, fails `terraform validate` the way it would against the real provider.
#pragma once

#include <string>
#include <vector>

namespace podplane::tfplugin {

enum class Presence { required, optional, computed };

struct AttributeSchema {
  std::string name;
  std::string cty_type;  // cty type in JSON, as the protocol carries it: "\"string\"", "\"bool\""
  Presence presence;
};

struct BlockSchema {
  std::string type_name;  // "podplane_userdata"; empty for the provider's own block
  std::vector<AttributeSchema> attributes;
};

struct ProviderSchemas {
  BlockSchema provider;
  std::vector<BlockSchema> resources;
  std::vector<BlockSchema> data_sources;
};

// The schemas of provider `type` ("podplane"; "random", "null", "tls" and "cloudinit" are
// announced with no resources: the Nstance fixture modules require them but declare none).
// Throws std::invalid_argument for a type this fixture does not play.
[[nodiscard]] ProviderSchemas provider_schemas(const std::string& type);

}  // namespace podplane::tfplugin
