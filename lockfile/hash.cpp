#include "lockfile/hash.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <system_error>

#include "base/archive.hpp"
#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"

namespace podplane::lockfile {
namespace {

std::string escape_newlines(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

}  // namespace

std::string zh_hash(std::string_view sha256_hex) { return "zh:" + std::string(sha256_hex); }

std::string zh_hash_of_file(const std::filesystem::path& zip) { return zh_hash(file_digest_hex(zip)); }

std::string h1_hash(std::vector<std::pair<std::string, std::string>> name_and_sha256_hex) {
  // std::string compares bytes as unsigned char, the order of Go's sort.Strings.
  std::stable_sort(name_and_sha256_hex.begin(), name_and_sha256_hex.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Hasher summary;
  for (const auto& [name, hex] : name_and_sha256_hex) {
    if (name.find('\n') != std::string::npos) {
      throw Error("cannot compute h1 hash: file names with newlines are not supported (dirhash): \"" +
                  escape_newlines(name) + "\"");
    }
    if (!is_sha256_hex(hex)) throw Error("h1 hash input for \"" + name + "\" is not a sha256 hex digest");
    summary.update(hex);
    summary.update("  ");
    summary.update(name);
    summary.update("\n");
  }
  return "h1:" + base64_encode(summary.finish_raw());
}

std::string h1_hash_of_zip(const std::filesystem::path& zip, libarchive::ZipReader::Inflater inflater) {
  libarchive::ZipReader reader(zip, inflater);
  // Every name counts, but a duplicate's content is that of the last entry with the name
  // (dirhash builds a name → entry map in central-directory order).
  std::vector<std::string> names;
  std::map<std::string, std::string> content_hash;
  while (auto name = reader.next()) {
    Hasher content;
    reader.read([&](const void* data, std::size_t size) { content.update(data, size); });
    content_hash[*name] = content.finish_hex();
    names.push_back(std::move(*name));
  }
  std::vector<std::pair<std::string, std::string>> files;
  files.reserve(names.size());
  for (auto& name : names) {
    std::string hex = content_hash.at(name);
    files.emplace_back(std::move(name), std::move(hex));
  }
  return h1_hash(std::move(files));
}

std::string h1_hash_of_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Terraform resolves the package root before hashing (PackageHashV1).
  fs::path root = fs::canonical(dir, ec);
  if (ec) throw Error("cannot hash directory " + dir.string() + ": " + ec.message());
  if (!fs::is_directory(root, ec)) throw Error("cannot hash " + dir.string() + ": not a directory");
  std::vector<std::pair<std::string, std::string>> files;
  // Like filepath.Walk: lstat each entry, never descend through a symlink, keep every
  // non-directory; opening the name then follows a symlink to its target.
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  if (ec) throw Error("cannot read directory " + dir.string() + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw Error("cannot read directory " + dir.string() + ": " + ec.message());
    const fs::directory_entry& item = *it;
    fs::file_status own = item.symlink_status(ec);
    if (ec) throw Error("cannot stat " + item.path().string() + ": " + ec.message());
    if (fs::is_directory(own)) continue;
    std::string name = item.path().lexically_relative(root).generic_string();
    fs::file_status target = item.status(ec);
    if (ec || !fs::exists(target)) {
      throw Error("cannot hash " + item.path().string() + ": dangling symlink");
    }
    if (fs::is_directory(target)) {
      throw Error("cannot hash " + item.path().string() + ": symlink to a directory (dirhash reads it as a file)");
    }
    if (!fs::is_regular_file(target)) {
      throw Error("cannot hash " + item.path().string() + ": not a regular file");
    }
    files.emplace_back(std::move(name), file_digest_hex(item.path()));
  }
  if (ec) throw Error("cannot read directory " + dir.string() + ": " + ec.message());
  return h1_hash(std::move(files));
}

}  // namespace podplane::lockfile
