#pragma once
// Keyless (Fulcio/Rekor) signatures, verified offline against a sigstore trusted root
// (docs/images.md "Keyless signatures"): the certificate chains to a Fulcio CA of the root that
// was valid when the signature was made, at every time that is proven: the one Rekor's signed
// entry timestamp (SET) signs, and each RFC 3161 timestamp of the signature that a timestamp
// authority (TSA) of the root signed; at least one time must be proven. The log entry is proven
// by its SET or by an inclusion proof, each verifying with a Rekor key of the root;
// an SCT embedded in the certificate verifies with a CT log key of the root; the log entry
// names this signature and payload; the signature verifies with the certificate's key; and the
// certificate's identity (SAN) and OIDC issuer (Fulcio's OIDs 1.3.6.1.4.1.57264.1.8, else .1.1)
// are ones the user named. OpenSSL does every cryptographic check (EVP, X509, CT).
// Here, not in the fetch code, because `bundle import` checks stored signatures again.
// No network; loaded roots are immutable and may be shared by threads. Errors: podplane::Error.
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podplane::cache {

// A sigstore trusted_root.json (the protobuf-specs TrustedRoot, as `cosign trusted-root create`
// writes it or sigstore's TUF repository serves it).
class SigstoreTrustedRoot {
 public:
  // Error naming `file` unless it is a trusted root with at least one certificate authority,
  // one transparency log and one CT log, every key and certificate readable (timestamp
  // authorities are optional).
  [[nodiscard]] static std::shared_ptr<const SigstoreTrustedRoot> load(const std::filesystem::path& file);
  [[nodiscard]] static std::shared_ptr<const SigstoreTrustedRoot> parse(std::string_view text, const std::string& where);
  ~SigstoreTrustedRoot();

  const std::string& where() const { return where_; }  // the file, in messages
  const std::string& text() const { return text_; }    // the document as read (stored with a signature)
  const std::string& digest() const { return digest_; }  // sha256 hex of text()

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  SigstoreTrustedRoot() = default;
  std::string where_, text_, digest_;
  std::unique_ptr<Impl> impl_;
};

// Who must have signed: the certificate's SAN (an email or URI) and its OIDC issuer, each
// exact or a regular expression (ECMAScript, matched anywhere in the value as cosign's
// --certificate-identity-regexp does: anchor it with ^…$ to match it whole).
struct KeylessIdentity {
  std::string identity, identity_regexp;
  std::string issuer, issuer_regexp;
  // Error (a usage error) unless exactly one of identity/identity_regexp and one of
  // issuer/issuer_regexp is set and each regular expression compiles.
  void check(const std::string& where) const;
  [[nodiscard]] bool matches(std::string_view san, std::string_view oidc_issuer) const;
  std::string str() const;  // "identity ci@example.com, issuer https://…", for messages
};

// One Rekor entry as a signature carries it (cosign's bundle annotation, or a sigstore bundle).
struct RekorEntry {
  std::string body;  // the canonicalized body (JSON), decoded
  std::int64_t integrated_time = 0;
  std::int64_t log_index = 0;
  std::string log_id;                  // 32 raw bytes: sha256 of the log's DER public key
  std::string signed_entry_timestamp;  // raw signature; empty when none was given
  struct InclusionProof {
    std::int64_t log_index = 0, tree_size = 0;
    std::string root_hash;            // raw
    std::vector<std::string> hashes;  // raw
    std::string checkpoint;           // the signed note
  };
  std::optional<InclusionProof> inclusion_proof;
};

// What a keyless signature is made of, from either layout.
struct KeylessEvidence {
  enum class Entry { hashedrekord, dsse };  // what the Rekor entry logs
  Entry entry_kind = Entry::hashedrekord;
  std::string certificate_der;
  std::vector<std::string> chain_der;  // intermediates the signature carries (may be empty)
  std::string signature;               // raw
  std::string signed_bytes;            // what the signature is over: the payload, or DSSE's PAE
  std::string payload;                 // the payload the log entry's hash names
  RekorEntry rekor;
  // DER RFC 3161 TimeStampResponses over `signature` (cosign's rfc3161timestamp annotation, a
  // bundle's timestampVerificationData); may be empty.
  std::vector<std::string> rfc3161_timestamps;
};

struct KeylessVerified {
  std::string identity;  // the certificate's SAN
  std::string issuer;    // its OIDC issuer
  std::string signed_at;  // RFC 3339 UTC: the SET's time, else the first TSA timestamp's
  std::string certificate_fingerprint;  // "sha256:<hex of the DER certificate>"
};

// Every check of the header comment, against `root`, accepting any one of `identities`. Error
// saying which check failed, with expected and got where there are two values.
[[nodiscard]] KeylessVerified verify_keyless(const KeylessEvidence& evidence, const SigstoreTrustedRoot& root,
                                             const std::vector<KeylessIdentity>& identities);

// DSSE's pre-authentication encoding: what a DSSE envelope's signature is over.
[[nodiscard]] std::string dsse_pae(std::string_view payload_type, std::string_view payload);

// "2026-12-06T22:44:02Z" for a time_t, and back (fractions of a second allowed). nullopt when
// not of that form.
[[nodiscard]] std::string rfc3339_utc(std::time_t when);
[[nodiscard]] std::optional<std::time_t> parse_rfc3339(std::string_view text);

}  // namespace podplane::cache
