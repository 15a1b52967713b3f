#pragma once
// Streaming digests (OpenSSL EVP) and the two provider hash schemes:
//   zh: = "zh:" + hex(sha256(zip bytes))
//   h1: = dirhash Hash1 over (name, sha256(content)) pairs, as golang.org/x/mod/sumdb/dirhash.
// All functions throw podplane::Error on I/O failure or invalid input. Thread-compatible.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace podplane::lockfile {

enum class DigestAlgorithm { sha256, sha512 };

// One incremental digest. Wraps an EVP_MD_CTX.
class Hasher {
 public:
  explicit Hasher(DigestAlgorithm algorithm = DigestAlgorithm::sha256);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void update(const void* data, std::size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Lower-case hex of the digest. The hasher cannot be updated afterwards.
  [[nodiscard]] std::string finish_hex();
  [[nodiscard]] std::string finish_raw();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

[[nodiscard]] std::string sha256_hex(std::string_view bytes);
[[nodiscard]] std::string file_digest_hex(const std::filesystem::path& file,
                                          DigestAlgorithm algorithm = DigestAlgorithm::sha256);

// "sha256:<64 hex>" or "sha512:<128 hex>" as used by vmconfig manifests.
struct TypedDigest {
  DigestAlgorithm algorithm;
  std::string hex;
  static TypedDigest parse(std::string_view text);  // Error on other algorithms or bad hex
  std::string str() const;
};

// "zh:<hex sha256 of the file>".
[[nodiscard]] std::string zh_hash_of_file(const std::filesystem::path& zip);

// h1 over already-hashed entries: sorts by name, rejects names containing '\n'.
[[nodiscard]] std::string h1_hash(std::vector<std::pair<std::string, std::string>> name_and_sha256_hex);
// dirhash.HashZip: every central-directory entry verbatim (directory entries hash as empty,
// a later duplicate name wins for content but each name still counts). Read with libarchive,
// which turns '\' in names into '/' (Go does not; provider zips never have one). A zip that
// libarchive warns about (bad CRC, inconsistent headers) is an Error, never a guessed hash.
[[nodiscard]] std::string h1_hash_of_zip(const std::filesystem::path& zip);
// dirhash.HashDir: regular files (symlinks followed to files) below dir, '/'-separated names.
// The root is resolved first (Terraform's PackageHashV1); a symlink to a directory, a dangling
// symlink or a special file is an Error, as reading it fails in Go.
[[nodiscard]] std::string h1_hash_of_dir(const std::filesystem::path& dir);

std::string base64_encode(std::string_view raw);

}  // namespace podplane::lockfile
