// mirror push: OpenTofu's OCI provider-mirror layout and module packages, pushed to Debian's
// docker-registry (CNCF distribution) on loopback, read back through the registry API and skopeo.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "cache/kinds.hpp"
#include "mirror/push.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

class PushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(podplane::test::have_program("docker-registry")) << "apt-get install docker-registry";
    contents_ = fill_store(temp_ / "deps", temp_ / "work", 4096, 64 * 1024);
    port_ = free_port();
    podplane::test::write_file(temp_ / "registry" / "config.yml",
                               "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: " +
                                   (temp_ / "registry" / "data").string() + "\n  delete:\n    enabled: false\nhttp:\n  addr: 127.0.0.1:" +
                                   std::to_string(port_) + "\n");
    registry_ = std::make_unique<Background>(
        std::vector<std::string>{"docker-registry", "serve", (temp_ / "registry" / "config.yml").string()},
        std::map<std::string, std::string>{}, temp_ / "registry" / "stderr.log");
    ASSERT_TRUE(wait_for_port(port_)) << read_file(temp_ / "registry" / "stderr.log");
    base_ = "http://127.0.0.1:" + std::to_string(port_);
    ASSERT_EQ(http_.fetch(base_ + "/v2/").status, 200);
  }

  // `mirror push` over HTTPS to `front` (a TLS front before the registry), with the budgets of a
  // test and the environment given; killed if it would never end.
  podplane::test::ProcessResult push_through(const podplane::test::FixtureUpstream& front, const std::string& prefix,
                                             std::map<std::string, std::string> env) {
    podplane::test::ProcessOptions options;
    options.env = std::move(env);
    options.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
    options.env["PODPLANE_HTTP_RETRIES"] = "2";
    options.env["PODPLANE_HTTP_BACKOFF"] = "10ms";
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    return run({"timeout", "-s", "KILL", "120", podplane::test::podplane_binary().string(), "mirror", "push",
                "oci://127.0.0.1:" + std::to_string(front.port()) + "/" + prefix},
               options);
  }

  podplane::test::ProcessResult push(const std::string& prefix, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"mirror", "push", "oci://127.0.0.1:" + std::to_string(port_) + "/" + prefix, "--plain-http"};
    args.insert(args.end(), extra.begin(), extra.end());
    podplane::test::ProcessOptions options;
    options.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
    return run_podplane(args, options);
  }

  json manifest(const std::string& repository, const std::string& reference) {
    HttpRequest request;
    request.headers = {std::string("Accept: ") + mirror::oci_media::index + ", " + mirror::oci_media::manifest};
    auto answer = http_.fetch(base_ + "/v2/" + repository + "/manifests/" + reference, request);
    EXPECT_EQ(answer.status, 200) << repository << ":" << reference << " " << answer.body;
    return answer.status == 200 ? json::parse(answer.body) : json();
  }

  std::string blob(const std::string& repository, const std::string& digest) {
    HttpRequest request;
    auto answer = http_.fetch(base_ + "/v2/" + repository + "/blobs/" + digest, request);
    // distribution answers blob GETs with a redirect only for remote storage; filesystem serves directly.
    EXPECT_EQ(answer.status, 200) << digest;
    return answer.body;
  }

  void check_layout(const std::string& prefix) {
    const auto& null = contents_.providers[0];
    std::string repository = prefix + "/providers/registry.opentofu.org/hashicorp/null";
    auto index = manifest(repository, "3.2.4");
    EXPECT_EQ(index["mediaType"], mirror::oci_media::index);
    EXPECT_EQ(index["artifactType"], "application/vnd.opentofu.provider");
    ASSERT_EQ(index["manifests"].size(), 2u);
    std::set<std::string> platforms;
    for (const auto& descriptor : index["manifests"]) {
      EXPECT_EQ(descriptor["artifactType"], "application/vnd.opentofu.provider-target");
      std::string platform = descriptor["platform"]["os"].get<std::string>() + "_" +
                             descriptor["platform"]["architecture"].get<std::string>();
      platforms.insert(platform);
      auto image = manifest(repository, descriptor["digest"]);
      EXPECT_EQ(image["artifactType"], "application/vnd.opentofu.provider-target");
      ASSERT_EQ(image["layers"].size(), 1u);
      EXPECT_EQ(image["layers"][0]["mediaType"], "archive/zip");
      EXPECT_EQ(image["layers"][0]["digest"], "sha256:" + null.zip_digest.at(platform));
      EXPECT_EQ(blob(repository, image["layers"][0]["digest"]), read_file(null.zip_file.at(platform)))
          << "the layer is exactly the upstream zip";
    }
    EXPECT_EQ(platforms, (std::set<std::string>{"linux_amd64", "linux_arm64"}));
    auto tags = http_.fetch(base_ + "/v2/" + repository + "/tags/list");
    auto tag_list = json::parse(tags.body)["tags"].get<std::vector<std::string>>();
    std::sort(tag_list.begin(), tag_list.end());
    EXPECT_EQ(tag_list, (std::vector<std::string>{"3.2.3", "3.2.4"}));
    manifest(prefix + "/providers/registry.terraform.io/hashicorp/random", "3.6.0");

    auto module = manifest(prefix + "/modules/registry.opentofu.org/nstance-dev/nstance/aws", "2.0.1");
    EXPECT_EQ(module["mediaType"], mirror::oci_media::manifest);
    EXPECT_EQ(module["artifactType"], "application/vnd.opentofu.modulepkg");
    ASSERT_EQ(module["layers"].size(), 1u);
    EXPECT_EQ(module["layers"][0]["mediaType"], "archive/zip");
    podplane::test::write_file(temp_ / (prefix + "-module.zip"),
                               blob(prefix + "/modules/registry.opentofu.org/nstance-dev/nstance/aws", module["layers"][0]["digest"]));
    fs::path unpacked = temp_ / (prefix + "-module");
    fs::create_directories(unpacked);
    auto unzip = run({"unzip", "-q", (temp_ / (prefix + "-module.zip")).string(), "-d", unpacked.string()});
    ASSERT_EQ(unzip.exit_code, 0) << unzip.err;
    auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
    EXPECT_EQ(lockfile::h1_hash_of_dir(unpacked), store.find_module_tree(contents_.module_address, "2.0.1")->h1);
  }

  TempDir temp_;
  StoreContents contents_;
  int port_ = 0;
  std::unique_ptr<Background> registry_;
  std::string base_;
  CurlSession http_;
};

