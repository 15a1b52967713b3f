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
#include "cache/git_refs.hpp"
#include "cache/kinds.hpp"
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

// What the catalogue links to: every path the site serves so far, with the digest of the
// object served there ("" for anything else).
std::map<std::string, std::string> served_digests(const MirrorSite& site) {
  std::map<std::string, std::string> served;
  for (const auto& [path, resource] : site.resources())
    served.emplace(path, resource.kind == ResourceKind::object ? resource.digest : std::string());
  return served;
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

namespace {

// What the builders of each kind below share: the store, and the resources and skipped rows
// of the site MirrorSite::build lends them.
struct SiteWriter {
  const cache::Store& store;
  std::map<std::string, SiteResource>& resources;
  std::vector<std::string>& skipped;

  void add(std::string path, SiteResource resource) { resources[std::move(path)] = std::move(resource); }
  void skip(std::string why) { skipped.push_back(std::move(why)); }

  [[nodiscard]] SiteResource object_resource(const cache::Artifact& artifact) const {
    SiteResource resource;
    resource.kind = ResourceKind::object;
    resource.content_type = content_type_for(artifact.filename);
    resource.object = store.object_path(artifact.digest);
    resource.size = artifact.size;
    resource.digest = artifact.digest;
    return resource;
  }

  [[nodiscard]] SiteResource manifest_resource(const cache::Artifact& manifest) const {
    auto resource = object_resource(manifest);
    resource.content_type = "application/json";
    return resource;
  }
};

// ---- providers -------------------------------------------------------------------------
using Platforms = std::map<std::string, cache::Artifact>;  // platform → package
using ProviderVersions = std::map<std::string, Platforms, VersionOrder>;

// The newest SHA256SUMS, signature and keys of each release; a row stored without a version
// serves every version of its address.
struct ReleaseDocTables {
  std::map<std::pair<std::string, std::string>, cache::Artifact> shasums, signatures, keys;

  [[nodiscard]] ReleaseDocs find(const std::string& address, const std::string& version) const {
    auto find_doc = [&](const auto& table) -> std::optional<cache::Artifact> {
      if (auto it = table.find({address, version}); it != table.end()) return it->second;
      if (auto it = table.find({address, std::string()}); it != table.end()) return it->second;
      return std::nullopt;
    };
    return {find_doc(shasums), find_doc(signatures), find_doc(keys)};
  }
};

// Where one provider's documents live: the network mirror's and the registry protocol's.
struct ProviderDirs {
  std::string host, ns, type;
  std::string mirror_dir, registry_dir;
};

// The registry protocol's documents of one version, added where its SHA256SUMS, signature and
// keys are stored, with its entry appended to `registry_versions`; otherwise skipped (the
// network mirror still serves it).
void add_registry_version(SiteWriter& site, const ProviderDirs& dirs, const std::string& address, const std::string& version,
                          const Platforms& platforms, const json& packages, const json& platform_list,
                          const ReleaseDocTables& tables, json& registry_versions) {
  // The registry protocol needs the upstream SHA256SUMS, its signature and the keys, so
  // that clients verify the signature offline exactly as they would online.
  ReleaseDocs docs = tables.find(address, version);
  if (!docs.shasums || !docs.signature || !docs.keys) {
    site.skip("provider registry protocol: " + address + " " + version +
              " has no stored SHA256SUMS, signature and keys (served by the network mirror only)");
    return;
  }
  if (!is_safe_segment(docs.shasums->filename) || !is_safe_segment(docs.signature->filename)) {
    site.skip("provider registry protocol: unsafe SHA256SUMS or signature name for " + address + " " + version);
    return;
  }
  std::optional<json> signing_keys;
  try {
    signing_keys = signing_keys_of(site.store.read_object(docs.keys->digest));
  } catch (const std::exception& error) {
    site.skip("provider registry protocol: cannot read the keys of " + address + " " + version + ": " + error.what());
    return;
  }
  if (!signing_keys) {
    site.skip("provider registry protocol: the keys document of " + address + " " + version + " is not signing_keys JSON");
    return;
  }
  site.add(dirs.mirror_dir + "/" + docs.shasums->filename, site.object_resource(*docs.shasums));
  site.add(dirs.mirror_dir + "/" + docs.signature->filename, site.object_resource(*docs.signature));
  registry_versions.push_back({{"version", version}, {"protocols", version_protocols(platforms)}, {"platforms", platform_list}});

  // From <registry_dir>/<version>/download/<os>/ seven levels up to /v1/: relative URLs
  // keep working when the tree is hosted below a path prefix.
  const std::string up = "../../../../../../../";
  const std::string mirror_rel =
      up + std::string(site_paths::network_mirror.substr(4)) + dirs.host + "/" + dirs.ns + "/" + dirs.type + "/";
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
    site.add(join_path({dirs.registry_dir, version, "download", os_arch[0], os_arch[1]}), json_document(answer));
  }
}

// One provider's network mirror documents and packages, and its registry protocol documents.
void add_provider(SiteWriter& site, const std::string& address, const ProviderVersions& versions,
                  const ReleaseDocTables& tables, std::vector<PublishedProviderRelease>& releases) {
  auto parts = split(address, '/');
  ProviderDirs dirs{parts[0], parts[1], parts[2], join_path({site_paths::network_mirror, parts[0], parts[1], parts[2]}),
                    join_path({site_paths::providers, parts[0], parts[1], parts[2]})};

  // The network mirror documents, byte for byte those of the views.
  std::vector<cache::Artifact> all_packages;
  for (const auto& [version, platforms] : versions)
    for (const auto& [platform, package] : platforms) all_packages.push_back(package);
  auto mirror_documents = cache::provider_mirror_documents(all_packages);
  site.add(dirs.mirror_dir + "/index.json", json_document(std::move(mirror_documents.index)));
  for (auto& [version, listing] : mirror_documents.versions)
    site.add(dirs.mirror_dir + "/" + version + ".json", json_document(std::move(listing)));

  json registry_versions = json::array();
  for (const auto& [version, platforms] : versions) {
    json packages = json::object();
    json platform_list = json::array();
    PublishedProviderRelease release{dirs.host, dirs.ns, dirs.type, version, {}};
    for (const auto& [platform, package] : platforms) {
      packages[platform] = {{"hashes", cache::package_lock_hashes(package)}, {"package_size", package.size}};
      auto os_arch = split(platform, '_');
      platform_list.push_back({{"os", os_arch[0]}, {"arch", os_arch[1]}});
      site.add(dirs.mirror_dir + "/" + package.filename, site.object_resource(package));
      release.packages.push_back(package);
    }
    releases.push_back(std::move(release));
    add_registry_version(site, dirs, address, version, platforms, packages, platform_list, tables, registry_versions);
  }
  if (!registry_versions.empty()) site.add(dirs.registry_dir + "/versions", json_document({{"versions", registry_versions}}));
}

// The store's artifact rows by where the table serves them (cache/kinds.hpp Served), each list in
// the order of the kinds, then of the index (a variant's rows come with its kind's).
struct ServedRows {
  std::vector<cache::Artifact> provider_packages, provider_shasums, provider_signatures, provider_keys;
  std::vector<cache::Artifact> vmconfig_manifests, vmconfig_files, seeds_manifests, seed_snapshots, tool_files;
  std::vector<cache::Artifact> git;  // git snapshots' packs and refs documents
  ImageRows images;
};

ServedRows served_rows(const cache::Store& store) {
  ServedRows rows;
  for (const auto& kind : cache::kinds()) {
    if (!kind.address.empty()) continue;
    for (auto& row : store.artifacts({.kind = *kind.kind})) {
      switch (cache::kind_info(row).served) {
        case cache::Served::unset:
        case cache::Served::none: break;
        case cache::Served::module_package: break;  // module trees: add_modules()
        case cache::Served::provider_package: rows.provider_packages.push_back(std::move(row)); break;
        case cache::Served::provider_shasums: rows.provider_shasums.push_back(std::move(row)); break;
        case cache::Served::provider_signature: rows.provider_signatures.push_back(std::move(row)); break;
        case cache::Served::provider_keys_inline: rows.provider_keys.push_back(std::move(row)); break;
        case cache::Served::vmconfig_manifest: rows.vmconfig_manifests.push_back(std::move(row)); break;
        case cache::Served::vmconfig_file: rows.vmconfig_files.push_back(std::move(row)); break;
        case cache::Served::seeds_manifest: rows.seeds_manifests.push_back(std::move(row)); break;
        case cache::Served::seed_snapshot: rows.seed_snapshots.push_back(std::move(row)); break;
        case cache::Served::tool_release_file: rows.tool_files.push_back(std::move(row)); break;
        case cache::Served::oci_index: rows.images.indexes.push_back(std::move(row)); break;
        case cache::Served::oci_manifest: rows.images.manifests.push_back(std::move(row)); break;
        case cache::Served::oci_attachment: rows.images.attachments.push_back(std::move(row)); break;
        case cache::Served::oci_blob: rows.images.blobs.push_back(std::move(row)); break;
        case cache::Served::git_repository: rows.git.push_back(std::move(row)); break;
      }
    }
  }
  return rows;
}

// Providers: address → version → platform → package.
void add_providers(SiteWriter& site, ServedRows& rows, std::vector<PublishedProviderRelease>& releases) {
  std::map<std::string, ProviderVersions> providers;
  for (auto& package : rows.provider_packages) {
    auto address = split(package.address, '/');
    auto platform = split(package.platform, '_');
    if (address.size() != 3 || !all_safe(address) || platform.size() != 2 || !all_safe(platform) ||
        !is_safe_segment(package.version) || !is_safe_segment(package.filename) || !is_sha256_hex(package.digest)) {
      site.skip("provider package with unsafe names: " + package.address + " " + package.version + " " +
                package.platform + " " + package.filename);
      continue;
    }
    providers[package.address][package.version][package.platform] = std::move(package);
  }
  ReleaseDocTables tables{latest_by_release(std::move(rows.provider_shasums)), latest_by_release(std::move(rows.provider_signatures)),
                          latest_by_release(std::move(rows.provider_keys))};
  for (const auto& [address, versions] : providers) add_provider(site, address, versions, tables, releases);
}

// ---- modules ---------------------------------------------------------------------------
// The registry package of one stored tree, or null when a file path is unsafe. The tree's
// files move into the package: a store of 50,000 objects has ~45,000 module files, and
// holding them twice would double the site's largest part.
std::shared_ptr<ModulePackage> module_package_of(const cache::Store& store, const std::string& address,
                                                 const std::string& version, cache::ModuleTree& tree) {
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
  if (!ok) return nullptr;
  for (const auto& directory : directories) package->entries.push_back({directory, 0755, {}, 0, {}});
  std::sort(package->entries.begin(), package->entries.end(),
            [](const ModulePackageEntry& a, const ModulePackageEntry& b) { return a.path < b.path; });
  return package;
}

// Modules: the whole registry package per version, as a tar.gz built from the stored tree.
void add_modules(SiteWriter& site, std::vector<std::shared_ptr<const ModulePackage>>& packages) {
  std::map<std::string, std::map<std::string, cache::ModuleTree, VersionOrder>> modules;
  for (auto& tree : site.store.module_trees()) {
    auto address = split(tree.address, '/');
    if (address.size() != 4 || !all_safe(address) || !is_safe_segment(tree.version)) {
      site.skip("module with unsafe names: " + tree.address + " " + tree.version);
      continue;
    }
    modules[tree.address][tree.version] = std::move(tree);
  }
  for (auto& [address, versions] : modules) {
    std::string registry_dir = join_path({site_paths::modules, address});
    json version_list = json::array();
    for (auto& [version, tree] : versions) {
      auto package = module_package_of(site.store, address, version, tree);
      if (!package) {
        site.skip("module " + address + " " + version + " has an unsafe file path");
        continue;
      }
      std::string version_dir = registry_dir + "/" + version;
      SiteResource tarball;
      tarball.kind = ResourceKind::module_package;
      tarball.content_type = "application/gzip";
      tarball.module = package;
      site.add(version_dir + "/" + std::string(site_paths::module_package_name), std::move(tarball));
      SiteResource download;
      download.kind = ResourceKind::module_download;
      download.content_type = "application/json";
      download.location = "./" + std::string(site_paths::module_package_name);
      download.body = dump({{"location", download.location}});
      site.add(version_dir + "/download", std::move(download));
      version_list.push_back({{"version", version}});
      packages.push_back(std::move(package));
    }
    if (!version_list.empty())
      site.add(registry_dir + "/versions", json_document({{"modules", json::array({{{"versions", version_list}}})}}));
  }
}

// ---- vmconfig and seeds ----------------------------------------------------------------
// vmconfig: Podplane's mirror layout, so a stack's deps_mirror_url can be this server.
// Each stored file under its own name, then each manifest under its plain name
// (<address>.json, the newest row: what the store's view holds) twice: where the cache
// keeps it (/vmconfig/manifests/) and where deps.podplane.dev publishes it (/manifests/,
// what `deps download` asks $PODPLANE_DEPS_URL for). The plain name wins over a stored
// file of the same name.
void add_vmconfig(SiteWriter& site, const ServedRows& rows) {
  std::map<std::string, cache::Artifact> by_file, by_name;  // newest row per file name, per manifest name
  for (const auto& manifest : rows.vmconfig_manifests) {
    if (!is_safe_segment(manifest.filename) || !is_safe_segment(manifest.address + ".json")) {
      site.skip("vmconfig manifest with an unsafe name: " + manifest.address + " " + manifest.filename);
      continue;
    }
    for (auto* table : {&by_file, &by_name}) {
      const std::string& key = table == &by_file ? manifest.filename : manifest.address;
      auto it = table->find(key);
      if (it == table->end() || it->second.id < manifest.id) (*table)[key] = manifest;
    }
  }
  for (const auto& [filename, manifest] : by_file)
    site.add(std::string(site_paths::vmconfig) + "manifests/" + filename, site.manifest_resource(manifest));
  for (const auto& [name, manifest] : by_name) {
    site.add(std::string(site_paths::vmconfig) + "manifests/" + name + ".json", site.manifest_resource(manifest));
    site.add(std::string(site_paths::deps_manifests) + name + ".json", site.manifest_resource(manifest));
  }
  // Artifacts at Podplane's plain path and at each arch's base (cache/views.hpp): the site,
  // the views and `cluster check`'s replay of a VM agree on every path. The boot files read out
  // of each os image sit beside it (…/os-image/<version>/boot/<file>), for nodes that boot them.
  for (const auto& [path, artifact] : cache::vmconfig_artifact_paths(rows.vmconfig_files)) {
    auto segments = split(path, '/');
    if (!all_safe(segments)) {
      site.skip("vmconfig artifact with unsafe names: " + artifact.address + " " + artifact.version + " " + artifact.filename);
      continue;
    }
    site.add("/" + path, site.object_resource(artifact));
  }
}

// Seeds: the newest seeds.json where deps.podplane.dev publishes it (/manifests/seeds.json,
// what `deps download` asks $PODPLANE_DEPS_URL for) and where the cache keeps it, and every
// snapshot at its view path.
void add_seeds(SiteWriter& site, const ServedRows& rows) {
  std::optional<cache::Artifact> seeds_manifest;
  for (const auto& row : rows.seeds_manifests)
    if (!seeds_manifest || seeds_manifest->id < row.id) seeds_manifest = row;
  if (seeds_manifest) {
    site.add(std::string(site_paths::deps_manifests) + "seeds.json", site.manifest_resource(*seeds_manifest));
    site.add("/seeds/manifests/seeds.json", site.manifest_resource(*seeds_manifest));
  }
  for (const auto& snapshot : rows.seed_snapshots) {
    if (!is_safe_segment(snapshot.address) || !is_safe_segment(snapshot.version) || !is_safe_segment(snapshot.filename)) {
      site.skip("seed snapshot with unsafe names: " + snapshot.address + " " + snapshot.version + " " + snapshot.filename);
      continue;
    }
    site.add(join_path({"/seeds/snapshots", snapshot.address, snapshot.version, snapshot.filename}),
             site.object_resource(snapshot));
  }
}

// Engine releases at stable paths shaped like releases.hashicorp.com's:
// /tools/<engine>/<version>/<file>, the zips beside their SHA256SUMS and its signature, so that
// `tools install --from` (or curl and gpg) checks them as against the upstream.
void add_tools(SiteWriter& site, const ServedRows& rows) {
  for (const auto& row : rows.tool_files) {
    if (!is_safe_segment(row.address) || !is_safe_segment(row.version) || !is_safe_segment(row.filename)) {
      site.skip("engine release file with unsafe names: " + row.address + " " + row.version + " " + row.filename);
      continue;
    }
    site.add(join_path({std::string(site_paths::tools), row.address, row.version, row.filename}), site.object_resource(row));
  }
}

// The catalogue pages and JSON, describing the site built so far (what is served, and where).
void add_catalogue(SiteWriter& site, const std::shared_ptr<const Catalogue>& catalogue) {
  auto page = [&](std::string path, std::string section) {
    SiteResource resource;
    resource.kind = ResourceKind::catalogue_page;
    resource.content_type = "text/html; charset=utf-8";
    resource.catalogue = catalogue;
    resource.catalogue_section = std::move(section);
    site.add(std::move(path), std::move(resource));
  };
  page("/", "");
  page(std::string(site_paths::catalogue), "");
  for (const auto& section : catalogue->sections) page(std::string(site_paths::catalogue) + section.id + "/", section.id);
  SiteResource data;
  data.content_type = "application/json";
  data.body = render_catalogue_json(*catalogue);
  site.add(std::string(site_paths::catalogue_json), std::move(data));
}

// The time of the newest bundle import the audit log records as ok; "" when there is none.
std::string newest_import(const cache::Store& store) {
  std::string newest;
  for (const auto& entry : store.audit_log()) {
    if (entry.action != "bundle-import" || entry.at <= newest) continue;
    auto detail = json::parse(entry.detail, nullptr, false);
    if (detail.is_object() && detail.contains("ok") && detail["ok"].is_boolean() && detail["ok"].get<bool>()) newest = entry.at;
  }
  return newest;
}

}  // namespace

