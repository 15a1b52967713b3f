#include "cache/sha256.hpp"

#include "lockfile/hash.hpp"

namespace podplane::cache {

std::string sha256_hex_of_file(const std::filesystem::path& file) {
  return lockfile::file_digest_hex(file, lockfile::DigestAlgorithm::sha256);
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace podplane::cache
