// Container images end to end, with real components on loopback: Debian's docker-registry as the
// upstream (filled by skopeo from OCI layouts the test writes: multi-arch, shared layers), the
// fixture upstream in front of it (TLS trusted through SSL_CERT_FILE, Bearer token auth, the
// vmconfig manifests that pin the images), `podplane deps download|images`, `mirror serve`, and
// skopeo pulling every image by its mirror name.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "cache/store.hpp"
#include "base/digest.hpp"
#include "fetch/oci_registry.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::FixtureOptions;
using podplane::test::FixtureUpstream;
using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

class ImagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* program : {"docker-registry", "skopeo", "python3"})
      ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";
    registry_ = std::make_unique<DockerRegistry>(temp_ / "registry");
    image_host_ = registry_->host();
    // Two images sharing their base layer; pause has a third platform nobody downloads.
    pause_ = push_image(temp_ / "work", *registry_, "fixture/pause", "3.10.2", {"linux/amd64", "linux/arm64", "linux/arm/v7"}, "pause");
    app_ = push_image(temp_ / "work", *registry_, "fixture/app", "1.0", {"linux/amd64", "linux/arm64"}, "app");
  }

  ProcessOptions at(const fs::path& root) const {
    ProcessOptions options = podplane::test::with_deps_root(root);
    options.env["PODPLANE_HTTP_RETRIES"] = "1";
    options.env["PODPLANE_HTTP_BACKOFF"] = "10ms";
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    return options;
  }

  // An image list naming both images, fetched straight from the registry (plain http).
  ProcessResult deps_images(const fs::path& root, const std::string& archs = "amd64,arm64") {
    podplane::test::write_file(temp_ / "images.txt", "# application images\n" + registry_->host() +
                                                         "/fixture/pause:3.10.2\n\n" + registry_->host() + "/fixture/app:1.0  # the app\n");
    auto options = at(root);
    options.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_->host();
    return run_podplane({"deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", archs}, options);
  }

  // `mirror serve` over TLS with a test certificate; skopeo trusts it through a cert dir.
  std::unique_ptr<MirrorServe> serve(const fs::path& root) {
    fs::create_directories(temp_ / "tls");
    if (!fs::exists(temp_ / "tls" / "cert.pem")) test::write_test_tls(temp_ / "tls");
    fs::create_directories(temp_ / "certs.d");
    fs::copy_file(temp_ / "tls" / "cert.pem", temp_ / "certs.d" / "ca.crt", fs::copy_options::overwrite_existing);
    return std::make_unique<MirrorServe>(root, std::vector<std::string>{"--listen", "127.0.0.1:0", "--tls-cert", (temp_ / "tls" / "cert.pem").string(),
                                                                        "--tls-key", (temp_ / "tls" / "key.pem").string()},
                                         temp_ / "serve.log");
  }

  std::string mirror_name(const std::string& serve_url, const std::string& image) const {
    return "docker://" + serve_url.substr(serve_url.find("://") + 3) + "/" + net::mirror_repository(image_host_ + "/" + image);
  }

  // skopeo copy of one platform through the mirror into an OCI layout; returns the manifest digest it got.
  std::string pull(const std::string& reference, const std::string& arch, const std::string& variant = "") {
    fs::path out = temp_ / ("pulled-" + std::to_string(++pulls_));
    std::vector<std::string> argv{"skopeo", "copy", "--quiet", "--preserve-digests", "--src-cert-dir", (temp_ / "certs.d").string(),
                                  "--override-os", "linux", "--override-arch", arch};
    if (!variant.empty()) argv.insert(argv.end(), {"--override-variant", variant});
    argv.insert(argv.end(), {reference, "oci:" + out.string() + ":x"});
    last_pull_ = run(argv);
    if (last_pull_.exit_code != 0) return "";
    auto raw = run({"skopeo", "inspect", "--raw", "oci:" + out.string() + ":x"});
    return raw.exit_code == 0 ? digest_of(raw.out) : "";
  }

  void expect_pulls(const std::string& url) {
    for (const auto& [image, summary] : {std::pair{"fixture/pause:3.10.2", pause_}, std::pair{"fixture/app:1.0", app_}}) {
      auto raw = run({"skopeo", "inspect", "--raw", "--cert-dir", (temp_ / "certs.d").string(), mirror_name(url, image)});
      ASSERT_EQ(raw.exit_code, 0) << raw.err;
      EXPECT_EQ(digest_of(raw.out), summary["index"]) << image << ": the mirror serves the upstream index byte for byte";
      for (const char* arch : {"amd64", "arm64"}) {
        EXPECT_EQ(pull(mirror_name(url, image), arch), summary["manifests"]["linux/" + std::string(arch)]["digest"])
            << image << " " << arch << ": " << last_pull_.err;
      }
    }
  }

  TempDir temp_;
  std::unique_ptr<DockerRegistry> registry_;
  json pause_, app_;
  std::string image_host_;  // the registry host the images were fetched from (their store address)
  int pulls_ = 0;
  ProcessResult last_pull_;
};

