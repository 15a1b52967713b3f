// The cluster config: JSONC parsing, the embedded schema, validation errors with path and
// line, the starter config, and the tofu-fmt formatting of generated HCL.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "generator/config.hpp"
#include "generator/jsonc.hpp"
#include "generator/schema.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::generator {
namespace {

std::string error_of(const std::string& text) {
  try {
    (void)parse_cluster_config(text, "podplane.cluster.jsonc");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string minimal(const std::string& extra_cluster = "", const std::string& provider_extra = "") {
  return "{\n"
         "  // comment\n"
         "  \"cluster\": {\n"
         "    \"id\": \"abc-prod\",\n" +
         extra_cluster +
         "    \"oidc\": { \"issuer_url\": \"https://auth.example.com\" },\n"
         "    \"pools\": { \"control-plane\": { \"arch\": \"arm64\", \"instance_type\": \"t4g.medium\", \"size\": 1 } },\n"
         "    \"providers\": [{ \"kind\": \"aws\", \"region\": \"us-east-1\", \"account\": \"123456789012\",\n" +
         provider_extra +
         "      \"vpc\": { \"v4cidr\": \"10.0.0.0/16\" }, \"zones\": { \"us-east-1a\": [ { \"v4cidr\": \"10.0.1.0/24\" } ] } }],\n"
         "    \"kubernetes\": { \"api_hostname\": \"k8s.example.com\" }\n"
         "  }\n"
         "}\n";
}

TEST(ClusterConfig, SchemaIsValidJsonWithDescriptionsEverywhere) {
  auto schema = nlohmann::json::parse(cluster_schema_text());
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  // Every object schema forbids unknown properties and every property has a description.
  std::function<void(const nlohmann::json&, const std::string&)> walk = [&](const nlohmann::json& node,
                                                                            const std::string& where) {
    if (!node.is_object()) return;
    if (node.value("type", "") == "object") {
      EXPECT_TRUE(node.contains("additionalProperties")) << where;
      if (node["additionalProperties"].is_boolean()) {
        EXPECT_FALSE(node["additionalProperties"].get<bool>()) << where;
      }
    }
    if (node.contains("properties")) {
      for (const auto& property : node["properties"].items()) {
        EXPECT_TRUE(property.value().contains("description")) << where << "." << property.key();
        walk(property.value(), where + "." + property.key());
      }
    }
    if (node.contains("items")) walk(node["items"], where + "[]");
    if (node.contains("additionalProperties") && node["additionalProperties"].is_object())
      walk(node["additionalProperties"], where + ".*");
  };
  walk(schema, "");
  // The copy written beside the config says it is generated.
  EXPECT_NE(cluster_schema_file_content().find("\"$comment\": \"Podplane generated schema support file."),
            std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(cluster_schema_file_content()).is_object());
}

TEST(ClusterConfig, ParsesJsoncWithDefaults) {
  ClusterConfig config = parse_cluster_config(minimal(), "x.jsonc");
  EXPECT_EQ(config.id, "abc-prod");
  EXPECT_EQ(config.provider.kind, ProviderKind::aws);
  EXPECT_EQ(config.provider.account, "123456789012");
  EXPECT_EQ(config.kubernetes.api_port, 6443);
  EXPECT_EQ(config.oidc.client_id, "kubernetes");
  ASSERT_EQ(config.vm_flavours().size(), 1u);
  EXPECT_EQ(config.vm_flavours()[0].first, "knc");
}

TEST(ClusterConfig, UnknownPropertyNamesPathAndLine) {
  std::string message = error_of(minimal("    \"colour\": \"blue\",\n"));
  EXPECT_NE(message.find("podplane.cluster.jsonc:5: cluster.colour: unknown property \"colour\""), std::string::npos)
      << message;
}

TEST(ClusterConfig, WrongEnumAndPatternAndMinimumNamePathAndLine) {
  std::string text = minimal();
  text.replace(text.find("\"arm64\""), 7, "\"sparc\"");
  text.replace(text.find("\"size\": 1"), 9, "\"size\": -2");
  std::string message = error_of(text);
  EXPECT_NE(message.find(":6: cluster.pools.control-plane.arch: must be one of amd64, arm64, not \"sparc\""),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(":6: cluster.pools.control-plane.size: must be at least 0, not -2"), std::string::npos) << message;
  std::string bad_account = minimal();
  bad_account.replace(bad_account.find("123456789012"), 12, "12345");
  message = error_of(bad_account);
  EXPECT_NE(message.find(":7: cluster.providers[0].account: \"12345\" does not match"), std::string::npos) << message;
}

TEST(ClusterConfig, MissingRequiredAndTypeErrors) {
  std::string text = minimal("    \"name\": 42,\n");
  auto at = text.find("    \"kubernetes\"");
  text.erase(at, text.find('\n', at) + 1 - at);
  text.replace(text.find("}],\n"), 4, "}]\n");
  std::string message = error_of(text);
  EXPECT_NE(message.find(":3: cluster: missing required property \"kubernetes\""), std::string::npos) << message;
  EXPECT_NE(message.find(":5: cluster.name: must be a string, not integer"), std::string::npos) << message;
}

TEST(ClusterConfig, SyntaxErrorNamesLine) {
  std::string message = error_of("{\n  // c\n  \"cluster\": {\n    \"id\": \"x\",,\n  }\n}\n");
  EXPECT_NE(message.find("podplane.cluster.jsonc:4:15: invalid JSON"), std::string::npos) << message;
}

TEST(ClusterConfig, SemanticChecksNamePathAndLine) {
  std::string message = error_of(minimal("", "      \"project\": \"my-project-1\",\n"));
  EXPECT_NE(message.find(":8: cluster.providers[0].project: is for google providers only"), std::string::npos) << message;
  std::string text = minimal();
  text.replace(text.find("\"control-plane\""), 15, "\"workers\"");
  message = error_of(text);
  EXPECT_NE(message.find("cluster.pools: needs a pool named \"control-plane\""), std::string::npos) << message;
}

TEST(ClusterConfig, StarterConfigsValidate) {
  for (auto provider : {ProviderKind::aws, ProviderKind::google}) {
    InitOptions options;
    options.provider = provider;
    options.id = "first-cluster";
    std::string text = starter_config(options);
    EXPECT_NE(text.find("// "), std::string::npos);
    ClusterConfig config = parse_cluster_config(text, "podplane.cluster.jsonc");
    EXPECT_EQ(config.provider.kind, provider);
    EXPECT_EQ(config.id, "first-cluster");
  }
}

TEST(Jsonc, DisplayPath) {
  EXPECT_EQ(display_path("/cluster/providers/0/zones/us-east-1a/2/pool"), "cluster.providers[0].zones.us-east-1a[2].pool");
  EXPECT_EQ(display_path(""), "(root)");
}

}  // namespace
}  // namespace podplane::generator
