// Registry logins, end to end against Debian's docker-registry with htpasswd (bcrypt) auth and
// the fixture upstream as a token service that wants a login: `deps images` pulls with an auth
// file (--authfile, $REGISTRY_AUTH_FILE, ~/.docker/config.json), `mirror push` pushes with
// --creds-file, and the password shows up in no output, store file, index or bundle.
#include <gtest/gtest.h>

#include <unistd.h>

#include "base/hex.hpp"
#include "cache/store.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;
using podplane::test::write_file;

class RegistryAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* program : {"docker-registry", "skopeo", "python3", "htpasswd"})
      ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";
    login_ = {"puller", "pw-" + std::to_string(::getpid()) + "-Qz7xK"};
    registry_ = std::make_unique<DockerRegistry>(temp_ / "registry", login_);
    app_ = push_image(temp_ / "work", *registry_, "fixture/app", "1.0", {"linux/amd64", "linux/arm64"}, "app", {}, login_);
    write_file(temp_ / "images.txt", registry_->host() + "/fixture/app:1.0\n");
  }

  // A hermetic environment: no auth file of this machine's user is found.
  ProcessOptions at(const fs::path& root) const {
    ProcessOptions options = podplane::test::with_deps_root(root);
    options.env["PODPLANE_HTTP_RETRIES"] = "1";
    options.env["PODPLANE_HTTP_BACKOFF"] = "10ms";
    options.env["HOME"] = (temp_ / "home").string();
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR",
                         "DOCKER_CONFIG"};
    return options;
  }

  ProcessResult deps_images(const fs::path& root, const std::vector<std::string>& extra = {},
                            const std::map<std::string, std::string>& env = {}) {
    auto options = at(root);
    options.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_->host();
    for (const auto& [name, value] : env) options.env[name] = value;
    std::vector<std::string> args{"deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", "amd64,arm64"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_podplane(args, options);
    outputs_ += result.out + result.err;
    return result;
  }

  fs::path auth_file(const std::string& name, const json& document) {
    write_file(temp_ / name, document.dump(2));
    return temp_ / name;
  }

  // Every file under `dir` (store objects, index and its WAL, views, bundles) as raw bytes.
  bool password_anywhere_in(const fs::path& dir) {
    auto grep = run({"grep", "-r", "-a", "-l", "-F", login_.password, dir.string()});
    EXPECT_NE(grep.exit_code, 2) << grep.err;
    if (grep.exit_code == 0) ADD_FAILURE() << "the password is in: " << grep.out;
    return grep.exit_code == 0;
  }

  std::size_t stored_manifests(const fs::path& root) {
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    return store.artifacts({.kind = cache::ArtifactKind::image_manifest}).size();
  }

  TempDir temp_;
  RegistryLogin login_;
  std::unique_ptr<DockerRegistry> registry_;
  json app_;
  std::string outputs_;  // everything podplane printed in the test
};

TEST_F(RegistryAuthTest, PullWithoutALoginFailsNamingTheFlag) {
  auto fetched = deps_images(temp_ / "deps");
  ASSERT_EQ(fetched.exit_code, 1) << show(fetched);
  EXPECT_NE(fetched.err.find("the registry " + registry_->host() + " wants credentials to pull fixture/app"), std::string::npos)
      << fetched.err;
  EXPECT_NE(fetched.err.find("HTTP 401"), std::string::npos) << fetched.err;
  EXPECT_NE(fetched.err.find("--authfile FILE"), std::string::npos) << fetched.err;
  EXPECT_NE(fetched.err.find("nothing was indexed"), std::string::npos) << fetched.err;
}

