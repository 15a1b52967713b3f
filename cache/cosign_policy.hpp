#pragma once
// Which cosign keys each image needs (docs/images.md "Signing policy"): every image the same
// keys (--cosign-key), or per registry and repository from a policy file (--cosign-policy):
//   {"default": "unsigned" | {"keys": ["a.pub"]},
//    "images": {"registry.k8s.io": {"keys": ["k8s.pub"]}, "ghcr.io/acme/tool": "unsigned"}}
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
  // Every image needs a signature by one of `keys`; none when `keys` is empty.
  explicit CosignPolicy(std::vector<CosignKey> keys = {});
  [[nodiscard]] static CosignPolicy load(const std::filesystem::path& file);

  // The keys the image at `address` (registry/repository) needs one of; empty: none needed.
  [[nodiscard]] const std::vector<CosignKey>& keys_for(std::string_view address) const;
  // Whether some image needs a signature.
  [[nodiscard]] bool requires_signatures() const;

 private:
  std::vector<CosignKey> default_;
  std::map<std::string, std::vector<CosignKey>, std::less<>> entries_;  // registry[/repository] → keys
};

// The policy of --cosign-key FILE... or --cosign-policy FILE: UsageError when both are given.
[[nodiscard]] CosignPolicy cosign_policy_of(const std::vector<std::filesystem::path>& keys,
                                            const std::optional<std::filesystem::path>& policy_file);

// The images of `rows` (image_index rows, and image_manifest rows that no index of theirs in
// `rows` or the store lists under the same tag) that `policy` wants signed, each checked as
// verify_stored_cosign_signature does. Error naming the first image that fails and why. Call
// where the rows are visible (the transaction that adds them), so that a failure rolls them back.
void verify_stored_image_signatures(const Store& store, const std::vector<Artifact>& rows, const CosignPolicy& policy);

}  // namespace podplane::cache
