// OCI artifacts that are not runnable images (Helm charts, Flux artifacts, OCI 1.1 artifacts
// with an artifactType) and the referrers of an image (manifests whose subject names it), end
// to end with real components on loopback: Debian's docker-registry as the upstream (filled by
// skopeo from OCI layouts tests/tools/images/make_artifact.py writes), `podplane deps images`,
// bundles, `mirror serve`, and skopeo pulling each artifact back by its mirror name.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "cache/store.hpp"
#include "base/digest.hpp"
#include "fetch/oci_registry.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/catalogue_page.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

// An artifact written as an OCI layout by make_artifact.py and copied into the registry by
// skopeo (digests preserved; skopeo copies a single artifact manifest as it is). `summary` is
// make_artifact.py's JSON.
// With `subject` (a digest and its size), the artifact is a referrer of that manifest.
json push_artifact(const fs::path& work, const DockerRegistry& registry, const std::string& name, const std::string& tag,
                   const std::string& kind, const std::string& subject = "", std::int64_t subject_size = 0) {
  fs::path layout = work / ("artifact-" + kind + "-" + tag);
  std::vector<std::string> argv{"python3", (podplane::test::source_dir() / "tests/tools/images/make_artifact.py").string(),
                                layout.string(), "--tag", tag, "--kind", kind};
  if (!subject.empty()) argv.insert(argv.end(), {"--subject", subject, "--subject-size", std::to_string(subject_size)});
  auto made = run(argv);
  must(made, "make_artifact.py");
  must(run({"skopeo", "copy", "--quiet", "--preserve-digests", "--dest-tls-verify=false", "oci:" + layout.string() + ":" + tag,
            "docker://" + registry.host() + "/" + name + ":" + tag}),
       "skopeo copy into the registry");
  return json::parse(made.out);
}

class OciArtifactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* program : {"docker-registry", "skopeo", "python3"})
      ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";
    registry_ = std::make_unique<DockerRegistry>(temp_ / "registry");
    chart_ = push_artifact(temp_ / "work", *registry_, "charts/webapp", "0.1.0", "helm");
    flux_ = push_artifact(temp_ / "work", *registry_, "flux/deploy", "v1", "flux");
    sbom_ = push_artifact(temp_ / "work", *registry_, "tools/sbom", "1.0", "generic");
  }

  ProcessOptions at(const fs::path& root) const {
    ProcessOptions options = podplane::test::with_deps_root(root);
    options.env["PODPLANE_HTTP_RETRIES"] = "1";
    options.env["PODPLANE_HTTP_BACKOFF"] = "10ms";
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    return options;
  }

  // The three artifacts, listed as images are; --arch does not filter what has no platform.
  ProcessResult deps_images(const fs::path& root) {
    podplane::test::write_file(temp_ / "artifacts.txt", registry_->host() + "/charts/webapp:0.1.0\n" + registry_->host() +
                                                            "/flux/deploy:v1\n" + registry_->host() + "/tools/sbom:1.0\n");
    auto options = at(root);
    options.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_->host();
    return run_podplane({"deps", "images", "-f", (temp_ / "artifacts.txt").string(), "--arch", "arm64"}, options);
  }

  std::unique_ptr<MirrorServe> serve(const fs::path& root) {
    fs::create_directories(temp_ / "tls");
    if (!fs::exists(temp_ / "tls" / "cert.pem")) test::write_test_tls(temp_ / "tls");
    fs::create_directories(temp_ / "certs.d");
    fs::copy_file(temp_ / "tls" / "cert.pem", temp_ / "certs.d" / "ca.crt", fs::copy_options::overwrite_existing);
    return std::make_unique<MirrorServe>(root, std::vector<std::string>{"--listen", "127.0.0.1:0", "--tls-cert", (temp_ / "tls" / "cert.pem").string(),
                                                                        "--tls-key", (temp_ / "tls" / "key.pem").string()},
                                         temp_ / ("serve-" + root.filename().string() + ".log"));
  }

  // skopeo copy of `name:tag` through the mirror into an OCI layout: the manifest it got and
  // every blob of it, compared with what was pushed upstream.
  void expect_pull(const std::string& serve_url, const std::string& name, const std::string& tag, const json& summary) {
    std::string reference = "docker://" + serve_url.substr(serve_url.find("://") + 3) + "/" +
                            net::mirror_repository(registry_->host() + "/" + name) + ":" + tag;
    fs::path out = temp_ / ("pulled-" + std::to_string(++pulls_));
    auto copied = run({"skopeo", "copy", "--quiet", "--preserve-digests", "--src-cert-dir", (temp_ / "certs.d").string(), reference,
                       "oci:" + out.string() + ":x"});
    ASSERT_EQ(copied.exit_code, 0) << name << ": " << copied.err;
    auto raw = run({"skopeo", "inspect", "--raw", "oci:" + out.string() + ":x"});
    ASSERT_EQ(raw.exit_code, 0) << raw.err;
    EXPECT_EQ(digest_of(raw.out), summary["digest"]) << name << ": the mirror serves the upstream manifest byte for byte";
    for (const auto& blob : summary["blobs"]) {
      std::string digest = blob;
      fs::path file = out / "blobs" / "sha256" / digest.substr(7);
      ASSERT_TRUE(fs::exists(file)) << name << ": skopeo did not bring " << digest;
      EXPECT_EQ(digest_of(read_file(file)), digest);
      EXPECT_EQ(read_file(file), read_file(registry_->blob_file(digest))) << name << ": " << digest;
    }
  }

  void expect_pulls(const std::string& serve_url) {
    expect_pull(serve_url, "charts/webapp", "0.1.0", chart_);
    expect_pull(serve_url, "flux/deploy", "v1", flux_);
    expect_pull(serve_url, "tools/sbom", "1.0", sbom_);
  }

  // What a client of a registry without the referrers API does after pushing `referrers`
  // (push_artifact summaries): the tag schema's index at sha256-<hex of subject> listing them.
  void put_referrers_tag_index(const std::string& subject, const std::vector<json>& referrers) {
    json tag_index{{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"}, {"manifests", json::array()}};
    for (const auto& referrer : referrers)
      tag_index["manifests"].push_back({{"mediaType", referrer["media_type"]},
                                        {"digest", referrer["digest"]},
                                        {"size", referrer["size"]},
                                        {"artifactType", referrer["artifact_type"]}});
    podplane::test::write_file(temp_ / "tag-index.json", tag_index.dump());
    must(run({"curl", "-sSf", "-X", "PUT", "-H", "Content-Type: application/vnd.oci.image.index.v1+json", "--data-binary",
              "@" + (temp_ / "tag-index.json").string(),
              registry_->base() + "/v2/fixture/app/manifests/sha256-" + subject.substr(7)}),
         "curl PUT of the referrers tag index");
  }

  // GET of a referrers path through the mirror: the answer and its index.
  std::pair<HttpAnswer, json> referrers(const std::string& serve_url, const std::string& name, const std::string& digest,
                                        const std::string& query = "") {
    CurlSession http;
    HttpRequest get;
    get.ca_file = temp_ / "tls" / "cert.pem";
    auto answer = http.fetch(serve_url + "/v2/" + net::mirror_repository(registry_->host() + "/" + name) + "/referrers/" +
                                 digest + query,
                             get);
    return {answer, json::parse(answer.body, nullptr, false)};
  }

  TempDir temp_;
  std::unique_ptr<DockerRegistry> registry_;
  json chart_, flux_, sbom_;
  int pulls_ = 0;
};

TEST_F(OciArtifactsTest, HelmFluxAndOciArtifactsAreStoredWithoutAPlatformAndSkopeoPullsThemFromServe) {
  fs::path root = temp_ / "deps";
  auto fetched = deps_images(root);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  EXPECT_NE(fetched.out.find("Stored 3 images"), std::string::npos) << fetched.out;
  {
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    for (const auto& [name, summary] : {std::pair{"charts/webapp", chart_}, std::pair{"flux/deploy", flux_}, std::pair{"tools/sbom", sbom_}}) {
      std::string address = registry_->host() + "/" + name;
      auto manifests = store.artifacts({.kind = cache::ArtifactKind::image_manifest, .address = address});
      ASSERT_EQ(manifests.size(), 1u) << name;
      EXPECT_EQ(manifests[0].filename, summary["digest"]);
      EXPECT_EQ(manifests[0].platform, "unknown_unknown") << name << ": an artifact runs on no platform";
      auto blobs = store.artifacts({.kind = cache::ArtifactKind::image_blob, .address = address});
      EXPECT_EQ(blobs.size(), 2u) << name << ": its config and its one layer";
      for (const auto& blob : blobs) EXPECT_TRUE(store.has_object(blob.digest)) << blob.filename;
    }
  }
  auto verify = run_podplane({"deps", "verify"}, at(root));
  EXPECT_EQ(verify.exit_code, 0) << show(verify);

  auto server = serve(root);
  ASSERT_TRUE(server->started()) << server->log();
  expect_pulls(server->url());

  // The served manifest keeps an OCI manifest's Content-Type, whatever its config or artifactType.
  CurlSession http;
  HttpRequest head;
  head.method = "HEAD";
  head.ca_file = temp_ / "tls" / "cert.pem";
  auto tag = http.fetch(server->url() + "/v2/" + net::mirror_repository(registry_->host() + "/charts/webapp") + "/manifests/0.1.0", head);
  EXPECT_EQ(tag.status, 200);
  EXPECT_EQ(tag.header("content-type"), "application/vnd.oci.image.manifest.v1+json");
  EXPECT_EQ(tag.header("docker-content-digest"), chart_["digest"]);

  // A stored manifest without referrers, and a digest the mirror never saw: an empty index.
  for (const std::string& digest : {chart_["digest"].get<std::string>(), "sha256:" + std::string(64, 'e')}) {
    auto [answer, index] = referrers(server->url(), "charts/webapp", digest);
    EXPECT_EQ(answer.status, 200) << digest << ": " << answer.body;
    EXPECT_EQ(answer.header("content-type"), "application/vnd.oci.image.index.v1+json");
    EXPECT_EQ(index["mediaType"], "application/vnd.oci.image.index.v1+json");
    EXPECT_EQ(index["manifests"], json::array()) << digest;
  }
}

TEST_F(OciArtifactsTest, SignedBundleCarriesArtifactsToAnotherStoreThatServesThePull) {
  fs::path online = temp_ / "online";
  auto fetched = deps_images(online);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  auto keygen = run_podplane({"bundle", "keygen", (temp_ / "site").string()}, at(online));
  ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
  std::string bundle = (temp_ / "artifacts.bundle").string();
  auto create = run_podplane({"bundle", "create", bundle, "--sign", (temp_ / "site.key").string()}, at(online));
  ASSERT_EQ(create.exit_code, 0) << show(create);

  fs::path offline = temp_ / "offline";
  auto imported = run_podplane({"bundle", "import", bundle, "--trust", (temp_ / "site.pub").string()}, at(offline));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  auto verify = run_podplane({"deps", "verify"}, at(offline));
  EXPECT_EQ(verify.exit_code, 0) << show(verify);

  auto server = serve(offline);
  ASSERT_TRUE(server->started()) << server->log();
  expect_pulls(server->url());
}

// The Accept header of helm's manifest request (helm 3.13 and later pull with oras-go v2, whose
// default it is): helm then reads the answer's Content-Type to know it got an OCI manifest.
constexpr const char* kHelmManifestAccept =
    "application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, "
    "application/vnd.oci.artifact.manifest.v1+json";

// The catalogue's `helm pull` line for the stored chart, run as printed (but for the CA path,
// the test's) with the upstream registry stopped. Helm itself runs it where it is on PATH;
// always, the requests helm makes for it are replayed through the very host, repository, tag and
// CA the line names: the manifest with helm's Accept header, then a real OCI client (skopeo)
// taking the manifest and the chart layer by its digest. The layer must be the stored bytes,
// with Helm's media type.
TEST_F(OciArtifactsTest, TheCataloguesHelmPullLineFetchesTheStoredChartFromServeAlone) {
  fs::path root = temp_ / "deps";
  auto fetched = deps_images(root);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  const std::string upstream = registry_->host();
  registry_.reset();  // only the mirror answers from here on
  const std::string layer_digest = chart_["blobs"][1];
  const std::string stored_layer =
      cache::Store::open(root, cache::Store::Access::read_only).read_object(layer_digest.substr(7));

  auto server = serve(root);
  ASSERT_TRUE(server->started()) << server->log();
  CurlSession http;
  HttpRequest get;
  get.ca_file = temp_ / "tls" / "cert.pem";
  auto page = http.fetch(server->url() + "/", get);
  ASSERT_EQ(page.status, 200) << page.error;
  // One line, for the chart alone: the Flux artifact and the SBOM are no charts.
  const std::string mirror_host = server->url().substr(server->url().find("://") + 3);
  const std::string repository = net::mirror_repository(upstream + "/charts/webapp");
  const std::string snippet = podplane::test::catalogue_snippet(page.body, "Helm");
  ASSERT_EQ(snippet, "helm pull oci://" + mirror_host + "/" + repository + " --version 0.1.0 --ca-file " +
                         podplane::test::kCatalogueCaFile + "\n")
      << podplane::test::copied_text(page.body);
  const std::string line = podplane::test::with_ca_file(snippet, (temp_ / "tls" / "cert.pem").string());

  // What the line tells helm: oci://HOST/REPOSITORY, the version (its tag, '+' written '_'), the CA.
  std::vector<std::string> words;
  std::istringstream split(line);
  for (std::string word; split >> word;) words.push_back(word);
  ASSERT_EQ(words.size(), 7u) << line;
  ASSERT_EQ(words[2].rfind("oci://", 0), 0u) << line;
  const std::string reference = words[2].substr(6);
  const std::string host = reference.substr(0, reference.find('/'));
  const std::string path = reference.substr(reference.find('/') + 1);
  ASSERT_EQ(words[3], "--version");
  std::string tag = words[4];
  std::replace(tag.begin(), tag.end(), '+', '_');
  ASSERT_EQ(words[5], "--ca-file");
  const fs::path ca_file = words[6];

  // helm's manifest request: an OCI manifest with Helm's config and its chart layer.
  HttpRequest manifest_request;
  manifest_request.ca_file = ca_file;
  manifest_request.headers = {std::string("Accept: ") + kHelmManifestAccept};
  auto manifest = http.fetch("https://" + host + "/v2/" + path + "/manifests/" + tag, manifest_request);
  ASSERT_EQ(manifest.status, 200) << manifest.body;
  EXPECT_EQ(manifest.header("content-type"), "application/vnd.oci.image.manifest.v1+json");
  EXPECT_EQ(manifest.header("docker-content-digest"), chart_["digest"]);
  auto document = json::parse(manifest.body, nullptr, false);
  ASSERT_TRUE(document.is_object()) << manifest.body;
  EXPECT_EQ(document["config"]["mediaType"], "application/vnd.cncf.helm.config.v1+json");
  ASSERT_EQ(document["layers"].size(), 1u);
  EXPECT_EQ(document["layers"][0]["mediaType"], "application/vnd.cncf.helm.chart.content.v1.tar+gzip");
  EXPECT_EQ(document["layers"][0]["digest"], layer_digest);

  // skopeo through the same host, repository and tag, trusting the line's CA alone.
  fs::create_directories(temp_ / "helm-certs");
  fs::copy_file(ca_file, temp_ / "helm-certs" / "ca.crt");
  const fs::path out = temp_ / "helm-replay";
  auto copied = run({"skopeo", "copy", "--quiet", "--preserve-digests", "--src-cert-dir", (temp_ / "helm-certs").string(),
                     "docker://" + host + "/" + path + ":" + tag, "oci:" + out.string() + ":x"});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  auto raw = run({"skopeo", "inspect", "--raw", "oci:" + out.string() + ":x"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_EQ(digest_of(raw.out), chart_["digest"]) << "skopeo got the stored manifest";
  auto pulled = json::parse(raw.out, nullptr, false);
  ASSERT_TRUE(pulled.is_object()) << raw.out;
  ASSERT_EQ(pulled["layers"].size(), 1u) << raw.out;
  EXPECT_EQ(pulled["layers"][0]["mediaType"], "application/vnd.cncf.helm.chart.content.v1.tar+gzip");
  EXPECT_EQ(pulled["layers"][0]["digest"], layer_digest);
  EXPECT_EQ(read_file(out / "blobs" / "sha256" / layer_digest.substr(7)), stored_layer) << "the chart layer is the stored bytes";
  const std::string log = server->log();
  EXPECT_NE(log.find("GET /v2/" + path + "/manifests/" + tag + " "), std::string::npos) << log;
  EXPECT_NE(log.find("GET /v2/" + path + "/blobs/" + layer_digest + " "), std::string::npos) << log;

  if (!podplane::test::have_program("helm"))
    GTEST_SKIP() << "helm is not on PATH (Debian 12 packages no helm): helm itself did not run the line; the requests it "
                    "makes for it were replayed above";
  const fs::path work = temp_ / "helm-pull";
  fs::create_directories(work);
  podplane::test::ProcessOptions helm;
  helm.cwd = work;
  helm.env = {{"HOME", work.string()}, {"HELM_CACHE_HOME", (work / "cache").string()},
              {"HELM_CONFIG_HOME", (work / "config").string()}, {"HELM_DATA_HOME", (work / "data").string()}};
  helm.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR"};
  auto helm_pulled = run({"bash", "-e", "-c", line}, helm);
  ASSERT_EQ(helm_pulled.exit_code, 0) << helm_pulled.out << helm_pulled.err << "\n" << line;
  EXPECT_EQ(read_file(work / "webapp-0.1.0.tgz"), stored_layer) << "helm wrote the stored chart";
}

// The registry here (distribution 2.8) has no referrers API: clients keep the referrers tag
// schema's index at sha256-<hex of the subject>, which deps images falls back to.
TEST_F(OciArtifactsTest, ReferrersOfAnImageAreStoredCarriedInABundleAndServedWithArtifactTypeFilter) {
  auto image = push_image(temp_ / "work", *registry_, "fixture/app", "1.0", {"linux/amd64", "linux/arm64"}, "app");
  std::string subject = image["index"];
  auto sbom = push_artifact(temp_ / "work", *registry_, "fixture/app", "sbom", "generic", subject, image["index_size"]);
  auto bundle_of_manifests = push_artifact(temp_ / "work", *registry_, "fixture/app", "deploy", "flux", subject, image["index_size"]);
  put_referrers_tag_index(subject, {sbom, bundle_of_manifests});

  fs::path online = temp_ / "online";
  podplane::test::write_file(temp_ / "images.txt", registry_->host() + "/fixture/app:1.0\n");
  auto options = at(online);
  options.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_->host();
  auto fetched = run_podplane({"deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", "amd64"}, options);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  {
    auto store = cache::Store::open(online, cache::Store::Access::read_only);
    std::string address = registry_->host() + "/fixture/app";
    auto attachments = store.artifacts({.kind = cache::ArtifactKind::image_attachment, .address = address});
    ASSERT_EQ(attachments.size(), 2u);
    std::set<std::string> stored;
    for (const auto& row : attachments) {
      EXPECT_EQ(row.version, subject) << "a referrer is stored under its subject";
      stored.insert(row.filename);
      auto blobs = store.artifacts({.kind = cache::ArtifactKind::image_blob, .address = address, .version = row.filename});
      EXPECT_EQ(blobs.size(), 2u) << row.filename;
      for (const auto& blob : blobs) EXPECT_TRUE(store.has_object(blob.digest));
    }
    EXPECT_EQ(stored, (std::set<std::string>{sbom["digest"], bundle_of_manifests["digest"]}));
  }

  auto keygen = run_podplane({"bundle", "keygen", (temp_ / "site").string()}, at(online));
  ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
  std::string bundle = (temp_ / "referrers.bundle").string();
  auto create = run_podplane({"bundle", "create", bundle, "--sign", (temp_ / "site.key").string()}, at(online));
  ASSERT_EQ(create.exit_code, 0) << show(create);
  fs::path offline = temp_ / "offline";
  auto imported = run_podplane({"bundle", "import", bundle, "--trust", (temp_ / "site.pub").string()}, at(offline));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  auto verify = run_podplane({"deps", "verify"}, at(offline));
  EXPECT_EQ(verify.exit_code, 0) << show(verify);

  for (const auto& root : {online, offline}) {
    auto server = serve(root);
    ASSERT_TRUE(server->started()) << server->log();
    auto [answer, index] = referrers(server->url(), "fixture/app", subject);
    ASSERT_EQ(answer.status, 200) << root << ": " << answer.body;
    EXPECT_EQ(answer.header("content-type"), "application/vnd.oci.image.index.v1+json");
    EXPECT_EQ(answer.header("oci-filters-applied"), "");
    ASSERT_TRUE(index.is_object()) << answer.body;
    EXPECT_EQ(index["mediaType"], "application/vnd.oci.image.index.v1+json");
    ASSERT_EQ(index["manifests"].size(), 2u) << answer.body;
    std::set<std::string> types;
    for (const auto& descriptor : index["manifests"]) {
      types.insert(descriptor["artifactType"].get<std::string>());
      EXPECT_EQ(descriptor["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    }
    EXPECT_EQ(types, (std::set<std::string>{"application/vnd.example.sbom.v1+json", "application/vnd.cncf.flux.config.v1+json"}));

    auto [filtered, only_sbom] = referrers(server->url(), "fixture/app", subject, "?artifactType=application/vnd.example.sbom.v1%2Bjson");
    ASSERT_EQ(filtered.status, 200) << filtered.body;
    EXPECT_EQ(filtered.header("oci-filters-applied"), "artifactType");
    ASSERT_EQ(only_sbom["manifests"].size(), 1u) << filtered.body;
    EXPECT_EQ(only_sbom["manifests"][0]["digest"], sbom["digest"]);
    EXPECT_EQ(only_sbom["manifests"][0]["size"], sbom["size"]);

    // The platform manifest has no referrers of its own; the referrer is served by its digest.
    auto [none, empty] = referrers(server->url(), "fixture/app", image["manifests"]["linux/amd64"]["digest"]);
    EXPECT_EQ(none.status, 200);
    EXPECT_EQ(empty["manifests"], json::array());
    std::string reference = "docker://" + server->url().substr(server->url().find("://") + 3) + "/" +
                            net::mirror_repository(registry_->host() + "/fixture/app") + "@" + sbom["digest"].get<std::string>();
    auto raw = run({"skopeo", "inspect", "--raw", "--cert-dir", (temp_ / "certs.d").string(), reference});
    ASSERT_EQ(raw.exit_code, 0) << raw.err;
    EXPECT_EQ(digest_of(raw.out), sbom["digest"]);

    if (root != online) continue;
    // mirror serve implements the referrers API, which the registry above lacks, and has no
    // tag at sha256-<hex>: a fill from the mirror can only find the referrers through the API.
    CurlSession http;
    HttpRequest get;
    get.ca_file = temp_ / "tls" / "cert.pem";
    auto tag = http.fetch(server->url() + "/v2/" + net::mirror_repository(registry_->host() + "/fixture/app") +
                              "/manifests/sha256-" + subject.substr(7),
                          get);
    EXPECT_EQ(tag.status, 404) << "the mirror serves no referrers tag index";
    const std::string mirrored = server->url().substr(server->url().find("://") + 3) + "/" +
                                 net::mirror_repository(registry_->host() + "/fixture/app");
    podplane::test::write_file(temp_ / "from-mirror.txt", mirrored + ":1.0\n");
    fs::path downstream = temp_ / "downstream";
    auto from_mirror = at(downstream);
    from_mirror.env["SSL_CERT_FILE"] = (temp_ / "tls" / "cert.pem").string();
    auto again = run_podplane({"deps", "images", "-f", (temp_ / "from-mirror.txt").string(), "--arch", "amd64"}, from_mirror);
    ASSERT_EQ(again.exit_code, 0) << show(again);
    auto store = cache::Store::open(downstream, cache::Store::Access::read_only);
    std::set<std::string> through_api;
    for (const auto& row : store.artifacts({.kind = cache::ArtifactKind::image_attachment, .address = mirrored})) {
      EXPECT_EQ(row.version, subject);
      through_api.insert(row.filename);
    }
    EXPECT_EQ(through_api, (std::set<std::string>{sbom["digest"], bundle_of_manifests["digest"]}));
    EXPECT_NE(server->log().find("/referrers/" + subject), std::string::npos) << server->log();
  }
}

// mirror push to a registry without the referrers API (distribution 2.8) writes the tag
// schema's index at sha256-<hex of the subject>, so that a client of that registry, which has
// only the tag to go by, finds the image's referrers there.
TEST_F(OciArtifactsTest, PushWritesTheReferrersTagIndexWhereTheRegistryHasNoReferrersApi) {
  auto image = push_image(temp_ / "work", *registry_, "fixture/app", "1.0", {"linux/amd64"}, "app");
  std::string subject = image["index"];
  auto sbom = push_artifact(temp_ / "work", *registry_, "fixture/app", "sbom", "generic", subject, image["index_size"]);
  put_referrers_tag_index(subject, {sbom});
  fs::path online = temp_ / "online";
  podplane::test::write_file(temp_ / "images.txt", registry_->host() + "/fixture/app:1.0\n");
  auto options = at(online);
  options.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_->host();
  auto fetched = run_podplane({"deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", "amd64"}, options);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);

  const std::string pushed_repository = "site/" + net::mirror_repository(registry_->host() + "/fixture/app");
  CurlSession http;
  HttpRequest get;
  get.headers = {"Accept: application/vnd.oci.image.index.v1+json"};
  const std::string tag_url = registry_->base() + "/v2/" + pushed_repository + "/manifests/sha256-" + subject.substr(7);
  std::string first;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "first push" : "second push");
    auto pushed = run_podplane({"mirror", "push", "oci://" + registry_->host() + "/site", "--plain-http"}, at(online));
    ASSERT_EQ(pushed.exit_code, 0) << show(pushed);
    auto answer = http.fetch(tag_url, get);
    ASSERT_EQ(answer.status, 200) << answer.body;
    auto index = json::parse(answer.body, nullptr, false);
    ASSERT_TRUE(index.is_object()) << answer.body;
    ASSERT_EQ(index["manifests"].size(), 1u) << answer.body;
    EXPECT_EQ(index["manifests"][0]["digest"], sbom["digest"]);
    EXPECT_EQ(index["manifests"][0]["artifactType"], sbom["artifact_type"]);
    if (round == 0) first = answer.body;
    else EXPECT_EQ(answer.body, first) << "a second push changed the tag index";
  }

  // A client of the pushed-to registry finds the referrer through the tag.
  fs::path downstream = temp_ / "downstream";
  podplane::test::write_file(temp_ / "pushed.txt", registry_->host() + "/" + pushed_repository + ":1.0\n");
  auto from_push = at(downstream);
  from_push.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_->host();
  auto again = run_podplane({"deps", "images", "-f", (temp_ / "pushed.txt").string(), "--arch", "amd64"}, from_push);
  ASSERT_EQ(again.exit_code, 0) << show(again);
  auto store = cache::Store::open(downstream, cache::Store::Access::read_only);
  auto attachments = store.artifacts({.kind = cache::ArtifactKind::image_attachment});
  ASSERT_EQ(attachments.size(), 1u);
  EXPECT_EQ(attachments[0].version, subject);
  EXPECT_EQ(attachments[0].filename, sbom["digest"]);
}

}  // namespace
}  // namespace podplane::serve_test
