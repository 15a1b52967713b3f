#pragma once
// Upstream SHA256SUMS documents as the engines read them (tf-protocols.md §1.4).
#include <map>
#include <string>

namespace podplane::mirror {

// "<64 hex>  <name>" per line → name → lower-case hex; the first line for a name wins. A single
// malformed non-blank line makes the whole document count for nothing: podplane::Error naming `what`.
[[nodiscard]] std::map<std::string, std::string> parse_shasums(const std::string& text, const std::string& what);

}  // namespace podplane::mirror
