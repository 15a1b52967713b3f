#include "bundle/report.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/human_bytes.hpp"
#include "base/terminal_text.hpp"
#include "cache/kinds.hpp"
#include "cache/signers.hpp"

namespace podplane::bundle {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

namespace {

// The CycloneDX component type of a row, as the table of kinds decides it.
const char* component_type(cache::Reported reported) {
  switch (reported) {
    case cache::Reported::application: return "application";
    case cache::Reported::library: return "library";
    case cache::Reported::container: return "container";
    case cache::Reported::data: return "data";
    case cache::Reported::file: return "file";
    case cache::Reported::unset: break;
  }
  throw Error("internal error: the table of kinds leaves a row's report type unset");
}

// A section id of the HTML page per row of the table: the kind's name, an address variant's
// with its address ("tool_archive-podplane").
std::string section_id(const cache::KindInfo& info) {
  return std::string(info.name) + (info.address.empty() ? "" : "-" + std::string(info.address));
}

// Who signed each row (by index in contents.artifacts), by the table's rule for its kind
// (cache/signers.hpp) over the rows and provenance the manifests carry: an image index or
// manifest is signed by the keys of its cosign signature, a provider package by its release's.
std::vector<std::vector<std::string>> row_signers(const BundleContents& c) {
  std::vector<cache::Artifact> rows;
  cache::ProvenanceByRow provenance;
  for (std::size_t i = 0; i < c.artifacts.size(); ++i) {
    rows.push_back(c.artifacts[i].artifact);
    rows.back().id = static_cast<std::int64_t>(i + 1);  // ids are local to a store: the manifest's order serves
    provenance[rows.back().id] = c.artifacts[i].provenance;
  }
  const cache::KeysByDocument keys;  // the keys documents are objects of the volumes: not read for a report
  const cache::SignerLookup lookup(rows, provenance, keys);
  std::vector<std::vector<std::string>> signers;
  for (const auto& row : rows) signers.push_back(lookup.of(row).fingerprints);
  return signers;
}

// ---- CycloneDX -------------------------------------------------------------------------------

// An upstream URL as an IRI reference the schema accepts: what may not stand in one (spaces,
// controls, quotes, brackets, a '%' not starting an escape, any byte beyond ASCII) percent-encoded.
std::string iri_reference(std::string_view url) {
  std::string out;
  for (std::size_t i = 0; i < url.size(); ++i) {
    const auto byte = static_cast<unsigned char>(url[i]);
    const bool escape_start = byte == '%' && i + 2 < url.size() &&
                              std::isxdigit(static_cast<unsigned char>(url[i + 1])) &&
                              std::isxdigit(static_cast<unsigned char>(url[i + 2]));
    const bool plain = byte > 0x20 && byte < 0x7f && std::string_view("\"<>\\^`{|}").find(static_cast<char>(byte)) ==
                                                          std::string_view::npos;
    if (plain && (byte != '%' || escape_start)) {
      out += static_cast<char>(byte);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", byte);
      out += escaped;
    }
  }
  return out;
}

std::string percent_encoded(std::string_view text, std::string_view keep) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || std::string_view("-._~").find(c) != std::string_view::npos ||
        keep.find(c) != std::string_view::npos) {
      out += c;
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", byte);
      out += escaped;
    }
  }
  return out;
}

// The purl of an image (the standard "oci" type): pkg:oci/<name>@sha256%3A<hex> with the
// repository it came from, its tag and, for one platform's manifest, its architecture. Other
// kinds have no standard purl type that fits (a Terraform provider or module, a vmconfig file).
std::optional<std::string> oci_purl(const cache::Artifact& a) {
  if (cache::kind_info(a).reported != cache::Reported::container) return std::nullopt;
  if (!a.filename.starts_with("sha256:")) return std::nullopt;
  const std::string name = ascii_lower(a.address.substr(a.address.rfind('/') + 1));
  if (name.empty()) return std::nullopt;
  std::string purl = "pkg:oci/" + percent_encoded(name, "") + "@sha256%3A" + a.filename.substr(7) + "?";
  if (!a.platform.empty()) {  // one platform's manifest; an index runs on none
    std::string arch = a.platform.substr(a.platform.find('_') + 1);
    purl += "arch=" + percent_encoded(arch, "") + "&";
  }
  purl += "repository_url=" + percent_encoded(a.address, "/:");
  if (!a.version.empty() && !a.version.starts_with("sha256:")) purl += "&tag=" + percent_encoded(a.version, "");
  return purl;
}

