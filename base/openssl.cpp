#include "base/openssl.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace podplane::openssl {

void Free::operator()(EVP_MD_CTX* handle) const noexcept { EVP_MD_CTX_free(handle); }
void Free::operator()(EVP_PKEY* handle) const noexcept { EVP_PKEY_free(handle); }
void Free::operator()(EVP_PKEY_CTX* handle) const noexcept { EVP_PKEY_CTX_free(handle); }
void Free::operator()(BIO* handle) const noexcept { BIO_free_all(handle); }
void Free::operator()(SSL_CTX* handle) const noexcept { SSL_CTX_free(handle); }
void Free::operator()(SSL* handle) const noexcept { SSL_free(handle); }
void Free::operator()(X509* handle) const noexcept { X509_free(handle); }
void Free::operator()(X509_STORE* handle) const noexcept { X509_STORE_free(handle); }
void Free::operator()(X509_STORE_CTX* handle) const noexcept { X509_STORE_CTX_free(handle); }
void Free::operator()(STACK_OF(X509)* handle) const noexcept { sk_X509_pop_free(handle, X509_free); }
void Free::operator()(CTLOG_STORE* handle) const noexcept { CTLOG_STORE_free(handle); }
void Free::operator()(CT_POLICY_EVAL_CTX* handle) const noexcept { CT_POLICY_EVAL_CTX_free(handle); }
void Free::operator()(STACK_OF(SCT)* handle) const noexcept { SCT_LIST_free(handle); }
void Free::operator()(GENERAL_NAMES* handle) const noexcept { GENERAL_NAMES_free(handle); }
void Free::operator()(ASN1_STRING* handle) const noexcept { ASN1_STRING_free(handle); }
void Free::operator()(ASN1_OBJECT* handle) const noexcept { ASN1_OBJECT_free(handle); }
void Free::operator()(TS_RESP* handle) const noexcept { TS_RESP_free(handle); }
void Free::operator()(TS_VERIFY_CTX* handle) const noexcept { TS_VERIFY_CTX_free(handle); }
void Free::operator()(TS_REQ* handle) const noexcept { TS_REQ_free(handle); }
void Free::operator()(TS_RESP_CTX* handle) const noexcept { TS_RESP_CTX_free(handle); }

std::string last_error() {
  unsigned long last = 0;
  for (unsigned long code; (code = ERR_get_error()) != 0;) last = code;
  if (last == 0) return "no reason given";
  if (const char* reason = ERR_reason_error_string(last); reason != nullptr) return reason;
  char text[256];
  ERR_error_string_n(last, text, sizeof text);
  return text;
}

}  // namespace podplane::openssl