TEST_F(PushTest, PushesOpenTofuLayoutAndSecondPushUploadsNoBlobs) {
  auto first = push("podplane");
  ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
  // 3 provider zips + 1 empty config per provider repository (2) + module zip and config.
  EXPECT_NE(first.out.find("uploaded 8 blobs"), std::string::npos) << first.out;
  check_layout("podplane");

  auto skopeo = run({"skopeo", "inspect", "--tls-verify=false", "--raw",
                     "docker://127.0.0.1:" + std::to_string(port_) + "/podplane/providers/registry.opentofu.org/hashicorp/null:3.2.4"});
  ASSERT_EQ(skopeo.exit_code, 0) << skopeo.err;
  EXPECT_EQ(json::parse(skopeo.out), manifest("podplane/providers/registry.opentofu.org/hashicorp/null", "3.2.4"));

  auto second = push("podplane");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("pushed 0 manifests"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("uploaded 0 blobs (0 bytes)"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("skipped 9 blobs"), std::string::npos) << second.out;
}

TEST_F(PushTest, ChunkedUploadsArriveIntact) {
  auto pushed = push("chunked", {"--chunk-size", "1024"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err << pushed.out;
  check_layout("chunked");
}

TEST_F(PushTest, HonoursSslCertFileAndRetriesTransient503sOverTls) {
  // The fixture server as a TLS front before the registry: the first request of every upload
  // and manifest path gets a 503 and never reaches the registry.
  podplane::test::ServeOptions serve;
  serve.proxy_to = base_;
  serve.fail_first = {"1:/blobs/uploads/:503", "1:/manifests/:503"};
  podplane::test::FixtureUpstream front({}, serve);

  // The front's CA is trusted only through SSL_CERT_FILE (no --ca-file).
  auto untrusted = push_through(front, "tls", {{"SSL_CERT_FILE", "/dev/null"}});
  EXPECT_EQ(untrusted.exit_code, 1) << untrusted.err << untrusted.out;
  EXPECT_TRUE(front.requests("/v2/").empty()) << "a request got through an untrusted certificate";

  auto pushed = push_through(front, "tls", {{"SSL_CERT_FILE", front.ca_file().string()}});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err << pushed.out;
  EXPECT_NE(pushed.out.find("uploaded 8 blobs"), std::string::npos) << pushed.out;
  check_layout("tls");

  // Every path that got a 503 was retried and then answered by the registry.
  auto failed = front.requests("/v2/", 503);
  EXPECT_GE(failed.size(), 10u);
  for (const auto& failure : failed) {
    bool retried = false;
    for (const auto& later : front.requests("/v2/")) {
      retried = retried || (later.path == failure.path && later.start > failure.start && later.status < 300);
    }
    EXPECT_TRUE(retried) << failure.method << " " << failure.path << " was not retried to success";
  }
}

TEST_F(PushTest, GivesUpOnARegistryThatAnswers503Forever) {
  podplane::test::ServeOptions serve;
  serve.proxy_to = base_;
  serve.fail_first = {"1000000:/manifests/:503"};
  podplane::test::FixtureUpstream front({}, serve);
  auto pushed = push_through(front, "down", {{"SSL_CERT_FILE", front.ca_file().string()}});
  EXPECT_EQ(pushed.exit_code, 1) << pushed.err << pushed.out;
  EXPECT_NE(pushed.err.find("HTTP 503"), std::string::npos) << pushed.err;
  EXPECT_NE(pushed.err.find(front.base_url() + "/v2/down/"), std::string::npos) << pushed.err;
  // The first manifest request and its two retries; then the push stops.
  auto manifests = front.requests("/manifests/");
  ASSERT_FALSE(manifests.empty());
  EXPECT_EQ(manifests.size(), 3u);
  for (const auto& entry : manifests) EXPECT_EQ(entry.path, manifests.front().path);
}

TEST_F(PushTest, BadTargetsAreUsageErrors) {
  for (const std::string target : {"https://127.0.0.1/x", "oci://", "oci://bad host/x"}) {
    podplane::test::ProcessOptions options;
    options.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
    auto result = run_podplane({"mirror", "push", target}, options);
    EXPECT_EQ(result.exit_code, 2) << target << ": " << result.err;
  }
}

// An OCI registry is no place for git repositories: their rows are Pushed::none, and push says
// so on stderr (even with --quiet) with the commands that hand them to a site git server. Run
// as printed, with DIR and SITE_GIT set, they give a server whose clone has the stored commit.
TEST(PushGitRepositories, PushNamesThoseItLeavesOutAndItsCommandsHandThemToASiteGitServer) {
  for (const char* program : {"docker-registry", "git", "bash"})
    ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";
  TempDir dir;
  const fs::path root = dir / "deps";
  const test::EveryKind every = [&] {
    auto store = cache::Store::open(root);
    return test::add_every_kind(store, dir / "work");
  }();
  std::optional<cache::Artifact> refs;
  for (const auto& kind : cache::kinds())
    if (kind.kind == cache::ArtifactKind::git_refs && every.has(kind)) refs = every.of(kind);
  ASSERT_TRUE(refs) << "the every-kind store holds a git repository";
  const std::string repository = refs->address;  // host/org/repo, as served at /git/
  const std::string commit = refs->filename.substr(0, refs->filename.find('.'));

  DockerRegistry registry(dir / "registry");
  podplane::test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = root.string();
  auto pushed = run_podplane({"--quiet", "mirror", "push", "oci://" + registry.host() + "/site", "--plain-http"}, options);
  ASSERT_EQ(pushed.exit_code, 0) << pushed.out << pushed.err;
  EXPECT_NE(pushed.err.find("podplane: 1 git repository was not pushed: an OCI registry is no place for git repositories."),
            std::string::npos)
      << pushed.err;
  EXPECT_NE(pushed.err.find("docs/ci.md \"Git sources\""), std::string::npos) << pushed.err;
  // The commands: the note's indented lines.
  std::string commands;
  std::istringstream lines(pushed.err);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  ", 0) == 0) commands += line.substr(2) + "\n";
  EXPECT_EQ(commands, "podplane mirror export \"$DIR\"\ngit -C \"$DIR/git/" + repository + ".git\" push --mirror \"$SITE_GIT/" +
                          repository + ".git\"\n");

  // The site git server: an empty bare repository for each, reached by file://.
  const fs::path server = dir / "site-git";
  ASSERT_EQ(run({"git", "init", "-q", "--bare", (server / (repository + ".git")).string()}).exit_code, 0);
  podplane::test::ProcessOptions shell = options;
  shell.env["PATH"] = podplane::test::podplane_binary().parent_path().string() + ":" + std::getenv("PATH");
  shell.env["DIR"] = (dir / "export").string();
  shell.env["SITE_GIT"] = "file://" + server.string();
  shell.env["HOME"] = (dir / "home").string();
  shell.env["GIT_CONFIG_NOSYSTEM"] = "1";
  auto handed = run({"bash", "-e", "-c", commands}, shell);
  ASSERT_EQ(handed.exit_code, 0) << handed.out << handed.err << "\n" << commands;

  auto cloned = run({"git", "clone", "-q", "file://" + (server / (repository + ".git")).string(), (dir / "clone").string()});
  ASSERT_EQ(cloned.exit_code, 0) << cloned.err;
  auto tagged = run({"git", "-C", (dir / "clone").string(), "rev-parse", refs->version + "^{commit}"});
  EXPECT_EQ(tagged.out.substr(0, tagged.out.find('\n')), commit) << tagged.err;
  EXPECT_EQ(run({"git", "-C", (dir / "clone").string(), "fsck", "--strict"}).exit_code, 0);
}

}  // namespace
}  // namespace podplane::serve_test
