#include "mirror/catalogue.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "base/ascii.hpp"
#include "base/error.hpp"
#include "base/human_bytes.hpp"
#include "base/split.hpp"
#include "base/url.hpp"
#include "cache/kinds.hpp"
#include "cache/podplane_releases.hpp"
#include "cache/row_rules.hpp"
#include "cache/signers.hpp"
#include "cache/views.hpp"
#include "lockfile/version.hpp"
#include "mirror/site_paths.hpp"
#include "net/oci_reference.hpp"

namespace podplane::mirror {

using nlohmann::json;

namespace {

// Newest first where both parse as versions; text order otherwise (never throws: a row we
// cannot order is still shown).
bool version_newer(const std::string& a, const std::string& b) {
  try {
    return lockfile::Version::parse(b) < lockfile::Version::parse(a);
  } catch (const std::exception&) {
    return a > b;
  }
}

std::string arch_of(const std::string& platform) {
  auto underscore = platform.rfind('_');
  return underscore == std::string::npos ? platform : platform.substr(underscore + 1);
}

// The arch a vmconfig manifest is for: its platform (linux_<arch>), else the last '_' part of
// its name (vmconfig_knc_debian-13_amd64).
std::string manifest_arch(const cache::Artifact& manifest) {
  if (!manifest.platform.empty()) return arch_of(manifest.platform);
  return arch_of(manifest.address);
}

CatalogueCell text(std::string value) { return {std::move(value), CellKind::text, {}, Tone::neutral, {}, CellKind::text}; }
CatalogueCell code(std::string value, std::string href = {}) {
  return {std::move(value), CellKind::code, std::move(href), Tone::neutral, {}, CellKind::text};
}
CatalogueCell status(std::string value, Tone tone) {
  return {std::move(value), CellKind::status, {}, tone, {}, CellKind::text};
}
// A digest to copy; `more` are further lines in words (a key's user ids, a file name).
CatalogueCell hash(std::string value, std::vector<std::string> more = {}) {
  return {std::move(value), CellKind::hash, {}, Tone::neutral, std::move(more), CellKind::text};
}
// Several digests, one per line (h1 then zh).
CatalogueCell hashes(std::string value, std::string next) {
  return {std::move(value), CellKind::hash, {}, Tone::neutral, {std::move(next)}, CellKind::hash};
}

Tone tone_of(cache::Trust trust) {
  switch (trust) {
    case cache::Trust::signed_upstream: return Tone::good;
    case cache::Trust::checksum: return Tone::neutral;
    case cache::Trust::unverified: return Tone::warning;
  }
  return Tone::neutral;
}

// One row of a section as typed fields, each named once: a field knows how it shows in the
// table (a cell, in column order) and in catalogue.json (under its key), or that it shows in
// only one of them. cells() and data() are the two renderings of the same fields.
class RowFields {
 public:
  // Text in both: a plain cell, a JSON string.
  RowFields& text(const char* key, const std::string& value) { return both(key, value, mirror::text(value)); }
  // A name or version: a monospace cell, linked to `href` when the site serves it there.
  RowFields& code(const char* key, const std::string& value, std::string href = {}) {
    return both(key, value, mirror::code(value, std::move(href)));
  }
  // A digest to copy, linked like code().
  RowFields& hash(const char* key, const std::string& value, std::string href = {}) {
    auto linked = mirror::hash(value);
    linked.href = std::move(href);
    return both(key, value, std::move(linked));
  }
  // A size: "1.2 MiB" in the table, the number of bytes in the data.
  RowFields& bytes(const char* key, std::int64_t size) {
    return both(key, size, mirror::text(human_bytes(static_cast<std::uint64_t>(size))));
  }
  // A number of things: its digits in the table, the number in the data.
  RowFields& count(const char* key, std::size_t n) { return both(key, n, mirror::text(std::to_string(n))); }
  // How a row was verified: a status cell toned by it, its name in the data.
  RowFields& trust(const char* key, cache::Trust level) {
    std::string name(cache::to_string(level));
    return both(key, name, status(name, tone_of(level)));
  }
  // In catalogue.json only.
  RowFields& data(const char* key, json value) {
    data_[key] = std::move(value);
    return *this;
  }
  // In the table only: the page's words about other fields (a verdict, a summary of several).
  RowFields& cell(CatalogueCell shown) {
    cells_.push_back(std::move(shown));
    return *this;
  }

  const std::vector<CatalogueCell>& cells() const { return cells_; }
  const json& data() const { return data_; }

 private:
  RowFields& both(const char* key, json value, CatalogueCell cell) {
    data_[key] = std::move(value);
    cells_.push_back(std::move(cell));
    return *this;
  }