std::string health_document(const MirrorSite& site) {
  json document{{"status", "ok"}, {"generation", site.generation()}, {"last_import", nullptr}};
  if (!site.last_import().empty()) document["last_import"] = site.last_import();
  return dump(document);
}

// One function per kind of content, each adding its paths for the rows the table serves that way
// and skipping the rows it cannot serve.
// The git snapshots: each refs document read and paired with its pack (same address, version
// and commit); one that cannot be read or has no pack is skipped, saying why.
std::vector<StoredGitSnapshot> git_snapshots(const cache::Store& store, const std::vector<cache::Artifact>& rows,
                                             std::vector<std::string>& skipped) {
  std::map<std::tuple<std::string, std::string, std::string>, const cache::Artifact*> packs;
  for (const auto& row : rows)
    if (row.kind == cache::ArtifactKind::git_pack) packs[{row.address, row.version, row.filename}] = &row;
  std::vector<StoredGitSnapshot> snapshots;
  for (const auto& row : rows) {
    if (row.kind != cache::ArtifactKind::git_refs) continue;
    const std::string what = "git snapshot " + row.address + " " + row.version;
    try {
      auto ref = cache::parse_git_refs_document(store.read_object(row.digest), what);
      auto pack = packs.find({row.address, row.version, ref.commit + ".pack"});
      if (pack == packs.end()) throw Error(what + ": its pack " + ref.commit + ".pack is not in the store");
      snapshots.push_back({row.address, store.object_path(pack->second->digest), pack->second->digest, std::move(ref), row.id});
    } catch (const Error& error) {
      skipped.push_back(error.message());
    }
  }
  return snapshots;
}

