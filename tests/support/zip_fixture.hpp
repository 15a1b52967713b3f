#pragma once
// Builds zip files for hash tests with python3's zipfile, which writes exactly the entries it
// is given: directory entries, duplicate names, "./" prefixes, symlink entries, any bytes; and
// with Info-ZIP's zip, which writes zips as other tools do (streamed entries, zip64, symlinks).
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

// Runs Info-ZIP's `zip -q -X <options> <zip> <members>` in `source_dir`, so members are named
// relative to it; a member "-" is one streamed entry read from `stdin_data`. Throws
// std::runtime_error, with zip's output, if zip fails.
void make_zip_with_infozip(const std::filesystem::path& source_dir, const std::filesystem::path& zip,
                           const std::vector<std::string>& options, const std::vector<std::string>& members,
                           const std::string& stdin_data = "");

}  // namespace podplane::test
