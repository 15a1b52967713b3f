// What a hostile upstream registry cannot do through podplane: plant a page on the mirror's
// origin (a manifest of another media type than a manifest's), or make `deps images` take more
// bytes than a descriptor declares. The fixture upstream's static registry (www/v2/) serves
// the images the tests write there, each hostile in one way; `mirror serve` answers a manifest
// stored with another type as application/octet-stream, every answer with nosniff, and the
// catalogue with a Content-Security-Policy that lets only its own style and script run.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/digest.hpp"
#include "base/hex.hpp"
#include "cache/row_rules.hpp"
#include "cache/store.hpp"
#include "fetch/oci_registry.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::FixtureUpstream;
using podplane::test::ProcessResult;
using podplane::test::run_podplane;
using podplane::test::TempDir;
using podplane::test::write_file;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kScript = "<script>document.body.innerHTML='planted'</script>";

class HostileRegistryTest : public ::testing::Test {
 protected:
  // Every test writes its own repositories into the static registry, under a name of its own.
  void start(podplane::test::ServeOptions serve = {}) {
    upstream_ = std::make_unique<FixtureUpstream>(podplane::test::FixtureOptions{}, serve);
    host_ = upstream_->base_url().substr(std::string("https://").size());
  }

  void put(const std::string& repository, const std::string& kind, const std::string& name, const std::string& bytes,
           const std::string& content_type) {
    fs::path file = upstream_->www() / "v2" / repository / kind / name;
    write_file(file, bytes);
    write_file(file.string() + ".headers", "Content-Type: " + content_type + "\n");
  }
  std::string blob(const std::string& repository, const std::string& bytes) {
    put(repository, "blobs", digest_of(bytes), bytes, "application/octet-stream");
    return digest_of(bytes);
  }
  // A manifest under its digest and, when given, a tag; served with `content_type`.
  std::string manifest(const std::string& repository, const json& document, const std::string& tag,
                       const std::string& content_type) {
    std::string bytes = document.dump();
    put(repository, "manifests", digest_of(bytes), bytes, content_type);
    if (!tag.empty()) put(repository, "manifests", tag, bytes, content_type);
    return digest_of(bytes);
  }
  json descriptor(const std::string& media_type, const std::string& digest, std::size_t size) {
    return {{"mediaType", media_type}, {"digest", digest}, {"size", size}};
  }
  static std::string layer_bytes() { return random_bytes(4096, 7); }
  // An amd64 image manifest of `media_type` with one layer; `layer_size` is what its descriptor
  // says (the real size unless given).
  json image(const std::string& repository, const std::string& media_type, std::optional<std::size_t> layer_size = {}) {
    std::string config = json{{"architecture", "amd64"}, {"os", "linux"}, {"rootfs", {{"type", "layers"}, {"diff_ids", json::array()}}}}.dump();
    std::string layer = layer_bytes();
    return {{"schemaVersion", 2},
            {"mediaType", media_type},
            {"config", descriptor("application/vnd.oci.image.config.v1+json", blob(repository, config), config.size())},
            {"layers", json::array({descriptor("application/vnd.oci.image.layer.v1.tar", blob(repository, layer),
                                               layer_size.value_or(layer.size()))})},
            {"annotations", {{"org.opencontainers.image.description", kScript}}}};
  }

  ProcessResult deps_images(const fs::path& root, const std::vector<std::string>& references) {
    std::string list;
    for (const auto& reference : references) list += host_ + "/" + reference + "\n";
    write_file(temp_ / "images.txt", list);
    auto options = podplane::test::with_deps_root(root);
    options.env["SSL_CERT_FILE"] = upstream_->ca_file().string();
    options.env["PODPLANE_HTTP_RETRIES"] = "1";
    options.env["PODPLANE_HTTP_BACKOFF"] = "10ms";
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "PODPLANE_PLAIN_HTTP_REGISTRIES"};
    return run_podplane({"deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", "amd64"}, options);
  }

  std::size_t image_rows(const fs::path& root) {
    if (!fs::exists(root / "store" / "index.db")) return 0;
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    std::size_t rows = 0;
    for (auto kind : {cache::ArtifactKind::image_index, cache::ArtifactKind::image_manifest, cache::ArtifactKind::image_blob})
      rows += store.artifacts({.kind = kind}).size();
    return rows;
  }

  TempDir temp_;
  std::unique_ptr<FixtureUpstream> upstream_;
  std::string host_;
};

