// Cosign key-based signatures end to end, with real components on loopback: Debian's
// docker-registry filled by skopeo, images signed with a key the test makes (openssl) by
// tests/tools/images/cosign_sign.py as cosign lays a signature out, `podplane deps images
// --cosign-key`, bundles, `mirror serve|export|push`, and skopeo fetching the signature through
// the mirror with use-sigstore-attachments. Debian's skopeo fetches sigstore attachments but
// does not verify them, so the test checks what it fetched as containers/image does: the
// payload type, the digest the payload names, and the ECDSA signature with the key (openssl).
#include <algorithm>

#include <gtest/gtest.h>

#include "base/digest.hpp"
#include "base/hex.hpp"
#include "cache/store.hpp"
#include "fetch/oci_registry.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;

std::string signature_tag(const std::string& digest) { return "sha256-" + digest.substr(7) + ".sig"; }

class SignedImagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* program : {"docker-registry", "skopeo", "python3", "openssl"})
      ASSERT_TRUE(podplane::test::have_program(program)) << program << " is needed (scripts/setup installs it)";
    registry_ = std::make_unique<DockerRegistry>(temp_ / "registry");
    app_ = push_image(temp_ / "work", *registry_, "fixture/app", "1.0", {"linux/amd64", "linux/arm64"}, "app");
    site_pub_ = make_key("site");
    other_pub_ = make_key("other");
    // skopeo fetches sigstore attachments only when told to, per registry or by default.
    podplane::test::write_file(temp_ / "registries.d" / "default.yaml", "default-docker:\n  use-sigstore-attachments: true\n");
  }

  // An ECDSA P-256 key pair as cosign makes one: <name>.pem (private), <name>.pub (cosign.pub).
  fs::path make_key(const std::string& name) {
    fs::path key = temp_ / (name + ".pem"), pub = temp_ / (name + ".pub");
    must(run({"openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", key.string()}), "openssl ecparam");
    must(run({"openssl", "ec", "-in", key.string(), "-pubout", "-out", pub.string()}), "openssl ec -pubout");
    return pub;
  }

  // "sha256:<hex of the DER public key>": the fingerprint podplane records.
  std::string fingerprint(const fs::path& pub) {
    auto der = run({"openssl", "pkey", "-pubin", "-in", pub.string(), "-outform", "DER"});
    must(der, "openssl pkey -outform DER");
    return "sha256:" + sha256_hex(der.out);
  }

  // Signs `digest` in the registry's `name` with `key` (the payload naming `claim`, when given).
  void sign(const std::string& name, const std::string& digest, const std::string& key, const std::string& claim = "") {
    fs::path layout = temp_ / "work" / ("sig-" + std::to_string(++signatures_));
    std::vector<std::string> argv{"python3", (podplane::test::source_dir() / "tests/tools/images/cosign_sign.py").string(),
                                  layout.string(), "--key", (temp_ / (key + ".pem")).string(), "--digest", digest,
                                  "--reference", registry_->host() + "/" + name};
    if (!claim.empty()) argv.insert(argv.end(), {"--claim", claim});
    auto made = run(argv);
    must(made, "cosign_sign.py");
    std::string tag = json::parse(made.out)["tag"];
    must(run({"skopeo", "copy", "--quiet", "--preserve-digests", "--dest-tls-verify=false", "oci:" + layout.string() + ":" + tag,
              "docker://" + registry_->host() + "/" + name + ":" + tag}),
         "skopeo copy of the signature into the registry");
  }

  // What cosign attaches beside the signature, unsigned: an attestation ("att", at
  // sha256-<hex>.att) or an SBOM ("sbom"). Returns cosign_sign.py's summary (tag, manifest,
  // payload, media_type).
  json attach(const std::string& name, const std::string& digest, const std::string& kind) {
    fs::path layout = temp_ / "work" / ("attach-" + std::to_string(++signatures_));
    auto made = run({"python3", (podplane::test::source_dir() / "tests/tools/images/cosign_sign.py").string(), layout.string(),
                     "--attach", kind, "--digest", digest, "--reference", registry_->host() + "/" + name});
    must(made, "cosign_sign.py --attach");
    auto summary = json::parse(made.out);
    std::string tag = summary["tag"];
    must(run({"skopeo", "copy", "--quiet", "--preserve-digests", "--dest-tls-verify=false", "oci:" + layout.string() + ":" + tag,
              "docker://" + registry_->host() + "/" + name + ":" + tag}),
         "skopeo copy of the attachment into the registry");
    return summary;
  }

  ProcessOptions at(const fs::path& root) const {
    ProcessOptions options = podplane::test::with_deps_root(root);
    options.env["PODPLANE_HTTP_RETRIES"] = "1";
    options.env["PODPLANE_HTTP_BACKOFF"] = "10ms";
    options.env["PODPLANE_PLAIN_HTTP_REGISTRIES"] = registry_->host();
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    return options;
  }

  ProcessResult deps_images(const fs::path& root, const std::vector<std::string>& images, const std::vector<fs::path>& keys) {
    std::string list;
    for (const auto& image : images) list += registry_->host() + "/" + image + "\n";
    podplane::test::write_file(temp_ / "images.txt", list);
    std::vector<std::string> argv{"deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", "amd64,arm64"};
    for (const auto& key : keys) argv.insert(argv.end(), {"--cosign-key", key.string()});
    return run_podplane(argv, at(root));
  }

  std::unique_ptr<MirrorServe> serve(const fs::path& root) {
    fs::create_directories(temp_ / "tls");
    if (!fs::exists(temp_ / "tls" / "cert.pem")) test::write_test_tls(temp_ / "tls");
    fs::create_directories(temp_ / "certs.d");
    fs::copy_file(temp_ / "tls" / "cert.pem", temp_ / "certs.d" / "ca.crt", fs::copy_options::overwrite_existing);
    return std::make_unique<MirrorServe>(root, std::vector<std::string>{"--listen", "127.0.0.1:0", "--tls-cert", (temp_ / "tls" / "cert.pem").string(),
                                                                        "--tls-key", (temp_ / "tls" / "key.pem").string()},
                                         temp_ / "serve.log");
  }

  // skopeo copy --all of `source` with sigstore attachments into a dir: layout, then the checks
  // containers/image makes of the signature it brought: its type, the digest its payload names
  // and the ECDSA signature by `pub`.
  void expect_skopeo_fetches_valid_signature(const std::string& source, const std::vector<std::string>& flags,
                                             const std::string& digest, const fs::path& pub) {
    fs::path out = temp_ / ("fetched-" + std::to_string(++fetches_));
    std::vector<std::string> argv{"skopeo", "--registries.d", (temp_ / "registries.d").string(), "copy", "--quiet", "--all",
                                  "--preserve-digests"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {source, "dir:" + out.string()});
    auto copied = run(argv);
    ASSERT_EQ(copied.exit_code, 0) << copied.err;
    ASSERT_TRUE(fs::exists(out / "signature-1")) << source << ": skopeo brought no signature";
    // containers/image stores a sigstore signature as "\0sigstore-json\n" + {mimeType, payload, annotations}.
    std::string file = read_file(out / "signature-1");
    const std::string prefix = std::string(1, '\0') + "sigstore-json\n";
    ASSERT_EQ(file.substr(0, prefix.size()), prefix) << "not a sigstore signature";
    auto signature = json::parse(file.substr(prefix.size()), nullptr, false);
    ASSERT_TRUE(signature.is_object()) << file;
    EXPECT_EQ(signature["mimeType"], "application/vnd.dev.cosign.simplesigning.v1+json");
    auto payload = base64_decode(signature["payload"].get<std::string>());
    ASSERT_TRUE(payload);
    auto claim = json::parse(*payload, nullptr, false);
    EXPECT_EQ(claim["critical"]["image"]["docker-manifest-digest"], digest) << *payload;
    EXPECT_EQ(claim["critical"]["type"], "cosign container image signature");
    auto der = base64_decode(signature["annotations"]["dev.cosignproject.cosign/signature"].get<std::string>());
    ASSERT_TRUE(der);
    podplane::test::write_file(out / "payload", *payload);
    podplane::test::write_file(out / "payload.sig", *der);
    auto verified = run({"openssl", "dgst", "-sha256", "-verify", pub.string(), "-signature", (out / "payload.sig").string(),
                         (out / "payload").string()});
    EXPECT_EQ(verified.exit_code, 0) << "the signature skopeo fetched does not verify with " << pub << ": " << verified.out << verified.err;
  }

  std::string mirror_name(const std::string& serve_url, const std::string& image) const {
    return "docker://" + serve_url.substr(serve_url.find("://") + 3) + "/" + net::mirror_repository(registry_->host() + "/" + image);
  }

  // The signature rows of the app image, and that its provenance names `pub`.
  void expect_signature_stored(const fs::path& root, const fs::path& pub) {
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    std::string address = registry_->host() + "/fixture/app";
    auto attachments = store.artifacts({.kind = cache::ArtifactKind::image_attachment, .address = address});
    ASSERT_EQ(attachments.size(), 1u);
    EXPECT_EQ(attachments[0].version, signature_tag(app_["index"]));
    EXPECT_TRUE(store.has_object(attachments[0].digest));
    auto payloads = store.artifacts({.kind = cache::ArtifactKind::image_blob, .address = address, .version = attachments[0].filename});
    EXPECT_EQ(payloads.size(), 2u) << "the signature's config and its payload";
    auto provenance = store.provenance_of(attachments[0].id);
    ASSERT_EQ(provenance.size(), 1u);
    EXPECT_EQ(provenance[0].key_fingerprint, fingerprint(pub));
    EXPECT_EQ(provenance[0].signature_digest, attachments[0].digest);
  }

  TempDir temp_;
  std::unique_ptr<DockerRegistry> registry_;
  json app_;
  fs::path site_pub_, other_pub_;
  int signatures_ = 0;
  int fetches_ = 0;
};

