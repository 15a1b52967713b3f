// cache/sigstore.hpp and the keyless paths of cache/cosign.hpp: signatures made by a local
// Fulcio, Rekor, CT log and TSA (tests/support/sigstore_fixture.hpp) in cosign's .sig layout and as
// sigstore bundles, each check failing on its own; and sigstore-js (tests/tools/sigstore), the
// oracle, verifying and refusing the same fixtures.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "cache/cosign.hpp"
#include "cache/cosign_policy.hpp"
#include "cache/sigstore.hpp"
#include "tests/support/sigstore_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Options = test::SigstoreFixture::Options;

const std::string kImage = "sha256:" + std::string(64, 'a');
const std::string kAddress = "registry.example/team/app";

class KeylessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::write_file(root_file(), fixture_.trusted_root_json());
    trust_.trusted_root = SigstoreTrustedRoot::load(root_file());
    trust_.identities = {KeylessIdentity{"ci@example.com", "", "https://issuer.example", ""}};
  }

  fs::path root_file() const { return dir_.path() / "trusted_root.json"; }

  // A .sig manifest of one simple-signing layer signed keyless.
  std::string sig_manifest(const std::string& payload, const Options& options = {}) {
    std::string digest = "sha256:" + sha256_hex(payload);
    blobs_[digest] = payload;
    json layer{{"mediaType", cosign_media::simple_signing},
               {"digest", digest},
               {"size", payload.size()},
               {"annotations", fixture_.sig_layer_annotations(payload, options)}};
    return json{{"schemaVersion", 2},
                {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                {"config", {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", "sha256:" + std::string(64, 'c')}, {"size", 2}}},
                {"layers", json::array({layer})}}
        .dump();
  }

  CosignVerified verify(const std::string& manifest, const std::string& image = kImage) {
    return verify_cosign_signature(image, kAddress, manifest, [&](const std::string& digest) { return blobs_.at(digest); }, trust_);
  }

  std::string error_of(const std::string& manifest) {
    try {
      (void)verify(manifest);
    } catch (const Error& error) {
      return error.what();
    }
    return "(verified)";
  }

  std::string bundle_error_of(const std::string& bundle, const std::string& image = kImage) {
    try {
      (void)verify_sigstore_bundle(image, kAddress, bundle, trust_);
    } catch (const Error& error) {
      return error.what();
    }
    return "(verified)";
  }

  std::string payload(const std::string& digest = kImage, const std::string& reference = kAddress) {
    return test::SigstoreFixture::simple_signing_payload(digest, reference);
  }

  test::TempDir dir_;
  test::SigstoreFixture fixture_;
  CosignTrust trust_;
  std::map<std::string, std::string> blobs_;
};

TEST_F(KeylessTest, ASignatureInCosignsSigLayoutVerifiesAndNamesItsSigner) {
  auto verified = verify(sig_manifest(payload()));
  ASSERT_TRUE(verified.keyless);
  EXPECT_EQ(verified.keyless->identity, "ci@example.com");
  EXPECT_EQ(verified.keyless->issuer, "https://issuer.example");
  EXPECT_EQ(verified.key_fingerprint, "keyless:ci@example.com https://issuer.example");
  EXPECT_EQ(verified.keyless->certificate_fingerprint.substr(0, 7), "sha256:");
}

TEST_F(KeylessTest, IdentityAndIssuerMayBeRegularExpressionsMatchedAnywhere) {
  trust_.identities = {KeylessIdentity{"", "^https://github\\.com/acme/", "", "token\\.actions"}};
  Options options;
  options.identity = "https://github.com/acme/app/.github/workflows/release.yml@refs/tags/v1";
  options.issuer = "https://token.actions.githubusercontent.com";
  EXPECT_NO_THROW((void)verify(sig_manifest(payload(), options)));
  trust_.identities = {KeylessIdentity{"", "^https://github\\.com/other/", "", "token\\.actions"}};
  EXPECT_NE(error_of(sig_manifest(payload(), options)).find("expected: identity matching /^https://github\\.com/other//"),
            std::string::npos);
}

TEST_F(KeylessTest, AnotherIdentityOrIssuerIsRefusedWithBoth) {
  Options options;
  options.identity = "mallory@example.com";
  auto error = error_of(sig_manifest(payload(), options));
  EXPECT_NE(error.find("the keyless signature is by another identity"), std::string::npos) << error;
  EXPECT_NE(error.find("expected: identity ci@example.com, issuer https://issuer.example"), std::string::npos) << error;
  EXPECT_NE(error.find("got:      identity mallory@example.com, issuer https://issuer.example"), std::string::npos) << error;
  options = {};
  options.issuer = "https://other-issuer.example";
  error = error_of(sig_manifest(payload(), options));
  EXPECT_NE(error.find("issuer https://other-issuer.example"), std::string::npos) << error;
}

TEST_F(KeylessTest, EachForgedPartIsRefusedForItsOwnReason) {
  Options other_log;
  other_log.sct_by_other_log = true;
  EXPECT_NE(error_of(sig_manifest(payload(), other_log)).find("SCT does not verify: no CT log of the trusted root logged it"),
            std::string::npos);
  Options other_key;
  other_key.set_by_other_key = true;
  EXPECT_NE(error_of(sig_manifest(payload(), other_key)).find("signed entry timestamp (log index 2) does not verify"),
            std::string::npos);
  Options other_ca;
  other_ca.issued_by_other_ca = true;
  EXPECT_NE(error_of(sig_manifest(payload(), other_ca)).find("the signing certificate is not one Fulcio issued"),
            std::string::npos);
}

TEST_F(KeylessTest, ACertificateExpiredAtTheSignedTimeIsRefused) {
  // Fulcio's certificates live ten minutes: one made an hour before the Rekor entry had expired.
  Options late;
  late.signed_at = std::time(nullptr);
  late.certificate_at = late.signed_at - 3600;
  auto error = error_of(sig_manifest(payload(), late));
  EXPECT_NE(error.find("does not chain to the certificate authority https://fulcio.local"), std::string::npos) << error;
  EXPECT_NE(error.find("certificate has expired"), std::string::npos) << error;
}

TEST_F(KeylessTest, APayloadNamingAnotherImageOrRepositoryIsRefused) {
  const std::string other = "sha256:" + std::string(64, 'b');
  auto error = error_of(sig_manifest(payload(other)));
  EXPECT_NE(error.find("names another image"), std::string::npos) << error;
  EXPECT_NE(error.find("got:      " + other), std::string::npos) << error;
  error = error_of(sig_manifest(payload(kImage, "registry.example/team/other")));
  EXPECT_NE(error.find("names another repository"), std::string::npos) << error;
  EXPECT_NE(error.find("got:      registry.example/team/other"), std::string::npos) << error;
}

TEST_F(KeylessTest, WithoutIdentitiesAKeylessSignatureIsNotTaken) {
  trust_.identities.clear();
  trust_.keys = {};
  EXPECT_NE(error_of(sig_manifest(payload())).find("by none of the keys given"), std::string::npos);
}

TEST_F(KeylessTest, ASigstoreBundleOfAStatementNamingTheImageVerifies) {
  auto bundle = fixture_.dsse_bundle(test::SigstoreFixture::image_statement(kImage, kAddress), {});
  EXPECT_EQ(bundle_error_of(bundle), "(verified)");
  auto error = bundle_error_of(bundle, "sha256:" + std::string(64, 'b'));
  EXPECT_NE(error.find("names another image"), std::string::npos) << error;
  Options bad_proof;
  bad_proof.proof_to_other_root = true;
  error = bundle_error_of(fixture_.dsse_bundle(test::SigstoreFixture::image_statement(kImage, kAddress), bad_proof));
  EXPECT_NE(error.find("inclusion proof (log index 2) does not lead to the checkpoint's root"), std::string::npos) << error;
}

// RFC 3161: a TSA's timestamp of the signature is a signing time beside the SET's, and in its
// place where the Rekor entry is proven by its inclusion proof alone; the certificate must be
// valid at every time proven.
TEST_F(KeylessTest, ATimestampAuthoritysTimeIsCheckedBesideTheSetOrInItsPlace) {
  Options timestamped{.timestamped = true};
  EXPECT_EQ(error_of(sig_manifest(payload(), timestamped)), "(verified)");
  Options other_tsa{.timestamped = true, .timestamp_by_other_tsa = true};
  auto error = error_of(sig_manifest(payload(), other_tsa));
  EXPECT_NE(error.find("the RFC 3161 timestamp #1 of the signature is not one a timestamp authority of the trusted root made"),
            std::string::npos)
      << error;

  const std::string statement = test::SigstoreFixture::image_statement(kImage, kAddress);
  const std::time_t at = std::time(nullptr) - 120;
  auto verified = verify_sigstore_bundle(
      kImage, kAddress,
      fixture_.dsse_bundle(statement,
                           {.signed_at = at + 60, .certificate_at = at - 60, .timestamped = true, .timestamp_at = at, .without_set = true}),
      trust_);
  ASSERT_TRUE(verified.keyless);
  EXPECT_EQ(verified.keyless->signed_at, rfc3339_utc(at)) << "without a SET, the signing time is the TSA's";

  error = bundle_error_of(fixture_.dsse_bundle(statement, {.without_set = true}));
  EXPECT_NE(error.find("no Rekor signed entry timestamp and no RFC 3161 timestamp, so no signing time is proven"),
            std::string::npos)
      << error;
  // The TSA says an hour after the ten minutes of the certificate: it had expired.
  Options late{.signed_at = at, .timestamped = true, .timestamp_at = at + 3600};
  error = bundle_error_of(fixture_.dsse_bundle(statement, late));
  EXPECT_NE(error.find("certificate has expired"), std::string::npos) << error;
}

TEST_F(KeylessTest, APolicyFileNamesKeylessIdentitiesAndTheirTrustedRoot) {
  fs::path policy_file = dir_.path() / "policy.json";
  test::write_file(policy_file, R"({"images": {"registry.example/team": {"keyless": [
      {"identity": "ci@example.com", "issuer": "https://issuer.example"}], "trusted_root": "trusted_root.json"}}})");
  auto policy = CosignPolicy::load(policy_file);
  EXPECT_TRUE(policy.trust_for(kAddress).keyless());
  EXPECT_EQ(policy.trust_for(kAddress).trusted_root->digest(), sha256_hex(fixture_.trusted_root_json()));
  EXPECT_TRUE(policy.trust_for("registry.example/other").empty());
  test::write_file(policy_file, R"({"default": {"keyless": [{"identity": "ci@example.com", "issuer": "x"}]}})");
  EXPECT_THROW((void)CosignPolicy::load(policy_file), Error) << "keyless without a trusted root";
  KeylessFlags incomplete;
  incomplete.identity.identity = "ci@example.com";
  incomplete.trusted_root = root_file();
  EXPECT_THROW((void)cosign_policy_of({}, std::nullopt, incomplete), UsageError) << "no issuer";
}

