#pragma once
// Cosign's key-based image signatures (docs/images.md "Signed images"): the signature manifest
// at the tag sha256-<hex>.sig beside the image, whose simple-signing payload layers name the
// image's digest and carry, as the annotation dev.cosignproject.cosign/signature, the base64
// ECDSA-SHA256 (DER) signature over the payload bytes. Checked with OpenSSL against the public
// keys the user names (PEM, ECDSA P-256: cosign.pub as `cosign generate-key-pair` writes it).
// Keyless signatures (a Fulcio certificate, logged in Rekor: cache/sigstore.hpp) come in
// cosign's same layout, the certificate, chain and Rekor bundle as annotations of the layer,
// or as a sigstore bundle attached as an OCI referrer (docs/images.md "Keyless signatures").
// Here, not in the fetch code, because `bundle import` checks stored signatures again.
// No network; a loaded key may be shared by threads. Errors: podplane::Error.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/sigstore.hpp"
#include "cache/store.hpp"

namespace podplane::cache {

namespace cosign_media {
inline constexpr const char* simple_signing = "application/vnd.dev.cosign.simplesigning.v1+json";
inline constexpr const char* signature_annotation = "dev.cosignproject.cosign/signature";
inline constexpr const char* certificate_annotation = "dev.sigstore.cosign/certificate";
inline constexpr const char* chain_annotation = "dev.sigstore.cosign/chain";
inline constexpr const char* bundle_annotation = "dev.sigstore.cosign/bundle";
inline constexpr const char* timestamp_annotation = "dev.sigstore.cosign/rfc3161timestamp";
// A sigstore bundle attached as an OCI referrer: the manifest's artifactType and its one layer.
inline constexpr const char* sigstore_bundle = "application/vnd.dev.sigstore.bundle.v0.3+json";
inline constexpr const char* in_toto = "application/vnd.in-toto+json";
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

// Who may sign an image: one of `keys`, or keyless, one of `identities` under `trusted_root`.
struct CosignTrust {
  std::vector<CosignKey> keys;
  std::vector<KeylessIdentity> identities;
  std::shared_ptr<const SigstoreTrustedRoot> trusted_root;  // set whenever identities are
  [[nodiscard]] bool empty() const { return keys.empty() && identities.empty(); }
  [[nodiscard]] bool keyless() const { return !identities.empty(); }
};

struct CosignVerified {
  // The key that verified it ("sha256:<hex of its DER>"), or for a keyless signature
  // "keyless:<identity> <issuer>".
  std::string key_fingerprint;
  std::string payload_digest;  // the payload (simple-signing, or the sigstore bundle) it verified
  std::optional<KeylessVerified> keyless;
};

// Checks the signature manifest of `image_digest`: some simple-signing layer's payload is
// signed by one of the keys of `trust`, or keyless by one of its identities (the certificate,
// chain and Rekor bundle in the layer's annotations; then the payload's docker-reference must
// also be `address`), and names `image_digest` as critical.image.docker-manifest-digest.
// `payload` returns the bytes of a layer (already checked against its digest by the caller).
// Error saying why not: no simple-signing layer, signed by none of the keys (named), keyless
// and failing a check (named), or signed but naming another digest or repository.
[[nodiscard]] CosignVerified verify_cosign_signature(std::string_view image_digest, std::string_view address,
                                                     std::string_view manifest,
                                                     const std::function<std::string(const std::string& digest)>& payload,
                                                     const CosignTrust& trust);

// Whether a manifest is a sigstore bundle attached as a referrer (its artifactType or its one
// layer's media type is application/vnd.dev.sigstore.bundle…+json); then the layer's
// descriptor, else nullopt.
[[nodiscard]] std::optional<CosignBlob> sigstore_bundle_layer(std::string_view manifest);

// A sigstore bundle (v0.1 to v0.3) of a DSSE envelope whose in-toto statement names
// `image_digest` (and `address`, where the subject has a name), verified keyless against
// `trust` (cache/sigstore.hpp). Error saying why not.
[[nodiscard]] CosignVerified verify_sigstore_bundle(std::string_view image_digest, std::string_view address,
                                                    std::string_view bundle, const CosignTrust& trust);

// The same checks of a stored signature: the image_attachment rows at sha256-<hex>.sig of
// `address` and, for keyless trust, its referrers that are sigstore bundles, with the objects
// of their blobs. Error when there is none, or why none verifies.
[[nodiscard]] CosignVerified verify_stored_cosign_signature(const Store& store, const std::string& address,
                                                            const std::string& image_digest, const CosignTrust& trust);

}  // namespace podplane::cache
