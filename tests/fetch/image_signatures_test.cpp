// `deps images` with signatures the fixture upstream serves beside its image
// (tests/tools/upstream, files written into its static registry): keyless signatures made by a
// local Fulcio, Rekor and CT log (tests/support/sigstore_fixture.hpp) in cosign's .sig layout
// and as a sigstore bundle referrer, each stored with a provenance naming the identity and the
// trusted root; and the limits on what a signature or an image's referrers may make the run
// fetch and hold, each refusal naming its limit before anything of it is fetched.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "cache/store.hpp"
#include "tests/support/sigstore_fixture.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

using nlohmann::json;

constexpr const char* kRepository = "podplane-fixture/pause";
constexpr const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";

// Its own copy of the fixture tree: the tests write signatures into its registry.
FixtureOptions private_tree() {
  FixtureOptions options;
  options.sharing = FixtureOptions::Sharing::private_copy;
  return options;
}

class ImageSignaturesTest : public ::testing::Test {
 protected:
  ImageSignaturesTest() : upstream_(private_tree()) {
    upstream_.write_cli_config(dir_ / "cli.tfrc");
    host_ = upstream_.base_url().substr(upstream_.base_url().find("://") + 3);
    index_ = upstream_.fixture()["image"]["index"];
    write_file(dir_ / "trusted_root.json", sigstore_.trusted_root_json());
  }

  std::string address() const { return host_ + "/" + kRepository; }
  fs::path root() const { return dir_ / "deps"; }

  // A file of the static registry, with the headers a registry sends.
  std::string put(const std::string& name, const std::string& bytes, const std::string& type) {
    fs::path file = upstream_.www() / "v2" / kRepository / name;
    write_file(file, bytes);
    const std::string digest = "sha256:" + sha256_hex(bytes);
    write_file(file.string() + ".headers", "Content-Type: " + type + "\nDocker-Content-Digest: " + digest + "\n");
    return digest;
  }
  json blob(const std::string& bytes, const std::string& type) {
    return {{"mediaType", type}, {"digest", put("blobs/sha256:" + sha256_hex(bytes), bytes, "application/octet-stream")},
            {"size", bytes.size()}};
  }
  static json manifest_of(const json& config, const json& layers) {
    return {{"schemaVersion", 2}, {"mediaType", kManifestType}, {"config", config}, {"layers", layers}};
  }
  std::string sig_tag() const { return "sha256-" + index_.substr(7) + ".sig"; }

  // The image signed keyless in cosign's layout at its .sig tag.
  void sign_sig_layout(const SigstoreFixture::Options& options = {}) {
    std::string payload = SigstoreFixture::simple_signing_payload(index_, address());
    json layer = blob(payload, "application/vnd.dev.cosign.simplesigning.v1+json");
    layer["annotations"] = sigstore_.sig_layer_annotations(payload, options);
    json manifest = manifest_of(blob("{}", "application/vnd.oci.image.config.v1+json"), json::array({layer}));
    put("manifests/" + sig_tag(), manifest.dump(), kManifestType);
  }

  ProcessResult deps_images(const std::vector<std::string>& flags) {
    write_file(dir_ / "images.txt", address() + ":3.10.2\n");
    std::vector<std::string> args{"deps", "images", "-f", (dir_ / "images.txt").string(), "--arch", "amd64"};
    args.insert(args.end(), flags.begin(), flags.end());
    ProcessOptions options;
    options.env = upstream_.env(root(), dir_ / "cli.tfrc");
    options.env["PODPLANE_HTTP_RETRIES"] = "1";
    return run_podplane(args, options);
  }
  std::vector<std::string> keyless_flags(const std::string& identity = "ci@example.com") const {
    return {"--certificate-identity", identity, "--certificate-oidc-issuer", "https://issuer.example", "--trusted-root",
            (dir_ / "trusted_root.json").string()};
  }

  std::vector<cache::Artifact> stored(cache::ArtifactKind kind) const {
    if (!fs::exists(root() / "store" / "index.db")) return {};
    auto store = cache::Store::open(root(), cache::Store::Access::read_only);
    return store.artifacts({.kind = kind, .address = address()});
  }

  TempDir dir_;
  FixtureUpstream upstream_;
  SigstoreFixture sigstore_;
  std::string host_, index_;
};

