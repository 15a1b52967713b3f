#pragma once
// One RAII type per OpenSSL handle we hold, and the text of OpenSSL's most recent error.
// Every EVP_* result is checked by the code that calls it; these types only own.
#include <memory>
#include <string>

#include <openssl/types.h>

namespace podplane::openssl {

struct Free {
  void operator()(EVP_MD_CTX* handle) const noexcept;
  void operator()(EVP_PKEY* handle) const noexcept;
  void operator()(EVP_PKEY_CTX* handle) const noexcept;
  void operator()(BIO* handle) const noexcept;  // the whole chain
  void operator()(SSL_CTX* handle) const noexcept;
  void operator()(SSL* handle) const noexcept;
  void operator()(X509* handle) const noexcept;
};

using MdContext = std::unique_ptr<EVP_MD_CTX, Free>;
using Key = std::unique_ptr<EVP_PKEY, Free>;
using KeyContext = std::unique_ptr<EVP_PKEY_CTX, Free>;
using Bio = std::unique_ptr<BIO, Free>;
using SslContext = std::unique_ptr<SSL_CTX, Free>;
using SslSession = std::unique_ptr<SSL, Free>;
using Certificate = std::unique_ptr<X509, Free>;

// The reason of the most recent error queued on this thread ("no reason given" when none);
// the queue is empty afterwards, so an old error never shows up in a later message.
[[nodiscard]] std::string last_error();

}  // namespace podplane::openssl
