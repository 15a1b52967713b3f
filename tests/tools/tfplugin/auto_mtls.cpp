#include "tests/tools/tfplugin/auto_mtls.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>
#include <vector>

#include "base/openssl.hpp"

namespace podplane::tfplugin {
namespace {

void check(int ok, const char* what) {
  if (ok <= 0) throw std::runtime_error(std::string(what) + ": " + openssl::last_error());
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

void add_extension(X509* cert, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
  if (extension == nullptr) throw std::runtime_error(std::string("extension ") + value + ": " + openssl::last_error());
  const int added = X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
  check(added, "X509_add_ext");
}

}  // namespace

ServerIdentity make_server_identity() {
  openssl::Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-521"));
  if (!key) throw std::runtime_error("P-521 key: " + openssl::last_error());

  openssl::Certificate cert(X509_new());
  if (!cert) throw std::runtime_error("X509_new: " + openssl::last_error());
  check(X509_set_version(cert.get(), X509_VERSION_3), "X509_set_version");
  unsigned char serial[16];
  check(RAND_bytes(serial, sizeof serial), "RAND_bytes");
  serial[0] &= 0x7f;  // a positive serial number
  BIGNUM* number = BN_bin2bn(serial, sizeof serial, nullptr);
  const bool serial_set = number != nullptr && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert.get())) != nullptr;
  BN_free(number);
  check(serial_set ? 1 : 0, "serial number");
  // go-plugin back-dates by 30 s for clock skew between the two processes' views.
  check(X509_gmtime_adj(X509_getm_notBefore(cert.get()), -30) != nullptr, "notBefore");
  check(X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24L * 3600) != nullptr, "notAfter");
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1,
                                   -1, 0),
        "subject");
  check(X509_set_issuer_name(cert.get(), name), "issuer");
  check(X509_set_pubkey(cert.get(), key.get()), "X509_set_pubkey");
  // Self-signed and its own trust root on the engine's side, which checks the name localhost.
  add_extension(cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment,keyAgreement,keyCertSign");
  add_extension(cert.get(), NID_ext_key_usage, "serverAuth,clientAuth");
  add_extension(cert.get(), NID_subject_alt_name, "DNS:localhost");
  check(X509_sign(cert.get(), key.get(), EVP_sha512()), "X509_sign");

  ServerIdentity identity;
  openssl::Bio cert_pem(BIO_new(BIO_s_mem()));
  openssl::Bio key_pem(BIO_new(BIO_s_mem()));
  if (!cert_pem || !key_pem) throw std::runtime_error("BIO_new: " + openssl::last_error());
  check(PEM_write_bio_X509(cert_pem.get(), cert.get()), "PEM_write_bio_X509");
  check(PEM_write_bio_PrivateKey(key_pem.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr), "PEM_write_bio_PrivateKey");
  identity.certificate_pem = bio_text(cert_pem.get());
  identity.key_pem = bio_text(key_pem.get());

  const int der_size = i2d_X509(cert.get(), nullptr);
  check(der_size, "i2d_X509");
  std::vector<unsigned char> der(static_cast<size_t>(der_size));
  unsigned char* cursor = der.data();
  check(i2d_X509(cert.get(), &cursor), "i2d_X509");
  std::string encoded(4 * ((der.size() + 2) / 3) + 1, '\0');
  const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()), der.data(), der_size);
  encoded.resize(static_cast<size_t>(length));
  while (!encoded.empty() && encoded.back() == '=') encoded.pop_back();  // base64.RawStdEncoding
  identity.handshake_field = encoded;
  return identity;
}

}  // namespace podplane::tfplugin
