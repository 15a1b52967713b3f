#include "mirror/serve_site.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/archive.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/split.hpp"
#include "cache/provider_documents.hpp"
#include "cache/views.hpp"
#include "lockfile/version.hpp"
#include "mirror/catalogue.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Fixed timestamp for every archive entry: 1980-01-01T00:00:00Z, the earliest a zip can hold,
// so tar.gz and zip packages of one tree carry the same time.
constexpr std::time_t kArchiveMtime = 315532800;

bool all_safe(const std::vector<std::string>& segments) {
  return std::all_of(segments.begin(), segments.end(), [](const std::string& s) { return is_safe_segment(s); });
}

// go-versions order where both parse; text order otherwise (never throws: the index is trusted
// for content, but a row we cannot order must not take the server down).
bool version_less(const std::string& a, const std::string& b) {
  try {
    return lockfile::Version::parse(a) < lockfile::Version::parse(b);
  } catch (const std::exception&) {
    return a < b;
  }
}

struct VersionOrder {
  bool operator()(const std::string& a, const std::string& b) const { return version_less(a, b); }
};

std::string dump(const json& document) { return document.dump(2) + "\n"; }

SiteResource json_document(std::string body) {
  SiteResource resource;
  resource.kind = ResourceKind::document;
  resource.content_type = "application/json";
  resource.body = std::move(body);
  return resource;
}

SiteResource json_document(const json& document) { return json_document(dump(document)); }

std::string content_type_for(std::string_view filename) {
  auto ends_with = [&](std::string_view suffix) {
    return filename.size() >= suffix.size() && filename.substr(filename.size() - suffix.size()) == suffix;
  };
  if (ends_with(".json")) return "application/json";
  if (ends_with(".zip")) return "application/zip";
  if (ends_with(".gz") || ends_with(".tgz")) return "application/gzip";
  return "application/octet-stream";
}

struct ReleaseDocs {
  std::optional<cache::Artifact> shasums, signature, keys;
};

// The newest row of each (address, version) wins: the index is additive, and a later fetch of
// the same release documents is the one the provenance of later packages points at.
std::map<std::pair<std::string, std::string>, cache::Artifact> latest_by_release(std::vector<cache::Artifact> rows) {
  std::map<std::pair<std::string, std::string>, cache::Artifact> latest;
  for (auto& row : rows) {
    auto key = std::make_pair(row.address, row.version);
    auto it = latest.find(key);
    if (it == latest.end() || it->second.id < row.id) latest[key] = std::move(row);
  }
  return latest;
}

// The signing_keys object of the registry answer, from the stored keys document, which is
// either that object ({"gpg_public_keys": […]}) or a whole registry answer holding it.
std::optional<json> signing_keys_of(const std::string& text) {
  auto document = json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) return std::nullopt;
  if (document.contains("signing_keys")) document = document["signing_keys"];
  if (!document.is_object() || !document.contains("gpg_public_keys") || !document["gpg_public_keys"].is_array())
    return std::nullopt;
  return document;
}

// The plugin protocols the registry listed for a package, as it listed them; [] where it
// listed none or the store does not know them (docs/mirror.md "Plugin protocols").
json protocols_of(const cache::Artifact& package) { return package.protocols ? json(*package.protocols) : json::array(); }

// A version's protocols in the versions document: upstream lists them once per version and
// repeats them in each platform's download answer, so the packages agree; should they not, the
// union, in the order the platforms (sorted) list them, leaves out none a client may rely on.
json version_protocols(const std::map<std::string, cache::Artifact>& platforms) {
  std::vector<std::string> listed;
  for (const auto& [platform, package] : platforms) {
    if (!package.protocols) continue;
    for (const auto& protocol : *package.protocols)
      if (std::find(listed.begin(), listed.end(), protocol) == listed.end()) listed.push_back(protocol);
  }
  return json(listed);
}

std::string join_path(std::initializer_list<std::string_view> parts) {
  std::string path;
  for (auto part : parts) {
    if (!path.empty() && path.back() != '/') path += '/';
    path += part;
  }
  return path;
}

}  // namespace

bool is_safe_segment(std::string_view segment) {
  if (segment.empty() || segment.size() > 255 || segment == "." || segment == "..") return false;
  for (char c : segment) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == '+' || c == '~' || c == '@' || c == '=' || c == ',';
    if (!ok) return false;
  }
  return true;
}

