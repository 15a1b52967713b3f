// mirror push: OpenTofu's OCI provider-mirror layout and module packages, pushed to Debian's
// docker-registry (CNCF distribution) on loopback, read back through the registry API and skopeo.
#include <gtest/gtest.h>

#include "mirror/oci.hpp"
#include "tests/serve/serve_fixture.hpp"

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

TEST_F(PushTest, BadTargetsAreUsageErrors) {
  for (const std::string target : {"https://127.0.0.1/x", "oci://", "oci://bad host/x"}) {
    podplane::test::ProcessOptions options;
    options.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
    auto result = run_podplane({"mirror", "push", target}, options);
    EXPECT_EQ(result.exit_code, 2) << target << ": " << result.err;
  }
}

}  // namespace
}  // namespace podplane::serve_test