  std::vector<CatalogueCell> cells_;
  json data_ = json::object();
};

// The row's table rendering, with what the ?q= filter matches.
void add_row(CatalogueSection& section, const RowFields& fields) {
  CatalogueRow row{fields.cells(), {}};
  for (const auto& cell : row.cells) {
    row.search_text += ascii_lower(cell.text) + " ";
    for (const auto& line : cell.more) row.search_text += ascii_lower(line) + " ";
  }
  section.rows.push_back(std::move(row));
}

// Both renderings of a row of a section whose catalogue.json is a flat list of rows.
void add_flat_row(CatalogueSection& section, const RowFields& fields) {
  add_row(section, fields);
  section.data.push_back(fields.data());
}

// The path the site serves `digest` at, or "" when the site does not serve these bytes there.
std::string served_at(const CatalogueSource& source, const std::string& path, const std::string& digest) {
  auto it = source.served.find(path);
  return it != source.served.end() && it->second == digest ? path : std::string();
}
bool served(const CatalogueSource& source, const std::string& path) { return source.served.count(path) != 0; }

// The newest check of a row (by when, then by result): what the catalogue says about it.
std::optional<cache::Provenance> newest_check(const CatalogueSource& source, const cache::Artifact& row) {
  return cache::newest_check(source.provenance, row);
}

// What the sections list: the rows of each of the table's Listed values, each in the order every
// section lists them (by address, the newest version first, then by platform and file name, and
// of two rows for one file the later one first), and who signed them.
struct Listing {
  const CatalogueSource& source;
  std::map<cache::Listed, std::vector<const cache::Artifact*>> rows;
  cache::SignerLookup signers;

  explicit Listing(const CatalogueSource& from) : source(from), signers(from.artifacts, from.provenance, from.keys) {
    for (const auto& a : source.artifacts) {
      switch (const auto where = cache::kind_info(a).listed) {
        case cache::Listed::unset:
        case cache::Listed::not_listed:
        case cache::Listed::signer_names:  // no row: gather_catalogue_source reads its keys' user ids
        case cache::Listed::modules:       // module trees: source.modules
          break;
        case cache::Listed::providers:
        case cache::Listed::vmconfig_manifests:
        case cache::Listed::vmconfig_artifacts:
        case cache::Listed::vmconfig_boot_files:
        case cache::Listed::image_indexes:
        case cache::Listed::image_manifests:
        case cache::Listed::image_attachments:
        case cache::Listed::seeds:
        case cache::Listed::engines:
        case cache::Listed::podplane_releases:
        case cache::Listed::git_repositories: rows[where].push_back(&a); break;
      }
    }
    for (auto& [where, listed] : rows) {
      std::sort(listed.begin(), listed.end(), [](const cache::Artifact* a, const cache::Artifact* b) {
        if (a->address != b->address) return a->address < b->address;
        if (a->version != b->version) return version_newer(a->version, b->version);
        if (std::tie(a->platform, a->filename) != std::tie(b->platform, b->filename))
          return std::tie(a->platform, a->filename) < std::tie(b->platform, b->filename);
        return a->id > b->id;
      });
    }
  }

  std::vector<const cache::Artifact*> of(cache::Listed where) const {
    auto it = rows.find(where);
    return it == rows.end() ? std::vector<const cache::Artifact*>{} : it->second;
  }
};

CatalogueSection providers_section(const Listing& listing, Catalogue& catalogue) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "providers";
  section.title = "Providers";
  section.summary = "Every stored provider package: version, platform, how it was verified, and the h1/zh hashes a lock file records.";
  section.empty = "No provider packages are stored.";
  section.columns = {"Provider", "Version", "Platform", "Signature", "Signing key", "Hashes (h1, zh)", "Size", "Added"};

  const auto packages = listing.of(cache::Listed::providers);