TEST_F(ImagesTest, DepsDownloadFetchesPinnedImagesThroughTokenAuthAndSkopeoPullsThemFromServe) {
  // The vmconfig manifests pin both images (per arch, with their index) at the fixture upstream,
  // which forwards /v2/ to the registry and wants a Bearer token first.
  json images = json::array();
  for (const auto& [name, summary] : {std::pair{"fixture/pause:3.10.2", pause_}, std::pair{"fixture/app:1.0", app_}}) {
    for (const char* arch : {"amd64", "arm64"}) {
      const auto& manifest = summary["manifests"]["linux/" + std::string(arch)];
      images.push_back({{"image", std::string("{{HOST}}/") + name},
                        {"digest", manifest["digest"]},
                        {"size", manifest["size"]},
                        {"platform", "linux/" + std::string(arch)},
                        {"index", summary["index"]}});
    }
  }
  podplane::test::write_file(temp_ / "images.json", images.dump());
  FixtureOptions fixture;
  fixture.sharing = FixtureOptions::Sharing::private_copy;
  podplane::test::ServeOptions front;
  front.registry_to = registry_->base();
  front.registry_token = true;
  FixtureUpstream upstream(fixture, front);
  upstream.rebuild({"--images", (temp_ / "images.json").string()});
  image_host_ = upstream.base_url().substr(std::string("https://").size());

  fs::path root = temp_ / "deps";
  auto options = at(root);
  for (const auto& [name, value] : upstream.env(root, upstream.write_cli_config(temp_ / "cli.tfrc"))) options.env[name] = value;
  auto download = run_podplane({"deps", "download", "--arch", "amd64,arm64", "--kind", "knc"}, options);
  ASSERT_EQ(download.exit_code, 0) << show(download);
  EXPECT_NE(download.out.find("and 4 container images"), std::string::npos) << download.out;
  EXPECT_FALSE(upstream.requests("^/token$", 200).empty()) << "no token was asked for";
  EXPECT_FALSE(upstream.requests("^/v2/", 401).empty()) << "the registry never challenged";
  // The base layer both images share crossed the network once.
  std::string shared = pause_["blobs"][0];
  EXPECT_EQ(upstream.requests("/blobs/" + shared + "$", 200).size(), 1u);
  // Nothing of the platform nobody asked for was fetched.
  EXPECT_TRUE(upstream.requests(pause_["manifests"]["linux/arm/v7"]["digest"].get<std::string>()).empty());

  auto verify = run_podplane({"deps", "verify"}, at(root));
  EXPECT_EQ(verify.exit_code, 0) << show(verify);
  auto again = run_podplane({"deps", "download", "--arch", "amd64,arm64", "--kind", "knc", "--dry-run"}, options);
  ASSERT_EQ(again.exit_code, 0) << show(again);
  EXPECT_EQ(again.out.find("Container images that would be downloaded"), std::string::npos) << again.out;

  auto served = serve(root);
  auto& server = *served;
  ASSERT_TRUE(server.started()) << server.log();
  expect_pulls(server.url());

  // The read API as clients see it.
  CurlSession http;
  HttpRequest get;
  get.ca_file = temp_ / "tls" / "cert.pem";
  auto base = http.fetch(server.url() + "/v2/", get);
  EXPECT_EQ(base.status, 200);
  EXPECT_EQ(base.header("docker-distribution-api-version"), "registry/2.0");
  std::string repo = server.url() + "/v2/" + net::mirror_repository(image_host_ + "/fixture/pause");
  HttpRequest head = get;
  head.method = "HEAD";
  auto tag = http.fetch(repo + "/manifests/3.10.2", head);
  EXPECT_EQ(tag.status, 200);
  EXPECT_EQ(tag.header("docker-content-digest"), pause_["index"]);
  EXPECT_EQ(tag.header("content-type"), "application/vnd.oci.image.index.v1+json");
  EXPECT_EQ(tag.header("content-length"), std::to_string(pause_["index_size"].get<int>()));
  HttpRequest range = get;
  range.headers = {"Range: bytes=10-19"};
  auto part = http.fetch(repo + "/blobs/" + shared, range);
  EXPECT_EQ(part.status, 206);
  EXPECT_EQ(part.header("docker-content-digest"), shared);
  EXPECT_EQ(part.body, read_file(registry_->blob_file(shared)).substr(10, 10));

  // The platform nobody downloaded: a clear 404 that says so, and skopeo fails on it.
  std::string v7 = pause_["manifests"]["linux/arm/v7"]["digest"];
  auto missing = http.fetch(repo + "/manifests/" + v7, get);
  EXPECT_EQ(missing.status, 404);
  auto errors = json::parse(missing.body, nullptr, false);
  ASSERT_TRUE(errors.is_object()) << missing.body;
  EXPECT_EQ(errors["errors"][0]["code"], "MANIFEST_UNKNOWN");
  EXPECT_NE(errors["errors"][0]["message"].get<std::string>().find("deps download"), std::string::npos);
  EXPECT_EQ(pull(mirror_name(server.url(), "fixture/pause:3.10.2"), "arm", "v7"), "");
  EXPECT_NE(last_pull_.err.find("manifest unknown"), std::string::npos) << last_pull_.err;
  // Another repository's blob is not reachable under this name.
  std::string app_own = app_["blobs"][1];
  EXPECT_EQ(http.fetch(repo + "/blobs/" + app_own, get).status, 404);
}