MirrorSite MirrorSite::build(const cache::Store& store, const SiteOptions& options) {
  MirrorSite site;
  auto selection = store.tf_selection();
  site.primary_host_ = options.primary_host;
  if (site.primary_host_.empty())
    site.primary_host_ = selection && selection->engine == "terraform" ? "registry.terraform.io" : "registry.opentofu.org";

  SiteWriter writer{store, site.resources_, site.skipped_};
  site.generation_ = store.content_generation();
  site.last_import_ = newest_import(store);
  writer.add(std::string(site_paths::healthz), json_document(health_document(site)));
  writer.add(std::string(site_paths::well_known),
             json_document({{"providers.v1", std::string(site_paths::providers) + site.primary_host_ + "/"},
                            {"modules.v1", std::string(site_paths::modules) + site.primary_host_ + "/"}}));
  auto rows = served_rows(store);
  add_providers(writer, rows, site.provider_releases_);
  add_modules(writer, site.module_packages_);
  add_vmconfig(writer, rows);
  add_seeds(writer, rows);
  add_tools(writer, rows);
  add_image_resources(store, std::move(rows.images), site);
  site.git_ = std::make_shared<GitRepositories>(git_snapshots(store, rows.git, site.skipped_));
  site.catalogue_ = std::make_shared<const Catalogue>(build_catalogue(gather_catalogue_source(store, site.primary_host(), served_digests(site))));
  add_catalogue(writer, site.catalogue_);
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
    // Streamed into the archive, never held whole: a store object, unbounded by design.
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