  std::set<std::string> hosts;
  json* provider = nullptr;
  json* version = nullptr;
  for (const auto* package : packages) {
    auto parts = split(package->address, '/');
    if (parts.size() == 3) hosts.insert(parts[0]);
    if (provider == nullptr || (*provider)["address"] != package->address) {
      section.data.push_back({{"address", package->address}, {"versions", json::array()}});
      provider = &section.data.back();
      version = nullptr;
    }
    auto os_arch = split(package->platform, '_');
    bool registry = parts.size() == 3 && os_arch.size() == 2 &&
                    served(source, std::string(site_paths::providers) + package->address + "/" + package->version +
                                       "/download/" + os_arch[0] + "/" + os_arch[1]);
    if (version == nullptr || (*version)["version"] != package->version) {
      (*provider)["versions"].push_back({{"version", package->version}, {"registry_protocol", registry}, {"platforms", json::array()}});
      version = &(*provider)["versions"].back();
    }
    if (registry) (*version)["registry_protocol"] = true;

    // The newest check of this package decides what the catalogue says about it.
    const auto checked = newest_check(source, *package);
    const auto signers = listing.signers.of(*package).names;
    std::string verdict = checked ? checked->result : std::string(cache::to_string(package->trust));
    Tone tone = tone_of(package->trust);
    if (checked && checked->result != "signed") tone = Tone::warning;

    std::string zh = cache::zh_of(*package);
    std::string path = served_at(source, std::string(site_paths::network_mirror) + package->address + "/" + package->filename,
                                 package->digest);
    CatalogueCell key = checked && !checked->key_fingerprint.empty() ? hash(checked->key_fingerprint, signers)
                                                                      : text("none");
    json signature = json::object();
    if (checked)
      signature = {{"result", checked->result}, {"key_fingerprint", checked->key_fingerprint}, {"signers", signers},
                   {"checked_at", checked->checked_at}};
    // Address and version are the provider's and the version's in catalogue.json (above).
    RowFields row;
    row.cell(code(package->address))
        .cell(code(package->version))
        .code("platform", package->platform, path)
        .cell(status(verdict, tone))
        .data("trust", cache::to_string(package->trust))
        .data("signature", signature)
        .cell(key)
        .cell(hashes(package->h1.empty() ? "(no h1)" : package->h1, zh))
        .data("h1", package->h1)
        .data("zh", zh)
        .bytes("size", package->size)
        .text("added_at", package->added_at)
        .data("filename", package->filename)
        .data("sha256", package->digest)
        .data("upstream_url", package->upstream_url)
        .data("path", path);
    add_row(section, row);
    (*version)["platforms"].push_back(row.data());
  }
  catalogue.origin_hosts.insert(catalogue.origin_hosts.end(), hosts.begin(), hosts.end());
  return section;
}

// How a module package was fetched, from its stored upstream URL.
std::string module_source_kind(const cache::ModuleTree& tree) {
  const auto& url = tree.upstream_url;
  auto ends_with = [&](std::string_view suffix) {
    auto base = url.substr(0, url.find('?'));
    return base.size() >= suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (url.rfind("git::", 0) == 0 || url.find(".git") != std::string::npos) return "git";
  if (url.find("/v1/modules/") != std::string::npos) return "registry";
  if (ends_with(".zip") || ends_with(".tar.gz") || ends_with(".tgz") || ends_with(".tar.bz2") || ends_with(".tar.xz"))
    return "archive";
  if (url.empty()) return split(tree.address, '/').size() == 4 ? "registry" : "unknown";
  return "http";
}

CatalogueSection modules_section(const Listing& listing, Catalogue& catalogue) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "modules";
  section.title = "Modules";
  section.summary = "Every stored module package, with where it came from and the h1 of its tree.";
  section.empty = "No module packages are stored.";
  section.columns = {"Module", "Version", "Source", "h1", "Files", "Added"};
  std::vector<const cache::ModuleTree*> trees;
  for (const auto& tree : source.modules) trees.push_back(&tree);
  std::sort(trees.begin(), trees.end(), [](const cache::ModuleTree* a, const cache::ModuleTree* b) {
    if (a->address != b->address) return a->address < b->address;
    return version_newer(a->version, b->version);
  });
  std::set<std::string> hosts(catalogue.origin_hosts.begin(), catalogue.origin_hosts.end());
  for (const auto* tree : trees) {
    auto kind = module_source_kind(*tree);
    if (kind == "registry") hosts.insert(split(tree->address, '/')[0]);
    std::string path = std::string(site_paths::modules) + tree->address + "/" + tree->version + "/" +
                       std::string(site_paths::module_package_name);
    if (!served(source, path)) path.clear();
    auto count = source.module_file_counts.count(tree->id) ? source.module_file_counts.at(tree->id) : tree->files.size();
    CatalogueCell origin = text(kind);
    if (!tree->upstream_url.empty()) origin.more.push_back(tree->upstream_url);
    add_flat_row(section, RowFields()
                              .code("address", tree->address)
                              .code("version", tree->version, path)
                              .cell(origin)
                              .data("source", kind)
                              .data("upstream_url", tree->upstream_url)
                              .hash("h1", tree->h1)
                              .count("files", count)
                              .text("added_at", tree->added_at)
                              .data("path", path));
  }
  catalogue.origin_hosts.assign(hosts.begin(), hosts.end());
  return section;
}

CatalogueSection vmconfig_manifests_section(const Listing& listing, Catalogue& catalogue) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "vmconfig-manifests";
  section.title = "vmconfig manifests";
  section.summary = "The VM package manifests per kind and arch; the newest of each name is what /manifests/<name>.json serves.";
  section.empty = "No vmconfig manifests are stored.";
  section.columns = {"Manifest", "Arch", "vmconfig version", "File", "Trust", "Added"};
  const auto manifests = listing.of(cache::Listed::vmconfig_manifests);
  std::set<std::string> arches;
  for (const auto* manifest : manifests) {
    auto arch = manifest_arch(*manifest);
    arches.insert(arch);
    std::string path = served_at(source, std::string(site_paths::vmconfig) + "manifests/" + manifest->filename, manifest->digest);
    add_flat_row(section, RowFields()
                              .code("name", manifest->address)
                              .code("arch", arch)
                              .code("version", manifest->version)
                              .code("filename", manifest->filename, path)
                              .trust("trust", manifest->trust)
                              .text("added_at", manifest->added_at)
                              .data("sha256", manifest->digest)
                              .data("upstream_url", manifest->upstream_url)
                              .data("path", path));
  }
  catalogue.vmconfig_arches.assign(arches.begin(), arches.end());
  return section;
}

