#pragma once
// The trust checks of provider packages (docs/deps.md "Trust checks") as functions of their
// inputs: upstream answers and documents in, what the package's bytes must be out. No
// network and no store, so every check can be tried with fixture bytes alone. Thread-
// compatible. Errors are podplane::Error naming the check and the file, with expected and
// got on lines of their own.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "lockfile/platform.hpp"
#include "fetch/registry.hpp"

namespace podplane::fetch {

// Whether a provider with no signing keys (registry) or no hashes (network mirror) may enter
// the store, recorded as unverified. A signature that fails is never accepted.
enum class Verification { required, allow_unverified };

// An upstream SHA256SUMS document with its detached signature, checked against the registry's
// signing keys. Shared by every platform of one provider version.
struct SignedSums {
  std::string shasums_url;
  std::string signature_url;
  std::string shasums;                        // the document as fetched
  std::string signature;                      // the detached signature as fetched
  std::string keys_json;                      // the registry's signing_keys as received; "{}" when none
  std::map<std::string, std::string> lines;   // file name → sha256 hex
  std::string fingerprint;                    // of the key that verified the signature; "" when unverified
  bool verified = false;
};

// Verifies `signature` over `shasums` with the signing keys of `answer` and reads the lines.
// A registry that lists no keys is an Error unless `verification` allows it. `provider`
// ("registry.opentofu.org/hashicorp/aws 6.2.0") names the release in that error.
[[nodiscard]] SignedSums check_signed_sums(const ProviderDownload& answer, std::string shasums, std::string signature,
                                           const std::string& provider, Verification verification);

// What one package's bytes must be, and on whose word.
struct PackageExpectations {
  std::string sha256;                   // hex; "" when nothing names one (a mirror listing only h1)
  std::vector<std::string> h1;          // "h1:…"; any may match; empty when none was listed
  std::optional<std::uint64_t> size;    // the registry's package_size, when listed
  cache::Trust trust = cache::Trust::unverified;
  std::string result;                   // the provenance text: "signed", "network mirror hashes matched", …
};

// The registry path: the signed SHA256SUMS line for the answer's file must equal the
// registry's shasum; the zip will be held to that sha256, to the listed h1 and size.
[[nodiscard]] PackageExpectations expect_from_registry(const ProviderDownload& answer, const SignedSums& sums,
                                                       const lockfile::Platform& platform);

// The network-mirror path: the zh: and h1: hashes of its <version>.json entry. An entry with
// neither is an Error unless `verification` allows it.
[[nodiscard]] PackageExpectations expect_from_mirror(const MirrorArchive& archive, const std::string& filename,
                                                     Verification verification);

// Every way the package that landed (its sha256, size and h1) falls short of `expected`, one
// message each; empty when it passes.
[[nodiscard]] std::vector<std::string> package_failures(const std::string& filename, const PackageExpectations& expected,
                                                        const std::string& sha256, std::uint64_t size,
                                                        const std::string& h1);

}  // namespace podplane::fetch