TEST_F(SignedImagesTest, TheFixtureSignatureIsOneSkopeoFetchesAndVerifies) {
  sign("fixture/app", app_["index"], "site");
  expect_skopeo_fetches_valid_signature("docker://" + registry_->host() + "/fixture/app:1.0", {"--src-tls-verify=false"},
                                        app_["index"], site_pub_);
}

TEST_F(SignedImagesTest, ASignedImageIsStoredWithItsSignatureAndServedWhereSkopeoFindsIt) {
  sign("fixture/app", app_["index"], "site");
  fs::path root = temp_ / "deps";
  auto fetched = deps_images(root, {"fixture/app:1.0"}, {other_pub_, site_pub_});
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  EXPECT_NE(fetched.out.find("Verified the cosign signatures of 1 images"), std::string::npos) << fetched.out;
  expect_signature_stored(root, site_pub_);
  auto verify = run_podplane({"deps", "verify"}, at(root));
  EXPECT_EQ(verify.exit_code, 0) << show(verify);

  auto server = serve(root);
  ASSERT_TRUE(server->started()) << server->log();
  expect_skopeo_fetches_valid_signature(mirror_name(server->url(), "fixture/app:1.0"),
                                        {"--src-cert-dir", (temp_ / "certs.d").string()}, app_["index"], site_pub_);
  // The signature is listed among the image's tags, as cosign's tools expect.
  auto tags = run({"skopeo", "list-tags", "--cert-dir", (temp_ / "certs.d").string(), mirror_name(server->url(), "fixture/app")});
  ASSERT_EQ(tags.exit_code, 0) << tags.err;
  EXPECT_NE(tags.out.find(signature_tag(app_["index"])), std::string::npos) << tags.out;
}

