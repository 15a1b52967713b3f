#pragma once
// Streaming digests (OpenSSL EVP; every EVP_* result is checked) and the typed digests
// ("sha256:<hex>", "sha512:<hex>") of vmconfig manifests. Errors are podplane::Error.
// A Hasher is thread-compatible: one per thread, or guarded by the caller.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/openssl.hpp"

namespace podplane {

// md5 and sha1 only where a format fixes them (the packet hashes of PAR2 files, name-based
// UUIDs), never to vouch for content.
enum class DigestAlgorithm { sha256, sha512, md5, sha1 };

// One incremental digest over an EVP_MD_CTX.
class Hasher {
 public:
  explicit Hasher(DigestAlgorithm algorithm = DigestAlgorithm::sha256);
  Hasher(Hasher&&) noexcept = default;
  Hasher& operator=(Hasher&&) noexcept = default;
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void update(const void* data, std::size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // The digest, as lower-case hex or raw bytes. The hasher cannot be updated afterwards.
  [[nodiscard]] std::string finish_hex();
  [[nodiscard]] std::string finish_raw();

 private:
  openssl::MdContext context_;
  bool finished_ = false;
};

[[nodiscard]] std::string sha256_hex(std::string_view bytes);
// The digest of a file's bytes, read in blocks (any size).
[[nodiscard]] std::string file_digest_hex(const std::filesystem::path& file,
                                          DigestAlgorithm algorithm = DigestAlgorithm::sha256);

// "sha256:<64 hex>" or "sha512:<128 hex>" as vmconfig manifests carry them.
struct TypedDigest {
  DigestAlgorithm algorithm;
  std::string hex;
  static TypedDigest parse(std::string_view text);  // Error on other algorithms or bad hex
  std::string str() const;
};

}  // namespace podplane
