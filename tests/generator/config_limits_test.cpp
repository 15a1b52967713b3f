// Hostile or mistaken numbers and nesting in podplane.cluster.jsonc: each fails with the
// file and line of the value (never an exception text from the JSON library, a crash, or a
// silently truncated number).
#include <gtest/gtest.h>

#include <string>

#include "base/error.hpp"
#include "generator/config.hpp"
#include "generator/jsonc.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::generator {
namespace {

std::string config_with_size(const std::string& size) {
  return "{\n"
         "  \"cluster\": {\n"
         "    \"id\": \"abc-prod\",\n"
         "    \"oidc\": { \"issuer_url\": \"https://auth.example.com\" },\n"
         "    \"pools\": {\n"
         "      \"control-plane\": { \"arch\": \"arm64\", \"instance_type\": \"t4g.medium\", \"size\": " + size + " }\n"
         "    },\n"
         "    \"providers\": [{ \"kind\": \"aws\", \"region\": \"us-east-1\", \"account\": \"123456789012\",\n"
         "      \"vpc\": { \"v4cidr\": \"10.0.0.0/16\" }, \"zones\": { \"us-east-1a\": [ { \"v4cidr\": \"10.0.1.0/24\" } ] } }],\n"
         "    \"kubernetes\": { \"api_hostname\": \"k8s.example.com\" }\n"
         "  }\n"
         "}\n";
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_cluster_config(text, "podplane.cluster.jsonc");
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

TEST(ConfigLimits, ANumberBeyondDoubleGivesFileAndLine) {
  std::string error = error_of(config_with_size("1e400"));
  EXPECT_NE(error.find("podplane.cluster.jsonc:6:"), std::string::npos) << error;
  EXPECT_NE(error.find("number out of range: 1e400"), std::string::npos) << error;
  EXPECT_EQ(error.find("json.exception"), std::string::npos) << error;
}

TEST(ConfigLimits, AnIntegerBeyondTheFieldGivesFileLineAndPath) {
  for (const char* size : {"99999999999999999999", "4294967296", "2147483648", "-99999999999999999999"}) {
    std::string error = error_of(config_with_size(size));
    EXPECT_NE(error.find("podplane.cluster.jsonc:6: cluster.pools.control-plane.size: "), std::string::npos)
        << size << ": " << error;
    EXPECT_EQ(error.find("json.exception"), std::string::npos) << error;
  }
  EXPECT_NE(error_of(config_with_size("99999999999999999999")).find("out of range"), std::string::npos);
  EXPECT_EQ(error_of(config_with_size("2147483647")), "<no error>");
}

TEST(ConfigLimits, DeepNestingFailsWithItsPosition) {
  std::string deep = "{\n\"cluster\": " + std::string(100000, '[') + std::string(100000, ']') + "}\n";
  std::string error = error_of(deep);
  EXPECT_NE(error.find("podplane.cluster.jsonc:2:"), std::string::npos) << error;
  EXPECT_NE(error.find("nested deeper than 128 levels"), std::string::npos) << error;
}

TEST(ConfigLimits, OversizedConfigFails) {
  test::TempDir dir;
  test::write_file(dir / "podplane.cluster.jsonc", config_with_size("1") + std::string(17u << 20, ' '));
  try {
    (void)load_cluster_config(dir / "podplane.cluster.jsonc");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("larger than the limit of 16 MiB"), std::string::npos) << error.what();
  }
}

TEST(ConfigLimits, JsoncDeepInCommentsAndStringsIsNotNesting) {
  std::string text = "{ \"a\": \"" + std::string(1000, '[') + "\", // " + std::string(1000, '{') + "\n \"b\": 1 }";
  auto document = parse_jsonc(text, "x.jsonc");
  EXPECT_EQ(document.value["b"], 1);
}

}  // namespace
}  // namespace podplane::generator

namespace podplane::generator {
namespace {

// nlohmann ends a // comment at CR or NUL as well as LF: the limit check and the line scanner
// must read comments the same way, or what they skip as comment is nesting nlohmann parses.
TEST(ConfigLimits, ALineCommentEndsAtCarriageReturnForTheLimitsToo) {
  std::string deep = "// comment\r" + std::string(100000, '[') + std::string(100000, ']');
  try {
    (void)parse_jsonc(deep, "x.jsonc");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("nested deeper than 128 levels"), std::string::npos) << error.what();
  }
  auto document = parse_jsonc("// a\r{\"a\": // b\r 1, \"c\": [1, /* d */ 2]}", "x.jsonc");
  EXPECT_EQ(document.value["a"], 1);
}

}  // namespace
}  // namespace podplane::generator
