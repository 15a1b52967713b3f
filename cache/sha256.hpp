#pragma once
// Streaming sha256 for ingest and verify, on OpenSSL EVP (one RAII type for EVP_MD_CTX).
// Internal to cache/. Thread-compatible.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace podplane::cache {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  [[nodiscard]] std::string finish_hex();  // lower-case hex; no updates afterwards

 private:
  struct Free {
    void operator()(void* ctx) const;
  };
  std::unique_ptr<void, Free> ctx_;
};

[[nodiscard]] std::string sha256_hex_of_file(const std::filesystem::path& file);
[[nodiscard]] bool is_sha256_hex(std::string_view text);  // 64 lower-case hex digits

}  // namespace podplane::cache
