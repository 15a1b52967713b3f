// Detached OpenPGP signatures over SHA256SUMS, checked with librnp against keys made by gpg.
#include <gtest/gtest.h>

#include "lockfile/error.hpp"
#include "mirror/openpgp.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::mirror {
namespace {

using test::read_file;
using test::run;
using test::TempDir;
using test::write_file;

// A throwaway gpg home with one key per algorithm, made once for this test binary.
class Keys {
 public:
  Keys() {
    if (!test::have_program("gpg")) throw std::runtime_error("gpg is not installed (apt-get install gpg)");
    make("rsa", "rsa2048");
    make("ed25519", "ed25519");
    make("wrong", "ed25519");
  }
  ~Keys() { (void)run({"gpgconf", "--homedir", home_.path().string(), "--kill", "gpg-agent"}); }

  std::string armor(const std::string& name) const { return armors_.at(name); }
  std::string fingerprint(const std::string& name) const { return fingerprints_.at(name); }

  // A binary (or armored) detached signature of `data` by key `name`.
  std::string sign(const std::string& name, const std::string& data, bool armored = false) {
    auto file = scratch_ / ("data-" + std::to_string(++counter_));
    write_file(file, data);
    std::vector<std::string> args = gpg({"--local-user", fingerprint(name), "--detach-sign"});
    if (armored) args.push_back("--armor");
    args.insert(args.end(), {"--output", file.string() + ".sig", file.string()});
    auto result = run(args);
    if (result.exit_code != 0) throw std::runtime_error("gpg sign failed: " + result.err);
    return read_file(file.string() + ".sig");
  }

 private:
  std::vector<std::string> gpg(std::vector<std::string> args) const {
    std::vector<std::string> all{"gpg", "--homedir", home_.path().string(), "--batch", "--yes", "--quiet",
                                 "--pinentry-mode", "loopback", "--passphrase", ""};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
  void make(const std::string& name, const std::string& algo) {
    std::string uid = "Test " + name + " <" + name + "@test.invalid>";
    auto result = run(gpg({"--quick-gen-key", uid, algo, "sign", "never"}));
    if (result.exit_code != 0) throw std::runtime_error("gpg keygen failed: " + result.err);
    auto listing = run(gpg({"--with-colons", "--list-keys", uid})).out;
    auto at = listing.find("\nfpr:");
    fingerprints_[name] = listing.substr(at + 13, 40);
    armors_[name] = run(gpg({"--armor", "--export", fingerprints_[name]})).out;
  }

  TempDir home_;
  TempDir scratch_;
  int counter_ = 0;
  std::map<std::string, std::string> armors_;
  std::map<std::string, std::string> fingerprints_;
};

Keys& keys() {
  static Keys instance;
  return instance;
}

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
