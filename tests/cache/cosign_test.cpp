// cache/cosign.hpp: cosign key-based signatures checked with OpenSSL, against keys and
// signatures made by the openssl CLI as `cosign generate-key-pair` and `cosign sign` make them.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "cache/cosign.hpp"
#include "cache/cosign_policy.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::run;
using test::TempDir;

const std::string kImage = "sha256:" + std::string(64, 'a');

class CosignTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(test::have_program("openssl")) << "openssl is needed (scripts/setup installs it)"; }

  fs::path make_key(const std::string& name) {
    fs::path key = dir_.path() / (name + ".pem"), pub = dir_.path() / (name + ".pub");
    EXPECT_EQ(run({"openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", key.string()}).exit_code, 0);
    EXPECT_EQ(run({"openssl", "ec", "-in", key.string(), "-pubout", "-out", pub.string()}).exit_code, 0);
    return pub;
  }

  std::string payload(const std::string& digest) {
    return json{{"critical",
                 {{"identity", {{"docker-reference", "registry.example/app"}}},
                  {"image", {{"docker-manifest-digest", digest}}},
                  {"type", "cosign container image signature"}}},
                {"optional", nullptr}}
        .dump();
  }

  std::string sign(const std::string& key, const std::string& bytes) {
    test::write_file(dir_.path() / "payload", bytes);
    auto signed_ = run({"openssl", "dgst", "-sha256", "-sign", (dir_.path() / (key + ".pem")).string(), (dir_.path() / "payload").string()});
    EXPECT_EQ(signed_.exit_code, 0) << signed_.err;
    return signed_.out;
  }

  // A signature manifest with one simple-signing layer; its bytes are in blobs_.
  std::string manifest(const std::string& bytes, const std::string& signature_base64,
                       const std::string& media_type = cosign_media::simple_signing) {
    std::string digest = "sha256:" + sha256_hex(bytes);
    blobs_[digest] = bytes;
    json layer{{"mediaType", media_type}, {"digest", digest}, {"size", bytes.size()},
               {"annotations", {{cosign_media::signature_annotation, signature_base64}}}};
    return json{{"schemaVersion", 2},
                {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                {"config", {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", "sha256:" + std::string(64, 'c')}, {"size", 2}}},
                {"layers", json::array({layer})}}
        .dump();
  }

  CosignVerified verify(const std::string& signature_manifest, const std::vector<CosignKey>& keys, const std::string& image = kImage) {
    return verify_cosign_signature(image, "registry.example/team/app", signature_manifest,
                                   [&](const std::string& digest) { return blobs_.at(digest); }, CosignTrust{keys, {}, nullptr});
  }

  std::string error_of(const std::string& signature_manifest, const std::vector<CosignKey>& keys) {
    try {
      (void)verify(signature_manifest, keys);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  }

  TempDir dir_;
  std::map<std::string, std::string> blobs_;
};

TEST_F(CosignTest, ASignatureByAGivenKeyOverAPayloadNamingTheImageVerifies) {
  auto site = CosignKey::load(make_key("site"));
  auto other = CosignKey::load(make_key("other"));
  auto der = run({"openssl", "pkey", "-pubin", "-in", (dir_.path() / "site.pub").string(), "-outform", "DER"});
  EXPECT_EQ(site.fingerprint(), "sha256:" + sha256_hex(der.out));
  std::string bytes = payload(kImage);
  auto verified = verify(manifest(bytes, base64_encode(sign("site", bytes))), {other, site});
  EXPECT_EQ(verified.key_fingerprint, site.fingerprint());
  EXPECT_EQ(verified.payload_digest, "sha256:" + sha256_hex(bytes));
}

TEST_F(CosignTest, EveryWayASignatureFailsSaysWhy) {
  auto site = CosignKey::load(make_key("site"));
  auto other = CosignKey::load(make_key("other"));
  std::string bytes = payload(kImage);
  std::string good = base64_encode(sign("site", bytes));
  EXPECT_NE(error_of(manifest(bytes, good), {other}).find("none of the keys given"), std::string::npos);
  EXPECT_NE(error_of(manifest(bytes, good), {other}).find("other.pub"), std::string::npos);
  // The payload changed after signing: the bytes the signature covers are not these.
  std::string altered = payload("sha256:" + std::string(64, 'b'));
  EXPECT_NE(error_of(manifest(altered, good), {site}).find("none of the keys given"), std::string::npos);
  // Signed by the key, but naming another image: a signature moved from elsewhere.
  std::string elsewhere = payload("sha256:" + std::string(64, 'b'));
  auto moved = error_of(manifest(elsewhere, base64_encode(sign("site", elsewhere))), {site});
  EXPECT_NE(moved.find("names another image"), std::string::npos) << moved;
  EXPECT_NE(moved.find(kImage), std::string::npos) << moved;
  // Not a simple-signing layer, not base64, not a manifest.
  EXPECT_NE(error_of(manifest(bytes, good, "application/octet-stream"), {site}).find("has no application/vnd.dev.cosign"), std::string::npos);
  EXPECT_NE(error_of(manifest(bytes, "***"), {site}).find("none of the keys given"), std::string::npos);
  EXPECT_NE(error_of("[]", {site}).find("not an image manifest"), std::string::npos);
}

TEST_F(CosignTest, OnlyPemEcdsaP256PublicKeysLoad) {
  EXPECT_THROW((void)CosignKey::load(dir_.path() / "missing.pub"), Error);
  test::write_file(dir_.path() / "garbage.pub", "not a key\n");
  EXPECT_THROW((void)CosignKey::load(dir_.path() / "garbage.pub"), Error);
  fs::path ed = dir_.path() / "ed.pem";
  ASSERT_EQ(run({"openssl", "genpkey", "-algorithm", "ed25519", "-out", ed.string()}).exit_code, 0);
  ASSERT_EQ(run({"openssl", "pkey", "-in", ed.string(), "-pubout", "-out", (dir_.path() / "ed.pub").string()}).exit_code, 0);
  try {
    (void)CosignKey::load(dir_.path() / "ed.pub");
    ADD_FAILURE() << "an Ed25519 key loaded as a cosign key";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("not an ECDSA P-256 key"), std::string::npos) << error.what();
  }
  fs::path p384 = dir_.path() / "p384.pem";
  ASSERT_EQ(run({"openssl", "ecparam", "-genkey", "-name", "secp384r1", "-noout", "-out", p384.string()}).exit_code, 0);
  ASSERT_EQ(run({"openssl", "ec", "-in", p384.string(), "-pubout", "-out", (dir_.path() / "p384.pub").string()}).exit_code, 0);
  EXPECT_THROW((void)CosignKey::load(dir_.path() / "p384.pub"), Error);
}

TEST_F(CosignTest, APolicyGivesEachImageTheKeysOfItsMostSpecificEntry) {
  auto site = CosignKey::load(make_key("site"));
  auto acme = CosignKey::load(make_key("acme"));
  fs::path policy_file = dir_.path() / "policy.json";
  test::write_file(policy_file, R"({"default": {"keys": ["site.pub"]},
    "images": {"ghcr.io/acme": {"keys": ["acme.pub", "site.pub"]}, "ghcr.io/acme/tool": "unsigned",
               "registry.example:5000": "unsigned"}})");
  auto policy = CosignPolicy::load(policy_file);
  EXPECT_TRUE(policy.requires_signatures());
  auto fingerprints = [&](const std::string& address) {
    std::vector<std::string> out;
    for (const auto& key : policy.trust_for(address).keys) out.push_back(key.fingerprint());
    return out;
  };
  using Keys = std::vector<std::string>;
  EXPECT_EQ(fingerprints("ghcr.io/acme/api"), (Keys{acme.fingerprint(), site.fingerprint()}));
  EXPECT_EQ(fingerprints("ghcr.io/acme"), (Keys{acme.fingerprint(), site.fingerprint()}));
  EXPECT_EQ(fingerprints("ghcr.io/acme/tool"), Keys{});
  EXPECT_EQ(fingerprints("ghcr.io/acme/tool/sub"), Keys{});
  EXPECT_EQ(fingerprints("ghcr.io/acmex/api"), Keys{site.fingerprint()}) << "an entry covers whole path components only";
  EXPECT_EQ(fingerprints("registry.example:5000/team/worker"), Keys{});
  EXPECT_EQ(fingerprints("docker.io/library/nginx"), Keys{site.fingerprint()});
  EXPECT_FALSE(CosignPolicy{}.requires_signatures());

  auto error_of = [&](const std::string& text) -> std::string {
    test::write_file(policy_file, text);
    try {
      (void)CosignPolicy::load(policy_file);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(error_of("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"images": {"ghcr.io/acme": {"keys": []}}})").find("at least one key"), std::string::npos);
  EXPECT_NE(error_of(R"({"images": {"ghcr.io/acme": "signed"}})").find("ghcr.io/acme"), std::string::npos);
  EXPECT_NE(error_of(R"({"images": {"GHCR.io/../x": "unsigned"}})").find("not a registry"), std::string::npos);
  EXPECT_NE(error_of(R"({"default": {"keys": ["missing.pub"]}})").find("missing.pub"), std::string::npos);
  EXPECT_NE(error_of(R"({"defaults": "unsigned"})").find("unknown key"), std::string::npos);
  EXPECT_THROW((void)cosign_policy_of({dir_.path() / "site.pub"}, policy_file), UsageError);
}

}  // namespace
}  // namespace podplane::cache