CatalogueSection vmconfig_artifacts_section(const Listing& listing, Catalogue& catalogue) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "vmconfig-artifacts";
  section.title = "vmconfig artifacts";
  section.summary = "The files the manifests list and the boot files read out of each os image, per arch, as VMs fetch "
                    "them from <deps_mirror_url>/vmconfig/artifacts/ (and from their arch's base, "
                    "<deps_mirror_url>/arch/<arch>/vmconfig/artifacts/, which the stacks give them).";
  section.empty = "No vmconfig artifacts are stored.";
  section.columns = {"Artifact", "Version", "Arch", "File", "Size", "Upstream digest", "Trust", "Served"};
  // Where the site serves each row (cache/views.hpp): Podplane's plain path when its bytes won
  // it, and its arch's base, which never holds another arch's bytes.
  std::map<std::int64_t, std::string> plain, arch_base;
  for (const auto& [path, artifact] : cache::vmconfig_artifact_paths(source.artifacts)) {
    std::string site_path = "/" + path;
    if (served_at(source, site_path, artifact.digest).empty()) continue;
    (path.rfind("arch/", 0) == 0 ? arch_base : plain).emplace(artifact.id, site_path);
  }
  // The artifacts, then the boot files read out of the os images.
  auto artifacts = listing.of(cache::Listed::vmconfig_artifacts);
  const std::size_t boot_files_from = artifacts.size();
  auto boot_files = listing.of(cache::Listed::vmconfig_boot_files);
  artifacts.insert(artifacts.end(), boot_files.begin(), boot_files.end());
  for (std::size_t n = 0; n < artifacts.size(); ++n) {
    const auto* artifact = artifacts[n];
    auto arch = artifact->platform.empty() ? std::string("any") : arch_of(artifact->platform);
    const bool boot = n >= boot_files_from;
    auto at = [&](const std::map<std::int64_t, std::string>& paths) {
      auto it = paths.find(artifact->id);
      return it == paths.end() ? std::string() : it->second;
    };
    std::string path = at(plain).empty() ? at(arch_base) : at(plain);
    // Two arches can share Podplane's plain path: the other arch's VMs get these bytes from
    // their arch's base (docs/store.md), which is where the stacks point them.
    std::string where = !at(plain).empty() ? "yes" : !path.empty() ? "yes, at its arch's base" : "no";
    if (at(plain).empty() && !path.empty()) ++catalogue.arch_shared_paths[arch];
    std::string file = boot ? "boot/" + artifact->filename : artifact->filename;
    add_flat_row(section, RowFields()
                              .cell(code(artifact->address + (boot ? " (boot file)" : "")))
                              .data("name", artifact->address)
                              .data("kind", boot ? "boot_file" : "artifact")
                              .code("version", artifact->version)
                              .code("arch", arch)
                              .code("filename", file, path)
                              .bytes("size", artifact->size)
                              .hash("upstream_digest", artifact->upstream_digest)
                              .trust("trust", artifact->trust)
                              .cell(status(where, path.empty() ? Tone::warning : Tone::good))
                              .data("sha256", artifact->digest)
                              .data("added_at", artifact->added_at)
                              .data("upstream_url", artifact->upstream_url)
                              .data("path", path));
  }
  return section;
}

// "attestation" or "sbom" for a cosign attachment at sha256-<hex>.att or .sbom; nullopt for
// anything else (the .sig, a referrer, an image).
std::optional<std::string> cosign_attachment_kind(const cache::Artifact& row) {
  auto subject = cache::kind_info(row).listed == cache::Listed::image_attachments ? cache::image_attachment_tag(row.version)
                                                                                 : std::nullopt;
  if (!subject) return std::nullopt;
  if (row.version == cache::cosign_attachment_tag(*subject, cache::kCosignAttestationSuffix)) return "attestation";
  if (row.version == cache::cosign_attachment_tag(*subject, cache::kCosignSbomSuffix)) return "sbom";
  return std::nullopt;
}

// Whether a stored manifest is a Helm chart (its config is Helm's) that the site serves at its
// tag: what `helm pull oci://… --version <tag>` asks for. One stored by digest alone has no tag
// to give --version.
bool is_served_helm_chart(const CatalogueSource& source, const cache::Artifact& manifest, const std::string& repository) {
  auto config = source.artifact_config_types.find(manifest.filename);
  if (config == source.artifact_config_types.end() || config->second != net::image_media::helm_config) return false;
  if (!cache::image_digest_problem(manifest.version)) return false;
  return !served_at(source, std::string(site_paths::registry_api) + repository + "/manifests/" + manifest.version, manifest.digest)
              .empty();
}

