#pragma once
// Cosign's key-based image signatures (docs/images.md "Signed images"): the signature manifest
// at the tag sha256-<hex>.sig beside the image, whose simple-signing payload layers name the
// image's digest and carry, as the annotation dev.cosignproject.cosign/signature, the base64
// ECDSA-SHA256 (DER) signature over the payload bytes. Checked with OpenSSL against the public
// keys the user names (PEM, ECDSA P-256: cosign.pub as `cosign generate-key-pair` writes it).
// Here, not in the fetch code, because `bundle import` checks stored signatures again.
// No network; a loaded key may be shared by threads. Errors: podplane::Error.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/store.hpp"

namespace podplane::cache {

namespace cosign_media {
inline constexpr const char* simple_signing = "application/vnd.dev.cosign.simplesigning.v1+json";
inline constexpr const char* signature_annotation = "dev.cosignproject.cosign/signature";
}  // namespace cosign_media

class CosignKey {
 public:
  // Error naming `file` unless it holds one PEM public key on the P-256 curve.
  [[nodiscard]] static CosignKey load(const std::filesystem::path& file);
  // "sha256:<hex of the DER SubjectPublicKeyInfo>": what provenance records and messages name.
  const std::string& fingerprint() const { return fingerprint_; }
  const std::string& file() const { return file_; }
  // Whether `der_signature` is this key's ECDSA-SHA256 signature over `payload`.
  [[nodiscard]] bool verifies(std::string_view payload, std::string_view der_signature) const;

 private:
  struct Handle;
  std::shared_ptr<Handle> key_;
  std::string fingerprint_;
  std::string file_;
};

[[nodiscard]] std::vector<CosignKey> load_cosign_keys(const std::vector<std::filesystem::path>& files);

// A layer of a signature manifest (config first, then layers): every blob it names.
struct CosignBlob {
  std::string digest;  // sha256:<hex>, validated
  std::int64_t size = 0;
};
// The config and layers a signature manifest names. Error (with `where`) when it is not an
// image manifest with valid descriptors.
[[nodiscard]] std::vector<CosignBlob> cosign_manifest_blobs(std::string_view manifest, const std::string& where);

struct CosignVerified {
  std::string key_fingerprint;  // the key that verified it
  std::string payload_digest;   // the simple-signing payload it verified
};

// Checks the signature manifest of `image_digest`: some simple-signing layer's payload is
// signed by one of `keys` and names `image_digest` as critical.image.docker-manifest-digest.
// `payload` returns the bytes of a layer (already checked against its digest by the caller).
// Error saying why not: no simple-signing layer, signed by none of the keys (named), or signed
// but naming another digest.
[[nodiscard]] CosignVerified verify_cosign_signature(std::string_view image_digest, std::string_view manifest,
                                                     const std::function<std::string(const std::string& digest)>& payload,
                                                     const std::vector<CosignKey>& keys);

// The same check of a stored signature: the image_attachment row at sha256-<hex>.sig of
// `address` and the objects of its blobs. Error when there is none, or why it does not verify.
[[nodiscard]] CosignVerified verify_stored_cosign_signature(const Store& store, const std::string& address,
                                                            const std::string& image_digest,
                                                            const std::vector<CosignKey>& keys);

}  // namespace podplane::cache
