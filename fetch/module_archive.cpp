#include "fetch/module_archive.hpp"

#include <archive_entry.h>

#include <algorithm>
#include <fstream>

#include "base/archive.hpp"
#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "lockfile/hash.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;

// What the archive has expanded to so far, against its limits.
class Expansion {
 public:
  Expansion(const ArchiveLimits& limits, std::string_view what) : limits_(limits), what_(what) {}

  void entry(const std::string& name) {
    if (++entries_ > limits_.max_entries) {
      throw Error("refusing " + what_ + ": it holds more than " + std::to_string(limits_.max_entries) +
                  " entries (the limit for a module archive), at " + name);
    }
  }
  // `end` is where the entry's content has reached (its offset plus the block, holes included).
  void reached(const std::string& name, std::uint64_t entry_start, std::uint64_t end) {
    if (end > limits_.max_bytes || entry_start > limits_.max_bytes - end) {
      throw Error("refusing " + what_ + ": it expands beyond " + describe_size_limit(limits_.max_bytes) +
                  " (the limit for a module archive), at " + name);
    }
  }
  std::uint64_t total() const { return total_; }
  void add(std::uint64_t size) { total_ += size; }

 private:
  const ArchiveLimits& limits_;
  std::string what_;
  std::uint64_t entries_ = 0;
  std::uint64_t total_ = 0;
};

// Refuses to write through a link an earlier entry made (the classic tar escape).
void check_no_link_on_the_way(const fs::path& destination, const std::string& name, std::string_view what) {
  fs::path current = destination;
  for (const auto& part : fs::path(name)) {  // a relative_entry_name: '/'-separated, no "." or ".."
    current /= part;
    std::error_code ec;
    auto status = fs::symlink_status(current, ec);
    if (ec) return;  // does not exist yet: nothing below it can be a link either
    if (fs::is_symlink(status)) {
      throw Error("refusing archive entry that would be written through a link in " + std::string(what) + ": " + name);
    }
  }
}

void write_entry_data(libarchive::Archive& reader, const fs::path& file, const std::string& name, std::string_view what,
                      Expansion& expansion) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write " + file.string() + " while unpacking " + std::string(what));
  const std::string doing = "cannot unpack " + std::string(what);
  std::uint64_t written = 0;
  while (auto block = reader.read_block(doing)) {
    // Checked before writing: a sparse hole or a deflate stream must not fill the disk first.
    expansion.reached(name, expansion.total(), std::max(written, block->offset + block->size));
    if (block->offset > written) {  // a sparse hole
      out.seekp(static_cast<std::streamoff>(block->offset));
      written = block->offset;
    }
    out.write(static_cast<const char*>(block->data), static_cast<std::streamsize>(block->size));
    written += block->size;
  }
  if (!out.flush()) throw Error("cannot write " + file.string() + " while unpacking " + std::string(what));
  expansion.add(written);
}