TEST_F(HostileRegistryTest, AManifestOfAnotherMediaTypeIsRefusedAtIngest) {
  start();
  // A top manifest that says text/html, and an OCI index whose platform manifest does.
  manifest("hostile/page", image("hostile/page", "text/html"), "1.0", "text/html");
  json platform = image("hostile/indexed", "text/html");
  std::string inner = manifest("hostile/indexed", platform, "", "text/html");
  json index = {{"schemaVersion", 2},
                {"mediaType", net::image_media::oci_index},
                {"manifests", json::array({{{"mediaType", net::image_media::oci_manifest},
                                            {"digest", inner},
                                            {"size", platform.dump().size()},
                                            {"platform", {{"os", "linux"}, {"architecture", "amd64"}}}}})}};
  manifest("hostile/indexed", index, "1.0", net::image_media::oci_index);

  auto fetched = deps_images(temp_ / "deps", {"hostile/page:1.0", "hostile/indexed:1.0"});
  ASSERT_EQ(fetched.exit_code, 1) << show(fetched);
  EXPECT_TRUE(contains(fetched.err, "the manifest of " + host_ + "/hostile/page:1.0 (sha256:")) << fetched.err;
  EXPECT_TRUE(contains(fetched.err, "the manifest " + inner + " of " + host_ + "/hostile/indexed:1.0")) << fetched.err;
  EXPECT_TRUE(contains(fetched.err, "has the media type \"text/html\", not an OCI or Docker image manifest or index"))
      << fetched.err;
  EXPECT_TRUE(contains(fetched.err, "nothing was indexed")) << fetched.err;
  EXPECT_EQ(image_rows(temp_ / "deps"), 0u);
}

TEST_F(HostileRegistryTest, ALayerLargerThanItsDescriptorIsStoppedThere) {
  // The layer's descriptor says 100 bytes; the server sends 32 MiB without a Content-Length.
  const std::uint64_t streamed = 32 << 20;
  const std::string layer = digest_of(layer_bytes());
  podplane::test::ServeOptions serve;
  serve.stream = {std::to_string(streamed) + ":^/v2/oversize/layer/blobs/" + layer + "$"};
  start(serve);
  json document = image("oversize/layer", net::image_media::oci_manifest, 100);
  ASSERT_EQ(document["layers"][0]["digest"], layer);
  manifest("oversize/layer", document, "1.0", net::image_media::oci_manifest);
  // The config's descriptor says 10 bytes; its Content-Length says more.
  json small_config = image("oversize/config", net::image_media::oci_manifest);
  small_config["config"]["size"] = 10;
  manifest("oversize/config", small_config, "1.0", net::image_media::oci_manifest);

  auto fetched = deps_images(temp_ / "deps", {"oversize/layer:1.0"});
  ASSERT_EQ(fetched.exit_code, 1) << show(fetched);
  EXPECT_TRUE(contains(fetched.err, host_ + "/oversize/layer@" + layer)) << fetched.err;
  EXPECT_TRUE(contains(fetched.err, "the server sends more than its declared size (stopped; nothing was kept)")) << fetched.err;
  EXPECT_TRUE(contains(fetched.err, "expected: 100 bytes\n  got:      at least ")) << fetched.err;
  EXPECT_EQ(image_rows(temp_ / "deps"), 0u);
  {
    auto store = cache::Store::open(temp_ / "deps", cache::Store::Access::read_only);
    EXPECT_FALSE(store.has_object(layer.substr(7)));
  }
  std::vector<podplane::test::AccessLogEntry> sent;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       (sent = upstream_->requests("^/v2/oversize/layer/blobs/" + layer)).empty() && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the server logs once its writes fail
  ASSERT_EQ(sent.size(), 1u) << "stopped, not retried";
  EXPECT_LT(sent[0].bytes, streamed / 2) << "the transfer went on after the declared size";

  auto config = deps_images(temp_ / "deps-config", {"oversize/config:1.0"});
  ASSERT_EQ(config.exit_code, 1) << show(config);
  EXPECT_TRUE(contains(config.err, "expected: 10 bytes\n  got:      ")) << config.err;
  EXPECT_TRUE(contains(config.err, " bytes (its Content-Length)")) << config.err;
  EXPECT_EQ(image_rows(temp_ / "deps-config"), 0u);
}

// A store that holds a manifest of another type (written by an older podplane, or carried in
// by a bundle), served by `mirror serve`.
class ServedTypesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = cache::Store::open(temp_ / "deps");
    document_ = json{{"schemaVersion", 2}, {"mediaType", "text/html"}, {"annotations", {{"x", kScript}}}, {"layers", json::array()}}.dump();
    std::string hex = store.add_bytes(document_);
    cache::Artifact row = cache::image_row(cache::ArtifactKind::image_manifest, "registry.example/hostile/page", "1.0", "linux_amd64",
                                           "sha256:" + hex, static_cast<std::int64_t>(document_.size()),
                                           "https://registry.example/v2/hostile/page/manifests/sha256:" + hex);
    (void)store.add_artifact(row);
    digest_ = row.filename;
    server_ = std::make_unique<MirrorServe>(temp_ / "deps", std::vector<std::string>{"--listen", "127.0.0.1:0", "--plain-http"},
                                            temp_ / "serve.log");
    ASSERT_TRUE(server_->started()) << server_->log();
  }

  TempDir temp_;
  std::string document_, digest_;
  std::unique_ptr<MirrorServe> server_;
  CurlSession http_;
};

