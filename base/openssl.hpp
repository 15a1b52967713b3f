#pragma once
// One RAII type per OpenSSL handle we hold, and the text of OpenSSL's most recent error.
// Every EVP_* result is checked by the code that calls it; these types only own.
#include <memory>
#include <string>

#include <openssl/ct.h>
#include <openssl/ts.h>
#include <openssl/types.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace podplane::openssl {

struct Free {
  void operator()(EVP_MD_CTX* handle) const noexcept;
  void operator()(EVP_PKEY* handle) const noexcept;
  void operator()(EVP_PKEY_CTX* handle) const noexcept;
  void operator()(BIO* handle) const noexcept;  // the whole chain
  void operator()(SSL_CTX* handle) const noexcept;
  void operator()(SSL* handle) const noexcept;
  void operator()(X509* handle) const noexcept;
  void operator()(X509_STORE* handle) const noexcept;
  void operator()(X509_STORE_CTX* handle) const noexcept;
  void operator()(STACK_OF(X509)* handle) const noexcept;  // and every certificate in it
  void operator()(CTLOG_STORE* handle) const noexcept;
  void operator()(CT_POLICY_EVAL_CTX* handle) const noexcept;
  void operator()(STACK_OF(SCT)* handle) const noexcept;  // and every SCT in it
  void operator()(GENERAL_NAMES* handle) const noexcept;
  void operator()(ASN1_STRING* handle) const noexcept;
  void operator()(ASN1_OBJECT* handle) const noexcept;
  void operator()(TS_RESP* handle) const noexcept;
  void operator()(TS_VERIFY_CTX* handle) const noexcept;  // and the store, certificates and data set in it
  void operator()(TS_REQ* handle) const noexcept;
  void operator()(TS_RESP_CTX* handle) const noexcept;
};

using MdContext = std::unique_ptr<EVP_MD_CTX, Free>;
using Key = std::unique_ptr<EVP_PKEY, Free>;
using KeyContext = std::unique_ptr<EVP_PKEY_CTX, Free>;
using Bio = std::unique_ptr<BIO, Free>;
using SslContext = std::unique_ptr<SSL_CTX, Free>;
using SslSession = std::unique_ptr<SSL, Free>;
using Certificate = std::unique_ptr<X509, Free>;
using CertificateStore = std::unique_ptr<X509_STORE, Free>;
using CertificateStoreContext = std::unique_ptr<X509_STORE_CTX, Free>;
using CertificateStack = std::unique_ptr<STACK_OF(X509), Free>;
using CtLogStore = std::unique_ptr<CTLOG_STORE, Free>;
using CtPolicyContext = std::unique_ptr<CT_POLICY_EVAL_CTX, Free>;
using SctList = std::unique_ptr<STACK_OF(SCT), Free>;
using GeneralNames = std::unique_ptr<GENERAL_NAMES, Free>;
using Asn1String = std::unique_ptr<ASN1_STRING, Free>;
using Asn1Object = std::unique_ptr<ASN1_OBJECT, Free>;
using TimestampResponse = std::unique_ptr<TS_RESP, Free>;
using TimestampVerifyContext = std::unique_ptr<TS_VERIFY_CTX, Free>;
using TimestampRequest = std::unique_ptr<TS_REQ, Free>;
using TimestampResponseContext = std::unique_ptr<TS_RESP_CTX, Free>;

// The reason of the most recent error queued on this thread ("no reason given" when none);
// the queue is empty afterwards, so an old error never shows up in a later message.
[[nodiscard]] std::string last_error();

}  // namespace podplane::openssl