const SiteResource* MirrorSite::find(std::string_view path) const {
  auto it = resources_.find(std::string(path));
  return it == resources_.end() ? nullptr : &it->second;
}

MirrorSite MirrorSite::build(const cache::Store& store, const SiteOptions& options) {
  MirrorSite site;
  auto selection = store.tf_selection();
  site.primary_host_ = options.primary_host;
  if (site.primary_host_.empty())
    site.primary_host_ = selection && selection->engine == "terraform" ? "registry.terraform.io" : "registry.opentofu.org";

  auto add = [&site](std::string path, SiteResource resource) { site.resources_[std::move(path)] = std::move(resource); };
  auto skip = [&site](std::string why) { site.skipped_.push_back(std::move(why)); };
  auto object_resource = [&](const cache::Artifact& artifact) {
    SiteResource resource;
    resource.kind = ResourceKind::object;
    resource.content_type = content_type_for(artifact.filename);
    resource.object = store.object_path(artifact.digest);
    resource.size = artifact.size;
    resource.digest = artifact.digest;
    return resource;
  };

  {
    SiteResource health;
    health.content_type = "text/plain";
    health.body = "ok\n";
    add(std::string(site_paths::healthz), std::move(health));
  }
  add(std::string(site_paths::well_known),
      json_document({{"providers.v1", std::string(site_paths::providers) + site.primary_host_ + "/"},
                     {"modules.v1", std::string(site_paths::modules) + site.primary_host_ + "/"}}));

  // Providers: address → version → platform → package.
  using Platforms = std::map<std::string, cache::Artifact>;
  std::map<std::string, std::map<std::string, Platforms, VersionOrder>> providers;
  for (auto& package : store.artifacts({.kind = cache::ArtifactKind::provider_package})) {
    auto address = split(package.address, '/');
    auto platform = split(package.platform, '_');
    if (address.size() != 3 || !all_safe(address) || platform.size() != 2 || !all_safe(platform) ||
        !is_safe_segment(package.version) || !is_safe_segment(package.filename) || !is_sha256_hex(package.digest)) {
      skip("provider package with unsafe names: " + package.address + " " + package.version + " " + package.platform +
           " " + package.filename);
      continue;
    }
    providers[package.address][package.version][package.platform] = std::move(package);
  }
  auto shasums = latest_by_release(store.artifacts({.kind = cache::ArtifactKind::provider_shasums}));
  auto signatures = latest_by_release(store.artifacts({.kind = cache::ArtifactKind::provider_signature}));
  auto keys = latest_by_release(store.artifacts({.kind = cache::ArtifactKind::provider_keys}));
  auto find_doc = [](const auto& table, const std::string& address, const std::string& version)
      -> std::optional<cache::Artifact> {
    if (auto it = table.find({address, version}); it != table.end()) return it->second;
    if (auto it = table.find({address, std::string()}); it != table.end()) return it->second;
    return std::nullopt;
  };

  for (const auto& [address, versions] : providers) {
    auto parts = split(address, '/');
    const auto &host = parts[0], &ns = parts[1], &type = parts[2];
    std::string mirror_dir = join_path({site_paths::network_mirror, host, ns, type});
    std::string registry_dir = join_path({site_paths::providers, host, ns, type});

    // The network mirror documents, byte for byte those of the views.
    std::vector<cache::Artifact> all_packages;
    for (const auto& [version, platforms] : versions)
      for (const auto& [platform, package] : platforms) all_packages.push_back(package);
    auto mirror_documents = cache::provider_mirror_documents(all_packages);
    add(mirror_dir + "/index.json", json_document(std::move(mirror_documents.index)));
    for (auto& [version, listing] : mirror_documents.versions)
      add(mirror_dir + "/" + version + ".json", json_document(std::move(listing)));

    json registry_versions = json::array();
    for (const auto& [version, platforms] : versions) {
      json packages = json::object();
      json platform_list = json::array();
      PublishedProviderRelease release{host, ns, type, version, {}};
      for (const auto& [platform, package] : platforms) {
        packages[platform] = {{"hashes", cache::package_lock_hashes(package)}, {"package_size", package.size}};
        auto os_arch = split(platform, '_');
        platform_list.push_back({{"os", os_arch[0]}, {"arch", os_arch[1]}});
        add(mirror_dir + "/" + package.filename, object_resource(package));
        release.packages.push_back(package);
      }
      site.provider_releases_.push_back(std::move(release));

      // The registry protocol needs the upstream SHA256SUMS, its signature and the keys, so
      // that clients verify the signature offline exactly as they would online.
      ReleaseDocs docs{find_doc(shasums, address, version), find_doc(signatures, address, version),
                       find_doc(keys, address, version)};
      if (!docs.shasums || !docs.signature || !docs.keys) {
        skip("provider registry protocol: " + address + " " + version +
             " has no stored SHA256SUMS, signature and keys (served by the network mirror only)");
        continue;
      }
      if (!is_safe_segment(docs.shasums->filename) || !is_safe_segment(docs.signature->filename)) {
        skip("provider registry protocol: unsafe SHA256SUMS or signature name for " + address + " " + version);
        continue;
      }
      std::optional<json> signing_keys;
      try {
        signing_keys = signing_keys_of(store.read_object(docs.keys->digest));
      } catch (const std::exception& error) {
        skip("provider registry protocol: cannot read the keys of " + address + " " + version + ": " + error.what());
        continue;
      }
      if (!signing_keys) {
        skip("provider registry protocol: the keys document of " + address + " " + version + " is not signing_keys JSON");
        continue;
      }
      add(mirror_dir + "/" + docs.shasums->filename, object_resource(*docs.shasums));
      add(mirror_dir + "/" + docs.signature->filename, object_resource(*docs.signature));
      registry_versions.push_back({{"version", version}, {"protocols", version_protocols(platforms)}, {"platforms", platform_list}});

      // From <registry_dir>/<version>/download/<os>/ seven levels up to /v1/: relative URLs
      // keep working when the tree is hosted below a path prefix.
      const std::string up = "../../../../../../../";
      const std::string mirror_rel = up + std::string(site_paths::network_mirror.substr(4)) + host + "/" + ns + "/" + type + "/";
      for (const auto& [platform, package] : platforms) {
        auto os_arch = split(platform, '_');
        json answer = {
            {"protocols", protocols_of(package)},
            {"os", os_arch[0]},
            {"arch", os_arch[1]},
            {"filename", package.filename},
            {"download_url", mirror_rel + package.filename},
            {"shasum", package.digest},
            {"shasums_url", mirror_rel + docs.shasums->filename},
            {"shasums_signature_url", mirror_rel + docs.signature->filename},
            {"signing_keys", *signing_keys},
            {"packages", packages},
        };
        add(join_path({registry_dir, version, "download", os_arch[0], os_arch[1]}), json_document(answer));
      }
    }
    if (!registry_versions.empty()) add(registry_dir + "/versions", json_document({{"versions", registry_versions}}));
  }

  // Modules: the whole registry package per version, as a tar.gz built from the stored tree.
  std::map<std::string, std::map<std::string, cache::ModuleTree, VersionOrder>> modules;
  for (auto& tree : store.module_trees()) {
    auto address = split(tree.address, '/');
    if (address.size() != 4 || !all_safe(address) || !is_safe_segment(tree.version)) {
      skip("module with unsafe names: " + tree.address + " " + tree.version);
      continue;
    }
    modules[tree.address][tree.version] = std::move(tree);
  }
  // Each tree's files move into its package: a store of 50,000 objects has ~45,000 module
  // files, and holding them twice would double the site's largest part.
  for (auto& [address, versions] : modules) {
    std::string registry_dir = join_path({site_paths::modules, address});
    json version_list = json::array();
    for (auto& [version, tree] : versions) {
      auto package = std::make_shared<ModulePackage>();
      package->address = address;
      package->version = version;
      std::set<std::string> directories;
      bool ok = true;
      for (auto& file : tree.files) {
        auto segments = split(file.path, '/');
        // File names inside a module are less constrained than URL segments, but never
        // climb out of the package nor hide behind an absolute path.
        bool safe = !segments.empty() && std::none_of(segments.begin(), segments.end(), [](const std::string& s) {
          return s.empty() || s == "." || s == ".." || s.find('\0') != std::string::npos || s.find('\\') != std::string::npos;
        });
        if (!safe || !is_sha256_hex(file.digest)) {
          ok = false;
          break;
        }
        std::string prefix;
        for (std::size_t i = 0; i + 1 < segments.size(); ++i) directories.insert(prefix += segments[i] + "/");
        std::string object = store.object_path(file.digest).native();
        package->entries.push_back({std::move(file.path), (file.mode & 0111) ? 0755u : 0644u, std::move(object), file.size,
                                    std::move(file.digest)});
      }
      std::vector<cache::ModuleFile>().swap(tree.files);
      if (!ok) {
        skip("module " + address + " " + version + " has an unsafe file path");
        continue;
      }
      for (const auto& directory : directories) package->entries.push_back({directory, 0755, {}, 0, {}});
      std::sort(package->entries.begin(), package->entries.end(),
                [](const ModulePackageEntry& a, const ModulePackageEntry& b) { return a.path < b.path; });

      std::string version_dir = registry_dir + "/" + version;
      SiteResource tarball;
      tarball.kind = ResourceKind::module_package;
      tarball.content_type = "application/gzip";
      tarball.module = package;
      add(version_dir + "/" + std::string(site_paths::module_package_name), std::move(tarball));
      SiteResource download;
      download.kind = ResourceKind::module_download;
      download.content_type = "application/json";
      download.location = "./" + std::string(site_paths::module_package_name);
      download.body = dump({{"location", download.location}});
      add(version_dir + "/download", std::move(download));
      version_list.push_back({{"version", version}});
      site.module_packages_.push_back(std::move(package));
    }
    if (!version_list.empty())
      add(registry_dir + "/versions", json_document({{"modules", json::array({{{"versions", version_list}}})}}));
  }

  // vmconfig: Podplane's mirror layout, so a stack's deps_mirror_url can be this server.
  // Each stored file under its own name, then each manifest under its plain name
  // (<address>.json, the newest row: what the store's view holds) twice: where the cache
  // keeps it (/vmconfig/manifests/) and where deps.podplane.dev publishes it (/manifests/,
  // what `deps download` asks $PODPLANE_DEPS_URL for). The plain name wins over a stored
  // file of the same name.
  std::map<std::string, cache::Artifact> by_file, by_name;  // newest row per file name, per manifest name
  for (auto& manifest : store.artifacts({.kind = cache::ArtifactKind::vmconfig_manifest})) {
    if (!is_safe_segment(manifest.filename) || !is_safe_segment(manifest.address + ".json")) {
      skip("vmconfig manifest with an unsafe name: " + manifest.address + " " + manifest.filename);
      continue;
    }
    for (auto* table : {&by_file, &by_name}) {
      const std::string& key = table == &by_file ? manifest.filename : manifest.address;
      auto it = table->find(key);
      if (it == table->end() || it->second.id < manifest.id) (*table)[key] = manifest;
    }
  }
  auto manifest_resource = [&](const cache::Artifact& manifest) {
    auto resource = object_resource(manifest);
    resource.content_type = "application/json";
    return resource;
  };
  for (const auto& [filename, manifest] : by_file)
    add(std::string(site_paths::vmconfig) + "manifests/" + filename, manifest_resource(manifest));
  for (const auto& [name, manifest] : by_name) {
    add(std::string(site_paths::vmconfig) + "manifests/" + name + ".json", manifest_resource(manifest));
    add(std::string(site_paths::deps_manifests) + name + ".json", manifest_resource(manifest));
  }
  // Artifacts at Podplane's plain path and at each arch's base (cache/views.hpp): the site,
  // the views and `cluster check`'s replay of a VM agree on every path. The boot files read out
  // of each os image sit beside it (…/os-image/<version>/boot/<file>), for nodes that boot them.
  auto vmconfig_rows = store.artifacts({.kind = cache::ArtifactKind::vmconfig_artifact});
  for (auto& row : store.artifacts({.kind = cache::ArtifactKind::vmconfig_boot_file})) vmconfig_rows.push_back(std::move(row));
  for (const auto& [path, artifact] : cache::vmconfig_artifact_paths(vmconfig_rows)) {
    auto segments = split(path, '/');
    if (!all_safe(segments)) {
      skip("vmconfig artifact with unsafe names: " + artifact.address + " " + artifact.version + " " + artifact.filename);
      continue;
    }
    add("/" + path, object_resource(artifact));
  }
  // Seeds: the newest seeds.json where deps.podplane.dev publishes it (/manifests/seeds.json,
  // what `deps download` asks $PODPLANE_DEPS_URL for) and where the cache keeps it, and every
  // snapshot at its view path.
  std::optional<cache::Artifact> seeds_manifest;
  for (auto& row : store.artifacts({.kind = cache::ArtifactKind::seed_manifest}))
    if (!seeds_manifest || seeds_manifest->id < row.id) seeds_manifest = std::move(row);
  if (seeds_manifest) {
    add(std::string(site_paths::deps_manifests) + "seeds.json", manifest_resource(*seeds_manifest));
    add("/seeds/manifests/seeds.json", manifest_resource(*seeds_manifest));
  }
  for (const auto& snapshot : store.artifacts({.kind = cache::ArtifactKind::seed_snapshot})) {
    if (!is_safe_segment(snapshot.address) || !is_safe_segment(snapshot.version) || !is_safe_segment(snapshot.filename)) {
      skip("seed snapshot with unsafe names: " + snapshot.address + " " + snapshot.version + " " + snapshot.filename);
      continue;
    }
    add(join_path({"/seeds/snapshots", snapshot.address, snapshot.version, snapshot.filename}), object_resource(snapshot));
  }
  add_image_resources(store, site);

  // The catalogue describes the site built so far (what is served, and where).
  auto catalogue = std::make_shared<const Catalogue>(build_catalogue(gather_catalogue_source(store, site)));
  site.catalogue_ = catalogue;
  auto page = [&](std::string path, std::string section) {
    SiteResource resource;
    resource.kind = ResourceKind::catalogue_page;
    resource.content_type = "text/html; charset=utf-8";
    resource.catalogue = catalogue;
    resource.catalogue_section = std::move(section);
    add(std::move(path), std::move(resource));
  };
  page("/", "");
  page(std::string(site_paths::catalogue), "");
  for (const auto& section : catalogue->sections) page(std::string(site_paths::catalogue) + section.id + "/", section.id);
  SiteResource data;
  data.content_type = "application/json";
  data.body = render_catalogue_json(*catalogue);
  add(std::string(site_paths::catalogue_json), std::move(data));
  return site;
}