// The oracle: sigstore-js takes what podplane takes and refuses what it refuses.
class KeylessOracleTest : public KeylessTest {
 protected:
  void SetUp() override {
    KeylessTest::SetUp();
    ASSERT_TRUE(test::have_program("node")) << "node is needed (the machine has it)";
    ASSERT_TRUE(fs::exists(script().parent_path() / "node_modules"))
        << "tests/tools/sigstore has no node_modules: scripts/setup runs npm ci there";
  }
  static fs::path script() { return test::source_dir() / "tests/tools/sigstore/verify.js"; }

  test::ProcessResult oracle(const std::string& bundle, const std::string& artifact = "") {
    test::write_file(dir_.path() / "bundle.json", bundle);
    std::vector<std::string> argv{"node", script().string(), root_file().string(), (dir_.path() / "bundle.json").string(),
                                  "ci@example.com", "https://issuer.example"};
    if (!artifact.empty()) {
      test::write_file(dir_.path() / "artifact", artifact);
      argv.push_back((dir_.path() / "artifact").string());
    }
    return test::run(argv);
  }
};

TEST_F(KeylessOracleTest, SigstoreJsVerifiesTheSigLayoutSignatureAndTheBundle) {
  const std::string signed_payload = payload();
  (void)verify(sig_manifest(signed_payload));
  auto sig_layout = oracle(fixture_.last_signature_as_bundle_v01(), signed_payload);
  EXPECT_EQ(sig_layout.exit_code, 0) << sig_layout.out << sig_layout.err;
  auto bundle = fixture_.dsse_bundle(test::SigstoreFixture::image_statement(kImage, kAddress), {});
  EXPECT_EQ(bundle_error_of(bundle), "(verified)");
  auto dsse = oracle(bundle);
  EXPECT_EQ(dsse.exit_code, 0) << dsse.out << dsse.err;
}

