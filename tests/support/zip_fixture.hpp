#pragma once
// Builds zip files for hash tests with python3's zipfile, which writes exactly the entries it
// is given: directory entries, duplicate names, "./" prefixes, symlink entries, any bytes.
#include <filesystem>
#include <string>
#include <vector>

namespace podplane::test {

struct ZipEntry {
  enum class Kind { file, directory, symlink };
  std::string name;     // verbatim, as stored in the central directory
  std::string content;  // file bytes, or the symlink target
  Kind kind = Kind::file;
  bool deflate = true;
};

// Writes `entries` in order to `zip`; throws std::runtime_error if python3 fails.
void make_zip(const std::filesystem::path& zip, const std::vector<ZipEntry>& entries);

}  // namespace podplane::test
