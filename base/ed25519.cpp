#include "base/ed25519.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/openssl.hpp"
#include "base/pkcs11.hpp"
#include "base/unique_fd.hpp"

namespace podplane::ed25519 {

namespace fs = std::filesystem;

namespace {

std::string raw_public_hex(EVP_PKEY* key) {
  unsigned char raw[32];
  std::size_t length = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(key, raw, &length) != 1 || length != sizeof raw)
    throw Error("cannot read the raw Ed25519 public key: " + openssl::last_error());
  return to_hex(std::string_view(reinterpret_cast<const char*>(raw), length));
}

openssl::Bio read_bio(const fs::path& file) {
  openssl::Bio bio(BIO_new_file(file.c_str(), "r"));
  if (!bio) throw Error("cannot open key file " + file.string() + ": " + std::strerror(errno));
  return bio;
}

void require_ed25519(EVP_PKEY* key, const fs::path& file) {
  if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519)
    throw Error("key file " + file.string() + " does not hold an Ed25519 key (make one with 'podplane bundle keygen')");
}

// Writes `pem` to a new file of `mode`; O_EXCL so an existing key is never replaced. Every
// result is checked, the directory synced after: a key the user relies on must survive a crash.
void write_new_file(const fs::path& file, const std::string& pem, mode_t mode) {
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd) {
    if (errno == EEXIST) throw Error("refusing to overwrite existing key file " + file.string());
    throw Error("cannot create " + file.string() + ": " + std::strerror(errno));
  }
  // The umask may have widened nothing but could have narrowed; set the mode exactly.
  if (::fchmod(fd.get(), mode) != 0) throw Error("cannot set the mode of " + file.string() + ": " + std::strerror(errno));
  write_all(fd.get(), pem, file);
  if (::fsync(fd.get()) != 0) throw Error("cannot write " + file.string() + ": " + std::strerror(errno));
  fd.close_checked(file.string());
  sync_directory(file.has_parent_path() ? file.parent_path() : fs::path("."));
}

std::string bio_contents(BIO* bio) {
  char* data = nullptr;
  long length = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(length));
}

}  // namespace

// ---------------------------------------------------------------------------------------
struct PublicKey::Impl {
  openssl::Key key;
  std::string raw_hex;
};

PublicKey::PublicKey(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PublicKey::~PublicKey() = default;
PublicKey::PublicKey(PublicKey&&) noexcept = default;
PublicKey& PublicKey::operator=(PublicKey&&) noexcept = default;

PublicKey PublicKey::load(const fs::path& pem_file) {
  openssl::Bio bio = read_bio(pem_file);
  openssl::Key key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!key) throw Error("cannot read public key " + pem_file.string() + ": " + openssl::last_error());
  require_ed25519(key.get(), pem_file);
  auto impl = std::make_unique<Impl>();
  impl->raw_hex = raw_public_hex(key.get());
  impl->key = std::move(key);
  return PublicKey(std::move(impl));
}

PublicKey PublicKey::from_raw_hex(std::string_view hex) {
  std::string raw = from_hex(hex);
  if (raw.size() != 32) throw Error("an Ed25519 public key has 32 bytes, not " + std::to_string(raw.size()));
  openssl::Key key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw.data()),
                                       raw.size()));
  if (!key) throw Error("invalid Ed25519 public key: " + openssl::last_error());
  auto impl = std::make_unique<Impl>();
  impl->raw_hex = to_hex(raw);
  impl->key = std::move(key);
  return PublicKey(std::move(impl));
}

const std::string& PublicKey::raw_hex() const { return impl_->raw_hex; }

std::string PublicKey::key_id() const { return "sha256:" + sha256_hex(from_hex(impl_->raw_hex)); }

bool PublicKey::verifies(std::string_view message, std::string_view signature_hex) const {
  std::string signature;
  try {
    signature = from_hex(signature_hex);
  } catch (const Error&) {
    return false;
  }
  if (signature.size() != 64) return false;
  openssl::MdContext ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, impl_->key.get()) != 1)
    throw Error("cannot start Ed25519 verification: " + openssl::last_error());
  int ok = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(message.data()), message.size());
  ERR_clear_error();
  return ok == 1;
}

// ---------------------------------------------------------------------------------------
struct SigningKey::Impl {
  openssl::Key key;  // a key file's; empty for a key in a token
  PublicKey public_key;
  std::optional<pkcs11::Ed25519Key> token_key;
};

SigningKey::SigningKey(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SigningKey::~SigningKey() = default;
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;

SigningKey SigningKey::load(const fs::path& pem_file, const std::optional<fs::path>& pkcs11_module) {
  if (pkcs11::is_uri(pem_file.string())) {
    auto uri = pkcs11::Uri::parse(pem_file.string());
    auto token_key = pkcs11::Ed25519Key::open(uri, pkcs11::module_of(uri, pkcs11_module));
    auto public_key = PublicKey::from_raw_hex(to_hex(token_key.public_key_raw()));
    return SigningKey(std::unique_ptr<Impl>(new Impl{openssl::Key(), std::move(public_key), std::move(token_key)}));
  }
  openssl::Bio bio = read_bio(pem_file);
  openssl::Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) throw Error("cannot read private key " + pem_file.string() + ": " + openssl::last_error());
  require_ed25519(key.get(), pem_file);
  auto public_key = PublicKey::from_raw_hex(raw_public_hex(key.get()));
  return SigningKey(std::unique_ptr<Impl>(new Impl{std::move(key), std::move(public_key), std::nullopt}));
}

