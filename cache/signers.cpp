#include "cache/signers.hpp"

#include <algorithm>
#include <tuple>

#include "base/ascii.hpp"
#include "cache/kinds.hpp"
#include "cache/row_rules.hpp"

namespace podplane::cache {

namespace {

// A cosign signature: the `.sig` attachment at tag sha256-<hex> beside the image it signs
// (docs/images.md); .att and .sbom are carried unverified. The digest it signs, or nullopt.
std::optional<std::string> signed_by_cosign_signature(const Artifact& row) {
  if (kind_info(row).signer != Signer::cosign_attachment) return std::nullopt;
  auto signed_digest = image_attachment_tag(row.version);
  if (!signed_digest || row.version != image_signature_tag(*signed_digest)) return std::nullopt;
  return signed_digest;
}

}  // namespace

std::optional<Provenance> newest_check(const ProvenanceByRow& provenance, const Artifact& row) {
  auto it = provenance.find(row.id);
  if (it == provenance.end() || it->second.empty()) return std::nullopt;
  return *std::max_element(it->second.begin(), it->second.end(), [](const auto& a, const auto& b) {
    return std::tie(a.checked_at, a.result) < std::tie(b.checked_at, b.result);
  });
}

SignerLookup::SignerLookup(const std::vector<Artifact>& rows, const ProvenanceByRow& provenance, const KeysByDocument& keys)
    : provenance_(provenance), keys_(keys), tops_(rows) {
  for (const auto& a : rows) add_cosign_signature(a);
}

Signers SignerLookup::of(const Artifact& row) const {
  switch (kind_info(row).signer) {
    case Signer::unset:
    case Signer::none:
    case Signer::bundle_signature: return {};
    case Signer::openpgp_keys_document: {
      auto checked = newest_check(provenance_, row);
      if (!checked || checked->key_fingerprint.empty()) return {};
      return {{checked->key_fingerprint}, user_ids(*checked)};
    }
    case Signer::pinned_release_key: {
      std::string signer;  // the last check that names a key
      if (auto it = provenance_.find(row.id); it != provenance_.end())
        for (const auto& check : it->second)
          if (!check.key_fingerprint.empty()) signer = check.key_fingerprint;
      if (signer.empty()) return {};
      return {{signer}, {}};
    }
    case Signer::cosign_attachment:
      // A signature names the keys that verified it; an attestation or SBOM is signed by none.
      if (signed_by_cosign_signature(row)) return {own_keys(row), {}};
      return {};
    case Signer::cosign_key: {
      // What a tag names is signed: its index, or the manifest stored without one.
      auto it = cosign_.find({row.address, tops_.top_digest(row)});
      if (it == cosign_.end()) return {};
      return {it->second, {}};
    }
  }
  return {};
}

void SignerLookup::add_cosign_signature(const Artifact& signature) {
  auto signed_digest = signed_by_cosign_signature(signature);
  if (!signed_digest) return;
  auto& keys = cosign_[{signature.address, *signed_digest}];
  for (auto& key : own_keys(signature))
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(std::move(key));
}

// The keys its own checks name, each once, in the order checked.
std::vector<std::string> SignerLookup::own_keys(const Artifact& row) const {
  std::vector<std::string> keys;
  if (auto it = provenance_.find(row.id); it != provenance_.end())
    for (const auto& p : it->second)
      if (!p.key_fingerprint.empty() && std::find(keys.begin(), keys.end(), p.key_fingerprint) == keys.end())
        keys.push_back(p.key_fingerprint);
  return keys;
}

// The user ids of the key that verified a signature: the keys document's key whose primary
// fingerprint ends with what provenance recorded (a fingerprint, or a 16-hex key id).
std::vector<std::string> SignerLookup::user_ids(const Provenance& provenance) const {
  std::vector<std::string> out;
  auto it = keys_.find(provenance.keys_digest);
  if (it == keys_.end() || provenance.key_fingerprint.empty()) return out;
  auto wanted = ascii_lower(provenance.key_fingerprint);
  for (const auto& key : it->second) {
    auto fingerprint = ascii_lower(key.fingerprint);
    if (fingerprint.size() >= wanted.size() && fingerprint.compare(fingerprint.size() - wanted.size(), wanted.size(), wanted) == 0)
      out.insert(out.end(), key.user_ids.begin(), key.user_ids.end());
  }
  return out;
}

}  // namespace podplane::cache
