#pragma once
// Which cosign keys or keyless identities each image needs (docs/images.md "Signing policy"):
// every image the same (--cosign-key; --certificate-identity… with --trusted-root), or per
// registry and repository from a policy file (--cosign-policy):
//   {"default": "unsigned" | {"keys": ["a.pub"]},
//    "images": {"registry.k8s.io": {"keyless": [{"identity": "krel-trust@k8s-releng-prod.iam.gserviceaccount.com",
//                                                "issuer": "https://accounts.google.com"}],
//                                   "trusted_root": "trusted_root.json"},
//               "ghcr.io/acme/tool": "unsigned"}}
// An entry names a registry, or a registry and a repository path, and covers every repository
// below it; the longest entry that covers an image wins, else "default" (itself "unsigned" when
// absent). Key files are relative to the policy file. Immutable once loaded: thread-safe.
// Errors: podplane::Error naming the file and the entry.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cosign.hpp"

namespace podplane::cache {

class CosignPolicy {
 public:
  // Every image needs a signature `trust` accepts; none when it is empty.
  explicit CosignPolicy(CosignTrust trust = {});
  [[nodiscard]] static CosignPolicy load(const std::filesystem::path& file);

  // Who may sign the image at `address` (registry/repository); empty: no signature needed.
  [[nodiscard]] const CosignTrust& trust_for(std::string_view address) const;
  // Whether some image needs a signature.
  [[nodiscard]] bool requires_signatures() const;

 private:
  CosignTrust default_;
  std::map<std::string, CosignTrust, std::less<>> entries_;  // registry[/repository] → who signs
};

// --certificate-identity[-regexp], --certificate-oidc-issuer[-regexp] and --trusted-root.
struct KeylessFlags {
  KeylessIdentity identity;
  std::optional<std::filesystem::path> trusted_root;
  [[nodiscard]] bool given() const {
    return trusted_root || !identity.identity.empty() || !identity.identity_regexp.empty() || !identity.issuer.empty() ||
           !identity.issuer_regexp.empty();
  }
};

// The policy of --cosign-key FILE... and the keyless flags (a signature either accepts will
// do), or of --cosign-policy FILE. UsageError when the policy is combined with the others, or
// the keyless flags are incomplete (an identity, an issuer and the trusted root, all three).
[[nodiscard]] CosignPolicy cosign_policy_of(const std::vector<std::filesystem::path>& keys,
                                            const std::optional<std::filesystem::path>& policy_file,
                                            const KeylessFlags& keyless = {});

// The tops of the images among `rows` (cache/image_tops.hpp: their indexes, and the manifests
// whose tag has no index in `rows` or the store) that `policy` wants signed, each checked as
// verify_stored_cosign_signature does. Error naming the first image that fails and why. Call
// where the rows are visible (the transaction that adds them), so that a failure rolls them back.
void verify_stored_image_signatures(const Store& store, const std::vector<Artifact>& rows, const CosignPolicy& policy);

}  // namespace podplane::cache