void add_property(ordered_json& properties, const std::string& name, const std::string& value) {
  if (!value.empty()) properties.push_back({{"name", "podplane:" + name}, {"value", value}});
}

ordered_json distribution(const std::string& url) {
  return ordered_json::array({{{"type", "distribution"}, {"url", iri_reference(url)}}});
}

ordered_json artifact_component(const TravellingArtifact& travelling, const std::vector<std::string>& signers,
                                const std::set<std::string>& carried) {
  const cache::Artifact& a = travelling.artifact;
  ordered_json c;
  c["type"] = component_type(cache::kind_info(a).reported);
  c["bom-ref"] = "row-" + row_id(a, travelling.provenance);
  c["name"] = a.address;
  c["version"] = a.version;
  c["description"] = std::string(cache::to_string(a.kind)) + " " + a.filename + (a.platform.empty() ? "" : " for " + a.platform);
  ordered_json hashes = ordered_json::array({{{"alg", "SHA-256"}, {"content", a.digest}}});
  if (a.upstream_digest.starts_with("sha512:") && a.upstream_digest.size() == 7 + 128 && is_hex(a.upstream_digest.substr(7)))
    hashes.push_back({{"alg", "SHA-512"}, {"content", a.upstream_digest.substr(7)}});
  c["hashes"] = hashes;
  if (auto purl = oci_purl(a)) c["purl"] = *purl;
  if (!a.upstream_url.empty()) c["externalReferences"] = distribution(a.upstream_url);
  ordered_json properties = ordered_json::array();
  add_property(properties, "kind", std::string(cache::to_string(a.kind)));
  add_property(properties, "filename", a.filename);
  add_property(properties, "platform", a.platform);
  add_property(properties, "size", std::to_string(a.size));
  add_property(properties, "trust", std::string(cache::to_string(a.trust)));
  add_property(properties, "h1", a.h1);
  add_property(properties, "zh", a.zh);
  add_property(properties, "upstream_digest", a.upstream_digest);
  for (const auto& key : signers) add_property(properties, "signer", key);
  for (const auto& p : travelling.provenance) add_property(properties, "signature_result", p.result);
  add_property(properties, "object_carried", carried.count(a.digest) ? "true" : "false (the receiving store holds it)");
  add_property(properties, "added_at", a.added_at);
  c["properties"] = properties;
  return c;
}

ordered_json module_component(const cache::ModuleTree& tree, const std::set<std::string>& carried) {
  const std::string ref = "row-" + row_id(tree);
  ordered_json files = ordered_json::array();
  std::int64_t bytes = 0;
  bool all_carried = true;
  for (const auto& f : tree.files) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(f.mode));
    bytes += f.size;
    all_carried = all_carried && carried.count(f.digest);
    files.push_back({{"type", "file"},
                     {"bom-ref", ref + "/" + f.path},
                     {"name", f.path},
                     {"hashes", ordered_json::array({{{"alg", "SHA-256"}, {"content", f.digest}}})},
                     {"properties", ordered_json::array({{{"name", "podplane:mode"}, {"value", mode}},
                                                         {{"name", "podplane:size"}, {"value", std::to_string(f.size)}}})}});
  }
  ordered_json c;
  c["type"] = component_type(cache::kModuleTrees.reported);
  c["bom-ref"] = ref;
  c["name"] = tree.address;
  c["version"] = tree.version;
  c["description"] = "module package, " + std::to_string(tree.files.size()) + " files";
  if (!tree.upstream_url.empty()) c["externalReferences"] = distribution(tree.upstream_url);
  ordered_json properties = ordered_json::array();
  add_property(properties, "kind", "module_tree");
  add_property(properties, "h1", tree.h1);
  add_property(properties, "size", std::to_string(bytes));
  add_property(properties, "object_carried", all_carried ? "true" : "false (the receiving store holds some of its files)");
  add_property(properties, "added_at", tree.added_at);
  c["properties"] = properties;
  c["components"] = files;
  return c;
}

