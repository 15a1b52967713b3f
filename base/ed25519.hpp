#pragma once
// Ed25519 keys for bundle manifests and release signatures (OpenSSL EVP). Private keys are PKCS#8 PEM files of mode
// 0600, or keys in a PKCS#11 token named by a pkcs11: URI (base/pkcs11.hpp: the key never leaves
// the token); public keys SubjectPublicKeyInfo PEM. A key id is "sha256:" + hex(sha256(raw public
// key)). Every function throws podplane::Error naming the file on bad input.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace podplane::ed25519 {

struct KeyPairFiles {
  std::filesystem::path private_key;  // PREFIX.key
  std::filesystem::path public_key;   // PREFIX.pub
};

// Writes PREFIX.key (0600) and PREFIX.pub. Refuses to overwrite either file.
KeyPairFiles generate_key_pair(const std::filesystem::path& prefix);

// The key the pkcs11: URI names in its token, made there first when `make` is yes, and its public
// key written to PREFIX.pub (the --trust file); nothing else is written. Refuses to overwrite
// PREFIX.pub, and (make) to make a key whose name the token holds already.
enum class MakeInToken { no, yes };
std::filesystem::path token_public_key(const std::string& uri, const std::optional<std::filesystem::path>& pkcs11_module,
                                       const std::filesystem::path& prefix, MakeInToken make);

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
  // A PEM file, or a pkcs11: URI (the module: the URI's module-path, else `pkcs11_module`, else
  // $PODPLANE_PKCS11_MODULE). Error before anything is signed: an unreadable file, a wrong PIN.
  static SigningKey load(const std::filesystem::path& pem_file,
                         const std::optional<std::filesystem::path>& pkcs11_module = std::nullopt);
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

// A detached Ed25519 signature as one JSON line, the form of a bundle's manifest.sig:
// {"algorithm":"ed25519","key_id":"sha256:…","public_key":"<hex>","signature":"<hex>"}.
// It names its key; whether that key is trusted is the caller's question.
struct DetachedSignature {
  std::string public_key_hex, key_id, signature_hex;
  [[nodiscard]] static DetachedSignature make(const SigningKey& key, std::string_view message);
  // Error naming `what` unless `text` is such a block whose key id is its public key's.
  [[nodiscard]] static DetachedSignature parse(std::string_view text, const std::string& what);
  [[nodiscard]] std::string serialize() const;
  [[nodiscard]] bool verifies(std::string_view message) const;  // with the key it names
};

}  // namespace podplane::ed25519
