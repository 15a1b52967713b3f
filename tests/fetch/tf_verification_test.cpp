// The trust checks of provider packages as functions of their inputs: signed SHA256SUMS
// (real gpg signatures, checked with librnp), SHA256SUMS line == registry shasum, network
// mirror hashes, and what a landed zip is held to. No server, no store.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "fetch/tf_package_job.hpp"
#include "fetch/tf_verification.hpp"
#include "tests/support/gpg_keys.hpp"

namespace podplane::fetch {
namespace {

const std::string kAmd64 = "terraform-provider-x_1.0.0_linux_amd64.zip";
const std::string kArm64 = "terraform-provider-x_1.0.0_linux_arm64.zip";
const std::string kAmd64Sum = std::string(64, 'a');
const std::string kArm64Sum = std::string(64, 'b');
const std::string kSums = kAmd64Sum + "  " + kAmd64 + "\n" + kArm64Sum + "  " + kArm64 + "\n";
const std::string kProvider = "registry.opentofu.org/acme/x 1.0.0";

// A registry download answer for linux_amd64 whose keys are `key_names`.
ProviderDownload answer(const std::vector<std::string>& key_names, const std::string& shasum = kAmd64Sum) {
  ProviderDownload download;
  download.filename = kAmd64;
  download.download_url = "https://releases.test/x/1.0.0/" + kAmd64;
  download.shasums_url = "https://releases.test/x/1.0.0/terraform-provider-x_1.0.0_SHA256SUMS";
  download.shasums_signature_url = download.shasums_url + ".sig";
  download.shasum = shasum;
  for (const auto& name : key_names) download.signing_keys.push_back({test::gpg_keys().armor(name), "", ""});
  if (!key_names.empty()) download.signing_keys_json = R"({"gpg_public_keys":[]})";
  download.package_hashes["linux_amd64"] = {"h1:amd64hash=", "zh:" + kAmd64Sum};
  download.package_sizes["linux_amd64"] = 4096;
  return download;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

void expect_parts(const std::string& message, const std::vector<std::string>& parts) {
  ASSERT_FALSE(message.empty()) << "no error";
  for (const auto& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "no \"" << part << "\" in:\n" << message;
}

// ---- signed SHA256SUMS ---------------------------------------------------------------------

TEST(TfVerification, SumsSignedByAListedKeyAreVerifiedAndRead) {
  auto signature = test::gpg_keys().sign("ed25519", kSums);
  auto sums = check_signed_sums(answer({"rsa", "ed25519"}), kSums, signature, kProvider, Verification::required);
  EXPECT_TRUE(sums.verified);
  EXPECT_EQ(sums.fingerprint, test::gpg_keys().fingerprint("ed25519"));
  EXPECT_EQ(sums.lines, (std::map<std::string, std::string>{{kAmd64, kAmd64Sum}, {kArm64, kArm64Sum}}));
  EXPECT_EQ(sums.shasums, kSums);
  EXPECT_EQ(sums.signature, signature);
  EXPECT_EQ(sums.keys_json, R"({"gpg_public_keys":[]})");
}

TEST(TfVerification, SumsSignedByAnUnlistedKeyAreRefused) {
  auto signature = test::gpg_keys().sign("wrong", kSums);
  expect_parts(error_of([&] { (void)check_signed_sums(answer({"rsa"}), kSums, signature, kProvider, Verification::required); }),
               {"terraform-provider-x_1.0.0_SHA256SUMS", "unknown issuer"});
  // --allow-unverified never excuses a signature that fails.
  expect_parts(error_of([&] {
                 (void)check_signed_sums(answer({"rsa"}), kSums, signature, kProvider, Verification::allow_unverified);
               }),
               {"unknown issuer"});
}

TEST(TfVerification, AlteredSumsAreRefused) {
  auto signature = test::gpg_keys().sign("rsa", kSums);
  std::string altered = kSums;
  altered[0] = 'c';
  expect_parts(error_of([&] { (void)check_signed_sums(answer({"rsa"}), altered, signature, kProvider, Verification::required); }),
               {"signature invalid"});
}

TEST(TfVerification, NoSigningKeysIsRefusedUnlessAllowed) {
  expect_parts(error_of([&] { (void)check_signed_sums(answer({}), kSums, "", kProvider, Verification::required); }),
               {"signature check failed for terraform-provider-x_1.0.0_SHA256SUMS", "no signing keys for " + kProvider,
                "--allow-unverified"});
  auto sums = check_signed_sums(answer({}), kSums, "", kProvider, Verification::allow_unverified);
  EXPECT_FALSE(sums.verified);
  EXPECT_EQ(sums.fingerprint, "");
  EXPECT_EQ(sums.keys_json, "{}");
  EXPECT_EQ(sums.lines.at(kAmd64), kAmd64Sum);
}

TEST(TfVerification, MalformedSumsAreAnErrorNotACrash) {
  const std::string garbage = "not a SHA256SUMS line\n";
  auto signature = test::gpg_keys().sign("rsa", garbage);
  expect_parts(error_of([&] { (void)check_signed_sums(answer({"rsa"}), garbage, signature, kProvider, Verification::required); }),
               {"terraform-provider-x_1.0.0_SHA256SUMS"});
}

// ---- SHA256SUMS line == registry shasum ---------------------------------------------------

SignedSums signed_sums(bool verified = true) {
  SignedSums sums;
  sums.shasums_url = "https://releases.test/x/1.0.0/terraform-provider-x_1.0.0_SHA256SUMS";
  sums.lines = {{kAmd64, kAmd64Sum}, {kArm64, kArm64Sum}};
  sums.verified = verified;
  sums.fingerprint = verified ? "ABCD" : "";
  return sums;
}

TEST(TfVerification, RegistryAnswerThatAgreesGivesWhatTheZipMustBe) {
  auto expected = expect_from_registry(answer({"rsa"}), signed_sums(), lockfile::Platform::parse("linux_amd64"));
  EXPECT_EQ(expected.sha256, kAmd64Sum);
  EXPECT_EQ(expected.h1, std::vector<std::string>{"h1:amd64hash="});
  EXPECT_EQ(expected.size, std::optional<std::uint64_t>(4096));
  EXPECT_EQ(expected.trust, cache::Trust::signed_upstream);
  EXPECT_EQ(expected.result, "signed");

  auto bare = answer({"rsa"});
  bare.package_hashes.clear();
  bare.package_sizes["linux_amd64"] = 0;  // not listed
  auto without = expect_from_registry(bare, signed_sums(false), lockfile::Platform::parse("linux_amd64"));
  EXPECT_TRUE(without.h1.empty());
  EXPECT_FALSE(without.size);
  EXPECT_EQ(without.trust, cache::Trust::unverified);
  EXPECT_NE(without.result.find("--allow-unverified"), std::string::npos) << without.result;
}

TEST(TfVerification, ShasumThatDisagreesWithTheSignedLineIsRefusedWithExpectedAndGot) {
  const std::string other(64, 'f');
  expect_parts(error_of([&] {
                 (void)expect_from_registry(answer({"rsa"}, other), signed_sums(), lockfile::Platform::parse("linux_amd64"));
               }),
               {"SHA256SUMS check failed for " + kAmd64, "  expected: sha256:" + kAmd64Sum + " (terraform-provider-x_1.0.0_SHA256SUMS)",
                "  got:      sha256:" + other + " (registry shasum)"});
}

TEST(TfVerification, SignedSumsWithoutALineForThePackageAreRefused) {
  auto sums = signed_sums();
  sums.lines.erase(kAmd64);
  expect_parts(error_of([&] { (void)expect_from_registry(answer({"rsa"}), sums, lockfile::Platform::parse("linux_amd64")); }),
               {"terraform-provider-x_1.0.0_SHA256SUMS has no line for " + kAmd64});
}

// ---- network mirror hashes ----------------------------------------------------------------

TEST(TfVerification, MirrorHashesOrAnExplicitFlag) {
  auto expected = expect_from_mirror({"https://mirror.test/x.zip", {"h1:one=", "zh:" + kAmd64Sum, "h1:two="}}, kAmd64,
                                     Verification::required);
  EXPECT_EQ(expected.sha256, kAmd64Sum);
  EXPECT_EQ(expected.h1, (std::vector<std::string>{"h1:one=", "h1:two="}));
  EXPECT_EQ(expected.trust, cache::Trust::checksum);

  expect_parts(error_of([&] { (void)expect_from_mirror({"https://mirror.test/x.zip", {}}, kAmd64, Verification::required); }),
               {"the network mirror lists no hashes for " + kAmd64, "--allow-unverified"});
  auto taken = expect_from_mirror({"https://mirror.test/x.zip", {}}, kAmd64, Verification::allow_unverified);
  EXPECT_EQ(taken.trust, cache::Trust::unverified);
  EXPECT_TRUE(taken.sha256.empty());
}

// ---- what landed --------------------------------------------------------------------------

TEST(TfVerification, LandedPackageIsHeldToItsSha256SizeAndH1) {
  PackageExpectations expected;
  expected.sha256 = kAmd64Sum;
  expected.h1 = {"h1:one=", "h1:two="};
  expected.size = 4096;
  EXPECT_TRUE(package_failures(kAmd64, expected, kAmd64Sum, 4096, "h1:two=").empty());

  auto failures = package_failures(kAmd64, expected, kArm64Sum, 4000, "h1:three=");
  ASSERT_EQ(failures.size(), 3u);
  expect_parts(failures[0], {"zip sha256 check failed for " + kAmd64, "expected: sha256:" + kAmd64Sum, "got:      sha256:" + kArm64Sum});
  expect_parts(failures[1], {"package size check failed for " + kAmd64, "expected: 4096 bytes (registry package_size)",
                             "got:      4000 bytes"});
  expect_parts(failures[2], {"h1 check failed for " + kAmd64, "expected: h1:one=", "got:      h1:three="});

  // Nothing listed: nothing to fail.
  EXPECT_TRUE(package_failures(kAmd64, PackageExpectations{}, kArm64Sum, 1, "h1:any=").empty());
}

// ---- the job's stages ---------------------------------------------------------------------

TEST(TfPackageJob, StagesGoInOrderAndCarryTheirResults) {
  PackageJob job;
  job.filename = kAmd64;
  EXPECT_THROW(job.fetched("digest", 1), Error);  // not checked yet
  EXPECT_THROW(job.hashed("h1:x="), Error);
  auto sums = std::make_shared<const SignedSums>(signed_sums());
  job.checked(kAmd64, "https://releases.test/" + kAmd64, PackageExpectations{kAmd64Sum, {}, 4096, cache::Trust::signed_upstream, "signed"},
              sums);
  EXPECT_EQ(job.stage, PackageJob::Stage::checked);
  EXPECT_THROW(job.checked(kAmd64, "u", {}, nullptr), Error);
  job.fetched(kAmd64Sum, 4096);
  job.hashed("h1:x=");
  EXPECT_EQ(job.stage, PackageJob::Stage::hashed);
  EXPECT_EQ(job.digest, kAmd64Sum);
  EXPECT_EQ(job.size, 4096u);
  EXPECT_EQ(job.h1, "h1:x=");
  EXPECT_EQ(job.sums, sums);
  EXPECT_EQ(job.expected.result, "signed");
}

}  // namespace
}  // namespace podplane::fetch
