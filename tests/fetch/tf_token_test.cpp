// TF_TOKEN_<host> against a private registry (the fixture upstream wanting a bearer token on its
// registry APIs), with the engines' hostname encoding: "." is written "_", "-" is written "__",
// and an internationalized name is written in its punycode (ACE) form. The token never reaches
// the store, the lock or the output.
#include <gtest/gtest.h>

#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

const std::string kToken = "fixture-secret-4f1c9e";

// Host blocks that send a dashed host and an IDN host (café.example, as punycode) to the fixture.
std::vector<std::string> private_hosts(const FixtureUpstream& upstream) {
  std::vector<std::string> lines;
  for (const char* host : {"my-registry.example.com", "xn--caf-dma.example"}) {
    lines.push_back(std::string("host \"") + host + "\" {\n  services = {\n    \"providers.v1\" = \"" + upstream.base_url() +
                    "/v1/providers/\"\n  }\n}");
  }
  return lines;
}

TEST(TfToken, PrivateRegistryTokenFromTheEnvironmentWithTheEnginesHostnameEncoding) {
  ServeOptions serve;
  serve.api_token = kToken;
  FixtureUpstream upstream({}, serve);
  TempDir dir;
  CliConfigOptions cli;
  cli.extra_lines = private_hosts(upstream);
  upstream.write_cli_config(dir / "cli.tfrc", cli);
  write_file(dir / "root/main.tf",
             "terraform {\n  required_providers {\n"
             "    random = { source = \"my-registry.example.com/hashicorp/random\", version = \"3.6.0\" }\n"
             "    null   = { source = \"xn--caf-dma.example/hashicorp/null\", version = \"3.2.4\" }\n"
             "  }\n}\n");
  auto deps_tf = [&](const std::map<std::string, std::string>& tokens) {
    ProcessOptions options;
    options.env = upstream.env(dir / "deps", dir / "cli.tfrc");
    for (const auto& [name, value] : tokens) options.env[name] = value;
    options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    return run_podplane({"deps", "tf", "--platform", "linux_amd64", "--stack", (dir / "root").string(), "--write-lock"},
                        options);
  };

  // Without a token the registry refuses, and the error says which variable would help.
  auto none = deps_tf({});
  EXPECT_EQ(none.exit_code, 1) << none.out << none.err;
  EXPECT_NE(none.err.find("unauthorized (HTTP 401); set TF_TOKEN_<host> or a credentials block for "), std::string::npos)
      << none.err;

  // "-" written as a single "_" names another host ("my.registry.example.com"): still refused.
  auto misencoded = deps_tf({{"TF_TOKEN_my_registry_example_com", kToken}, {"TF_TOKEN_xn____caf__dma_example", kToken}});
  EXPECT_EQ(misencoded.exit_code, 1) << misencoded.out << misencoded.err;
  EXPECT_NE(misencoded.err.find("for my-registry.example.com"), std::string::npos) << misencoded.err;

  // As the engines encode them: both hosts answer.
  auto encoded = deps_tf({{"TF_TOKEN_my__registry_example_com", kToken}, {"TF_TOKEN_xn____caf__dma_example", kToken}});
  ASSERT_EQ(encoded.exit_code, 0) << encoded.out << encoded.err;
  const auto lock = read_file(dir / "root/.terraform.lock.hcl");
  EXPECT_NE(lock.find("provider \"my-registry.example.com/hashicorp/random\""), std::string::npos) << lock;
  EXPECT_NE(lock.find("provider \"xn--caf-dma.example/hashicorp/null\""), std::string::npos) << lock;
  EXPECT_FALSE(upstream.requests("^/v1/providers/hashicorp/(random|null)/versions$", 200).empty());
  EXPECT_FALSE(upstream.requests("^/v1/providers/hashicorp/(random|null)/versions$", 401).empty());

  // The token is in no file of the store, the root, and no output.
  for (const auto& result : {none, misencoded, encoded}) {
    EXPECT_EQ(result.out.find(kToken), std::string::npos);
    EXPECT_EQ(result.err.find(kToken), std::string::npos);
  }
  for (const auto& base : {dir / "deps", dir / "root"}) {
    for (const auto& entry : fs::recursive_directory_iterator(base)) {
      if (!entry.is_regular_file()) continue;
      EXPECT_EQ(read_file(entry.path()).find(kToken), std::string::npos) << entry.path();
    }
  }
}

}  // namespace
}  // namespace podplane::test