TEST_F(SignedImagesTest, UnsignedOtherKeyAndForgedPayloadAreRefusedWithNothingIndexed) {
  auto other = push_image(temp_ / "work", *registry_, "fixture/other-key", "1.0", {"linux/amd64", "linux/arm64"}, "other-key");
  auto forged = push_image(temp_ / "work", *registry_, "fixture/forged", "1.0", {"linux/amd64", "linux/arm64"}, "forged");
  auto unsigned_image = push_image(temp_ / "work", *registry_, "fixture/unsigned", "1.0", {"linux/amd64", "linux/arm64"}, "unsigned");
  sign("fixture/app", app_["index"], "site");
  sign("fixture/other-key", other["index"], "other");
  // Signed by the right key, but the payload names the app: a signature moved to another image.
  sign("fixture/forged", forged["index"], "site", app_["index"]);

  struct Case {
    std::string image;
    std::string index;
    std::string reason;
  };
  for (const auto& [image, index, reason] : {Case{"fixture/unsigned:1.0", unsigned_image["index"], "no cosign signature"},
                                             Case{"fixture/other-key:1.0", other["index"], "none of the keys given"},
                                             Case{"fixture/forged:1.0", forged["index"], "names another image"}}) {
    SCOPED_TRACE(image);
    fs::path root = temp_ / ("deps-" + image.substr(8, image.find(':') - 8));
    // With the signed app in the same list: a run indexes all or nothing.
    auto fetched = deps_images(root, {"fixture/app:1.0", image}, {site_pub_});
    ASSERT_EQ(fetched.exit_code, 1) << show(fetched);
    EXPECT_NE(fetched.err.find(registry_->host() + "/" + image), std::string::npos) << fetched.err;
    EXPECT_NE(fetched.err.find(reason), std::string::npos) << fetched.err;
    EXPECT_NE(fetched.err.find("nothing was indexed"), std::string::npos) << fetched.err;
    std::string error = fetched.err.substr(fetched.err.find("podplane: error:"));
    EXPECT_EQ(error.find("fixture/app:1.0"), std::string::npos) << "the signed image is not to blame: " << error;
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    EXPECT_TRUE(store.artifacts().empty()) << "a row of a refused run was indexed";
    EXPECT_FALSE(store.has_object(index.substr(7))) << "the refused image's index was stored";
  }

  // Without a key: today's behaviour, the unsigned image is stored (and no signature with it).
  fs::path root = temp_ / "deps-unchecked";
  auto fetched = deps_images(root, {"fixture/unsigned:1.0"}, {});
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  EXPECT_TRUE(store.artifacts({.kind = cache::ArtifactKind::image_attachment}).empty());

  // A policy: signatures by the site key everywhere but for the one repository it exempts.
  podplane::test::write_file(temp_ / "policy.json", json{{"default", {{"keys", {"site.pub"}}}},
                                                         {"images", {{registry_->host() + "/fixture/unsigned", "unsigned"}}}}
                                                        .dump());
  podplane::test::write_file(temp_ / "images.txt", registry_->host() + "/fixture/app:1.0\n" + registry_->host() + "/fixture/unsigned:1.0\n");
  fs::path by_policy = temp_ / "deps-policy";
  auto allowed = run_podplane({"deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", "amd64", "--cosign-policy",
                               (temp_ / "policy.json").string()},
                              at(by_policy));
  ASSERT_EQ(allowed.exit_code, 0) << show(allowed);
  {
    auto policy_store = cache::Store::open(by_policy, cache::Store::Access::read_only);
    auto attachments = policy_store.artifacts({.kind = cache::ArtifactKind::image_attachment});
    ASSERT_EQ(attachments.size(), 1u);
    EXPECT_EQ(attachments[0].address, registry_->host() + "/fixture/app");
  }
  podplane::test::write_file(temp_ / "images.txt", registry_->host() + "/fixture/forged:1.0\n");
  auto covered = run_podplane({"deps", "images", "-f", (temp_ / "images.txt").string(), "--arch", "amd64", "--cosign-policy",
                               (temp_ / "policy.json").string()},
                              at(temp_ / "deps-policy-forged"));
  EXPECT_EQ(covered.exit_code, 1) << "the default covers every other repository: " << show(covered);
  auto both = run_podplane({"deps", "images", "-f", (temp_ / "images.txt").string(), "--cosign-key", site_pub_.string(),
                            "--cosign-policy", (temp_ / "policy.json").string()},
                           at(temp_ / "deps-both"));
  EXPECT_EQ(both.exit_code, 2) << show(both);

  // A key file that is not an ECDSA P-256 public key is an error before anything is fetched.
  podplane::test::write_file(temp_ / "not-a-key.pub", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
  auto bad = deps_images(temp_ / "deps-bad-key", {"fixture/app:1.0"}, {temp_ / "not-a-key.pub"});
  EXPECT_EQ(bad.exit_code, 1) << show(bad);
  EXPECT_NE(bad.err.find("not-a-key.pub"), std::string::npos) << bad.err;
}

TEST_F(SignedImagesTest, DepsDownloadVerifiesThePinnedImagesAndRefusesAnUnsignedOne) {
  // The vmconfig manifests pin the signed app per arch, with its index, at the fixture upstream,
  // which forwards /v2/ to the registry.
  sign("fixture/app", app_["index"], "site");
  auto unsigned_image = push_image(temp_ / "work", *registry_, "fixture/unsigned", "1.0", {"linux/amd64", "linux/arm64"}, "unsigned");
  auto pins = [&](const std::vector<std::pair<std::string, json>>& pinned) {
    json images = json::array();
    for (const auto& [name, summary] : pinned)
      for (const char* arch : {"amd64", "arm64"}) {
        const auto& manifest = summary["manifests"]["linux/" + std::string(arch)];
        images.push_back({{"image", "{{HOST}}/" + name},
                          {"digest", manifest["digest"]},
                          {"size", manifest["size"]},
                          {"platform", "linux/" + std::string(arch)},
                          {"index", summary["index"]}});
      }
    podplane::test::write_file(temp_ / "images.json", images.dump());
    return std::vector<std::string>{"--images", (temp_ / "images.json").string()};
  };
  podplane::test::FixtureOptions fixture;
  fixture.sharing = podplane::test::FixtureOptions::Sharing::private_copy;
  podplane::test::ServeOptions front;
  front.registry_to = registry_->base();
  podplane::test::FixtureUpstream upstream(fixture, front);
  upstream.rebuild(pins({{"fixture/app:1.0", app_}}));
  std::string host = upstream.base_url().substr(std::string("https://").size());
  auto download = [&](const fs::path& root) {
    auto options = at(root);
    for (const auto& [name, value] : upstream.env(root, upstream.write_cli_config(temp_ / "cli.tfrc"))) options.env[name] = value;
    return run_podplane({"deps", "download", "--arch", "amd64,arm64", "--kind", "knc", "--cosign-key", site_pub_.string()}, options);
  };

  fs::path root = temp_ / "deps";
  auto fetched = download(root);
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  // The signature was asked for where cosign puts it, through the upstream, and stored.
  EXPECT_FALSE(upstream.requests("/v2/fixture/app/manifests/" + signature_tag(app_["index"]) + "$", 200).empty());
  {
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    auto attachments = store.artifacts({.kind = cache::ArtifactKind::image_attachment, .address = host + "/fixture/app"});
    ASSERT_EQ(attachments.size(), 1u);
    ASSERT_EQ(store.provenance_of(attachments[0].id).size(), 1u);
    EXPECT_EQ(store.provenance_of(attachments[0].id)[0].key_fingerprint, fingerprint(site_pub_));
  }
  // A second run skips the stored image: its stored signature still verifies with the key.
  auto again = download(root);
  ASSERT_EQ(again.exit_code, 0) << show(again);
  EXPECT_EQ(again.out.find("images ("), std::string::npos) << "the signed image was fetched again: " << again.out;

  upstream.rebuild(pins({{"fixture/app:1.0", app_}, {"fixture/unsigned:1.0", unsigned_image}}));
  fs::path refused_root = temp_ / "deps-refused";
  auto refused = download(refused_root);
  ASSERT_EQ(refused.exit_code, 1) << show(refused);
  std::string error = refused.err.substr(refused.err.find("podplane: error:"));
  EXPECT_NE(error.find(host + "/fixture/unsigned"), std::string::npos) << error;
  EXPECT_NE(error.find("no cosign signature"), std::string::npos) << error;
  EXPECT_NE(error.find("nothing was indexed"), std::string::npos) << error;
  EXPECT_EQ(error.find("fixture/app:1.0"), std::string::npos) << "the signed image is not to blame: " << error;
  auto store = cache::Store::open(refused_root, cache::Store::Access::read_only);
  EXPECT_TRUE(store.artifacts().empty()) << "a row of a refused run was indexed";
}

TEST_F(SignedImagesTest, SignaturesTravelInBundlesAndGoOutThroughExportAndPush) {
  sign("fixture/app", app_["index"], "site");
  fs::path online = temp_ / "online";
  auto fetched = deps_images(online, {"fixture/app:1.0"}, {site_pub_});
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);

  auto keygen = run_podplane({"bundle", "keygen", (temp_ / "bundle-signer").string()}, at(online));
  ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
  std::string bundle = (temp_ / "images.bundle").string();
  auto create = run_podplane({"bundle", "create", bundle, "--sign", (temp_ / "bundle-signer.key").string()}, at(online));
  ASSERT_EQ(create.exit_code, 0) << show(create);
  // The receiver names the key it trusts images from: the signature is checked again there.
  fs::path wrong = temp_ / "offline-wrong-key";
  auto refused = run_podplane({"bundle", "import", bundle, "--trust", (temp_ / "bundle-signer.pub").string(), "--cosign-key",
                               other_pub_.string()},
                              at(wrong));
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_NE((refused.out + refused.err).find("none of the keys given"), std::string::npos) << show(refused);
  EXPECT_NE((refused.out + refused.err).find(registry_->host() + "/fixture/app"), std::string::npos) << show(refused);
  {
    auto store = cache::Store::open(wrong, cache::Store::Access::read_only);
    EXPECT_TRUE(store.artifacts().empty()) << "rows of an image whose signature failed were recorded";
  }
  fs::path offline = temp_ / "offline";
  auto imported = run_podplane({"bundle", "import", bundle, "--trust", (temp_ / "bundle-signer.pub").string(), "--cosign-key",
                                site_pub_.string()},
                               at(offline));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  expect_signature_stored(offline, site_pub_);

  auto server = serve(offline);
  ASSERT_TRUE(server->started()) << server->log();
  expect_skopeo_fetches_valid_signature(mirror_name(server->url(), "fixture/app:1.0"),
                                        {"--src-cert-dir", (temp_ / "certs.d").string()}, app_["index"], site_pub_);

  // mirror export: the signature is a tag of the image's layout.
  auto exported = run_podplane({"mirror", "export", (temp_ / "export").string()}, at(offline));
  ASSERT_EQ(exported.exit_code, 0) << show(exported);
  fs::path layout = temp_ / "export" / "registry" / net::mirror_repository(registry_->host() + "/fixture/app");
  auto raw = run({"skopeo", "inspect", "--raw", "oci:" + layout.string() + ":" + signature_tag(app_["index"])});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_NE(raw.out.find("dev.cosignproject.cosign/signature"), std::string::npos) << raw.out;

  // mirror push: the signature goes along at its tag, so that skopeo finds it at the target.
  auto pushed = run_podplane({"mirror", "push", "oci://" + registry_->host() + "/site", "--plain-http"}, at(offline));
  ASSERT_EQ(pushed.exit_code, 0) << show(pushed);
  std::string target = "docker://" + registry_->host() + "/site/" + net::mirror_repository(registry_->host() + "/fixture/app") + ":1.0";
  expect_skopeo_fetches_valid_signature(target, {"--src-tls-verify=false"}, app_["index"], site_pub_);
}

