// The CLI configuration: provider_installation, host, credentials, TF_TOKEN_<host>, and the
// tfrc podplane writes.
#include "lockfile/cli_config.hpp"

#include <cstdlib>

#include <gtest/gtest.h>

#include "base/error.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::lockfile {
namespace {

using test::ScopedEnv;

constexpr const char* kConfig = R"(
# A realistic air-gap config.
disable_checkpoint = true
plugin_cache_dir   = "$HOME/.terraform.d/plugin-cache"

provider_installation {
  filesystem_mirror {
    path    = "/opt/bundle/providers"
    include = ["registry.terraform.io/*/*"]
  }
  network_mirror {
    url     = "https://mirror.internal/providers/"
    exclude = ["example.com/*/*", "hashicorp/null"]
  }
  direct { exclude = ["registry.terraform.io/*/*"] }
}

host "registry.example.com" {
  services = {
    "providers.v1" = "https://registry.example.com/v1/providers/",
    "modules.v1"   = "https://registry.example.com/v1/modules/"
  }
}

credentials "App.Example.com" {
  token = "secret-token"
}
credentials "mirror.local:8443" {
  token = "port-token"
}
)";

TEST(CliConfig, ParsesInstallationMethodsHostsAndCredentials) {
  CliConfig config = parse_cli_config(kConfig, "test.tfrc");
  EXPECT_TRUE(config.disable_checkpoint);
  ASSERT_EQ(config.provider_installation.size(), 3u);
  EXPECT_EQ(config.provider_installation[0].kind, InstallationMethod::Kind::filesystem_mirror);
  EXPECT_EQ(config.provider_installation[0].location, "/opt/bundle/providers");
  EXPECT_EQ(config.provider_installation[1].kind, InstallationMethod::Kind::network_mirror);
  EXPECT_EQ(config.provider_installation[1].location, "https://mirror.internal/providers/");
  EXPECT_EQ(config.provider_installation[2].kind, InstallationMethod::Kind::direct);
  EXPECT_EQ(config.host_services.at("registry.example.com").at("providers.v1"),
            "https://registry.example.com/v1/providers/");
  EXPECT_EQ(config.credentials.at("app.example.com"), "secret-token");
  EXPECT_EQ(config.credentials.at("mirror.local:8443"), "port-token");
}

TEST(CliConfig, IncludeExcludeMatching) {
  CliConfig config = parse_cli_config(kConfig, "test.tfrc");
  const auto& fs_mirror = config.provider_installation[0];
  EXPECT_TRUE(fs_mirror.matches("registry.terraform.io/hashicorp/aws"));
  EXPECT_FALSE(fs_mirror.matches("registry.opentofu.org/hashicorp/aws"));
  const auto& net = config.provider_installation[1];
  EXPECT_TRUE(net.matches("registry.opentofu.org/hashicorp/aws"));
  EXPECT_FALSE(net.matches("example.com/acme/x"));
  // A two-part pattern names the engine's default registry.
  EXPECT_FALSE(net.matches("registry.opentofu.org/hashicorp/null", Engine::tofu));
  EXPECT_TRUE(net.matches("registry.terraform.io/hashicorp/null", Engine::tofu));
  EXPECT_FALSE(net.matches("registry.terraform.io/hashicorp/null", Engine::terraform));
  EXPECT_FALSE(net.matches("hashicorp/null"));
  const auto& direct = config.provider_installation[2];
  EXPECT_FALSE(direct.matches("registry.terraform.io/hashicorp/aws"));
  EXPECT_TRUE(direct.matches("registry.opentofu.org/hashicorp/aws"));
  EXPECT_EQ(config.network_mirror_for("registry.opentofu.org/hashicorp/aws"), &config.provider_installation[1]);
  EXPECT_EQ(config.network_mirror_for("example.com/acme/x"), nullptr);

  InstallationMethod both;
  both.include = {"registry.opentofu.org/hashicorp/*"};
  both.exclude = {"registry.opentofu.org/hashicorp/aws"};
  EXPECT_FALSE(both.matches("registry.opentofu.org/hashicorp/aws"));  // exclude beats include
  EXPECT_TRUE(both.matches("registry.opentofu.org/hashicorp/tls"));
  EXPECT_TRUE(InstallationMethod{}.matches("anything.example/a/b"));  // no include: everything
}

