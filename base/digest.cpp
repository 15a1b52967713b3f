#include "base/digest.hpp"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/error.hpp"
#include "base/hex.hpp"

namespace podplane {

Hasher::Hasher(DigestAlgorithm algorithm) : context_(EVP_MD_CTX_new()) {
  const EVP_MD* md = EVP_sha256();
  switch (algorithm) {
    case DigestAlgorithm::sha256: md = EVP_sha256(); break;
    case DigestAlgorithm::sha512: md = EVP_sha512(); break;
    case DigestAlgorithm::md5: md = EVP_md5(); break;
    case DigestAlgorithm::sha1: md = EVP_sha1(); break;
  }
  if (!context_ || EVP_DigestInit_ex(context_.get(), md, nullptr) != 1) {
    throw Error("cannot start an OpenSSL digest: " + openssl::last_error());
  }
}

void Hasher::update(const void* data, std::size_t size) {
  if (!context_ || finished_) throw Error("digest updated after it was finished");
  if (size != 0 && EVP_DigestUpdate(context_.get(), data, size) != 1) {
    throw Error("OpenSSL digest update failed: " + openssl::last_error());
  }
}

std::string Hasher::finish_raw() {
  if (!context_ || finished_) throw Error("digest finished twice");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context_.get(), digest, &size) != 1) {
    throw Error("OpenSSL digest final failed: " + openssl::last_error());
  }
  finished_ = true;
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string Hasher::finish_hex() { return to_hex(finish_raw()); }

std::string sha256_hex(std::string_view bytes) {
  Hasher hasher;
  hasher.update(bytes);
  return hasher.finish_hex();
}

std::string file_digest_hex(const std::filesystem::path& file, DigestAlgorithm algorithm) {
  // Streamed, never held whole: unbounded by design (a store object may be gigabytes).
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot open " + file.string() + ": " + std::strerror(errno));
  Hasher hasher(algorithm);
  std::string buffer(64 * 1024, '\0');
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hasher.update(buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw Error("cannot read " + file.string());
  return hasher.finish_hex();
}

TypedDigest TypedDigest::parse(std::string_view text) {
  auto colon = text.find(':');
  std::string_view algorithm = text.substr(0, colon);
  std::string_view hex = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  TypedDigest digest{};
  std::size_t expected_size = 0;
  if (algorithm == "sha256") {
    digest.algorithm = DigestAlgorithm::sha256;
    expected_size = 64;
  } else if (algorithm == "sha512") {
    digest.algorithm = DigestAlgorithm::sha512;
    expected_size = 128;
  } else {
    throw Error("unsupported digest \"" + std::string(text) + "\": expected sha256:<64 hex> or sha512:<128 hex>");
  }
  if (colon == std::string_view::npos || hex.size() != expected_size || !is_lower_hex(hex)) {
    throw Error("malformed digest \"" + std::string(text) + "\": expected " + std::string(algorithm) + ":<" +
                std::to_string(expected_size) + " lower-case hex digits>");
  }
  digest.hex = std::string(hex);
  return digest;
}

std::string TypedDigest::str() const { return (algorithm == DigestAlgorithm::sha512 ? "sha512:" : "sha256:") + hex; }

}  // namespace podplane