TEST_F(ImagesTest, TamperedUpstreamBlobIsRefusedAtFetchAndNeverStored) {
  std::string victim = pause_["blobs"][1];  // the amd64 layer of pause
  {
    fs::path file = registry_->blob_file(victim);
    std::string bytes = read_file(file);
    ASSERT_FALSE(bytes.empty());
    bytes[bytes.size() / 2] ^= 0x55;
    podplane::test::write_file(file, bytes);  // same length, other bytes: only the digest tells
  }
  fs::path root = temp_ / "deps";
  auto fetched = deps_images(root);
  ASSERT_EQ(fetched.exit_code, 1) << show(fetched);
  EXPECT_NE(fetched.err.find(victim.substr(7)), std::string::npos) << fetched.err;
  EXPECT_NE(fetched.err.find("nothing was indexed"), std::string::npos) << fetched.err;
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  EXPECT_FALSE(store.has_object(victim.substr(7)));
  EXPECT_FALSE(fs::exists(store.object_path(victim.substr(7)))) << "the tampered bytes reached the object store";
  for (auto kind : {cache::ArtifactKind::image_index, cache::ArtifactKind::image_manifest, cache::ArtifactKind::image_blob})
    EXPECT_TRUE(store.artifacts({.kind = kind}).empty()) << "a row of a failed fetch was indexed";
}

TEST_F(ImagesTest, SignedBundleCarriesImagesToAnOfflineStoreThatServesThePull) {
  fs::path online = temp_ / "online";
  auto fetched = deps_images(online);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  EXPECT_NE(fetched.out.find("Stored 2 images"), std::string::npos) << fetched.out;

  auto keygen = run_podplane({"bundle", "keygen", (temp_ / "site").string()}, at(online));
  ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
  std::string bundle = (temp_ / "images.bundle").string();
  auto create = run_podplane({"bundle", "create", bundle, "--sign", (temp_ / "site.key").string()}, at(online));
  ASSERT_EQ(create.exit_code, 0) << show(create);

  fs::path offline = temp_ / "offline";
  auto options = at(offline);
  for (const char* name : {"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"}) options.env[name] = "http://127.0.0.1:9";
  std::vector<std::string> import{podplane::test::podplane_binary().string(), "bundle", "import", bundle, "--trust",
                                  (temp_ / "site.pub").string()};
  if (run({"unshare", "-rn", "true"}).exit_code == 0) {
    import.insert(import.begin(), {"unshare", "-rn"});
  } else {
    std::cout << "[  NOTE    ] unshare -rn refused by this kernel; importing with proxies pointed at a closed port instead\n";
  }
  auto imported = run(import, options);
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  auto verify = run_podplane({"deps", "verify"}, at(offline));
  EXPECT_EQ(verify.exit_code, 0) << show(verify);

  auto server = serve(offline);
  ASSERT_TRUE(server->started()) << server->log();
  expect_pulls(server->url());
}

