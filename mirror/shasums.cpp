#include "mirror/shasums.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "base/error.hpp"
#include "base/hex.hpp"

namespace podplane::mirror {

std::map<std::string, std::string> parse_shasums(const std::string& text, const std::string& what) {
  std::map<std::string, std::string> out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::stringstream fields(line);
    std::vector<std::string> parts;
    for (std::string field; fields >> field;) parts.push_back(field);
    if (parts.empty()) continue;
    bool hex = parts[0].size() == 64 && is_hex(parts[0]);
    if (parts.size() != 2 || !hex) throw Error("SHA256SUMS check failed: " + what + " has a malformed line: " + line);
    std::string digest = parts[0];
    std::transform(digest.begin(), digest.end(), digest.begin(), [](unsigned char c) { return std::tolower(c); });
    out.emplace(parts[1], digest);
  }
  return out;
}

}  // namespace podplane::mirror
