#include "lockfile/shasums.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "base/ascii.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "lockfile/hash.hpp"

namespace podplane::lockfile {

namespace {

// Every (name, lower-case hex) line of the document, in order; blank lines skipped.
std::vector<std::pair<std::string, std::string>> shasums_lines(const std::string& text, const std::string& what) {
  std::vector<std::pair<std::string, std::string>> out;
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
    digest = ascii_lower(digest);
    out.emplace_back(parts[1], digest);
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> parse_shasums(const std::string& text, const std::string& what) {
  std::map<std::string, std::string> out;
  for (auto& [name, digest] : shasums_lines(text, what)) out.emplace(std::move(name), std::move(digest));
  return out;
}

std::vector<std::string> shasums_zh_hashes(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  for (const auto& line : shasums_lines(text, what)) out.push_back(zh_hash(line.second));
  return out;
}

}  // namespace podplane::lockfile