// Container images: one row per stored index and manifest, linked to where /v2/ serves it.
// Every stored image index and platform manifest, each linked where the site serves it, with
// the keys that signed its tag's top manifest (the index, or the manifest stored without one),
// or "unsigned". Also lists the registries of the served ones in catalogue.image_registries
// (the containerd snippet).
CatalogueSection images_section(const Listing& listing, Catalogue& catalogue) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "images";
  section.title = "Container images";
  section.summary = "Every stored image index and platform manifest (and the referrers that name them), as containerd "
                    "and skopeo pull them from <mirror>/v2/mirror/<registry>/<repository>, and who signed them.";
  section.empty = "No container images are stored (podplane deps images, or deps download for the pinned ones).";
  section.columns = {"Image", "Tag", "Platform", "Digest", "Size", "Served", "Signature"};
  auto rows = listing.of(cache::Listed::image_indexes);
  const std::size_t manifests_from = rows.size();
  auto manifests = listing.of(cache::Listed::image_manifests);
  rows.insert(rows.end(), manifests.begin(), manifests.end());
  const std::size_t attachments_from = rows.size();
  // Referrers (SBOMs, attestations) under the digest of the image they name, its tag column;
  // cosign's attestations and SBOMs under their tags (sha256-<hex>.att, .sbom). The .sig is
  // shown as the Signature of what it signs, not as a row.
  for (const auto* attachment : listing.of(cache::Listed::image_attachments))
    if (!cache::image_digest_problem(attachment->version) || cosign_attachment_kind(*attachment)) rows.push_back(attachment);
  std::set<std::string> registries;
  for (std::size_t n = 0; n < rows.size(); ++n) {
    const auto* image = rows[n];
    std::string repository = net::mirror_repository(image->address);
    std::string path = served_at(source, std::string(site_paths::registry_api) + repository + "/manifests/" + image->filename,
                                 image->digest);
    if (!path.empty()) registries.insert(image->address.substr(0, image->address.find('/')));
    if (n >= manifests_from && n < attachments_from && is_served_helm_chart(source, *image, repository))
      catalogue.helm_charts.push_back({repository, image->version});
    auto attached = cosign_attachment_kind(*image);
    std::string platform = n < manifests_from     ? "index"
                           : attached              ? *attached
                           : n >= attachments_from ? "referrer"
                                                   : image->platform;
    // The keys that signed its tag's top manifest (cache/kinds.hpp Signer::cosign_key).
    const std::vector<std::string> keys = listing.signers.of(*image).fingerprints;
    // An attestation or SBOM is carried as attached upstream, checked by digest only.
    auto signature = attached      ? status("not verified", Tone::warning)
                     : keys.empty() ? status("unsigned", Tone::warning)
                                    : hash(keys.front(), std::vector<std::string>(keys.begin() + 1, keys.end()));
    if (!attached && !keys.empty()) signature.tone = Tone::good;
    RowFields fields;
    if (attached) fields.data("attached_to", *cache::image_attachment_tag(image->version));
    add_flat_row(section, fields
                              .code("image", image->address)
                              .code("tag", image->version)
                              .code("platform", platform)
                              .hash("digest", image->filename, path)
                              .bytes("size", image->size)
                              .cell(status(path.empty() ? "no" : "yes", path.empty() ? Tone::warning : Tone::good))
                              .cell(signature)
                              .data("signed", !keys.empty())
                              .data("signed_by", keys)
                              .data("mirror_repository", repository)
                              .data("added_at", image->added_at)
                              .data("upstream_url", image->upstream_url)
                              .data("path", path));
  }
  catalogue.image_registries.assign(registries.begin(), registries.end());
  std::sort(catalogue.helm_charts.begin(), catalogue.helm_charts.end(), [](const auto& a, const auto& b) {
    return std::tie(a.repository, a.tag) < std::tie(b.repository, b.tag);
  });
  return section;
}

// Seed snapshots (seeds.json pins them by sha512), at their /seeds/snapshots/ paths.
CatalogueSection seeds_section(const Listing& listing, Catalogue&) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "seeds";
  section.title = "Seeds";
  section.summary = "The seed snapshots seeds.json names, served at <mirror>/seeds/snapshots/.";
  section.empty = "No seed snapshots are stored.";
  section.columns = {"Seed", "Version", "File", "Size", "Upstream digest", "Served"};
  for (const auto* seed : listing.of(cache::Listed::seeds)) {
    std::string path = served_at(source, "/seeds/snapshots/" + seed->address + "/" + seed->version + "/" + seed->filename,
                                 seed->digest);
    add_flat_row(section, RowFields()
                              .code("name", seed->address)
                              .code("version", seed->version)
                              .code("filename", seed->filename, path)
                              .bytes("size", seed->size)
                              .hash("upstream_digest", seed->upstream_digest)
                              .cell(status(path.empty() ? "no" : "yes", path.empty() ? Tone::warning : Tone::good))
                              .data("sha256", seed->digest)
                              .data("added_at", seed->added_at)
                              .data("upstream_url", seed->upstream_url)
                              .data("path", path));
  }
  return section;
}

// The git repositories served at /git/ (docs/ci.md "Git sources"): one row per stored snapshot,
// its ref and commit, and the URL a client clones once git's insteadOf sends the host here.
// Also collects the hosts for the git snippet.
CatalogueSection git_section(const Listing& listing, Catalogue& catalogue) {
  CatalogueSection section;
  section.id = "git";
  section.title = "Git repositories";
  section.summary = "The git module sources stored with their objects, served with git's smart HTTP at <mirror>/git/<host>/<path>, "
                    "each ref with upstream's commit id.";
  section.empty = "No git repositories are stored (deps tf --stack keeps them for roots that call git:: modules).";
  section.columns = {"Repository", "Ref", "Commit", "Clone URL", "Pack size", "Added"};
  std::set<std::string> hosts;
  for (const auto* pack : listing.of(cache::Listed::git_repositories)) {
    hosts.insert(pack->address.substr(0, pack->address.find('/')));
    const std::string commit = pack->filename.substr(0, pack->filename.find('.'));
    add_flat_row(section, RowFields()
                              .code("repository", pack->address)
                              .code("ref", pack->version)
                              .hash("commit", commit)
                              .code("clone_url", "<mirror>" + std::string(site_paths::git) + pack->address + ".git")
                              .bytes("size", pack->size)
                              .text("added_at", pack->added_at)
                              .data("upstream_url", pack->upstream_url)
                              .data("sha256", pack->digest));
  }
  catalogue.git_hosts.assign(hosts.begin(), hosts.end());
  return section;
}

