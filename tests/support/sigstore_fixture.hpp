#pragma once
// A local sigstore for tests: a Fulcio CA (root and intermediate), a Rekor key, a CT log key and
// an RFC 3161 timestamp authority (ECDSA P-256, made with OpenSSL EVP; the timestamps made with
// OpenSSL's TS code), the trusted_root.json naming them, and keyless
// signatures made as Fulcio, Rekor and the CT log would make them: a short-lived leaf
// certificate for an identity and issuer with an embedded SCT, the Rekor entry with its signed
// entry timestamp (SET) and an inclusion proof under a signed checkpoint. Both of cosign's
// layouts come out of one signature: the annotations of a .sig layer, and a sigstore bundle.
// Knobs make each check fail on its own. Not thread-safe; a fixture per test.
#include <ctime>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace podplane::test {

class SigstoreFixture {
 public:
  SigstoreFixture();
  ~SigstoreFixture();
  SigstoreFixture(const SigstoreFixture&) = delete;
  SigstoreFixture& operator=(const SigstoreFixture&) = delete;

  // The trusted root of this fixture's CA, Rekor and CT log.
  std::string trusted_root_json() const;

  struct Options {
    std::string identity = "ci@example.com";  // an email; a URI when it has "://"
    std::string issuer = "https://issuer.example";
    std::time_t signed_at = 0;      // the Rekor entry's integratedTime; 0: now
    std::time_t certificate_at = 0;  // the leaf's notBefore (it lives 10 minutes); 0: signed_at - 60
    bool sct_by_other_log = false;  // the SCT signed by a CT log key the trusted root does not list
    bool set_by_other_key = false;  // the SET signed by a key the trusted root does not list
    bool issued_by_other_ca = false;  // the leaf issued by a CA the trusted root does not list
    bool proof_to_other_root = false;  // the inclusion proof leads to another root than the checkpoint's
    bool timestamped = false;           // an RFC 3161 timestamp of the signature by the TSA
    bool timestamp_by_other_tsa = false;  // ... by a TSA the trusted root does not list
    std::time_t timestamp_at = 0;       // the timestamp's genTime; 0: signed_at
    bool without_set = false;           // the bundle's Rekor entry has its inclusion proof only
  };

  // A keyless signature of `payload` as cosign's .sig layout carries it: the annotations of the
  // simple-signing layer (signature, certificate, chain, bundle).
  nlohmann::json sig_layer_annotations(const std::string& payload, const Options& options);
  // The same signature (made again) as a sigstore bundle v0.1 of a message signature, for the
  // oracle: what sigstore-js verifies of the .sig layout, with the payload as the artifact.
  // Call right after sig_layer_annotations(): it repackages that signature.
  std::string last_signature_as_bundle_v01() const;

  // A cosign simple-signing payload naming `digest` under `reference`.
  static std::string simple_signing_payload(const std::string& digest, const std::string& reference);
  // An in-toto statement (v1) whose subject is `name` at `digest`, as cosign's new bundle
  // format signs an image.
  static std::string image_statement(const std::string& digest, const std::string& name);
  // A sigstore bundle v0.3 (certificate, Rekor entry with SET and inclusion proof, DSSE
  // envelope of `statement`).
  std::string dsse_bundle(const std::string& statement, const Options& options);

  struct Keys;

 private:
  std::unique_ptr<Keys> keys_;
  nlohmann::json last_;  // what last_signature_as_bundle_v01() repackages
};

}  // namespace podplane::test