TEST_F(SignedImagesTest, AttestationsAndSbomsAttachedByTagTravelWithTheImage) {
  const std::string address = registry_->host() + "/fixture/app";
  const std::vector<json> attached{attach("fixture/app", app_["index"], "att"), attach("fixture/app", app_["index"], "sbom")};
  // Stored with the image, each under its tag as the .sig is, its config and payload with it.
  auto expect_stored = [&](const fs::path& root) {
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    auto attachments = store.artifacts({.kind = cache::ArtifactKind::image_attachment, .address = address});
    ASSERT_EQ(attachments.size(), attached.size()) << root;
    for (const auto& summary : attached) {
      auto row = std::find_if(attachments.begin(), attachments.end(), [&](const auto& a) { return a.version == summary["tag"]; });
      ASSERT_NE(row, attachments.end()) << summary["tag"];
      EXPECT_EQ(row->filename, summary["manifest"]);
      EXPECT_TRUE(store.has_object(row->digest));
      EXPECT_TRUE(store.provenance_of(row->id).empty()) << "an attachment is not verified, so no key vouches for it";
      auto blobs = store.artifacts({.kind = cache::ArtifactKind::image_blob, .address = address, .version = row->filename});
      ASSERT_EQ(blobs.size(), 2u) << "its config and its payload";
      for (const auto& blob : blobs) EXPECT_TRUE(store.has_object(blob.digest));
      EXPECT_TRUE(std::any_of(blobs.begin(), blobs.end(), [&](const auto& b) { return b.filename == summary["payload"]; }));
    }
  };

  fs::path online = temp_ / "online";
  auto fetched = deps_images(online, {"fixture/app:1.0"}, {});
  ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
  expect_stored(online);
  auto verify = run_podplane({"deps", "verify"}, at(online));
  EXPECT_EQ(verify.exit_code, 0) << show(verify);
  // Fetched again (the tags may have moved): nothing new, nothing twice.
  auto again = deps_images(online, {"fixture/app:1.0"}, {});
  ASSERT_EQ(again.exit_code, 0) << show(again);
  expect_stored(online);

  auto keygen = run_podplane({"bundle", "keygen", (temp_ / "bundle-signer").string()}, at(online));
  ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
  std::string bundle = (temp_ / "attached.bundle").string();
  auto create = run_podplane({"bundle", "create", bundle, "--sign", (temp_ / "bundle-signer.key").string()}, at(online));
  ASSERT_EQ(create.exit_code, 0) << show(create);
  fs::path offline = temp_ / "offline";
  auto imported = run_podplane({"bundle", "import", bundle, "--trust", (temp_ / "bundle-signer.pub").string()}, at(offline));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  expect_stored(offline);

  // mirror serve: each at its tag, with the upstream digest and the manifest's media type.
  auto server = serve(offline);
  ASSERT_TRUE(server->started()) << server->log();
  CurlSession http;
  HttpRequest get;
  get.ca_file = temp_ / "tls" / "cert.pem";
  const std::string repository = net::mirror_repository(address);
  auto tags = json::parse(http.fetch(server->url() + "/v2/" + repository + "/tags/list", get).body, nullptr, false);
  auto catalogue = json::parse(http.fetch(server->url() + "/catalogue.json", get).body, nullptr, false);
  ASSERT_TRUE(catalogue.is_object() && catalogue.contains("images")) << catalogue.dump();
  for (const auto& summary : attached) {
    SCOPED_TRACE(summary["tag"].get<std::string>());
    std::string tag = summary["tag"];
    auto raw = run({"skopeo", "inspect", "--raw", "--cert-dir", (temp_ / "certs.d").string(), mirror_name(server->url(), "fixture/app:" + tag)});
    ASSERT_EQ(raw.exit_code, 0) << raw.err;
    EXPECT_EQ(digest_of(raw.out), summary["manifest"]);
    auto manifest = json::parse(raw.out);
    EXPECT_EQ(manifest["layers"][0]["mediaType"], summary["media_type"]);
    auto answer = http.fetch(server->url() + "/v2/" + repository + "/manifests/" + tag, get);
    EXPECT_EQ(answer.status, 200);
    EXPECT_EQ(answer.header("content-type"), "application/vnd.oci.image.manifest.v1+json");
    EXPECT_EQ(answer.header("docker-content-digest"), summary["manifest"]);
    auto payload = http.fetch(server->url() + "/v2/" + repository + "/blobs/" + summary["payload"].get<std::string>(), get);
    EXPECT_EQ(payload.status, 200);
    EXPECT_EQ(digest_of(payload.body), summary["payload"]);
    EXPECT_NE(std::find(tags["tags"].begin(), tags["tags"].end(), summary["tag"]), tags["tags"].end()) << tags.dump();
    // Listed per image in the catalogue, as attached to the index, not verified.
    auto listed = std::find_if(catalogue["images"].begin(), catalogue["images"].end(), [&](const json& row) { return row["tag"] == tag; });
    ASSERT_NE(listed, catalogue["images"].end()) << catalogue["images"].dump();
    EXPECT_EQ((*listed)["image"], address);
    EXPECT_EQ((*listed)["digest"], summary["manifest"]);
    EXPECT_EQ((*listed)["platform"], tag.ends_with(".att") ? "attestation" : "sbom");
    EXPECT_EQ((*listed)["attached_to"], app_["index"]);
    EXPECT_EQ((*listed)["signed"], false);
    EXPECT_FALSE((*listed)["path"].get<std::string>().empty()) << "served";
  }
  auto page = http.fetch(server->url() + "/catalogue/images/", get);
  EXPECT_NE(page.body.find(attached[0]["tag"].get<std::string>()), std::string::npos);
  EXPECT_NE(page.body.find("not verified"), std::string::npos);

  // mirror export: each a tag of the image's layout.
  auto exported = run_podplane({"mirror", "export", (temp_ / "export").string()}, at(offline));
  ASSERT_EQ(exported.exit_code, 0) << show(exported);
  fs::path layout = temp_ / "export" / "registry" / repository;
  for (const auto& summary : attached) {
    auto raw = run({"skopeo", "inspect", "--raw", "oci:" + layout.string() + ":" + summary["tag"].get<std::string>()});
    ASSERT_EQ(raw.exit_code, 0) << raw.err;
    EXPECT_EQ(digest_of(raw.out), summary["manifest"]);
  }

  // mirror push: each at its tag in the target registry, byte for byte.
  auto pushed = run_podplane({"mirror", "push", "oci://" + registry_->host() + "/site", "--plain-http"}, at(offline));
  ASSERT_EQ(pushed.exit_code, 0) << show(pushed);
  for (const auto& summary : attached) {
    auto raw = run({"skopeo", "inspect", "--raw", "--tls-verify=false",
                    "docker://" + registry_->host() + "/site/" + repository + ":" + summary["tag"].get<std::string>()});
    ASSERT_EQ(raw.exit_code, 0) << raw.err;
    EXPECT_EQ(digest_of(raw.out), summary["manifest"]);
  }
}

