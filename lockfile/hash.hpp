#pragma once
// The two provider hash schemes (digests from base/digest.hpp):
//   zh: = "zh:" + hex(sha256(zip bytes))
//   h1: = dirhash Hash1 over (name, sha256(content)) pairs, as golang.org/x/mod/sumdb/dirhash.
// All functions throw podplane::Error on I/O failure or invalid input. Thread-compatible.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/archive.hpp"

namespace podplane::lockfile {

// The zh: line of a zip whose sha256 is `sha256_hex`: "zh:<sha256_hex>", the hex as given.
[[nodiscard]] std::string zh_hash(std::string_view sha256_hex);
// "zh:<hex sha256 of the file>".
[[nodiscard]] std::string zh_hash_of_file(const std::filesystem::path& zip);

// h1 over already-hashed entries: sorts by name, rejects names containing '\n'.
[[nodiscard]] std::string h1_hash(std::vector<std::pair<std::string, std::string>> name_and_sha256_hex);
// dirhash.HashZip: every central-directory entry verbatim (directory entries hash as empty,
// a later duplicate name wins for content but each name still counts). Read through
// base/archive.hpp's ZipReader, which turns '\' in names into '/' (Go does not; provider
// zips never have one). A zip libarchive warns about (bad CRC, inconsistent headers) is an
// Error, never a guessed hash. Contents are inflated by ISA-L where ZipReader can, or with
// `inflater` as asked (the tests compare the two).
[[nodiscard]] std::string h1_hash_of_zip(const std::filesystem::path& zip,
                                         libarchive::ZipReader::Inflater inflater = libarchive::ZipReader::Inflater::isal);
// dirhash.HashDir: regular files (symlinks followed to files) below dir, '/'-separated names.
// The root is resolved first (Terraform's PackageHashV1); a symlink to a directory, a dangling
// symlink or a special file is an Error, as reading it fails in Go.
[[nodiscard]] std::string h1_hash_of_dir(const std::filesystem::path& dir);

}  // namespace podplane::lockfile
