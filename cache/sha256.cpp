#include "cache/sha256.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <openssl/evp.h>

#include "cache/unique_fd.hpp"
#include "lockfile/error.hpp"

namespace podplane::cache {

void Sha256::Free::operator()(void* ctx) const { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx)); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_.get()), EVP_sha256(), nullptr) != 1) {
    throw Error("OpenSSL: cannot initialise sha256");
  }
}

void Sha256::update(const void* data, std::size_t size) {
  if (size == 0) return;
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_.get()), data, size) != 1) throw Error("OpenSSL: sha256 update failed");
}

std::string Sha256::finish_hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_.get()), digest, &length) != 1) throw Error("OpenSSL: sha256 final failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

std::string sha256_hex_of_file(const std::filesystem::path& file) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error("cannot read " + file.string() + ": " + std::strerror(errno));
  Sha256 hasher;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("cannot read " + file.string() + ": " + std::strerror(errno));
    if (n == 0) break;
    hasher.update(buffer, static_cast<std::size_t>(n));
  }
  return hasher.finish_hex();
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace podplane::cache
