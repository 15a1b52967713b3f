#include "cache/rows.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace podplane::cache {

std::string_view to_string(Trust trust) {
  switch (trust) {
    case Trust::signed_upstream: return "signed_upstream";
    case Trust::checksum: return "checksum";
    case Trust::unverified: return "unverified";
  }
  return "unknown";
}

Trust parse_trust(std::string_view text) {
  for (auto trust : {Trust::signed_upstream, Trust::checksum, Trust::unverified}) {
    if (to_string(trust) == text) return trust;
  }
  throw Error("unknown trust level '" + std::string(text) + "' (expected signed_upstream, checksum or unverified)");
}

std::string protocols_column(const std::optional<std::vector<std::string>>& protocols) {
  if (!protocols) return "";
  return nlohmann::json(*protocols).dump();
}

std::optional<std::vector<std::string>> parse_protocols_column(std::string_view text) {
  if (text.empty()) return std::nullopt;
  auto document = nlohmann::json::parse(text, nullptr, false);
  bool ok = document.is_array() &&
            std::all_of(document.begin(), document.end(), [](const nlohmann::json& item) { return item.is_string(); });
  if (!ok) throw Error(mismatch_message("plugin protocols are not a list of strings", "[\"6.0\", …]", std::string(text)));
  return document.get<std::vector<std::string>>();
}

}  // namespace podplane::cache