// Engine releases (docs/tools.md), at /tools/<engine>/<version>/ beside their SHA256SUMS and
// signature, with the line that installs one on a machine that reaches this mirror.
CatalogueSection tools_section(const Listing& listing, Catalogue&) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "tools";
  section.title = "Engines";
  section.summary = "The terraform and tofu release zips, served at <mirror>/tools/ beside their signed SHA256SUMS.";
  section.empty = "No engine release is stored.";
  section.columns = {"Engine", "Version", "Platform", "File", "SHA-256", "Size", "SHA256SUMS signed by", "Install"};
  for (const auto* zip : listing.of(cache::Listed::engines)) {
    std::string path = served_at(source, "/tools/" + zip->address + "/" + zip->version + "/" + zip->filename, zip->digest);
    const auto signers = listing.signers.of(*zip).fingerprints;
    const std::string signer = signers.empty() ? std::string() : signers.front();
    auto signed_by = signer.empty() ? status("unsigned", Tone::warning) : hash(signer);
    if (!signer.empty()) signed_by.tone = Tone::good;
    const std::string install = "podplane tools install " + zip->address + " " + zip->version + " --platform " + zip->platform +
                                " --to /usr/local/bin --from " + std::string(kMirrorUrlPlaceholder);
    add_flat_row(section, RowFields()
                              .code("engine", zip->address)
                              .code("version", zip->version)
                              .code("platform", zip->platform)
                              .code("filename", zip->filename, path)
                              .hash("sha256", zip->digest)
                              .bytes("size", zip->size)
                              .cell(signed_by)
                              .data("signed_by", signer)
                              .code("install", install)
                              .data("added_at", zip->added_at)
                              .data("upstream_url", zip->upstream_url)
                              .data("path", path));
  }
  return section;
}

// Podplane's own release files (docs/tools.md), at /tools/podplane/<version>/ beside the
// SHA256SUMS the store wrote; a tarball's row carries the line that installs it from here.
CatalogueSection podplane_releases_section(const Listing& listing, Catalogue&) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "podplane";
  section.title = "Podplane";
  section.summary = "Podplane's own release files (tarball, deb, OCI image), served at <mirror>/tools/podplane/ beside the "
                    "SHA256SUMS listing them; they came in under the bundle's signature.";
  section.empty = "No podplane release is stored.";
  section.columns = {"Version", "Platform", "File", "SHA-256", "Size", "Install"};
  for (const auto* file : listing.of(cache::Listed::podplane_releases)) {
    std::string path = served_at(source, "/tools/podplane/" + file->version + "/" + file->filename, file->digest);
    const bool tarball = file->filename == cache::podplane_tarball_name(file->version, file->platform);
    RowFields fields;
    fields.code("version", file->version)
        .code("platform", file->platform)
        .code("filename", file->filename, path)
        .hash("sha256", file->digest)
        .bytes("size", file->size);
    if (tarball) {
      fields.code("install", "podplane tools install podplane " + file->version + " --platform " + file->platform +
                                 " --to /opt --from " + std::string(kMirrorUrlPlaceholder));
    } else {
      fields.text("install", "");  // a deb or an image is fetched from its path as it is
    }
    fields.data("shasums", "/tools/podplane/" + file->version + "/" + cache::podplane_shasums_name(file->version))
        .data("added_at", file->added_at)
        .data("path", path);
    add_flat_row(section, fields);
  }
  return section;
}

CatalogueSection bundles_section(const Listing& listing, Catalogue&) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "bundles";
  section.title = "Imported bundles";
  section.summary = "Every bundle import into this store: when, from which signer, and what each volume brought.";
  section.empty = "No bundle was imported into this store.";
  section.columns = {"Imported", "Bundle", "Volume", "Signer", "Objects", "Result"};
  // Newest import first.
  std::vector<const cache::AuditEntry*> imports;
  for (const auto& entry : source.imports) imports.push_back(&entry);
  std::sort(imports.begin(), imports.end(), [](const auto* a, const auto* b) { return a->id > b->id; });
  auto str = [](const json& o, const char* key) {
    return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
  };
  auto num = [](const json& o, const char* key) {
    return o.contains(key) && o[key].is_number_integer() ? o[key].get<std::int64_t>() : std::int64_t{0};
  };
  for (const auto* entry : imports) {
    auto detail = json::parse(entry->detail, nullptr, false);
    if (detail.is_discarded() || !detail.is_object()) detail = json::object();
    json volumes = detail.contains("volumes") && detail["volumes"].is_array() ? detail["volumes"] : json::array();
    json import = {{"imported_at", entry->at}, {"file", entry->subject}, {"ok", detail.value("ok", false)},
                   {"objects_imported", num(detail, "objects_imported")}, {"bytes_imported", num(detail, "bytes_imported")},
                   {"volumes", json::array()}};
    for (const auto& volume : volumes) {
      if (!volume.is_object()) continue;
      bool trusted = volume.contains("trusted") && volume["trusted"].is_boolean() && volume["trusted"].get<bool>();
      bool complete = volume.contains("complete") && volume["complete"].is_boolean() && volume["complete"].get<bool>();
      std::string error = str(volume, "error");
      std::string signer = str(volume, "signer");
      // volume_index counts from 1, as the bundle manifest's volume.index (docs/bundle-format.md).
      auto index = num(volume, "volume_index"), count = num(volume, "volume_count");
      CatalogueCell who = signer.empty() ? text("unsigned") : hash(signer);
      who.more.push_back(trusted ? "trusted" : "not trusted");
      std::string objects = std::to_string(num(volume, "imported")) + " new, " + std::to_string(num(volume, "already_present")) +
                            " present, " + std::to_string(num(volume, "missing")) + " missing";
      std::string result = !error.empty() ? error : complete ? "complete" : "incomplete";
      // The import's own time is the import's in catalogue.json (above), each volume's row here.
      RowFields row;
      row.cell(text(entry->at))
          .cell(hash(str(volume, "bundle_id"), {str(volume, "file")}))
          .data("bundle_id", str(volume, "bundle_id"))
          .data("file", str(volume, "file"))
          .cell(text(std::to_string(index) + " of " + std::to_string(std::max<std::int64_t>(count, 1))))
          .data("volume_index", index)
          .data("volume_count", count)
          .cell(who)
          .data("signer", signer)
          .data("trusted", trusted)
          .cell(text(objects))
          .data("objects", num(volume, "objects"))
          .data("imported", num(volume, "imported"))
          .data("already_present", num(volume, "already_present"))
          .data("missing", num(volume, "missing"))
          .cell(status(result, complete && error.empty() ? Tone::good : Tone::warning))
          .data("complete", complete)
          .data("error", error);
      add_row(section, row);
      import["volumes"].push_back(row.data());
    }
    section.data.push_back(std::move(import));
  }
  return section;
}

