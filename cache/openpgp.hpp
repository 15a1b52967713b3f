#pragma once
// OpenPGP checks of upstream provider releases (docs/protocols.md §1.4), on librnp: a detached
// signature (binary, as registries publish it, or armored) over a SHA256SUMS document,
// tried against each armored public key the registry lists. Thread-compatible: every call
// uses its own librnp contexts. Errors are podplane::Error naming the document.
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace podplane::cache {

struct SignatureCheck {
  std::string fingerprint;  // primary key fingerprint, 40 upper-case hex (v4 keys)
  std::string key_index;    // which of the given keys verified it, "0", "1", …
};

// The keys a signature is accepted from, and whose they are, for messages: "the registry's
// signing keys for registry.opentofu.org/hashicorp/aws 6.2.0", "the pinned release key of terraform".
struct SigningKeys {
  std::vector<std::string> armored;  // armored blocks, each tried on its own (as the engines do)
  std::string whose;
};

// Verifies `signature` over `data` with the first of `keys` that signed it.
// Throws podplane::Error: "authentication signature from unknown issuer" when no key
// matches (naming, as expected against got, the fingerprints of `keys` and the key the
// signature says signed it), "signature invalid" when a key matches but the data was altered,
// and parse errors for unreadable keys or signatures. `what` names the document (e.g. its
// filename). librnp logs nothing to stderr on the way for a signature by an unlisted key.
[[nodiscard]] SignatureCheck verify_detached_signature(std::string_view data, std::string_view signature,
                                                       const SigningKeys& keys, std::string_view what);

// The primary fingerprints of the keys in one armored block (for messages and pinning).
[[nodiscard]] std::vector<std::string> key_fingerprints(std::string_view armored_key);

// A primary key of an armored block: its fingerprint and the user ids it carries, as written
// by the key's owner (untrusted text: escape it before showing it anywhere).
struct KeyIdentity {
  std::string fingerprint;              // 40 upper-case hex (v4 keys)
  std::vector<std::string> user_ids;    // e.g. "HashiCorp Security <security@hashicorp.com>"
};
// The primary keys of one armored block with their user ids. Error for an unreadable block.
[[nodiscard]] std::vector<KeyIdentity> key_identities(std::string_view armored_key);

// The outcome of each distinct signature, verified once per run: one SHA256SUMS signature
// covers every platform's package of a release, so a recheck of a whole store meets the same
// one many times. Not thread-safe.
class SignatureMemo {
 public:
  struct Outcome {
    std::string fingerprint;  // of the key that signed, when verified
    std::string error;        // why it did not verify; empty when it did
  };
  // The outcome for `key` (the digests that make the signature what it is), running `verify`
  // the first time only: it returns the signer's fingerprint or throws podplane::Error.
  const Outcome& check(const std::string& key, const std::function<std::string()>& verify);

 private:
  std::map<std::string, Outcome> known_;
};

}  // namespace podplane::cache
