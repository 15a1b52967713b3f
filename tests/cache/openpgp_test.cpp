// Detached OpenPGP signatures over SHA256SUMS, checked with librnp against keys made by gpg.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "cache/openpgp.hpp"
#include "tests/support/gpg_keys.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

test::GpgKeys& keys() { return test::gpg_keys(); }

const SigningKeys kUnreadableKey{{"-----BEGIN PGP PUBLIC KEY BLOCK-----\nxx"}, "a broken key"};

// `names`' keys of the test binary, as the keys a signature is accepted from.
SigningKeys test_keys(const std::vector<std::string>& names) {
  SigningKeys accepted{{}, "the test's keys"};
  for (const auto& name : names) accepted.armored.push_back(keys().armor(name));
  return accepted;
}

const std::string kSums = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  terraform-provider-x_1.0.0_linux_amd64.zip\n";

TEST(OpenPgp, RsaAndEd25519SignaturesVerifyAndNameTheKey) {
  for (const char* name : {"rsa", "ed25519"}) {
    auto signature = keys().sign(name, kSums);
    auto check = verify_detached_signature(kSums, signature, test_keys({"wrong", name}), "SUMS");
    EXPECT_EQ(check.fingerprint, keys().fingerprint(name)) << name;
    EXPECT_EQ(check.key_index, "1");
  }
}

TEST(OpenPgp, ArmoredSignatureAlsoVerifies) {
  auto signature = keys().sign("ed25519", kSums, /*armored=*/true);
  EXPECT_EQ(verify_detached_signature(kSums, signature, test_keys({"ed25519"}), "SUMS").fingerprint,
            keys().fingerprint("ed25519"));
}

TEST(OpenPgp, SignatureByAnUnlistedKeyIsUnknownIssuer) {
  auto signature = keys().sign("wrong", kSums);
  try {
    (void)verify_detached_signature(kSums, signature, test_keys({"rsa", "ed25519"}), "x_SHA256SUMS");
    FAIL() << "accepted a signature by an unlisted key";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("unknown issuer"), std::string::npos) << message;
    EXPECT_NE(message.find("x_SHA256SUMS"), std::string::npos) << message;
    // Expected against got: the fingerprints of the keys tried, and the key that signed.
    EXPECT_NE(message.find("expected: a signature by the test's keys: " + keys().fingerprint("rsa") + ", " +
                           keys().fingerprint("ed25519")),
              std::string::npos)
        << message;
    const std::string signer = keys().fingerprint("wrong");
    EXPECT_NE(message.find("got:      a signature by " + signer + " (key id " + signer.substr(24) + "), which is none of them"),
              std::string::npos)
        << message;
  }
}

// librnp's own log (always on in Debian's build) never reaches stderr, whatever fails.
TEST(OpenPgp, LibrnpWritesNothingToStderr) {
  auto by_wrong = keys().sign("wrong", kSums);
  auto by_rsa = keys().sign("rsa", kSums);
  testing::internal::CaptureStderr();
  EXPECT_THROW((void)verify_detached_signature(kSums, by_wrong, test_keys({"rsa"}), "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature("altered", by_rsa, test_keys({"rsa"}), "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature(kSums, "not a signature", test_keys({"rsa"}), "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature(kSums, by_rsa, kUnreadableKey, "SUMS"), Error);
  EXPECT_THROW((void)key_identities("not a key"), Error);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(OpenPgp, AlteredDocumentIsInvalid) {
  auto signature = keys().sign("rsa", kSums);
  std::string altered = kSums;
  altered[0] = '1';
  try {
    (void)verify_detached_signature(altered, signature, test_keys({"rsa"}), "SUMS");
    FAIL() << "accepted a signature over other bytes";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("signature invalid"), std::string::npos) << error.what();
  }
}

TEST(OpenPgp, GarbageInputsAreErrorsNotCrashes) {
  auto signature = keys().sign("rsa", kSums);
  EXPECT_THROW((void)verify_detached_signature(kSums, "", test_keys({"rsa"}), "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature(kSums, "not a signature", test_keys({"rsa"}), "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature(kSums, signature, kUnreadableKey, "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature(kSums, signature, test_keys({}), "SUMS"), Error);
}

TEST(OpenPgp, KeyFingerprints) {
  auto prints = key_fingerprints(keys().armor("ed25519"));
  ASSERT_EQ(prints.size(), 1u);
  EXPECT_EQ(prints[0], keys().fingerprint("ed25519"));
}

}  // namespace
}  // namespace podplane::cache