TEST_F(ServedTypesTest, AManifestStoredWithAnotherTypeIsServedAsOctetStream) {
  const std::string repository = "/v2/mirror/registry.example/hostile/page/manifests/";
  for (const std::string& reference : {std::string("1.0"), digest_}) {
    auto answer = http_.fetch(server_->url() + repository + reference);
    ASSERT_EQ(answer.status, 200) << reference << " " << answer.error;
    EXPECT_EQ(answer.header("content-type"), "application/octet-stream") << reference;
    EXPECT_EQ(answer.header("x-content-type-options"), "nosniff") << reference;
    EXPECT_EQ(answer.body, document_) << "the stored bytes, unchanged";
  }
}

TEST_F(ServedTypesTest, EveryAnswerSaysNosniffAndTheCataloguePagesAllowOnlyTheirOwnScriptAndStyle) {
  for (const char* path : {"/", "/catalogue/", "/catalogue.json", "/healthz", "/no/such/file", "/v2/", "/v2/nothing/here/manifests/x"}) {
    for (const char* method : {"GET", "HEAD"}) {
      HttpRequest request;
      request.method = method;
      auto answer = http_.fetch(server_->url() + path, request);
      EXPECT_NE(answer.status, 0) << path << " " << answer.error;
      EXPECT_EQ(answer.header("x-content-type-options"), "nosniff") << method << " " << path << " (HTTP " << answer.status << ")";
    }
  }
  for (const char* path : {"/", "/catalogue/"}) {
    auto page = http_.fetch(server_->url() + path);
    ASSERT_EQ(page.status, 200) << path;
    std::string policy = page.header("content-security-policy");
    auto between = [&](const std::string& open, const std::string& close) {
      auto start = page.body.find(open);
      if (start == std::string::npos) return std::string();
      start += open.size();
      return page.body.substr(start, page.body.find(close, start) - start);
    };
    auto hash = [](const std::string& text) { return "'sha256-" + base64_encode(from_hex(sha256_hex(text))) + "'"; };
    EXPECT_TRUE(contains(policy, "default-src 'none'")) << policy;
    EXPECT_TRUE(contains(policy, "script-src " + hash(between("<script>", "</script>")))) << policy;
    EXPECT_TRUE(contains(policy, "style-src " + hash(between("<style>", "</style>")))) << policy;
    EXPECT_TRUE(contains(policy, "frame-ancestors 'none'")) << policy;
    EXPECT_FALSE(contains(policy, "unsafe")) << policy;
    EXPECT_EQ(page.body.find("<script>"), page.body.rfind("<script>")) << "one inline script, the page's own";
    EXPECT_TRUE(contains(page.body, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src " +
                                        hash(between("<script>", "</script>"))))
        << "a static export carries the policy too";
  }
}

TEST_F(ServedTypesTest, ErrorsAnswerGetAndHeadAlikeAndEveryOtherMethodGetsA405) {
  for (const char* path : {"/v2/nothing/here/manifests/x", "/v2/mirror/registry.example/hostile/page/blobs/sha256:00", "/no/such/file"}) {
    HttpRequest head;
    head.method = "HEAD";
    auto got = http_.fetch(server_->url() + path);
    auto headed = http_.fetch(server_->url() + path, head);
    EXPECT_EQ(got.status, 404) << path;
    EXPECT_EQ(headed.status, 404) << path;
    EXPECT_EQ(got.header("accept-ranges"), headed.header("accept-ranges")) << path;
    EXPECT_EQ(got.header("content-type"), headed.header("content-type")) << path;
    EXPECT_EQ(got.header("content-length"), headed.header("content-length")) << path;
  }
  // A POST without a body or a length (curl -X POST): a status, not a wait for bytes that
  // never come; with a body, the same, and the body is never read as a request.
  for (const char* path : {"/v2/", "/catalogue/"}) {
    auto bare = run({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-m", "10", "-X", "POST", server_->url() + path});
    EXPECT_EQ(bare.out, "405") << path << " " << bare.err;
    HttpRequest post;
    post.method = "POST";
    auto answer = http_.fetch(server_->url() + path, post);
    EXPECT_EQ(answer.status, 405) << path << " " << answer.error;
    EXPECT_EQ(answer.header("allow"), "GET, HEAD") << path;
    EXPECT_EQ(answer.header("x-content-type-options"), "nosniff") << path;
  }
  EXPECT_EQ(http_.fetch(server_->url() + "/healthz").status, 200) << "still serving";
}

}  // namespace
}  // namespace podplane::serve_test