TEST_F(KeylessOracleTest, SigstoreJsVerifiesABundleTimestampedByTheTsaWithoutASet) {
  auto bundle = fixture_.dsse_bundle(test::SigstoreFixture::image_statement(kImage, kAddress),
                                     {.timestamped = true, .without_set = true});
  EXPECT_EQ(bundle_error_of(bundle), "(verified)");
  auto result = oracle(bundle);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
}

TEST_F(KeylessOracleTest, SigstoreJsRefusesWhatPodplaneRefuses) {
  for (auto [name, options] : std::vector<std::pair<std::string, Options>>{
           {"timestamp_by_other_tsa", Options{.timestamped = true, .timestamp_by_other_tsa = true, .without_set = true}},
           {"without_set and no timestamp", Options{.without_set = true}},
           {"sct_by_other_log", Options{.sct_by_other_log = true}},
           {"set_by_other_key", Options{.set_by_other_key = true}},
           {"issued_by_other_ca", Options{.issued_by_other_ca = true}},
           {"other identity", Options{.identity = "mallory@example.com"}},
           {"proof_to_other_root", Options{.proof_to_other_root = true}}}) {
    auto bundle = fixture_.dsse_bundle(test::SigstoreFixture::image_statement(kImage, kAddress), options);
    EXPECT_NE(bundle_error_of(bundle), "(verified)") << name;
    auto result = oracle(bundle);
    EXPECT_EQ(result.exit_code, 1) << name << ": sigstore-js: " << result.out << result.err;
  }
}

}  // namespace
}  // namespace podplane::cache
