#pragma once
// Offline re-verification of provider packages from the upstream material the store keeps
// (SHA256SUMS, detached signature, registry keys; docs/design.md §4.3), so that `deps verify`
// proves in the air gap what `deps tf` checked online. Reads only; never touches the network.
#include <cstddef>
#include <string>
#include <vector>

#include "cache/store.hpp"

namespace podplane::fetch {

struct SignatureRecheck {
  std::size_t packages_checked = 0;    // provider packages whose provenance was re-verified
  std::size_t signatures_checked = 0;  // distinct SHA256SUMS signatures verified
  std::vector<std::string> problems;   // each names the package and what failed
};

// For every provider package with a signed provenance row: the signature over the stored
// SHA256SUMS verifies against the stored keys, by the recorded key, and the SHA256SUMS line
// for the package's filename equals the package's digest.
[[nodiscard]] SignatureRecheck recheck_provider_signatures(const cache::Store& store);

}  // namespace podplane::fetch