TEST(CliConfig, ErrorsCarryPositions) {
  auto error_of = [](const std::string& text) {
    try {
      (void)parse_cli_config(text, "rc");
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(error_of("provider_installation {\n  filesystem_mirror {\n    include = [\"a/*/c\"]\n    path = \"/x\"\n  }\n}\n")
                .find("rc:3:16: invalid provider pattern \"a/*/c\""),
            std::string::npos);
  EXPECT_NE(error_of("provider_installation {\n  direct { include = [\"*/hashicorp/aws\"] }\n}\n").find("invalid provider pattern"),
            std::string::npos);
  EXPECT_NE(error_of("provider_installation {\n  direct { include = [\"hashi*/aws\"] }\n}\n").find("whole part"),
            std::string::npos);
  EXPECT_NE(error_of("provider_installation {\n  filesystem_mirror {}\n}\n").find("rc:2:3: \"filesystem_mirror\" needs a \"path\""),
            std::string::npos);
  EXPECT_NE(error_of("provider_installation {\n  network_mirror { url = \"http://x/\" }\n}\n").find("https"),
            std::string::npos);
  EXPECT_NE(error_of("provider_installation {\n  magic {}\n}\n").find("rc:2:3: unknown provider installation method"),
            std::string::npos);
  EXPECT_NE(error_of("provider_installation {\n}\nprovider_installation {\n}\n").find("rc:3:1: only one"), std::string::npos);
  EXPECT_NE(error_of("credentials \"x\" {\n  token = \"a\n}\n").find("rc:2:11: unterminated string"), std::string::npos);
  // The token is never echoed in a message.
  std::string token_error = error_of("credentials {\n  token = \"supersecret\"\n}\n");
  EXPECT_NE(token_error.find("needs one label"), std::string::npos);
  EXPECT_EQ(token_error.find("supersecret"), std::string::npos);
}

TEST(CliConfig, TokenFromEnvironmentBeatsTheConfig) {
  CliConfig config = parse_cli_config(kConfig, "test.tfrc");
  EXPECT_EQ(token_for_host(config, "app.example.com"), "secret-token");
  EXPECT_EQ(token_for_host(config, "APP.example.com"), "secret-token");
  EXPECT_EQ(token_for_host(config, "mirror.local:8443"), "port-token");
  EXPECT_EQ(token_for_host(config, "unknown.example.com"), std::nullopt);
  ScopedEnv plain("TF_TOKEN_app_example_com", "env-token");
  ScopedEnv dashed("TF_TOKEN_my__registry_example_com", "dash-token");
  EXPECT_EQ(token_for_host(config, "app.example.com"), "env-token");
  EXPECT_EQ(token_for_host(config, "my-registry.example.com"), "dash-token");
  EXPECT_EQ(token_for_host(config, "my.registry.example.com"), std::nullopt);
}

TEST(CliConfig, LoadsFromEnvironmentAndMergesCredentialsJson) {
  test::TempDir home;
  test::write_file(home / ".terraformrc", "credentials \"a.example\" {\n  token = \"from-rc\"\n}\n");
  test::write_file(home / ".terraform.d/credentials.tfrc.json",
                   R"({"credentials": {"a.example": {"token": "json-a"}, "B.example": {"token": "json-b"}}})");
  ScopedEnv home_env("HOME", home.path().string());
  ScopedEnv no_file("TF_CLI_CONFIG_FILE", "");
  CliConfig config = load_cli_config_from_environment();
  EXPECT_EQ(config.credentials.at("a.example"), "from-rc");
  EXPECT_EQ(config.credentials.at("b.example"), "json-b");

  // ~/.tofurc is preferred; TF_CLI_CONFIG_FILE beats both.
  test::write_file(home / ".tofurc", "disable_checkpoint = true\n");
  EXPECT_TRUE(load_cli_config_from_environment().disable_checkpoint);
  test::write_file(home / "explicit.rc", "provider_installation {\n  direct {}\n}\n");
  ScopedEnv explicit_file("TF_CLI_CONFIG_FILE", (home / "explicit.rc").string());
  config = load_cli_config_from_environment();
  EXPECT_FALSE(config.disable_checkpoint);
  EXPECT_EQ(config.provider_installation.size(), 1u);

  test::write_file(home / ".terraform.d/credentials.tfrc.json", "{not json");
  EXPECT_THROW((void)load_cli_config_from_environment(), Error);
  EXPECT_THROW((void)load_cli_config_file(home / "missing.rc"), Error);
}

TEST(CliConfig, MissingFilesGiveAnEmptyConfig) {
  test::TempDir home;
  ScopedEnv home_env("HOME", home.path().string());
  ScopedEnv no_file("TF_CLI_CONFIG_FILE", "");
  CliConfig config = load_cli_config_from_environment();
  EXPECT_TRUE(config.provider_installation.empty());
  EXPECT_TRUE(config.credentials.empty());
}

TEST(Tfrc, PodplaneFilesystemMirrorConfig) {
  std::string tfrc = render_filesystem_mirror_tfrc("/home/u/.cache/podplane/deps/tf/providers");
  EXPECT_EQ(tfrc,
            "provider_installation {\n"
            "  filesystem_mirror {\n"
            "    path = \"/home/u/.cache/podplane/deps/tf/providers\"\n"
            "  }\n"
            "}\n"
            "\n"
            "disable_checkpoint = true\n");
  EXPECT_EQ(tfrc.find("direct"), std::string::npos);
  test::expect_golden("lockfile/podplane.tfrc", tfrc);
  CliConfig parsed = parse_cli_config(tfrc, "podplane.tfrc");
  ASSERT_EQ(parsed.provider_installation.size(), 1u);
  EXPECT_EQ(parsed.provider_installation[0].location, "/home/u/.cache/podplane/deps/tf/providers");
  EXPECT_TRUE(parsed.disable_checkpoint);
  EXPECT_THROW((void)render_filesystem_mirror_tfrc("relative/providers"), Error);
  std::string odd = render_filesystem_mirror_tfrc("/tmp/with \"quote\"/and\\slash");
  EXPECT_EQ(parse_cli_config(odd, "odd").provider_installation[0].location, "/tmp/with \"quote\"/and\\slash");
}

}  // namespace
}  // namespace podplane::lockfile
