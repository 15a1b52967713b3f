#pragma once
// Cosign signatures of the images `deps images` and `deps download` fetch, when the user names
// keys or keyless identities (--cosign-key, --certificate-identity…; docs/images.md "Signed
// images"): the signature manifest at sha256-<hex>.sig (or, keyless, a sigstore bundle among
// the image's referrers) and the blobs it names are fetched into memory, within limits, and
// verified (cache/cosign.hpp) before anything of the image is stored; an accepted signature
// becomes an image_attachment row, image_blob rows for its blobs, and a provenance row naming
// the key or the identity (and, keyless, the trusted root it was checked against).
// Errors: podplane::Error saying why an image is refused.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cache/cosign.hpp"
#include "cache/store.hpp"
#include "fetch/oci_registry.hpp"

namespace podplane::fetch {

// The verified signature of one image, in memory until the image is accepted.
struct FetchedSignature {
  std::string image_digest;                  // the top manifest or index it signs
  std::string version;                       // its row's version: sha256-<hex>.sig, or the image digest (a referrer)
  FetchedManifest manifest;                  // the signature manifest
  std::vector<cache::CosignBlob> blobs;      // its config and layers, in order
  std::map<std::string, std::string> bytes;  // digest → bytes of each, checked against it
  cache::CosignVerified verified;
};

// What a signature may make the run hold in memory before it is verified: a signature
// manifest lists a config and a few layers of a few hundred bytes each, an image a few
// referrers. Each refusal names the limit it hit.
struct SignatureLimits {
  std::int64_t blob_bytes = 4 * 1024 * 1024;        // one blob of a signature manifest
  std::size_t blobs = 64;                           // the blobs one signature manifest lists
  std::int64_t total_bytes = 16 * 1024 * 1024;      // all the blobs of one signature manifest
  std::size_t referrers = 256;                      // the referrers of one image that are looked at
  std::int64_t referrer_bytes = 4 * 1024 * 1024;    // one referrer's manifest
  std::int64_t referrers_total_bytes = 64 * 1024 * 1024;  // all the referrer manifests of one image
};
inline constexpr SignatureLimits kSignatureLimits{};

// Refuses, before any referrer is fetched, a referrers index (its "manifests") past the limits
// by what it lists: the count, each manifest's size, the sizes together (a tag-schema index is
// anyone's to push). Each Error names `where` and the limit. Malformed entries are left to the
// caller.
void check_referrer_limits(const nlohmann::json& listed, const SignatureLimits& limits, const std::string& where);

// Fetches the signature of `image_digest` beside `image` and verifies it with `trust`: the
// .sig tag, and where `trust` names keyless identities and that does not verify, the image's
// referrers that are sigstore bundles. Error: no signature there, or why none verifies.
[[nodiscard]] FetchedSignature fetch_verified_signature(OciPuller& puller, const net::ImageReference& image,
                                                        const std::string& image_digest, const cache::CosignTrust& trust,
                                                        const SignatureLimits& limits = kSignatureLimits);

// What to index for an accepted signature: its attachment row, then a row per blob.
[[nodiscard]] std::vector<cache::Artifact> signature_rows(const net::ImageReference& image, const OciPuller& puller,
                                                          const FetchedSignature& signature);

// The provenance of a signature, recorded once its rows are indexed.
struct ImageSignatureRecord {
  cache::Artifact attachment;  // the row it is about (found again by its key)
  cache::Provenance provenance;
  std::shared_ptr<const cache::SigstoreTrustedRoot> trusted_root;  // keyless: stored as the provenance's keys_digest
};
// `trust` is what verified it: a keyless provenance names the trusted root by its digest.
[[nodiscard]] ImageSignatureRecord signature_record(const net::ImageReference& image, const FetchedSignature& signature,
                                                    const cache::CosignTrust& trust);

// Adds the provenance rows; call inside the transaction that indexed the attachment rows.
void record_image_signatures(cache::Store& store, const std::vector<ImageSignatureRecord>& records);

}  // namespace podplane::fetch