void extract_entries(libarchive::Archive& reader, const fs::path& destination, std::string_view what,
                     const ArchiveLimits& limits) {
  Expansion expansion(limits, what);
  const std::string doing = "cannot read " + std::string(what);
  while (archive_entry* entry = reader.next_entry(doing)) {
    const char* raw_name = archive_entry_pathname_utf8(entry);
    if (raw_name == nullptr) raw_name = archive_entry_pathname(entry);
    std::string name = libarchive::relative_entry_name(raw_name, what);
    expansion.entry(name.empty() ? std::string(raw_name) : name);
    if (name.empty()) continue;  // the root itself ("./")
    // The size a header declares is refused before any byte is written.
    if (archive_entry_size_is_set(entry) && archive_entry_size(entry) > 0) {
      expansion.reached(name, expansion.total(), static_cast<std::uint64_t>(archive_entry_size(entry)));
    }
    check_no_link_on_the_way(destination, name, what);
    fs::path target = destination / name;
    fs::create_directories(target.parent_path());

    if (const char* hardlink = archive_entry_hardlink(entry); hardlink != nullptr) {
      std::string source = libarchive::relative_entry_name(hardlink, what);
      check_no_link_on_the_way(destination, source, what);
      if (!fs::is_regular_file(fs::symlink_status(destination / source))) {
        throw Error("refusing hard link to a missing or non-regular file in " + std::string(what) + ": " + name);
      }
      const auto size = fs::file_size(destination / source);
      expansion.reached(name, expansion.total(), size);  // a copy: it counts again
      fs::remove(target);
      fs::copy_file(destination / source, target);
      expansion.add(size);
      continue;
    }
    switch (archive_entry_filetype(entry)) {
      case AE_IFDIR:
        fs::create_directories(target);
        break;
      case AE_IFREG: {
        if (fs::is_directory(fs::symlink_status(target))) {
          throw Error("archive entry is both a directory and a file in " + std::string(what) + ": " + name);
        }
        write_entry_data(reader, target, name, what, expansion);
        bool executable = (archive_entry_perm(entry) & 0111) != 0;
        fs::permissions(target, executable ? fs::perms(0755) : fs::perms(0644));
        break;
      }
      case AE_IFLNK: {
        const char* link = archive_entry_symlink(entry);
        std::string link_text = link == nullptr ? "" : link;
        if (!libarchive::link_stays_inside(name, link_text)) {
          throw Error("refusing link that escapes the package in " + std::string(what) + ": " + name + " -> " +
                      link_text);
        }
        fs::remove(target);
        fs::create_symlink(link_text, target);
        break;
      }
      default:
        throw Error("refusing special file (device, fifo or socket) in " + std::string(what) + ": " + name);
    }
  }
}

}  // namespace

void extract_archive(const fs::path& archive_file, const fs::path& destination, std::string_view what,
                     const ArchiveLimits& limits) {
  auto reader = libarchive::Archive::reader(libarchive::Formats::module_package);
  reader.open_file(archive_file, "cannot open " + std::string(what) + " as a zip or tar archive");
  fs::create_directories(destination);
  try {
    extract_entries(reader, destination, what, limits);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(destination, ec);  // half a package is worse than none
    throw;
  }
}

std::vector<PackageFile> list_package_files(const fs::path& root) {
  std::vector<PackageFile> files;
  auto canonical_root = fs::canonical(root);
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    // lexically: fs::relative would resolve links and name the target instead of the link.
    auto relative = it->path().lexically_relative(root).generic_string();
    if (it.depth() == 0 && it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    auto status = it->symlink_status();
    if (fs::is_directory(status)) continue;
    fs::path source = it->path();
    if (fs::is_symlink(status)) {
      std::error_code ec;
      auto resolved = fs::canonical(it->path(), ec);
      auto inside = !ec && std::mismatch(canonical_root.begin(), canonical_root.end(), resolved.begin(),
                                         resolved.end()).first == canonical_root.end();
      if (!inside) throw Error("module package link leaves the package or is broken: " + relative);
      if (!fs::is_regular_file(resolved)) {
        throw Error("module package link points at a directory, which the engines cannot hash: " + relative);
      }
      source = resolved;
    } else if (!fs::is_regular_file(status)) {
      throw Error("module package holds a special file: " + relative);
    }
    if (relative.find('\n') != std::string::npos) throw Error("module package file name holds a newline: " + relative);
    auto perms = fs::status(source).permissions();
    bool executable = (perms & (fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec)) != fs::perms::none;
    files.push_back(PackageFile{relative, source, executable ? 0755u : 0644u});
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return files;
}

cache::ModuleTree ingest_module_tree(cache::Store& store, const fs::path& root, std::string address,
                                     std::string version, std::string upstream_url) {
  cache::ModuleTree tree;
  tree.address = std::move(address);
  tree.version = std::move(version);
  tree.upstream_url = std::move(upstream_url);
  std::vector<std::pair<std::string, std::string>> hashed;
  const auto files = list_package_files(root);
  std::vector<fs::path> paths;
  for (const auto& file : files) paths.push_back(file.file);
  const auto digests = store.add_files(paths);  // syncs overlapped, not one per file in turn
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto size = static_cast<std::int64_t>(fs::file_size(files[i].file));
    tree.files.push_back(cache::ModuleFile{files[i].path, files[i].mode, digests[i], size});
    hashed.emplace_back(files[i].path, digests[i]);
  }
  tree.h1 = lockfile::h1_hash(std::move(hashed));
  return tree;
}

}  // namespace podplane::fetch
