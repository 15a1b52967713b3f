#pragma once
// Cosign signatures of the images `deps images` and `deps download` fetch, when the user names
// keys (--cosign-key; docs/images.md "Signed images"): the signature manifest at
// sha256-<hex>.sig and every blob it names are fetched into memory and verified
// (cache/cosign.hpp) before anything of the image is stored; an accepted signature becomes an
// image_attachment row, image_blob rows for its blobs, and a provenance row naming the key.
// Errors: podplane::Error saying why an image is refused.
#include <map>
#include <string>
#include <vector>

#include "cache/cosign.hpp"
#include "cache/store.hpp"
#include "fetch/oci_registry.hpp"

namespace podplane::fetch {

// The verified signature of one image, in memory until the image is accepted.
struct FetchedSignature {
  std::string image_digest;                  // the top manifest or index it signs
  FetchedManifest manifest;                  // the signature manifest at sha256-<hex>.sig
  std::vector<cache::CosignBlob> blobs;      // its config and layers, in order
  std::map<std::string, std::string> bytes;  // digest → bytes of each, checked against it
  cache::CosignVerified verified;
};

// Fetches the signature of `image_digest` beside `image` and verifies it with `keys`. Error:
// no signature there, or why it does not verify.
[[nodiscard]] FetchedSignature fetch_verified_signature(OciPuller& puller, const net::ImageReference& image,
                                                        const std::string& image_digest,
                                                        const std::vector<cache::CosignKey>& keys);

// What to index for an accepted signature: its attachment row, then a row per blob.
[[nodiscard]] std::vector<cache::Artifact> signature_rows(const net::ImageReference& image, const OciPuller& puller,
                                                          const FetchedSignature& signature);

// The provenance of a signature, recorded once its rows are indexed.
struct ImageSignatureRecord {
  cache::Artifact attachment;  // the row it is about (found again by its key)
  cache::Provenance provenance;
};
[[nodiscard]] ImageSignatureRecord signature_record(const net::ImageReference& image, const FetchedSignature& signature);

// Adds the provenance rows; call inside the transaction that indexed the attachment rows.
void record_image_signatures(cache::Store& store, const std::vector<ImageSignatureRecord>& records);

}  // namespace podplane::fetch