TEST_F(RegistryAuthTest, PullsWithAnAuthFileFromEveryPlaceAndThePasswordIsNowhere) {
  std::string basic = base64_encode(login_.pair());
  // --authfile, containers-auth.json form (base64 user:password in "auth").
  auto authfile = auth_file("auth.json", {{"auths", {{registry_->host(), {{"auth", basic}}}}}});
  auto first = deps_images(temp_ / "deps", {"--authfile", authfile.string()});
  ASSERT_EQ(first.exit_code, 0) << show(first);
  EXPECT_EQ(stored_manifests(temp_ / "deps"), 2u);
  auto verify = run_podplane({"deps", "verify"}, at(temp_ / "deps"));
  EXPECT_EQ(verify.exit_code, 0) << show(verify);

  // $REGISTRY_AUTH_FILE with username and password fields, the most specific key winning over
  // a wrong login for the whole registry.
  auto env_file = auth_file("env-auth.json", {{"auths",
                                               {{registry_->host(), {{"username", "puller"}, {"password", "not-it"}}},
                                                {registry_->host() + "/fixture/app", {{"username", "puller"}, {"password", login_.password}}}}}});
  auto second = deps_images(temp_ / "deps-env", {}, {{"REGISTRY_AUTH_FILE", env_file.string()}});
  ASSERT_EQ(second.exit_code, 0) << show(second);
  EXPECT_EQ(stored_manifests(temp_ / "deps-env"), 2u);

  // ~/.docker/config.json with docker's legacy key form.
  auth_file("home/.docker/config.json", {{"auths", {{"http://" + registry_->host() + "/v2/", {{"auth", basic}}}}}});
  auto third = deps_images(temp_ / "deps-home");
  ASSERT_EQ(third.exit_code, 0) << show(third);
  EXPECT_EQ(stored_manifests(temp_ / "deps-home"), 2u);

  // A wrong password: the registry refuses it, the message says whose login, not the login.
  std::string wrong = "wrong-" + login_.password.substr(3);
  auto bad = auth_file("bad.json", {{"auths", {{registry_->host(), {{"auth", base64_encode("puller:" + wrong)}}}}}});
  auto refused = deps_images(temp_ / "deps-bad", {"--authfile", bad.string()});
  ASSERT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_NE(refused.err.find("refused the login from auth file " + bad.string()), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find(wrong), std::string::npos) << refused.err;

  // A broken auth file: named, with what is wrong, and nothing of its content.
  write_file(temp_ / "broken.json", "{\"auths\": {\"" + registry_->host() + "\": {\"auth\": \"" + login_.password + "\"");
  auto broken = deps_images(temp_ / "deps-broken", {"--authfile", (temp_ / "broken.json").string()});
  ASSERT_EQ(broken.exit_code, 1) << show(broken);
  EXPECT_NE(broken.err.find((temp_ / "broken.json").string()), std::string::npos) << broken.err;

  // The password in no output, store file, index (audit log included) or bundle.
  fs::create_directories(temp_ / "out");
  auto bundle = run_podplane({"bundle", "create", (temp_ / "out" / "deps.bundle").string()}, at(temp_ / "deps"));
  ASSERT_EQ(bundle.exit_code, 0) << show(bundle);
  outputs_ += bundle.out + bundle.err;
  EXPECT_EQ(outputs_.find(login_.password), std::string::npos) << "the password was printed";
  EXPECT_FALSE(password_anywhere_in(temp_ / "out"));
  for (const char* root : {"deps", "deps-env", "deps-home", "deps-bad", "deps-broken"})
    EXPECT_FALSE(password_anywhere_in(temp_ / root)) << root;
}

TEST_F(RegistryAuthTest, BearerTokenRealmGetsTheLoginAndTheRegistryOnlyTheToken) {
  // An open registry behind the fixture upstream, whose token service wants the login.
  DockerRegistry open(temp_ / "open");
  push_image(temp_ / "work-open", open, "fixture/app", "1.0", {"linux/amd64", "linux/arm64"}, "app");
  podplane::test::ServeOptions front;
  front.registry_to = open.base();
  front.registry_token = true;
  front.token_login = login_.pair();
  podplane::test::FixtureUpstream upstream({}, front);
  std::string host = upstream.base_url().substr(std::string("https://").size());
  write_file(temp_ / "images.txt", host + "/fixture/app:1.0\n");
  std::map<std::string, std::string> env{{"SSL_CERT_FILE", upstream.ca_file().string()}};

  auto anonymous = deps_images(temp_ / "deps-anon", {}, env);
  ASSERT_EQ(anonymous.exit_code, 1) << show(anonymous);
  EXPECT_NE(anonymous.err.find("wants credentials to pull fixture/app"), std::string::npos) << anonymous.err;
  EXPECT_NE(anonymous.err.find("--authfile FILE"), std::string::npos) << anonymous.err;
  EXPECT_FALSE(upstream.requests("^/token", 401).empty()) << "the token service was not asked";

  auto authfile = auth_file("auth.json", {{"auths", {{host, {{"auth", base64_encode(login_.pair())}}}}}});
  auto fetched = deps_images(temp_ / "deps", {"--authfile", authfile.string()}, env);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  EXPECT_EQ(stored_manifests(temp_ / "deps"), 2u);
  EXPECT_FALSE(upstream.requests("^/token", 200).empty()) << "no token was issued";
  EXPECT_EQ(outputs_.find(login_.password), std::string::npos);
  EXPECT_FALSE(password_anywhere_in(temp_ / "deps"));
}

