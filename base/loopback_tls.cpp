#include "base/loopback_tls.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include <string>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/error.hpp"
#include "base/openssl.hpp"

namespace podplane {

namespace fs = std::filesystem;

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw Error("cannot make the loopback mirror's certificate: " + what + ": " + openssl::last_error());
}

openssl::Key new_p256_key() {
  openssl::Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  check(key != nullptr, "P-256 key generation");
  return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_nconf_nid(nullptr, &context, nid, value);
  check(extension != nullptr, std::string("extension ") + OBJ_nid2sn(nid));
  const int added = X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
  check(added == 1, std::string("adding extension ") + OBJ_nid2sn(nid));
}

// A certificate for `common_name` holding `key`'s public half, its validity and a random
// serial set; the caller adds extensions and signs it.
openssl::Certificate new_certificate(EVP_PKEY* key, const char* common_name) {
  openssl::Certificate cert(X509_new());
  check(cert != nullptr, "X509_new");
  check(X509_set_version(cert.get(), X509_VERSION_3) == 1, "version");
  unsigned char serial[16];
  check(RAND_bytes(serial, sizeof serial) == 1, "serial");
  serial[0] &= 0x7f;  // a positive number, as RFC 5280 asks
  BIGNUM* number = BN_bin2bn(serial, sizeof serial, nullptr);
  check(number != nullptr && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert.get())) != nullptr, "serial");
  BN_free(number);
  check(X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) != nullptr, "notBefore");
  check(X509_gmtime_adj(X509_getm_notAfter(cert.get()), 2L * 24 * 3600) != nullptr, "notAfter");
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(common_name), -1, -1,
                                   0) == 1,
        "subject");
  check(X509_set_pubkey(cert.get(), key) == 1, "public key");
  return cert;
}

// Created with its final mode (a key is never readable by others, not even for a moment).
void write_pem(const fs::path& file, mode_t mode, const std::function<int(BIO*)>& write) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw Error("cannot create " + file.string() + ": " + std::strerror(errno));
  openssl::Bio bio(BIO_new_fd(fd, BIO_CLOSE));
  if (bio == nullptr) ::close(fd);
  check(bio != nullptr, "opening " + file.string());
  check(write(bio.get()) == 1 && BIO_flush(bio.get()) == 1, "writing " + file.string());
}

}  // namespace

LoopbackTls make_loopback_tls(const fs::path& dir) {
  const openssl::Key ca_key = new_p256_key();
  openssl::Certificate ca = new_certificate(ca_key.get(), "podplane loopback CA (one command's)");
  check(X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get())) == 1, "issuer");
  add_extension(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  add_extension(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(ca.get(), ca.get(), NID_subject_key_identifier, "hash");
  check(X509_sign(ca.get(), ca_key.get(), EVP_sha256()) > 0, "signing the CA");

  const openssl::Key server_key = new_p256_key();
  openssl::Certificate server = new_certificate(server_key.get(), "127.0.0.1");
  check(X509_set_issuer_name(server.get(), X509_get_subject_name(ca.get())) == 1, "issuer");
  add_extension(server.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(server.get(), ca.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(server.get(), ca.get(), NID_ext_key_usage, "serverAuth");
  add_extension(server.get(), ca.get(), NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  add_extension(server.get(), ca.get(), NID_authority_key_identifier, "keyid:always");
  check(X509_sign(server.get(), ca_key.get(), EVP_sha256()) > 0, "signing the server certificate");

  LoopbackTls tls{dir / "loopback-ca.pem", dir / "loopback-cert.pem", dir / "loopback-key.pem"};
  write_pem(tls.ca_file, 0644, [&](BIO* bio) { return PEM_write_bio_X509(bio, ca.get()); });
  write_pem(tls.cert_file, 0644, [&](BIO* bio) { return PEM_write_bio_X509(bio, server.get()); });
  write_pem(tls.key_file, 0600, [&](BIO* bio) {
    return PEM_write_bio_PrivateKey(bio, server_key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  return tls;
}

}  // namespace podplane
