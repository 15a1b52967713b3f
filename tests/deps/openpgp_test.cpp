// Detached OpenPGP signatures over SHA256SUMS, checked with librnp against keys made by gpg.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "cache/openpgp.hpp"
#include "tests/deps/gpg_keys.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::mirror {
namespace {

test::GpgKeys& keys() { return test::gpg_keys(); }

const std::string kSums = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  terraform-provider-x_1.0.0_linux_amd64.zip\n";

TEST(OpenPgp, RsaAndEd25519SignaturesVerifyAndNameTheKey) {
  for (const char* name : {"rsa", "ed25519"}) {
    auto signature = keys().sign(name, kSums);
    auto check = verify_detached_signature(kSums, signature, {keys().armor("wrong"), keys().armor(name)}, "SUMS");
    EXPECT_EQ(check.fingerprint, keys().fingerprint(name)) << name;
    EXPECT_EQ(check.key_index, "1");
  }
}

TEST(OpenPgp, ArmoredSignatureAlsoVerifies) {
  auto signature = keys().sign("ed25519", kSums, /*armored=*/true);
  EXPECT_EQ(verify_detached_signature(kSums, signature, {keys().armor("ed25519")}, "SUMS").fingerprint,
            keys().fingerprint("ed25519"));
}

TEST(OpenPgp, SignatureByAnUnlistedKeyIsUnknownIssuer) {
  auto signature = keys().sign("wrong", kSums);
  try {
    (void)verify_detached_signature(kSums, signature, {keys().armor("rsa"), keys().armor("ed25519")}, "x_SHA256SUMS");
    FAIL() << "accepted a signature by an unlisted key";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("unknown issuer"), std::string::npos) << message;
    EXPECT_NE(message.find("x_SHA256SUMS"), std::string::npos) << message;
  }
}

TEST(OpenPgp, AlteredDocumentIsInvalid) {
  auto signature = keys().sign("rsa", kSums);
  std::string altered = kSums;
  altered[0] = '1';
  try {
    (void)verify_detached_signature(altered, signature, {keys().armor("rsa")}, "SUMS");
    FAIL() << "accepted a signature over other bytes";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("signature invalid"), std::string::npos) << error.what();
  }
}

TEST(OpenPgp, GarbageInputsAreErrorsNotCrashes) {
  auto signature = keys().sign("rsa", kSums);
  EXPECT_THROW((void)verify_detached_signature(kSums, "", {keys().armor("rsa")}, "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature(kSums, "not a signature", {keys().armor("rsa")}, "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature(kSums, signature, {"-----BEGIN PGP PUBLIC KEY BLOCK-----\nxx"}, "SUMS"), Error);
  EXPECT_THROW((void)verify_detached_signature(kSums, signature, {}, "SUMS"), Error);
}

TEST(OpenPgp, KeyFingerprints) {
  auto prints = key_fingerprints(keys().armor("ed25519"));
  ASSERT_EQ(prints.size(), 1u);
  EXPECT_EQ(prints[0], keys().fingerprint("ed25519"));
}

}  // namespace
}  // namespace podplane::mirror