// `mirror push` to a registry that wants a login, from a store of providers and modules.
class PushLoginTest : public RegistryAuthTest {
 protected:
  void SetUp() override {
    RegistryAuthTest::SetUp();
    (void)fill_store(temp_ / "store", temp_ / "fill", 4096, 64 * 1024);
    write_file(temp_ / "creds", login_.pair() + "\n");
  }

  ProcessResult push(const std::string& target, const std::vector<std::string>& extra,
                     const std::map<std::string, std::string>& env = {}) {
    auto options = at(temp_ / "store");
    for (const auto& [name, value] : env) options.env[name] = value;
    std::vector<std::string> args{"mirror", "push", target};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_podplane(args, options);
    outputs_ += result.out + result.err;
    return result;
  }
};

TEST_F(PushLoginTest, PushWithACredsFileWorksAndASecondPushUploadsNoBlob) {
  std::string target = "oci://" + registry_->host() + "/site";
  auto anonymous = push(target, {"--plain-http"});
  ASSERT_EQ(anonymous.exit_code, 1) << show(anonymous);
  EXPECT_NE(anonymous.err.find("wants credentials to push to site/"), std::string::npos) << anonymous.err;
  EXPECT_NE(anonymous.err.find("--creds-file FILE"), std::string::npos) << anonymous.err;

  auto first = push(target, {"--plain-http", "--creds-file", (temp_ / "creds").string()});
  ASSERT_EQ(first.exit_code, 0) << show(first);
  EXPECT_NE(first.out.find("uploaded 8 blobs"), std::string::npos) << first.out;
  auto second = push(target, {"--plain-http", "--creds-file", (temp_ / "creds").string()});
  ASSERT_EQ(second.exit_code, 0) << show(second);
  EXPECT_NE(second.out.find("pushed 0 manifests"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("uploaded 0 blobs (0 bytes)"), std::string::npos) << second.out;

  // What was pushed is there for a client with the login.
  auto inspect = run({"skopeo", "inspect", "--raw", "--tls-verify=false", "--creds", login_.pair(),
                      "docker://" + registry_->host() + "/site/providers/registry.opentofu.org/hashicorp/null:3.2.4"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(json::parse(inspect.out)["mediaType"], "application/vnd.oci.image.index.v1+json");

  // A creds file that is not user:password is refused by name, without its content.
  write_file(temp_ / "bad-creds", login_.password + "\n");
  auto bad = push(target, {"--plain-http", "--creds-file", (temp_ / "bad-creds").string()});
  ASSERT_EQ(bad.exit_code, 1) << show(bad);
  EXPECT_NE(bad.err.find("--creds-file " + (temp_ / "bad-creds").string() + ": expected one line user:password"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(outputs_.find(login_.password), std::string::npos) << "the password was printed";
  EXPECT_FALSE(password_anywhere_in(temp_ / "store"));
}

TEST_F(PushLoginTest, PushGetsItsTokenFromTheRealmWithTheLogin) {
  DockerRegistry open(temp_ / "open");
  podplane::test::ServeOptions front;
  front.registry_to = open.base();
  front.registry_token = true;
  front.token_login = login_.pair();
  podplane::test::FixtureUpstream upstream({}, front);
  std::string target = "oci://127.0.0.1:" + std::to_string(upstream.port()) + "/site";
  std::map<std::string, std::string> env{{"SSL_CERT_FILE", upstream.ca_file().string()}};

  auto anonymous = push(target, {}, env);
  ASSERT_EQ(anonymous.exit_code, 1) << show(anonymous);
  EXPECT_NE(anonymous.err.find("--creds-file FILE"), std::string::npos) << anonymous.err;

  auto pushed = push(target, {"--creds-file", (temp_ / "creds").string()}, env);
  ASSERT_EQ(pushed.exit_code, 0) << show(pushed);
  EXPECT_NE(pushed.out.find("uploaded 8 blobs"), std::string::npos) << pushed.out;
  EXPECT_FALSE(upstream.requests("^/token", 200).empty());
  EXPECT_EQ(outputs_.find(login_.password), std::string::npos);
}

// A registry whose upload answer sends the blob elsewhere: the fixture upstream in front of the
// htpasswd registry moves every Location to `elsewhere` (another port, or plain http).
class PushLocationTest : public PushLoginTest {
 protected:
  std::unique_ptr<podplane::test::FixtureUpstream> front(podplane::test::ServeOptions::Scheme scheme, const std::string& location_to) {
    podplane::test::ServeOptions serve;
    serve.scheme = scheme;
    serve.proxy_to = registry_->base();
    serve.location_to = location_to;
    return std::make_unique<podplane::test::FixtureUpstream>(podplane::test::FixtureOptions{}, serve);
  }
  std::unique_ptr<podplane::test::FixtureUpstream> elsewhere() {
    podplane::test::ServeOptions serve;
    serve.scheme = podplane::test::ServeOptions::Scheme::http;
    serve.proxy_to = registry_->base();
    return std::make_unique<podplane::test::FixtureUpstream>(podplane::test::FixtureOptions{}, serve);
  }
};

TEST_F(PushLocationTest, AnUploadLocationOnAnotherPortGetsNoLogin) {
  auto other = elsewhere();
  auto registry = front(podplane::test::ServeOptions::Scheme::http, other->base_url());
  std::string target = "oci://127.0.0.1:" + std::to_string(registry->port()) + "/site";
  auto pushed = push(target, {"--plain-http", "--creds-file", (temp_ / "creds").string()});
  // The other port passes the upload on to the registry without a login, which refuses it.
  ASSERT_EQ(pushed.exit_code, 1) << show(pushed);
  EXPECT_NE(pushed.err.find("HTTP 401 from outside the registry http://127.0.0.1:" + std::to_string(registry->port())),
            std::string::npos)
      << pushed.err;
  auto sent_there = other->access_log();
  ASSERT_FALSE(sent_there.empty()) << "the upload never went to the Location";
  for (const auto& entry : sent_there) EXPECT_FALSE(entry.authorization) << entry.method << " " << entry.path << " carried the login";
  bool registry_got_login = false;
  for (const auto& entry : registry->access_log()) registry_got_login = registry_got_login || entry.authorization;
  EXPECT_TRUE(registry_got_login) << "the registry itself still gets the login";
  EXPECT_EQ(outputs_.find(login_.password), std::string::npos);
}

TEST_F(PushLocationTest, AnUploadLocationThatLeavesHttpsIsRefused) {
  auto other = elsewhere();
  auto registry = front(podplane::test::ServeOptions::Scheme::https, other->base_url());
  std::string target = "oci://127.0.0.1:" + std::to_string(registry->port()) + "/site";
  auto pushed = push(target, {"--creds-file", (temp_ / "creds").string()}, {{"SSL_CERT_FILE", registry->ca_file().string()}});
  ASSERT_EQ(pushed.exit_code, 1) << show(pushed);
  EXPECT_NE(pushed.err.find("answered an upload location that leaves https (" + other->base_url() + "/v2/site/"),
            std::string::npos)
      << pushed.err;
  EXPECT_TRUE(other->access_log().empty()) << "a request went out over plain http";
  EXPECT_EQ(outputs_.find(login_.password), std::string::npos);
}

}  // namespace
}  // namespace podplane::serve_test
