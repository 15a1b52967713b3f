#include "base/hasher_thread.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "base/digest.hpp"

namespace podplane {
namespace {

std::string digest_of(DigestAlgorithm algorithm, const std::string& bytes) {
  Hasher hasher(algorithm);
  hasher.update(bytes);
  return hasher.finish_hex();
}

// Bytes of every length around the thread's 1 MiB blocks, given in pieces of every size, hash
// as a Hasher hashes them at once, also when the queue is the smallest (update() waits).
TEST(HasherThread, HashesWhatAHasherHashesWhateverThePieces) {
  std::string bytes;
  for (std::size_t i = 0; i < (3u << 20) + 17; ++i) bytes.push_back(static_cast<char>((i * 131) ^ (i >> 9)));
  for (std::size_t length : {std::size_t{0}, std::size_t{1}, std::size_t{1} << 20, (std::size_t{1} << 20) + 1, bytes.size()}) {
    for (std::size_t piece : {std::size_t{1000}, std::size_t{16384}, std::size_t{3} << 20}) {
      if (piece == 1000 && length > (1u << 20) + 1) continue;  // small pieces: 1 MiB + 1 is enough
      HasherThread thread(DigestAlgorithm::sha512, 1);
      for (std::size_t at = 0; at < length; at += piece) thread.update(bytes.data() + at, std::min(piece, length - at));
      EXPECT_EQ(thread.finish_hex(), digest_of(DigestAlgorithm::sha512, bytes.substr(0, length)))
          << length << " bytes in pieces of " << piece;
    }
  }
  HasherThread sha256(DigestAlgorithm::sha256);
  sha256.update(bytes.data(), bytes.size());
  EXPECT_EQ(sha256.finish_hex(), digest_of(DigestAlgorithm::sha256, bytes));
}

}  // namespace
}  // namespace podplane