std::string selection_text(const cache::TfSelection& s) {
  std::string text;
  for (const auto& p : s.providers) text += (text.empty() ? "" : ", ") + p.address + " " + p.version;
  if (!s.module_address.empty()) text += (text.empty() ? "" : "; ") + s.module_address + " " + s.module_version;
  return text + "; engine " + s.engine;
}

std::string parity_text(const BundleContents& c) {
  if (!c.parity) return "";
  std::string text = c.parity_percent ? std::to_string(*c.parity_percent) + "%: " : std::string();
  text += std::to_string(c.parity->files.size()) + " PAR2 file(s), " + human_bytes(c.parity->bytes) + ", " +
          std::to_string(c.parity->recovery_blocks) + " recovery blocks for " + std::to_string(c.parity->source_blocks) +
          " source blocks";
  return text;
}

std::string volume_text(const ContentsVolume& v, int count) {
  return v.file.filename().string() + " (volume " + std::to_string(v.index) + " of " + std::to_string(count) + ", " +
         std::to_string(v.objects) + " objects, " + std::to_string(v.file_bytes) + " bytes)";
}

ordered_json bundle_properties(const BundleContents& c) {
  ordered_json properties = ordered_json::array();
  add_property(properties, "bundle_id", c.bundle_id);
  add_property(properties, "signer", c.signer);
  add_property(properties, "created_at", c.created_at);
  add_property(properties, "expires_at", c.expires_at.value_or(""));
  if (c.since)
    add_property(properties, "delta_since", "inventory " + c.since->inventory_digest + " of store " + c.since->store_id +
                                                " (generation " + std::to_string(c.since->generation) + ")");
  std::string platforms;
  for (const auto& p : c.platforms) platforms += (platforms.empty() ? "" : ", ") + p;
  add_property(properties, "platforms", platforms.empty() ? "all" : platforms);
  add_property(properties, "objects", std::to_string(c.total_objects) + " (" + std::to_string(c.total_bytes) + " bytes)");
  for (const auto& v : c.volumes) add_property(properties, "volume", volume_text(v, c.volume_count));
  add_property(properties, "parity", c.parity ? parity_text(c) : "none");
  if (c.tf_selection) add_property(properties, "tf_selection", selection_text(*c.tf_selection));
  return properties;
}

// RFC 4122 version 5 (SHA-1, name-based) in the URL namespace: the same document always gets
// the same serial number, a different one another.
std::string uuid_v5(const std::string& name) {
  const std::string url_namespace = from_hex("6ba7b8119dad11d180b400c04fd430c8");
  Hasher sha1(DigestAlgorithm::sha1);
  sha1.update(url_namespace);
  sha1.update(name);
  std::string raw = sha1.finish_raw().substr(0, 16);
  raw[6] = static_cast<char>((raw[6] & 0x0f) | 0x50);
  raw[8] = static_cast<char>((raw[8] & 0x3f) | 0x80);
  const std::string hex = to_hex(raw);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" + hex.substr(20);
}

// ---- HTML ------------------------------------------------------------------------------------

// Text for the page: control bytes made visible first (as for a terminal), then escaped.
std::string html(std::string_view text) {
  std::string out;
  for (char c : printable(text, Newlines::escape)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string code(std::string_view text) { return "<code>" + html(text) + "</code>"; }
std::string size_cell(std::int64_t bytes) {
  return html(human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(bytes, 0)))) + "<br><small>" +
         std::to_string(bytes) + " B</small>";
}

std::string signer_cell(const TravellingArtifact& t, const std::vector<std::string>& signers) {
  std::string cell = html(cache::to_string(t.artifact.trust));
  for (const auto& key : signers) cell += "<br>key " + code(key);
  for (const auto& p : t.provenance)
    if (!p.result.empty()) cell += "<br><small>" + html(p.result) + "</small>";
  return cell;
}