TEST_F(SignedImagesTest, AnAttestationWhosePayloadIsNotItsDigestIsRefusedWithNothingIndexed) {
  auto attestation = attach("fixture/app", app_["index"], "att");
  std::string payload = attestation["payload"];
  {
    fs::path file = registry_->blob_file(payload);
    std::string bytes = read_file(file);
    ASSERT_FALSE(bytes.empty());
    bytes[bytes.size() / 2] ^= 0x55;
    podplane::test::write_file(file, bytes);  // same length, other bytes: only the digest tells
  }
  fs::path root = temp_ / "deps";
  auto fetched = deps_images(root, {"fixture/app:1.0"}, {});
  ASSERT_EQ(fetched.exit_code, 1) << show(fetched);
  EXPECT_NE(fetched.err.find(payload.substr(7)), std::string::npos) << fetched.err;
  EXPECT_NE(fetched.err.find(registry_->host() + "/fixture/app"), std::string::npos) << fetched.err;
  EXPECT_NE(fetched.err.find("nothing was indexed"), std::string::npos) << fetched.err;
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  EXPECT_TRUE(store.artifacts().empty()) << "a row of the refused image was indexed";
  EXPECT_FALSE(store.has_object(payload.substr(7)));
  EXPECT_FALSE(fs::exists(store.object_path(payload.substr(7)))) << "the tampered bytes reached the object store";
}

}  // namespace
}  // namespace podplane::serve_test