namespace {

void write_package(libarchive::Archive& writer, const ModulePackage& package, const ByteSink& sink) {
  std::string name = package.address + " " + package.version;
  // A sink that throws (client gone, disk full) fails the write, and its own exception is
  // what the next check rethrows: none crosses libarchive.
  writer.open_sink(sink, "cannot write the module package of " + name);
  std::vector<char> buffer(1 << 16);
  libarchive::Entry entry;
  for (const auto& item : package.entries) {
    bool directory = !item.path.empty() && item.path.back() == '/';
    libarchive::FixedHeader header;
    header.path = item.path;
    header.type = directory ? libarchive::FixedHeader::Type::directory : libarchive::FixedHeader::Type::file;
    header.mode = static_cast<unsigned>(item.mode);
    header.size = static_cast<std::uint64_t>(item.size);
    header.mtime = kArchiveMtime;
    // A name libarchive cannot convert is written as raw bytes with a warning: the package
    // then carries exactly the name the store holds.
    libarchive::write_fixed_header(writer, entry, header, "cannot write " + item.path + " of " + name,
                                   libarchive::Warnings::pass);
    if (directory) continue;
    std::ifstream in(item.object, std::ios::binary);
    if (!in) throw Error("module " + name + ": missing object for " + item.path + " at " + item.object);
    std::int64_t written = 0;
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      auto got = in.gcount();
      if (got <= 0) break;
      writer.write_data(buffer.data(), static_cast<size_t>(got), "cannot write " + item.path + " of " + name);
      written += got;
    }
    if (written != item.size)
      throw Error(mismatch_message("module " + name + ": object of " + item.path + " has another size",
                                   std::to_string(item.size), std::to_string(written)));
  }
  writer.close("cannot finish the module package of " + name);
}

}  // namespace

void write_module_tar_gz(const ModulePackage& package, const ByteSink& sink) {
  libarchive::Archive writer(libarchive::Direction::write);
  archive* a = writer.get();
  writer.check(archive_write_set_format_pax_restricted(a), "tar format");
  writer.check(archive_write_add_filter_gzip(a), "gzip filter");
  // No timestamp in the gzip header: the same tree gives the same bytes on every run.
  writer.check(archive_write_set_options(a, "gzip:!timestamp"), "gzip options");
  writer.check(archive_write_set_bytes_in_last_block(a, 1), "block size");
  write_package(writer, package, sink);
}

void write_module_zip(const ModulePackage& package, const ByteSink& sink) {
  libarchive::Archive writer(libarchive::Direction::write);
  archive* a = writer.get();
  writer.check(archive_write_set_format_zip(a), "zip format");
  writer.check(archive_write_zip_set_compression_deflate(a), "zip compression");
  writer.check(archive_write_set_bytes_in_last_block(a, 1), "block size");
  write_package(writer, package, sink);
}

}  // namespace podplane::mirror
