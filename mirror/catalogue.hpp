#pragma once
// The site catalogue: what a mirror holds, as a page people read (`/`, `/catalogue/`,
// `/catalogue/<section>/`) and as data for scripts (`/catalogue.json`), documented in
// docs/mirror.md "The catalogue". Built in two steps so that the second is pure:
// gather_catalogue_source() reads the store and the built site once; build_catalogue() turns
// those rows into sections; the render_* functions print a Catalogue. A built Catalogue is
// immutable and may be shared by any number of threads. Every string that comes from the
// index or an upstream document reaches HTML only through html_escape().
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>  // whole: CatalogueSection holds its catalogue.json by value

#include "cache/openpgp.hpp"
#include "cache/prune.hpp"
#include "cache/store.hpp"

namespace podplane::mirror {

// Escapes & < > " ' so that the result is safe as HTML text and as a quoted attribute value.
// NUL and other C0 controls but tab and newline become U+FFFD (HTML parsers choke on them).
std::string html_escape(std::string_view text);

// Everything the catalogue shows, read from one store snapshot. Plain rows: tests build it
// by hand (golden files), gather_catalogue_source() builds it from a store.
struct CatalogueSource {
  std::string primary_host;                                         // what /.well-known answers for
  std::vector<cache::Artifact> artifacts;                           // every kind
  std::map<std::int64_t, std::vector<cache::Provenance>> provenance;  // provider packages, image signatures, by artifact id
  std::map<std::string, std::vector<cache::KeyIdentity>> keys;             // keys document digest → its keys
  std::vector<cache::ModuleTree> modules;                           // files may be left empty
  std::map<std::int64_t, std::size_t> module_file_counts;           // tree id → number of files
  std::vector<cache::AuditEntry> imports;                           // bundle-import audit entries
  std::vector<cache::BundleSignerMark> signers;                     // the bundle_signers table
  // Site paths served, with the digest served there (objects only): which rows the mirror
  // actually hands out, and where.
  std::map<std::string, std::string> served;
  // The config media type of each stored OCI artifact manifest (an image manifest of platform
  // unknown_unknown, docs/images.md), by the manifest's digest ("sha256:…"): Helm's charts get a
  // `helm pull` line.
  std::map<std::string, std::string> artifact_config_types;
  // The store's size totals, the figures `deps du` prints; `usage_error` says why they are
  // missing (a kept vmconfig manifest that cannot be read leaves nothing to total by).
  cache::StoreUsage usage;
  std::string usage_error;
};

// Reads `store` (read-only); `primary_host` and `served` (CatalogueSource::served) come from
// the site built from it. Errors: podplane::Error from the index. A keys document that cannot
// be parsed is left out (its rows show the fingerprint only).
[[nodiscard]] CatalogueSource gather_catalogue_source(const cache::Store& store, std::string primary_host,
                                                      std::map<std::string, std::string> served);

enum class CellKind {
  text,    // plain text
  code,    // monospace (versions, platforms, file names)
  hash,    // a digest or hash to copy: monospace, selected whole on click
  status,  // a trust or signature verdict: styled by `tone`
};
enum class Tone { neutral, good, warning };

struct CatalogueCell {
  std::string text;
  CellKind kind = CellKind::text;
  std::string href;  // a site path ("/v1/mirror/…") when the cell links to what the mirror serves
  Tone tone = Tone::neutral;
  std::vector<std::string> more;  // further lines of the same cell (e.g. h1 then zh, several user ids)
  CellKind more_kind = CellKind::text;  // how those lines show: text (muted) or hash
};

struct CatalogueRow {
  std::vector<CatalogueCell> cells;
  // Lower-cased text of every cell: what the ?q= filter matches (every term must occur).
  std::string search_text;
};

// One table of the catalogue. Adding a kind of content = one function returning a
// CatalogueSection, listed in catalogue.cpp's kSections. `rows` and `data` are the two
// renderings (the page's table, catalogue.json) of the same rows, each field of which is
// named once (catalogue.cpp's RowFields).
struct CatalogueSection {
  std::string id;       // URL segment and catalogue.json key: providers, modules, …
  std::string title;    // heading
  std::string summary;  // one sentence under the heading
  std::string empty;    // shown when there are no rows
  std::vector<std::string> columns;
  std::vector<CatalogueRow> rows;
  nlohmann::json data = nlohmann::json::array();  // the section in catalogue.json
};

struct Catalogue {
  std::string primary_host;
  std::vector<std::string> origin_hosts;  // registries of the stored providers and modules, sorted
  std::vector<std::string> vmconfig_arches;  // arches with a stored vmconfig manifest, sorted
  // Per arch: vmconfig artifacts whose plain path another arch's bytes hold (served at the
  // arch's own base only, <deps_mirror_url>/arch/<arch>/, which the stacks give its VMs).
  std::map<std::string, std::size_t> arch_shared_paths;
  // Upstream registries of the images served (registry.k8s.io, docker.io, a host:port), sorted:
  // the containerd snippet gives each its hosts.toml.
  std::vector<std::string> image_registries;
  // Hosts (host[:port]) of the git repositories served at /git/, sorted: the git snippet gives
  // each its url.<mirror>/git/<host>/.insteadOf line.
  std::vector<std::string> git_hosts;
  // The Helm charts served at a tag (mirror repository, tag), sorted: the helm snippet gives each
  // its `helm pull oci://` line.
  struct HelmChart {
    std::string repository;  // mirror/<registry>/<repository>
    std::string tag;
  };
  std::vector<HelmChart> helm_charts;
  std::vector<CatalogueSection> sections;