TEST_F(ImagesTest, ExportWritesOciLayoutsAndPushIsIdempotent) {
  fs::path root = temp_ / "deps";
  auto fetched = deps_images(root, "all");
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);

  auto exported = run_podplane({"mirror", "export", (temp_ / "export").string()}, at(root));
  ASSERT_EQ(exported.exit_code, 0) << show(exported);
  fs::path layout = temp_ / "export" / "registry" / net::mirror_repository(registry_->host() + "/fixture/pause");
  auto raw = run({"skopeo", "inspect", "--raw", "oci:" + layout.string() + ":3.10.2"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_EQ(digest_of(raw.out), pause_["index"]);
  EXPECT_EQ(pull("oci:" + layout.string() + ":3.10.2", "arm", "v7"), pause_["manifests"]["linux/arm/v7"]["digest"]) << last_pull_.err;
  EXPECT_FALSE(fs::exists(temp_ / "export" / "v2")) << "the registry API is not a static tree";

  auto push = [&] {
    return run_podplane({"mirror", "push", "oci://" + registry_->host() + "/site", "--plain-http"}, at(root));
  };
  auto first = push();
  ASSERT_EQ(first.exit_code, 0) << show(first);
  std::string pushed = "docker://" + registry_->host() + "/site/" + net::mirror_repository(registry_->host() + "/fixture/pause") + ":3.10.2";
  auto inspect = run({"skopeo", "inspect", "--raw", "--tls-verify=false", pushed});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(digest_of(inspect.out), pause_["index"]);
  EXPECT_NE(first.out.find("mounted"), std::string::npos) << "the shared base layer should be mounted, not uploaded twice: " << first.out;
  auto second = push();
  ASSERT_EQ(second.exit_code, 0) << show(second);
  EXPECT_NE(second.out.find("uploaded 0 blobs (0 bytes)"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("pushed 0 manifests"), std::string::npos) << second.out;
}

TEST_F(ImagesTest, APushOfAnIndexFetchedForSomePlatformsNamesWhatIsMissingAndTheFixThatWorks) {
  // pause's index lists linux/arm/v7 too, which a fill for amd64,arm64 does not take; the
  // registry (CNCF distribution, as Harbor) refuses an index whose manifests it does not have.
  fs::path root = temp_ / "deps";
  auto fetched = deps_images(root, "amd64,arm64");
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  auto push = [&] { return run_podplane({"mirror", "push", "oci://" + registry_->host() + "/site", "--plain-http"}, at(root)); };
  auto refused = push();
  ASSERT_EQ(refused.exit_code, 1) << show(refused);
  const std::string arm_v7 = pause_["manifests"]["linux/arm/v7"]["digest"];
  EXPECT_NE(refused.err.find("it lacks linux/arm/v7 " + arm_v7 + ")"), std::string::npos) << refused.err;
  const std::string fix = "echo " + registry_->host() + "/fixture/pause:3.10.2 | podplane deps images -f - --arch all";
  ASSERT_NE(refused.err.find(fix), std::string::npos) << refused.err;

  // The command as printed (podplane on PATH) takes the missing platform, and the push lands.
  fs::create_directories(temp_ / "bin");
  fs::create_symlink(podplane::test::podplane_binary(), temp_ / "bin" / "podplane");
  auto options = at(root);
  options.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_->host();
  options.env["PATH"] = (temp_ / "bin").string() + ":" + std::getenv("PATH");
  auto fixed = run({"bash", "-c", fix}, options);
  ASSERT_EQ(fixed.exit_code, 0) << show(fixed);
  auto pushed = push();
  ASSERT_EQ(pushed.exit_code, 0) << show(pushed);
  auto inspect = run({"skopeo", "inspect", "--raw", "--tls-verify=false",
                      "docker://" + registry_->host() + "/site/" + net::mirror_repository(registry_->host() + "/fixture/pause") + ":3.10.2"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(digest_of(inspect.out), pause_["index"]);
}

}  // namespace
}  // namespace podplane::serve_test