CatalogueSection signers_section(const Listing& listing, Catalogue&) {
  const CatalogueSource& source = listing.source;
  CatalogueSection section;
  section.id = "bundle-signers";
  section.title = "Bundle signers";
  section.summary = "The newest bundle imported from each signer: an older bundle from the same signer cannot move the selection back.";
  section.empty = "No bundle signer is recorded.";
  section.columns = {"Signer", "Newest bundle", "Bundle created", "Recorded"};
  for (const auto& mark : source.signers) {
    add_flat_row(section, RowFields()
                              .hash("signer", mark.signer)
                              .hash("bundle_id", mark.bundle_id)
                              .text("created_at", mark.created_at)
                              .text("recorded_at", mark.recorded_at));
  }
  return section;
}

// The store's size by kind: the figures of `deps du` (cache::usage_of), so that a site can see
// what its mirror holds without a shell on the host.
CatalogueSection usage_section(const Listing& listing, Catalogue&) {
  const CatalogueSource& source = listing.source;
  const auto& usage = source.usage;
  CatalogueSection section;
  section.id = "store-usage";
  section.title = "Store size";
  section.summary = std::to_string(usage.objects) + " objects, " + human_bytes(usage.object_bytes) +
                    " in all; by kind below, where an object several rows share counts in each (podplane deps du prints the same).";
  section.empty = source.usage_error.empty() ? "The store holds nothing." : "No totals: " + source.usage_error;
  section.columns = {"Kind", "Items", "Rows", "Bytes"};
  json by_family = json::object();
  for (const auto& [family, totals] : usage.by_family) {
    RowFields row;
    row.cell(code(family)).count("items", totals.items).count("rows", totals.rows).bytes("bytes", static_cast<std::int64_t>(totals.bytes));
    add_row(section, row);
    by_family[family] = row.data();
  }
  section.data = {{"objects", usage.objects}, {"object_bytes", usage.object_bytes}, {"by_family", std::move(by_family)}};
  if (!source.usage_error.empty()) section.data["error"] = source.usage_error;
  return section;
}

// The sections in page order. images_section also sets catalogue.image_registries, so that the
// containerd snippet names each registry whose images are served.
using SectionBuilder = CatalogueSection (*)(const Listing&, Catalogue&);
constexpr SectionBuilder kSections[] = {
    providers_section, modules_section, git_section,     vmconfig_manifests_section, vmconfig_artifacts_section,
    images_section,    seeds_section,   bundles_section, signers_section,            usage_section,
};

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f) out += "\xEF\xBF\xBD";
        else out += c;
    }
  }
  return out;
}

const CatalogueSection* Catalogue::section(std::string_view id) const {
  for (const auto& s : sections)
    if (s.id == id) return &s;
  return nullptr;
}

std::size_t Catalogue::row_count() const {
  std::size_t count = 0;
  for (const auto& s : sections) count += s.rows.size();
  return count;
}

Catalogue build_catalogue(const CatalogueSource& source) {
  Catalogue catalogue;
  catalogue.primary_host = source.primary_host;
  const Listing listing(source);
  for (auto builder : kSections) catalogue.sections.push_back(builder(listing, catalogue));
  // Engine releases get a section only where some are stored: a catalogue without them reads
  // as it did before they could be.
  if (auto tools = tools_section(listing, catalogue); !tools.rows.empty()) {
    auto seeds = std::find_if(catalogue.sections.begin(), catalogue.sections.end(), [](const auto& s) { return s.id == "seeds"; });
    catalogue.sections.insert(seeds == catalogue.sections.end() ? seeds : seeds + 1, std::move(tools));
  }
  // Likewise podplane's own releases, after the engines (or where they would be).
  if (auto releases = podplane_releases_section(listing, catalogue); !releases.rows.empty()) {
    auto after = std::find_if(catalogue.sections.begin(), catalogue.sections.end(), [](const auto& s) { return s.id == "tools"; });
    if (after == catalogue.sections.end())
      after = std::find_if(catalogue.sections.begin(), catalogue.sections.end(), [](const auto& s) { return s.id == "seeds"; });
    catalogue.sections.insert(after == catalogue.sections.end() ? after : after + 1, std::move(releases));
  }
  if (std::find(catalogue.origin_hosts.begin(), catalogue.origin_hosts.end(), source.primary_host) ==
      catalogue.origin_hosts.end()) {
    catalogue.origin_hosts.push_back(source.primary_host);
    std::sort(catalogue.origin_hosts.begin(), catalogue.origin_hosts.end());
  }
  return catalogue;
}