  const CatalogueSection* section(std::string_view id) const;
  std::size_t row_count() const;
};

[[nodiscard]] Catalogue build_catalogue(const CatalogueSource& source);

// `/catalogue.json`: {"format": "podplane-catalogue/1", "registry_host": …, "<section id>": […], …}.
[[nodiscard]] std::string render_catalogue_json(const Catalogue& catalogue);

// Where a catalogue cell needs the mirror's own URL (the engine install line): the catalogue
// is built once per site and its JSON keeps this word, while the page puts in the URL the
// request came to (or, for an export, the page's own origin, by its script).
inline constexpr std::string_view kMirrorUrlPlaceholder = "MIRROR_URL";

struct CataloguePage {
  std::string section;     // "" for the whole catalogue, else a section id
  // Where the page is: "/" or "/catalogue/" or "/catalogue/<id>/"; relative links climb from there.
  std::string path = "/";
  // The mirror's own absolute URL without a trailing '/' (snippets). Empty when unknown: the
  // snippets then show a placeholder that the page's script replaces with its own origin.
  std::string mirror_url;
  std::string query;  // the ?q= filter; only rows matching every term are rendered
};

// The HTML page, with inline CSS and script only (nothing is fetched from elsewhere).
[[nodiscard]] std::string render_catalogue_html(const Catalogue& catalogue, const CataloguePage& page);

// The Content-Security-Policy of the pages: nothing from anywhere, except the page's own
// style and script, named by their sha256 (a script planted in a row's text never runs), and
// no framing. The pages carry it in a <meta> too (frame-ancestors aside), for static exports.
[[nodiscard]] std::string catalogue_content_security_policy();

// The mirror's URL for snippets from a request's Host header: "scheme://host[:port]" when the
// header is a plain host name, IPv4 address or bracketed IPv6 address with an optional port;
// "" for anything else (a hostile header never reaches the page).
[[nodiscard]] std::string mirror_url_from_host(std::string_view scheme, std::string_view host_header);

// Checks a --public-url value: http(s)://host[:port][/path], nothing that needs escaping in
// a URL. Returns it without a trailing '/'. UsageError otherwise.
[[nodiscard]] std::string checked_public_url(std::string_view url);

}  // namespace podplane::mirror
