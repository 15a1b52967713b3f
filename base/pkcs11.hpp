#pragma once
// Ed25519 keys in a PKCS#11 token (an HSM, a smart card, SoftHSM2), used through the token's
// own module: the module is loaded with dlopen and called through its C_GetFunctionList, the
// private key never leaves the token (C_Sign with CKM_EDDSA), the public key is read from the
// token's public key object (CKA_EC_POINT). Keys are named by RFC 7512 URIs:
//   pkcs11:token=site-hsm;object=bundle-key?pin-value=1234
// (also id=%01, serial=…; pin-source=FILE instead of pin-value; module-path=FILE).
// A key holds its module initialized and its session logged in until it is destroyed. Not
// thread-safe. Errors: podplane::Error; messages never show the PIN.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace podplane::pkcs11 {

struct Uri {
  std::string token, object, id, serial;  // id: raw bytes
  std::string pin_value, pin_source, module_path;
  // Error naming the attribute unless `text` is a pkcs11: URI of known attributes.
  [[nodiscard]] static Uri parse(std::string_view text);
  // The URI without its PIN, for messages.
  [[nodiscard]] std::string str() const;
};

[[nodiscard]] bool is_uri(std::string_view text);  // starts with "pkcs11:"

// The module to load: the URI's module-path, else `flag` (--pkcs11-module), else
// $PODPLANE_PKCS11_MODULE; Error saying so when none is given.
[[nodiscard]] std::filesystem::path module_of(const Uri& uri, const std::optional<std::filesystem::path>& flag);

class Ed25519Key {
 public:
  // Opens the token the URI names, logs in with its PIN and finds the one Ed25519 private key
  // (and its public key object) its object/id name. Errors: the module does not load, no such
  // token (the labels found are named), a wrong PIN, no key or more than one.
  [[nodiscard]] static Ed25519Key open(const Uri& uri, const std::filesystem::path& module);
  // Makes an Ed25519 key pair in the token with the URI's object label (and id), the private
  // key sensitive and not extractable. Error when a key of that label exists already.
  [[nodiscard]] static Ed25519Key generate(const Uri& uri, const std::filesystem::path& module);
  ~Ed25519Key();
  Ed25519Key(Ed25519Key&&) noexcept;
  Ed25519Key& operator=(Ed25519Key&&) noexcept;

  [[nodiscard]] const std::string& public_key_raw() const;  // 32 bytes
  [[nodiscard]] std::string sign(std::string_view message) const;  // 64 bytes

  struct Session;

 private:
  explicit Ed25519Key(std::unique_ptr<Session> session);
  std::unique_ptr<Session> session_;
};

}  // namespace podplane::pkcs11
