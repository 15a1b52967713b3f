#include "fetch/signature_recheck.hpp"

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cache/openpgp.hpp"
#include "lockfile/shasums.hpp"

namespace podplane::fetch {

namespace {

std::vector<std::string> armored_keys_of(const std::string& keys_json) {
  std::vector<std::string> armors;
  auto document = nlohmann::json::parse(keys_json, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object()) return armors;
  auto list = document.find("gpg_public_keys");
  if (list == document.end() || !list->is_array()) return armors;
  for (const auto& key : *list) {
    if (key.is_object() && key.contains("ascii_armor") && key["ascii_armor"].is_string()) {
      armors.push_back(key["ascii_armor"].get<std::string>());
    }
  }
  return armors;
}

}  // namespace

SignatureRecheck recheck_provider_signatures(const cache::Store& store) {
  SignatureRecheck result;
  // One SHA256SUMS signature covers every platform of a release: verify it once.
  cache::SignatureMemo signatures;  // by sums + signature + keys digests
  for (const auto& package : store.artifacts({.kind = cache::ArtifactKind::provider_package})) {
    for (const auto& provenance : store.provenance_of(package.id)) {
      if (provenance.signature_digest.empty() || provenance.shasums_digest.empty()) continue;  // not signed upstream
      const std::string what = package.address + " " + package.version + " " + package.filename;
      ++result.packages_checked;
      std::string shasums;
      try {
        shasums = store.read_object(provenance.shasums_digest);
        const auto& signature =
            signatures.check(provenance.shasums_digest + provenance.signature_digest + provenance.keys_digest, [&] {
              cache::SigningKeys keys{armored_keys_of(store.read_object(provenance.keys_digest)),
                               "the registry's signing keys stored for " + package.address + " " + package.version};
              auto check = cache::verify_detached_signature(shasums, store.read_object(provenance.signature_digest), keys,
                                                     "SHA256SUMS of " + package.address + " " + package.version);
              ++result.signatures_checked;
              return check.fingerprint;
            });
        if (!signature.error.empty()) {
          result.problems.push_back(what + ": upstream signature does not verify offline: " + signature.error);
          continue;
        }
        if (!provenance.key_fingerprint.empty() && signature.fingerprint != provenance.key_fingerprint) {
          result.problems.push_back(
              mismatch_message(what + ": signed by another key than recorded", provenance.key_fingerprint, signature.fingerprint));
        }
      } catch (const Error& error) {
        result.problems.push_back(what + ": upstream signature material unreadable: " + error.what());
        continue;
      }
      std::string listed;
      try {
        auto lines = lockfile::parse_shasums(shasums, "the stored SHA256SUMS of " + package.address + " " + package.version);
        if (auto line = lines.find(package.filename); line != lines.end()) listed = line->second;
      } catch (const Error& error) {
        result.problems.push_back(what + ": " + error.what());
        continue;
      }
      if (listed != package.digest) {
        result.problems.push_back(mismatch_message(what + ": signed SHA256SUMS does not list this package's digest",
                                                   package.digest, listed.empty() ? "(no line)" : listed));
      }
    }
  }
  return result;
}

}  // namespace podplane::fetch
