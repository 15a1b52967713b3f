#include "fetch/vmconfig.hpp"

#include <algorithm>
#include <cctype>

#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/input_limits.hpp"
#include "base/url.hpp"
#include "net/http.hpp"

namespace podplane::fetch {
namespace {

using nlohmann::json;

std::string text_of(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

VmconfigItem item_of(const std::string& name, const json& entry, const std::string& manifest) {
  if (!entry.is_object()) throw Error("vmconfig manifest " + manifest + ": item " + name + " is not an object");
  VmconfigItem item;
  item.name = name;
  item.version = text_of(entry, "version");
  item.url = text_of(entry, "url");
  item.type = text_of(entry, "type");
  item.digest = text_of(entry, "digest");
  if (auto size = entry.find("size"); size != entry.end() && size->is_number_integer() && size->get<std::int64_t>() > 0) {
    item.size = size->get<std::uint64_t>();
  }
  if (auto providers = entry.find("providers"); providers != entry.end() && providers->is_array()) {
    for (const auto& provider : *providers) {
      if (provider.is_string()) item.providers.push_back(provider.get<std::string>());
    }
  }
  return item;
}

bool valid_digest(const std::string& digest) {
  auto colon = digest.find(':');
  std::string algorithm = colon == std::string::npos ? "" : digest.substr(0, colon);
  std::string hex = colon == std::string::npos ? "" : digest.substr(colon + 1);
  std::size_t want = algorithm == "sha256" ? 64 : algorithm == "sha512" ? 128 : 0;
  return want != 0 && hex.size() == want && is_hex(hex);
}

// os.boot names the kernel and initrd inside the image by partition, path and digest; those
// with a digest are read out of the image and checked at `deps download` (fetch/boot_files.hpp).
// The path reaches debugfs as a command argument, so it must be a plain absolute path: no
// white space, quotes, backslashes or control characters, no "." or ".." segments.
std::vector<VmconfigBootFile> boot_files_of(const json& os, const std::string& manifest) {
  auto boot = os.find("boot");
  if (boot == os.end()) return {};
  if (!boot->is_object()) throw Error("vmconfig manifest " + manifest + ": os.boot is not an object");
  std::vector<VmconfigBootFile> files;
  for (const char* part : {"kernel", "initrd"}) {
    auto entry = boot->find(part);
    if (entry == boot->end()) continue;
    std::string where = "vmconfig manifest " + manifest + ": os.boot." + part;
    if (!entry->is_object()) throw Error(where + " is not an object");
    std::string digest = text_of(*entry, "digest");
    if (entry->contains("digest") && !valid_digest(digest))
      throw Error(where + ".digest must be sha256:<64 hex> or sha512:<128 hex>, got \"" + digest + "\"");
    std::string path = text_of(*entry, "path");
    if (path.empty()) throw Error(where + ".path is empty");
    if (!entry->contains("digest")) continue;
    bool plain = path.size() > 1 && path.size() <= 4096 && path.front() == '/' && path.back() != '/' &&
                 std::all_of(path.begin(), path.end(), [](char c) {
                   auto byte = static_cast<unsigned char>(c);
                   return byte > 0x20 && byte != 0x7f && c != '"' && c != '\'' && c != '\\';
                 });
    for (std::size_t start = 1; plain && start <= path.size();) {
      std::size_t end = std::min(path.find('/', start), path.size());
      std::string_view segment = std::string_view(path).substr(start, end - start);
      if (segment.empty() || segment == "." || segment == "..") plain = false;
      start = end + 1;
    }
    if (!plain)
      throw Error(where + ".path must be an absolute path of plain segments without spaces or quotes, got \"" + path + "\"");
    auto partition = entry->find("partition");
    if (partition == entry->end() || !partition->is_number_integer() || partition->get<std::int64_t>() < 1 ||
        partition->get<std::int64_t>() > 128) {
      throw Error(where + ".partition must be a partition number from 1 to 128, got " +
                  (partition == entry->end() ? std::string("nothing") : partition->dump()));
    }
    files.push_back({part, static_cast<int>(partition->get<std::int64_t>()), path, digest});
  }
  return files;
}

bool valid_segment(std::string_view text) {
  return !text.empty() && text != "." && text != ".." && text.find('/') == std::string_view::npos &&
         text.find('\\') == std::string_view::npos;
}

json without_cached(json value) {
  if (value.is_object()) {
    value.erase("cached");
    for (auto& [_, member] : value.items()) member = without_cached(member);
  } else if (value.is_array()) {
    for (auto& element : value) element = without_cached(element);
  }
  return value;
}

}  // namespace

std::string VmconfigItem::basename() const { return url_basename(url); }

std::string VmconfigBootFile::file_name() const { return path.substr(path.rfind('/') + 1); }

std::string VmconfigBootFile::view_path(const std::string& image_version) const {
  return "vmconfig/artifacts/os-image/" + image_version + "/boot/" + file_name();
}

std::string VmconfigItem::view_path() const { return "vmconfig/artifacts/" + name + "/" + version + "/" + basename(); }

std::string vmconfig_manifest_name(std::string_view kind, std::string_view arch) {
  return "vmconfig_" + std::string(kind) + "_debian-13_" + std::string(arch);
}

VmconfigManifest parse_vmconfig_manifest(std::string_view bytes, std::string_view expected_name) {
  std::string label = expected_name.empty() ? "(unnamed)" : std::string(expected_name);
  json document = parse_json_within_limits(bytes, "vmconfig manifest " + label);
  if (!document.is_object() || !document.contains("vmconfig") || !document["vmconfig"].is_object()) {
    throw Error("vmconfig manifest " + label + " has no top-level \"vmconfig\" object");
  }
  const auto& root = document["vmconfig"];
  VmconfigManifest manifest;
  manifest.version = text_of(root, "version");
  manifest.kind = text_of(root, "kind");
  if (auto os = root.find("os"); os != root.end() && os->is_object()) {
    manifest.arch = text_of(*os, "arch");
    if (auto image = os->find("image"); image != os->end() && image->is_object()) {
      manifest.items.push_back(item_of("os-image", *image, label));
    }
    manifest.boot_files = boot_files_of(*os, label);
  }
  manifest.name = vmconfig_manifest_name(manifest.kind, manifest.arch);
  if (!expected_name.empty() && manifest.name != expected_name) {
    throw Error(mismatch_message("vmconfig manifest names another kind or arch", std::string(expected_name),
                                 manifest.name));
  }
  if (auto deps = root.find("dependencies"); deps != root.end() && deps->is_object()) {
    for (const auto& [name, entry] : deps->items()) {  // nlohmann orders object keys: sorted by name
      auto item = item_of(name, entry, label);
      if (item.url.empty() && item.digest.empty()) {
        throw Error("published vmconfig manifest contains unreleased vmconfig stub: " + label + " item " + name);
      }
      manifest.items.push_back(std::move(item));
    }
  }
  manifest.document = std::move(document);
  return manifest;
}

std::vector<VmconfigItem> select_vmconfig_items(const VmconfigManifest& manifest,
                                                const std::vector<std::string>& providers) {
  bool all = std::find(providers.begin(), providers.end(), "all") != providers.end();
  std::vector<VmconfigItem> out;
  for (const auto& item : manifest.items) {
    bool wanted = item.providers.empty() || all ||
                  std::any_of(item.providers.begin(), item.providers.end(), [&](const std::string& provider) {
                    return std::find(providers.begin(), providers.end(), provider) != providers.end();
                  });
    if (wanted) out.push_back(item);
  }
  return out;
}

void validate_vmconfig_items(const VmconfigManifest& manifest, const std::vector<VmconfigItem>& items) {
  for (const auto& item : items) {
    std::string where = "vmconfig manifest " + manifest.name + " item " + item.name;
    if (!valid_digest(item.digest)) throw Error(where + ": digest must be sha256:<64 hex> or sha512:<128 hex>, got \"" + item.digest + "\"");
    if (item.url.empty()) throw Error(where + ": url is empty");
    if (item.size == 0) throw Error(where + ": size must be greater than 0");
    if (!valid_segment(item.name) || !valid_segment(item.version) || !valid_segment(item.basename())) {
      throw Error(where + ": name, version and file name must be plain path segments");
    }
  }
}

bool vmconfig_manifests_equal(const nlohmann::json& a, const nlohmann::json& b) {
  return without_cached(a) == without_cached(b);
}

}  // namespace podplane::fetch
