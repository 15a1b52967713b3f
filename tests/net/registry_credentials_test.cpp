// Registry credentials from auth files and creds files (net/oci_auth.hpp): which file is
// read, which key matches, and that a bad file is refused by name without its content.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/hex.hpp"
#include "net/oci_auth.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::net {
namespace {

using nlohmann::json;
using podplane::test::ScopedEnv;
using podplane::test::TempDir;
using podplane::test::write_file;
namespace fs = std::filesystem;

RegistryAuthOptions authfile(const fs::path& file) {
  RegistryAuthOptions options;
  options.authfile = file;
  return options;
}

RegistryAuthOptions creds_file(const fs::path& file, const std::string& registry) {
  RegistryAuthOptions options;
  options.creds_file = file;
  options.creds_registry = registry;
  return options;
}

class RegistryCredentialsTest : public ::testing::Test {
 protected:
  TempDir temp_;
  ScopedEnv home_{"HOME", (temp_ / "home").string()};
  ScopedEnv runtime_{"XDG_RUNTIME_DIR", std::nullopt};
  ScopedEnv registry_auth_file_{"REGISTRY_AUTH_FILE", std::nullopt};
  ScopedEnv docker_config_{"DOCKER_CONFIG", std::nullopt};

  std::string message_of(const RegistryAuthOptions& options) {
    try {
      (void)RegistryCredentials::load(options);
    } catch (const Error& error) {
      return error.message();
    }
    ADD_FAILURE() << "no error";
    return "";
  }
};

TEST(Base64Test, DecodesWhatEncodeWritesAndRefusesOtherText) {
  for (std::string raw : {"", "a", "ab", "abc", "user:pa:ss\xff"}) EXPECT_EQ(base64_decode(base64_encode(raw)), raw) << raw;
  EXPECT_EQ(base64_decode("dXNlcjpwdw"), "user:pw");  // without padding, as some tools write it
  EXPECT_EQ(base64_decode("not base64!"), std::nullopt);
  EXPECT_EQ(base64_decode("abcde"), std::nullopt);
}

TEST(AuthKeyTest, NormalisesDockerAndContainersForms) {
  EXPECT_EQ(normalise_auth_key("https://index.docker.io/v1/"), "docker.io");
  EXPECT_EQ(normalise_auth_key("registry-1.docker.io"), "docker.io");
  EXPECT_EQ(normalise_auth_key("http://Harbor.Example:5000/v2/"), "harbor.example:5000");
  EXPECT_EQ(normalise_auth_key("harbor.example/team/app/"), "harbor.example/team/app");
  EXPECT_EQ(normalise_auth_key("127.0.0.1:5000"), "127.0.0.1:5000");
}

TEST_F(RegistryCredentialsTest, NoFilesMeansNoLogin) {
  auto credentials = RegistryCredentials::load({});
  EXPECT_EQ(credentials.find("harbor.example", "team/app"), std::nullopt);
}

TEST_F(RegistryCredentialsTest, MostSpecificKeyOfTheFirstFileWins) {
  write_file(temp_ / "run" / "containers" / "auth.json",
             json{{"auths",
                   {{"harbor.example", {{"auth", base64_encode("all:a")}}},
                    {"harbor.example/team", {{"username", "team"}, {"password", "t:with:colons"}}}}}}
                 .dump());
  write_file(temp_ / "home" / ".docker" / "config.json",
             json{{"auths", {{"harbor.example/team/app", {{"auth", base64_encode("docker:d")}}},
                             {"https://index.docker.io/v1/", {{"auth", base64_encode("hub:h")}}}}}}
                 .dump());
  ScopedEnv runtime{"XDG_RUNTIME_DIR", (temp_ / "run").string()};
  auto credentials = RegistryCredentials::load({});
  auto team = credentials.find("harbor.example", "team/app");
  ASSERT_TRUE(team);
  EXPECT_EQ(team->username, "team");
  EXPECT_EQ(team->password, "t:with:colons");
  EXPECT_NE(team->source.find("containers/auth.json"), std::string::npos);
  EXPECT_EQ(credentials.find("harbor.example", "other/app")->username, "all");
  EXPECT_EQ(credentials.find("docker.io", "library/nginx")->username, "hub");  // from the second file
  EXPECT_EQ(credentials.find("quay.io", "x/y"), std::nullopt);
}

TEST_F(RegistryCredentialsTest, AnExplicitAuthFileIsTheOnlyOneReadAndMustExist) {
  write_file(temp_ / "home" / ".docker" / "config.json",
             json{{"auths", {{"harbor.example", {{"auth", base64_encode("docker:d")}}}}}}.dump());
  write_file(temp_ / "mine.json", json{{"auths", json::object()}}.dump());
  auto credentials = RegistryCredentials::load(authfile(temp_ / "mine.json"));
  EXPECT_EQ(credentials.find("harbor.example", "team/app"), std::nullopt);
  {
    ScopedEnv env{"REGISTRY_AUTH_FILE", (temp_ / "mine.json").string()};
    EXPECT_EQ(RegistryCredentials::load({}).find("harbor.example", "team/app"), std::nullopt);
  }
  EXPECT_NE(message_of(authfile(temp_ / "absent.json")).find("--authfile " + (temp_ / "absent.json").string() + ": no such file"),
            std::string::npos);
  ScopedEnv env{"REGISTRY_AUTH_FILE", (temp_ / "absent.json").string()};
  EXPECT_NE(message_of({}).find("$REGISTRY_AUTH_FILE"), std::string::npos);
}

TEST_F(RegistryCredentialsTest, CredsFileIsForItsRegistryOnly) {
  write_file(temp_ / "creds", "robot$site:p@ss:word\n");
  auto credentials = RegistryCredentials::load(creds_file(temp_ / "creds", "Harbor.Example:443"));
  auto login = credentials.find("harbor.example:443", "site/providers/x");
  ASSERT_TRUE(login);
  EXPECT_EQ(login->username, "robot$site");
  EXPECT_EQ(login->password, "p@ss:word");
  EXPECT_EQ(login->source, "--creds-file " + (temp_ / "creds").string());
  EXPECT_EQ(credentials.find("quay.io", "x"), std::nullopt) << "a creds file's login went to another registry";
}

TEST_F(RegistryCredentialsTest, BadFilesAreNamedWithoutTheirContent) {
  const std::string secret = "Sekr1t-do-not-print";
  struct Case {
    std::string text;
    std::string expected;
  };
  for (const auto& [text, expected] : std::vector<Case>{
           {"{\"auths\": {\"h\": {\"auth\": \"" + secret + "\"", "is not a JSON object"},
           {json{{"auths", {{"h", {{"auth", base64_encode(secret)}}}}}}.dump(), "auths[\"h\"].auth is not the base64 of user:password"},
           {json{{"auths", {{"h", {{"auth", secret + "!"}}}}}}.dump(), "auths[\"h\"].auth is not the base64 of user:password"},
           {json{{"auths", {{"h", secret}}}}.dump(), "auths[\"h\"] is not an object"},
           {json{{"auths", {{"h", {{"username", "u"}, {"password", secret + "\r\nX-Evil: 1"}}}}}}.dump(), "holds a line break"},
           {json{{"auths", secret}}.dump(), "\"auths\" is not an object"},
       }) {
    write_file(temp_ / "auth.json", text);
    auto message = message_of(authfile(temp_ / "auth.json"));
    EXPECT_NE(message.find((temp_ / "auth.json").string()), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.find(secret), std::string::npos) << message;
  }
  for (const std::string& text : {secret + "\n", ":" + secret + "\n", "u:" + secret + "\nsecond line\n"}) {
    write_file(temp_ / "creds", text);
    auto message = message_of(creds_file(temp_ / "creds", "h"));
    EXPECT_NE(message.find("--creds-file " + (temp_ / "creds").string() + ": expected one line user:password"), std::string::npos)
        << message;
    EXPECT_EQ(message.find(secret), std::string::npos) << message;
  }
}

TEST_F(RegistryCredentialsTest, ACredentialHelperIsNamedForItsRegistry) {
  write_file(temp_ / "home" / ".docker" / "config.json", json{{"credHelpers", {{"harbor.example", "ecr-login"}}}}.dump());
  auto credentials = RegistryCredentials::load({});
  EXPECT_NE(credentials.helper_note("harbor.example").find("docker-credential-ecr-login"), std::string::npos);
  EXPECT_EQ(credentials.helper_note("quay.io"), "");
}

}  // namespace
}  // namespace podplane::net
