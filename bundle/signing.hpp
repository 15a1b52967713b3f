#pragma once
// Ed25519 keys for bundle manifests (OpenSSL EVP). Private keys are PKCS#8 PEM files of mode
// 0600, public keys SubjectPublicKeyInfo PEM. A key id is "sha256:" + hex(sha256(raw public
// key)). Every function throws podplane::Error naming the file on bad input.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace podplane::bundle {

struct KeyPairFiles {
  std::filesystem::path private_key;  // PREFIX.key
  std::filesystem::path public_key;   // PREFIX.pub
};

// Writes PREFIX.key (0600) and PREFIX.pub. Refuses to overwrite either file.
KeyPairFiles generate_key_pair(const std::filesystem::path& prefix);

class PublicKey {
 public:
  static PublicKey load(const std::filesystem::path& pem_file);
  static PublicKey from_raw_hex(std::string_view hex);  // the 32 raw bytes as hex
  ~PublicKey();
  PublicKey(PublicKey&&) noexcept;
  PublicKey& operator=(PublicKey&&) noexcept;

  const std::string& raw_hex() const;  // 64 hex digits
  std::string key_id() const;          // sha256:<hex>
  // True when `signature_hex` is a valid Ed25519 signature of `message` by this key.
  [[nodiscard]] bool verifies(std::string_view message, std::string_view signature_hex) const;

  struct Impl;
 private:
  explicit PublicKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class SigningKey {
 public:
  static SigningKey load(const std::filesystem::path& pem_file);
  ~SigningKey();
  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;

  const PublicKey& public_key() const;
  [[nodiscard]] std::string sign_hex(std::string_view message) const;  // 128 hex digits

  struct Impl;
 private:
  explicit SigningKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace podplane::bundle
