#pragma once
// Digest helpers for the store, on lockfile/hash.hpp (OpenSSL EVP). Internal to cache/.
#include <filesystem>
#include <string>
#include <string_view>

namespace podplane::cache {

[[nodiscard]] std::string sha256_hex_of_file(const std::filesystem::path& file);
[[nodiscard]] bool is_sha256_hex(std::string_view text);  // 64 lower-case hex digits

}  // namespace podplane::cache