void facts_section(std::string& page, const BundleContents& c) {
  auto fact = [&](const std::string& name, const std::string& value_html) {
    page += "<tr><th>" + html(name) + "</th><td>" + value_html + "</td></tr>\n";
  };
  page += "<h2>Bundle</h2>\n<table class=\"facts\">\n";
  fact("Bundle id", code(c.bundle_id));
  fact("Signed by", c.signer == "unsigned" ? "<strong>nobody: the bundle is unsigned</strong>" : code(c.signer));
  fact("Created", html(c.created_at));
  fact("Expires", c.expires_at ? html(*c.expires_at) : "never");
  fact("Contents", c.since ? "a delta against inventory " + code(c.since->inventory_digest) + " of store " + code(c.since->store_id)
                           : "the whole store");
  std::string platforms;
  for (const auto& p : c.platforms) platforms += (platforms.empty() ? "" : ", ") + p;
  fact("Platforms", html(platforms.empty() ? "all" : platforms));
  fact("Objects", std::to_string(c.total_objects) + " (" + html(human_bytes(c.total_bytes)) + ")");
  fact("Parity", c.parity ? html(parity_text(c)) : "none");
  if (c.tf_selection) fact("Provider selection", html(selection_text(*c.tf_selection)));
  page += "</table>\n<h2>Volumes</h2>\n<table>\n<tr><th>File</th><th>Volume</th><th>Objects</th><th>Size</th></tr>\n";
  for (const auto& v : c.volumes)
    page += "<tr><td>" + code(v.file.filename().string()) + "</td><td>" + std::to_string(v.index) + " of " +
            std::to_string(c.volume_count) + "</td><td>" + std::to_string(v.objects) + "</td><td>" +
            size_cell(static_cast<std::int64_t>(v.file_bytes)) + "</td></tr>\n";
  page += "</table>\n<h2>Items by kind</h2>\n<table>\n<tr><th>Kind</th><th>Rows</th></tr>\n";
  for (const auto& info : cache::kinds()) {
    const auto count = std::count_if(c.artifacts.begin(), c.artifacts.end(),
                                     [&](const TravellingArtifact& t) { return &cache::kind_info(t.artifact) == &info; });
    if (count > 0)
      page += "<tr><td><a href=\"#" + html(section_id(info)) + "\">" + html(info.report_title) + "</a></td><td>" +
              std::to_string(count) + "</td></tr>\n";
  }
  if (!c.module_trees.empty())
    page += "<tr><td><a href=\"#module_tree\">" + html(cache::kModuleTrees.report_title) + "</a></td><td>" +
            std::to_string(c.module_trees.size()) + "</td></tr>\n";
  page += "</table>\n";
}

void artifact_sections(std::string& page, const BundleContents& c) {
  const auto signers = row_signers(c);
  for (const auto& info : cache::kinds()) {
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < c.artifacts.size(); ++i)
      if (&cache::kind_info(c.artifacts[i].artifact) == &info) rows.push_back(i);
    if (rows.empty()) continue;
    page += "<h2 id=\"" + html(section_id(info)) + "\">" + html(info.report_title) + " (" + std::to_string(rows.size()) +
            ")</h2>\n<table class=\"items\">\n<tr><th>Name</th><th>Version</th><th>Platform</th><th>File</th><th>Size</th>"
            "<th>SHA-256</th><th>Origin</th><th>Trust and signer</th></tr>\n";
    for (const std::size_t row : rows) {
      const cache::Artifact& a = c.artifacts[row].artifact;
      page += "<tr><td>" + html(a.address) + "</td><td>" + html(a.version) + "</td><td>" + html(a.platform) + "</td><td>" +
              code(a.filename) + "</td><td>" + size_cell(a.size) + "</td><td class=\"digest\">" + code(a.digest) +
              (c.carried.count(a.digest) ? "" : "<br><small>not carried: the receiving store holds it</small>") +
              "</td><td class=\"url\">" + html(a.upstream_url) + "</td><td>" + signer_cell(c.artifacts[row], signers[row]) +
              "</td></tr>\n";
    }
    page += "</table>\n";
  }
}