TEST_F(ImageSignaturesTest, AKeylessSignatureInTheSigLayoutIsVerifiedAndStoredWithItsIdentityAndTrustedRoot) {
  sign_sig_layout();
  auto result = deps_images(keyless_flags());
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto attachments = stored(cache::ArtifactKind::image_attachment);
  ASSERT_EQ(attachments.size(), 1u);
  EXPECT_EQ(attachments[0].version, sig_tag());
  auto store = cache::Store::open(root(), cache::Store::Access::read_only);
  auto provenance = store.provenance_of(attachments[0].id);
  ASSERT_EQ(provenance.size(), 1u);
  EXPECT_EQ(provenance[0].key_fingerprint, "keyless:ci@example.com https://issuer.example");
  EXPECT_EQ(provenance[0].keys_digest, sha256_hex(sigstore_.trusted_root_json()));
  EXPECT_TRUE(store.has_object(provenance[0].keys_digest)) << "the trusted root stays with the signature";
  EXPECT_NE(provenance[0].result.find("by ci@example.com (https://issuer.example)"), std::string::npos) << provenance[0].result;
}

// The bundle carries the signature, its certificate, chain and Rekor entry, and the trusted
// root it was checked against (the provenance's object); import checks it again offline with
// the identity the receiver names.
TEST_F(ImageSignaturesTest, BundleImportChecksAKeylessSignatureAgainWithTheReceiversIdentity) {
  sign_sig_layout();
  ASSERT_EQ(deps_images(keyless_flags()).exit_code, 0);
  ProcessOptions at_source = with_deps_root(root());
  auto created = run_podplane({"bundle", "create", (dir_ / "images.bundle").string()}, at_source);
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;

  auto import_into = [&](const std::string& name, const std::string& identity) {
    std::vector<std::string> args{"bundle", "import", (dir_ / "images.bundle").string(), "--allow-unsigned"};
    for (const auto& flag : keyless_flags(identity)) args.push_back(flag);
    return run_podplane(args, with_deps_root(dir_ / name));
  };
  auto refused = import_into("other", "release@example.com");
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE((refused.out + refused.err).find("expected: identity release@example.com"), std::string::npos)
      << refused.out << refused.err;

  auto imported = import_into("site", "ci@example.com");
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  auto store = cache::Store::open(dir_ / "site", cache::Store::Access::read_only);
  auto attachments = store.artifacts({.kind = cache::ArtifactKind::image_attachment, .address = address()});
  ASSERT_EQ(attachments.size(), 1u);
  auto provenance = store.provenance_of(attachments[0].id);
  ASSERT_EQ(provenance.size(), 1u);
  EXPECT_TRUE(store.has_object(provenance[0].keys_digest)) << "the trusted root travelled with the signature";
}

TEST_F(ImageSignaturesTest, AKeylessSignatureOfAnotherIdentityIndexesNothing) {
  sign_sig_layout();
  auto result = deps_images(keyless_flags("release@example.com"));
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("nothing was indexed"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("expected: identity release@example.com, issuer https://issuer.example"), std::string::npos)
      << result.err;
  EXPECT_TRUE(stored(cache::ArtifactKind::image_index).empty());
  EXPECT_EQ(upstream_.requests("/v2/.*/blobs/", 200).size(), 1u) << "only the signature's payload was fetched";
}

TEST_F(ImageSignaturesTest, ASigstoreBundleReferrerIsVerifiedAndStored) {
  std::string bundle = sigstore_.dsse_bundle(SigstoreFixture::image_statement(index_, address()), {});
  json manifest = manifest_of(blob("{}", "application/vnd.oci.empty.v1+json"),
                              json::array({blob(bundle, "application/vnd.dev.sigstore.bundle.v0.3+json")}));
  manifest["artifactType"] = "application/vnd.dev.sigstore.bundle.v0.3+json";
  manifest["subject"] = {{"mediaType", "application/vnd.oci.image.index.v1+json"}, {"digest", index_}, {"size", 1}};
  std::string bytes = manifest.dump();
  std::string digest = put("manifests/sha256:" + sha256_hex(bytes), bytes, kManifestType);
  json referrers = {{"schemaVersion", 2},
                    {"mediaType", "application/vnd.oci.image.index.v1+json"},
                    {"manifests", json::array({{{"mediaType", kManifestType}, {"digest", digest}, {"size", bytes.size()},
                                                {"artifactType", "application/vnd.dev.sigstore.bundle.v0.3+json"}}})}};
  put("referrers/" + index_, referrers.dump(), "application/vnd.oci.image.index.v1+json");
  auto result = deps_images(keyless_flags());
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  bool found = false;
  for (const auto& row : stored(cache::ArtifactKind::image_attachment)) found = found || row.filename == digest;
  EXPECT_TRUE(found) << "the bundle's manifest is stored as an attachment of the image";
}

