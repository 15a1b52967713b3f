#pragma once
// Upstream SHA256SUMS documents as the engines read them (docs/protocols.md §1.4).
#include <map>
#include <string>
#include <vector>

namespace podplane::lockfile {

// "<64 hex>  <name>" per line → name → lower-case hex; the first line for a name wins. A single
// malformed non-blank line makes the whole document count for nothing: podplane::Error naming `what`.
[[nodiscard]] std::map<std::string, std::string> parse_shasums(const std::string& text, const std::string& what);

// The `zh:` hash of every line of a signed SHA256SUMS document, in document order: what
// `providers lock` records for a signed release (every platform and the `_manifest.json`
// line, not only the platforms installed). Same validity rule and Error as parse_shasums.
[[nodiscard]] std::vector<std::string> shasums_zh_hashes(const std::string& text, const std::string& what);

}  // namespace podplane::lockfile