void module_section(std::string& page, const BundleContents& c) {
  if (c.module_trees.empty()) return;
  page += "<h2 id=\"module_tree\">" + html(cache::kModuleTrees.report_title) + " (" + std::to_string(c.module_trees.size()) +
          ")</h2>\n<table class=\"items\">\n<tr><th>Name</th><th>Version</th><th>h1</th><th>Origin</th><th>Files</th></tr>\n";
  for (const auto& tree : c.module_trees) {
    page += "<tr><td>" + html(tree.address) + "</td><td>" + html(tree.version) + "</td><td class=\"digest\">" + code(tree.h1) +
            "</td><td class=\"url\">" + html(tree.upstream_url) + "</td><td><details><summary>" +
            std::to_string(tree.files.size()) + " files</summary>\n<table>\n";
    for (const auto& f : tree.files)
      page += "<tr><td>" + code(f.path) + "</td><td>" + size_cell(f.size) + "</td><td class=\"digest\">" + code(f.digest) +
              "</td></tr>\n";
    page += "</table></details></td></tr>\n";
  }
  page += "</table>\n";
}

constexpr const char* kStyle =
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222;line-height:1.4}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}th,td{border:1px solid #ccc;padding:0.3em 0.5em;"
    "text-align:left;vertical-align:top}th{background:#f0f0f0}table.facts th{width:12em}"
    "code{font-family:ui-monospace,monospace;font-size:0.9em}td.digest,td.url{word-break:break-all;max-width:28em}"
    "small{color:#666}p.lead{max-width:50em}";

}  // namespace

ReportFiles report_files(const fs::path& bundle) {
  return {fs::path(bundle.string() + ".cdx.json"), fs::path(bundle.string() + ".report.html")};
}

std::string cyclonedx_json(const BundleContents& contents) {
  ordered_json components = ordered_json::array();
  const auto signers = row_signers(contents);
  for (std::size_t i = 0; i < contents.artifacts.size(); ++i)
    components.push_back(artifact_component(contents.artifacts[i], signers[i], contents.carried));
  for (const auto& tree : contents.module_trees) components.push_back(module_component(tree, contents.carried));
  ordered_json metadata;
  metadata["timestamp"] = contents.created_at;
  metadata["tools"] = {{"components", ordered_json::array({{{"type", "application"},
                                                             {"name", "podplane"},
                                                             {"version", contents.tool_version}}})}};
  metadata["component"] = {{"type", "file"},
                           {"bom-ref", "bundle"},
                           {"name", contents.name},
                           {"version", contents.bundle_id},
                           {"description", "podplane bundle of " + std::to_string(contents.volume_count) + " volume(s)"}};
  metadata["properties"] = bundle_properties(contents);
  ordered_json document;
  document["bomFormat"] = "CycloneDX";
  document["specVersion"] = "1.6";
  document["serialNumber"] = "";
  document["version"] = 1;
  document["metadata"] = metadata;
  document["components"] = components;
  const auto replace = ordered_json::error_handler_t::replace;
  document["serialNumber"] = "urn:uuid:" + uuid_v5("urn:podplane:transfer-report:" + sha256_hex(document.dump(-1, ' ', false, replace)));
  return document.dump(2, ' ', false, replace) + "\n";
}

std::string report_html(const BundleContents& c) {
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Transfer report: " +
      html(c.name) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>Transfer report: " + code(c.name) +
      "</h1>\n<p class=\"lead\">What this podplane bundle carries across the air gap: every row of its manifests, with the "
      "SHA-256 of each object, where it came from and who signed it upstream. This page and its CycloneDX twin (" +
      code(c.name + ".cdx.json") + ") are not signed; " + code("podplane bundle show " + c.name + "*") +
      " prints the same from the signed volumes.</p>\n";
  facts_section(page, c);
  artifact_sections(page, c);
  module_section(page, c);
  page += "<p><small>Made by podplane " + html(c.tool_version) + " from the manifests of bundle " + code(c.bundle_id) +
          ".</small></p>\n</body>\n</html>\n";
  return page;
}

ReportFiles write_transfer_report(const fs::path& bundle, const BundleContents& contents) {
  ReportFiles files = report_files(bundle);
  write_file_durably(files.cyclonedx, cyclonedx_json(contents));
  write_file_durably(files.html, report_html(contents));
  return files;
}

}  // namespace podplane::bundle
