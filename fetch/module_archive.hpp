#pragma once
// Unpacking module packages from outside (libarchive::Formats::module_package: zip, or tar
// plain or compressed with gzip, bzip2 or xz) and reading a package tree into store objects.
// An archive is hostile until shown otherwise, read by the same rules as a bundle
// (base/archive.hpp): any other format, any libarchive warning, an absolute path, a ".."
// component are refused; and, for what a package may hold beyond a bundle's plain files, a
// link whose target leaves the tree, an entry that would be written through a link, a device,
// fifo or socket, and an archive that expands beyond ArchiveLimits (base/input_limits.hpp).
// Each is an Error naming the entry; nothing is left in `destination` on error.
// Thread-compatible.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/input_limits.hpp"
#include "cache/store.hpp"

namespace podplane::fetch {

using podplane::ArchiveLimits;

// Extracts `archive` into `destination` (created; must be empty or absent).
void extract_archive(const std::filesystem::path& archive, const std::filesystem::path& destination,
                     std::string_view what, const ArchiveLimits& limits = {});

// The files of a package tree as the engines hash it (dirhash HashDir): regular files, and
// links to regular files inside the tree (taken as their target's content). A link to a
// directory or out of the tree is an Error. ".git" at the top is left out. Sorted by path.
struct PackageFile {
  std::string path;                      // '/'-separated, relative to the root
  std::filesystem::path file;            // where to read it (links resolved)
  std::uint32_t mode = 0644;             // 0755 when any execute bit is set
};
[[nodiscard]] std::vector<PackageFile> list_package_files(const std::filesystem::path& root);

// Adds every file of the tree to the store as an object and returns the ModuleTree (files,
// h1) ready for Store::add_module_tree. The caller indexes it (the row is the commit point).
[[nodiscard]] cache::ModuleTree ingest_module_tree(cache::Store& store, const std::filesystem::path& root,
                                                   std::string address, std::string version,
                                                   std::string upstream_url);

}  // namespace podplane::fetch