const PublicKey& SigningKey::public_key() const { return impl_->public_key; }

std::string SigningKey::sign_hex(std::string_view message) const {
  if (impl_->token_key) {
    std::string signature = impl_->token_key->sign(message);
    // The token is trusted to sign, not to sign right: a wrong signature never leaves here.
    if (!impl_->public_key.verifies(message, to_hex(signature)))
      throw Error("the PKCS#11 token's Ed25519 signature does not verify with its own public key");
    return to_hex(signature);
  }
  openssl::MdContext ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, impl_->key.get()) != 1)
    throw Error("cannot start Ed25519 signing: " + openssl::last_error());
  unsigned char signature[64];
  std::size_t length = sizeof signature;
  if (EVP_DigestSign(ctx.get(), signature, &length, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1)
    throw Error("Ed25519 signing failed: " + openssl::last_error());
  return to_hex(std::string_view(reinterpret_cast<const char*>(signature), length));
}

// ---------------------------------------------------------------------------------------
KeyPairFiles generate_key_pair(const fs::path& prefix) {
  KeyPairFiles files{fs::path(prefix.string() + ".key"), fs::path(prefix.string() + ".pub")};
  for (const auto& file : {files.private_key, files.public_key}) {
    if (fs::exists(fs::symlink_status(file))) throw Error("refusing to overwrite existing key file " + file.string());
  }
  openssl::KeyContext ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr));
  EVP_PKEY* raw_key = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw_key) != 1)
    throw Error("Ed25519 key generation failed: " + openssl::last_error());
  openssl::Key key(raw_key);

  openssl::Bio private_pem(BIO_new(BIO_s_mem()));
  openssl::Bio public_pem(BIO_new(BIO_s_mem()));
  if (!private_pem || !public_pem ||
      PEM_write_bio_PrivateKey(private_pem.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
      PEM_write_bio_PUBKEY(public_pem.get(), key.get()) != 1)
    throw Error("cannot encode the Ed25519 key pair: " + openssl::last_error());

  write_new_file(files.private_key, bio_contents(private_pem.get()), 0600);
  try {
    write_new_file(files.public_key, bio_contents(public_pem.get()), 0644);
  } catch (...) {
    std::error_code ec;
    fs::remove(files.private_key, ec);  // a lone private key would only confuse a rerun
    throw;
  }
  return files;
}

fs::path token_public_key(const std::string& uri_text, const std::optional<fs::path>& pkcs11_module, const fs::path& prefix,
                          MakeInToken make) {
  const fs::path public_file(prefix.string() + ".pub");
  if (fs::exists(fs::symlink_status(public_file))) throw Error("refusing to overwrite existing key file " + public_file.string());
  auto uri = pkcs11::Uri::parse(uri_text);
  auto module = pkcs11::module_of(uri, pkcs11_module);
  auto token_key = make == MakeInToken::yes ? pkcs11::Ed25519Key::generate(uri, module) : pkcs11::Ed25519Key::open(uri, module);
  const std::string& raw = token_key.public_key_raw();
  openssl::Key key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw.data()),
                                               raw.size()));
  openssl::Bio public_pem(BIO_new(BIO_s_mem()));
  if (!key || !public_pem || PEM_write_bio_PUBKEY(public_pem.get(), key.get()) != 1)
    throw Error("cannot encode the token's Ed25519 public key: " + openssl::last_error());
  write_new_file(public_file, bio_contents(public_pem.get()), 0644);
  return public_file;
}

DetachedSignature DetachedSignature::make(const SigningKey& key, std::string_view message) {
  return {key.public_key().raw_hex(), key.public_key().key_id(), key.sign_hex(message)};
}

std::string DetachedSignature::serialize() const {
  return nlohmann::json{{"algorithm", "ed25519"}, {"key_id", key_id}, {"public_key", public_key_hex}, {"signature", signature_hex}}
             .dump() +
         "\n";
}

DetachedSignature DetachedSignature::parse(std::string_view text, const std::string& what) {
  auto document = nlohmann::json::parse(text, nullptr, false);
  auto field = [&](const char* key) {
    if (!document.is_object() || !document.contains(key) || !document[key].is_string())
      throw Error(what + " is not an Ed25519 signature block (no \"" + key + "\")");
    return document[key].get<std::string>();
  };
  if (field("algorithm") != "ed25519") throw Error(what + " is not an Ed25519 signature (algorithm " + field("algorithm") + ")");
  DetachedSignature signature{field("public_key"), field("key_id"), field("signature")};
  if (PublicKey::from_raw_hex(signature.public_key_hex).key_id() != signature.key_id)
    throw Error(mismatch_message(what + " names another key id than its public key's",
                                 PublicKey::from_raw_hex(signature.public_key_hex).key_id(), signature.key_id));
  return signature;
}

bool DetachedSignature::verifies(std::string_view message) const {
  return PublicKey::from_raw_hex(public_key_hex).verifies(message, signature_hex);
}

}  // namespace podplane::ed25519
