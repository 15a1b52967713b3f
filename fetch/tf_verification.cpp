#include "fetch/tf_verification.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "base/url.hpp"
#include "net/http.hpp"
#include "cache/openpgp.hpp"
#include "lockfile/shasums.hpp"

namespace podplane::fetch {

SignedSums check_signed_sums(const ProviderDownload& answer, std::string shasums, std::string signature,
                             const std::string& provider, Verification verification) {
  SignedSums sums;
  sums.shasums_url = answer.shasums_url;
  sums.signature_url = answer.shasums_signature_url;
  sums.shasums = std::move(shasums);
  sums.signature = std::move(signature);
  sums.keys_json = answer.signing_keys_json.empty() ? "{}" : answer.signing_keys_json;
  const std::string sums_name = url_basename(answer.shasums_url);
  if (answer.signing_keys.empty()) {
    if (verification != Verification::allow_unverified) {
      throw Error("signature check failed for " + sums_name + ": the registry lists no signing keys for " + provider +
                  "; refusing unsigned packages (pass --allow-unverified to take them, recorded as unverified)");
    }
  } else {
    cache::SigningKeys keys{{}, "the registry's signing keys for " + provider};
    for (const auto& key : answer.signing_keys) keys.armored.push_back(key.ascii_armor);
    sums.fingerprint = cache::verify_detached_signature(sums.shasums, sums.signature, keys, sums_name).fingerprint;
    sums.verified = true;
  }
  // Parsed after the signature check, so a forged document is reported as forged, not as malformed.
  sums.lines = lockfile::parse_shasums(sums.shasums, sums_name);
  return sums;
}

PackageExpectations expect_from_registry(const ProviderDownload& answer, const SignedSums& sums,
                                         const lockfile::Platform& platform) {
  const std::string sums_name = url_basename(sums.shasums_url);
  auto line = sums.lines.find(answer.filename);
  if (line == sums.lines.end()) {
    throw Error("SHA256SUMS check failed: " + sums_name + " has no line for " + answer.filename);
  }
  if (line->second != answer.shasum) {
    throw Error(mismatch_message("SHA256SUMS check failed for " + answer.filename +
                                     ": the signed SHA256SUMS line and the registry's shasum disagree",
                                 "sha256:" + line->second + " (" + sums_name + ")",
                                 "sha256:" + answer.shasum + " (registry shasum)"));
  }
  PackageExpectations expected;
  expected.sha256 = line->second;
  if (auto hashes = answer.package_hashes.find(platform.str()); hashes != answer.package_hashes.end()) {
    for (const auto& hash : hashes->second) {
      if (hash.starts_with("h1:")) expected.h1.push_back(hash);
    }
  }
  if (auto size = answer.package_sizes.find(platform.str()); size != answer.package_sizes.end() && size->second > 0) {
    expected.size = size->second;
  }
  expected.trust = sums.verified ? cache::Trust::signed_upstream : cache::Trust::unverified;
  expected.result = sums.verified ? "signed" : "unverified (--allow-unverified: the registry listed no signing keys)";
  return expected;
}

PackageExpectations expect_from_mirror(const MirrorArchive& archive, const std::string& filename,
                                       Verification verification) {
  PackageExpectations expected;
  for (const auto& hash : archive.hashes) {
    if (hash.starts_with("zh:")) expected.sha256 = hash.substr(3);
    if (hash.starts_with("h1:")) expected.h1.push_back(hash);
  }
  if (expected.sha256.empty() && expected.h1.empty()) {
    if (verification != Verification::allow_unverified) {
      throw Error("the network mirror lists no hashes for " + filename +
                  "; refusing an unverified package (pass --allow-unverified to take it)");
    }
    expected.trust = cache::Trust::unverified;
    expected.result = "unverified (--allow-unverified: the network mirror listed no hashes)";
  } else {
    expected.trust = cache::Trust::checksum;
    expected.result = "network mirror hashes matched";
  }
  return expected;
}

std::vector<std::string> package_failures(const std::string& filename, const PackageExpectations& expected,
                                          const std::string& sha256, std::uint64_t size, const std::string& h1) {
  std::vector<std::string> failures;
  // The download engine already refused a zip whose sha256 differs; said again here so this
  // function alone states everything a package is held to.
  if (!expected.sha256.empty() && expected.sha256 != sha256) {
    failures.push_back(mismatch_message("zip sha256 check failed for " + filename, "sha256:" + expected.sha256,
                                        "sha256:" + sha256));
  }
  if (expected.size && *expected.size != size) {
    failures.push_back(mismatch_message("package size check failed for " + filename,
                                        std::to_string(*expected.size) + " bytes (registry package_size)",
                                        std::to_string(size) + " bytes"));
  }
  if (!expected.h1.empty() && std::find(expected.h1.begin(), expected.h1.end(), h1) == expected.h1.end()) {
    failures.push_back(mismatch_message("h1 check failed for " + filename, expected.h1.front(), h1));
  }
  return failures;
}

}  // namespace podplane::fetch