namespace {

// An OCI artifact is stored as an image manifest of no platform (docs/images.md: its platform
// is unknown/unknown); its config's media type says what it is (Helm's for a chart). nullopt for
// any other row, and for a manifest that cannot be read or parsed (it only loses its snippet).
std::optional<std::string> artifact_config_type(const cache::Store& store, const cache::Artifact& row) {
  if (cache::kind_info(row).listed != cache::Listed::image_manifests || row.platform != "unknown_unknown") return std::nullopt;
  try {
    auto manifest = json::parse(store.read_object(row.digest), nullptr, false);
    if (!manifest.is_object() || !manifest.contains("config") || !manifest["config"].is_object()) return std::nullopt;
    const auto& config = manifest["config"];
    if (!config.contains("mediaType") || !config["mediaType"].is_string()) return std::nullopt;
    return config["mediaType"].get<std::string>();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

CatalogueSource gather_catalogue_source(const cache::Store& store, std::string primary_host,
                                        std::map<std::string, std::string> served) {
  CatalogueSource source;
  source.primary_host = std::move(primary_host);
  source.artifacts = store.artifacts();
  for (const auto& artifact : source.artifacts) {
    const auto& kind = cache::kind_info(artifact);
    switch (kind.signer) {  // the rows whose own provenance names a key (cache::SignerLookup)
      case cache::Signer::unset:
      case cache::Signer::none:
      case cache::Signer::cosign_key:  // its signature's provenance does
      case cache::Signer::bundle_signature: break;
      case cache::Signer::openpgp_keys_document:
      case cache::Signer::pinned_release_key:
      case cache::Signer::cosign_attachment: {
        auto checks = store.provenance_of(artifact.id);
        if (!checks.empty()) source.provenance[artifact.id] = std::move(checks);
        break;
      }
    }
    if (kind.listed != cache::Listed::signer_names || source.keys.count(artifact.digest)) continue;
    // The stored keys document is upstream text: the signing_keys object or a whole registry
    // answer holding it. One that does not parse only costs the catalogue its user ids.
    try {
      auto document = json::parse(store.read_object(artifact.digest), nullptr, false);
      if (document.is_object() && document.contains("signing_keys")) document = document["signing_keys"];
      std::vector<cache::KeyIdentity> identities;
      if (document.is_object() && document.contains("gpg_public_keys") && document["gpg_public_keys"].is_array())
        for (const auto& key : document["gpg_public_keys"])
          if (key.is_object() && key.contains("ascii_armor") && key["ascii_armor"].is_string()) {
            auto found = cache::key_identities(key["ascii_armor"].get<std::string>());
            identities.insert(identities.end(), found.begin(), found.end());
          }
      source.keys[artifact.digest] = std::move(identities);
    } catch (const std::exception&) {
      source.keys[artifact.digest] = {};
    }
  }
  for (const auto& artifact : source.artifacts)
    if (auto config = artifact_config_type(store, artifact)) source.artifact_config_types[artifact.filename] = *config;
  source.modules = store.module_trees();
  for (auto& tree : source.modules) {
    source.module_file_counts[tree.id] = tree.files.size();
    tree.files.clear();  // the catalogue shows counts; the site holds the files
  }
  for (auto& entry : store.audit_log())
    if (entry.action == "bundle-import") source.imports.push_back(std::move(entry));
  source.signers = store.bundle_signers();
  source.served = std::move(served);
  // The totals `deps du` prints: every item, kept by the default policy, so nothing but a kept
  // manifest that cannot be read stops them (the rest of the catalogue still shows).
  try {
    source.usage = cache::usage_of(cache::plan_prune(store, {}));
  } catch (const Error& error) {
    source.usage_error = error.what();
  }
  return source;
}

std::string render_catalogue_json(const Catalogue& catalogue) {
  json document = {{"format", "podplane-catalogue/1"},
                   {"registry_host", catalogue.primary_host},
                   {"origin_hosts", catalogue.origin_hosts},
                   {"vmconfig_arches", catalogue.vmconfig_arches}};
  for (const auto& section : catalogue.sections) document[section.id] = section.data;
  return document.dump(2) + "\n";
}

std::string mirror_url_from_host(std::string_view scheme, std::string_view host_header) {
  if (scheme != "http" && scheme != "https") return {};
  if (!valid_authority(host_header)) return {};
  return std::string(scheme) + "://" + std::string(host_header);
}

std::string checked_public_url(std::string_view url) {
  if (!url.starts_with("https://") && !url.starts_with("http://"))
    throw UsageError("--public-url must start with https:// or http://; got '" + std::string(url) + "'");
  // Pasted into snippets and pages as it is: a plain authority and a path of the characters a
  // site path has, and nothing else (the text is those parts put back together: no login, empty
  // port, query or fragment).
  const auto parts = split_url(url);
  auto path_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '/' || c == '_' || c == '~' || c == '%' || c == '+' || c == ',' || c == '=' || c == '@';
  };
  const bool plain = parts && valid_authority(authority(*parts)) &&
                     ascii_iequals(url, parts->scheme + "://" + authority(*parts) + parts->path) &&
                     std::all_of(parts->path.begin(), parts->path.end(), path_char);
  if (!plain)
    throw UsageError("--public-url must be http(s)://HOST[:PORT][/PATH] with a plain host name or address; got '" +
                     std::string(url) + "'");
  return without_trailing_slashes(std::string(url));
}

}  // namespace podplane::mirror