TEST_F(ImageSignaturesTest, ASignatureManifestListingTooManyBlobsIsRefusedBeforeAnyIsFetched) {
  json layers = json::array();
  for (int i = 0; i < 64; ++i)
    layers.push_back({{"mediaType", "application/vnd.dev.cosign.simplesigning.v1+json"},
                      {"digest", "sha256:" + sha256_hex(std::to_string(i))},
                      {"size", 4 * 1024 * 1024}});
  json config = {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", "sha256:" + sha256_hex("c")}, {"size", 2}};
  put("manifests/" + sig_tag(), manifest_of(config, layers).dump(), kManifestType);
  auto keygen = run({"openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", (dir_ / "cosign.pem").string()});
  ASSERT_EQ(keygen.exit_code, 0);
  ASSERT_EQ(run({"openssl", "ec", "-in", (dir_ / "cosign.pem").string(), "-pubout", "-out", (dir_ / "cosign.pub").string()}).exit_code, 0);
  auto result = deps_images({"--cosign-key", (dir_ / "cosign.pub").string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("lists 65 blobs, more than the limit of 64 blobs for one signature"), std::string::npos) << result.err;
  EXPECT_TRUE(upstream_.requests("/v2/.*/blobs/").empty()) << "no blob of the signature or the image was fetched";

  layers.erase(layers.begin() + 5, layers.end());  // 5 layers of 4 MiB: past the 16 MiB of one signature
  put("manifests/" + sig_tag(), manifest_of(config, layers).dump(), kManifestType);
  result = deps_images({"--cosign-key", (dir_ / "cosign.pub").string()});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("more than the limit of 16777216 bytes for one signature"), std::string::npos) << result.err;
  EXPECT_TRUE(upstream_.requests("/v2/.*/blobs/").empty());
}

TEST_F(ImageSignaturesTest, TooManyReferrersAreRefusedBeforeAnyIsFetched) {
  json manifests = json::array();
  for (int i = 0; i < 257; ++i)
    manifests.push_back({{"mediaType", kManifestType}, {"digest", "sha256:" + sha256_hex("referrer " + std::to_string(i))}, {"size", 100}});
  json referrers = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"}, {"manifests", manifests}};
  put("referrers/" + index_, referrers.dump(), "application/vnd.oci.image.index.v1+json");
  auto result = deps_images({});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("are 257 manifests, more than the limit of 256 referrers of one image"), std::string::npos)
      << result.err;
  EXPECT_TRUE(upstream_.requests("/v2/.*/manifests/sha256:[0-9a-f]+$", 404).empty()) << "no listed referrer was asked for";
  EXPECT_TRUE(stored(cache::ArtifactKind::image_index).empty());
}

// A referrer's size is the index's word for it: one past 4 MiB, or all of them past 64 MiB
// together, is refused before any is asked for.
TEST_F(ImageSignaturesTest, ReferrersTooLargeByTheirIndexAreRefusedBeforeAnyIsFetched) {
  auto serve_referrers = [&](int count, std::int64_t size) {
    json manifests = json::array();
    for (int i = 0; i < count; ++i)
      manifests.push_back(
          {{"mediaType", kManifestType}, {"digest", "sha256:" + sha256_hex("referrer " + std::to_string(i))}, {"size", size}});
    json referrers = {{"schemaVersion", 2}, {"mediaType", "application/vnd.oci.image.index.v1+json"}, {"manifests", manifests}};
    put("referrers/" + index_, referrers.dump(), "application/vnd.oci.image.index.v1+json");
  };
  serve_referrers(1, 4 * 1024 * 1024 + 1);
  auto result = deps_images({});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("has 4194305 bytes, more than the limit of 4194304 bytes for one referrer manifest"), std::string::npos)
      << result.err;

  serve_referrers(17, 4 * 1024 * 1024);
  result = deps_images({});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("add up to more than the limit of 67108864 bytes for the referrer manifests of one image"),
            std::string::npos)
      << result.err;
  EXPECT_TRUE(upstream_.requests("/v2/.*/manifests/sha256:[0-9a-f]+$", 404).empty()) << "no listed referrer was asked for";
  EXPECT_TRUE(stored(cache::ArtifactKind::image_index).empty());
}

}  // namespace
}  // namespace podplane::test
