// The transfer report and `bundle show`, through the binary on real multi-volume bundles: the
// CycloneDX document passes the CycloneDX library's strict validator for spec 1.6 (node,
// tests/tools/cyclonedx) and lists every row of the manifests, read back from the volumes
// with tar; the HTML page shows every object's digest, escaped, with no script; and `bundle
// show` lists what an import into an empty store then adds, without a store of its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "cache/kinds.hpp"
#include "cache/store.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

using nlohmann::json;
using podplane::test::run;
using podplane::test::run_podplane;
using podplane::test::show;
using podplane::test::TempDir;
namespace fs = std::filesystem;

const std::string kHostileUrl = "https://example.invalid/kernel <script>alert(\"x\")</script>&q='1'";

// Rows of more kinds than the fixture's: images (index, manifest, layer), a seed snapshot with
// its sha512, and a vmconfig artifact whose origin URL is hostile text.
void add_rows_of_every_kind(cache::Store& store) {
  auto artifact = [&](cache::ArtifactKind kind, const std::string& address, const std::string& version,
                      const std::string& platform, const std::string& bytes) {
    cache::Artifact a;
    a.kind = kind;
    a.address = address;
    a.version = version;
    a.platform = platform;
    a.digest = store.add_bytes(bytes);
    a.size = static_cast<std::int64_t>(bytes.size());
    a.filename = "sha256:" + a.digest;
    a.upstream_digest = a.filename;
    a.trust = cache::Trust::checksum;
    a.added_at = "2026-11-04T08:00:00Z";
    return a;
  };
  auto layer = artifact(cache::ArtifactKind::image_blob, "registry.k8s.io/pause", "", "", test::synthetic_bytes("layer", 9000));
  auto manifest = artifact(cache::ArtifactKind::image_manifest, "registry.k8s.io/pause", "3.10", "linux_amd64",
                           "{\"layers\":[\"sha256:" + layer.digest + "\"]}");
  layer.version = "sha256:" + manifest.digest;
  auto index = artifact(cache::ArtifactKind::image_index, "registry.k8s.io/pause", "3.10", "",
                        "{\"manifests\":[\"sha256:" + manifest.digest + "\"]}");
  for (const auto& a : {index, manifest, layer}) store.add_artifact(a);

  const std::string snapshot = test::synthetic_bytes("snapshot", 7000);
  auto seed = artifact(cache::ArtifactKind::seed_snapshot, "netsy", "1.0.0", "", snapshot);
  seed.filename = "netsy.netsy";
  Hasher sha512(DigestAlgorithm::sha512);
  sha512.update(snapshot);
  seed.upstream_digest = "sha512:" + sha512.finish_hex();
  seed.upstream_url = "https://seeds.example.invalid/netsy.netsy";
  store.add_artifact(seed);

  auto kernel = artifact(cache::ArtifactKind::vmconfig_artifact, "initrd", "6.12.1", "", test::synthetic_bytes("initrd", 5000));
  kernel.filename = "initrd-6.12.1.img";
  kernel.upstream_digest = "sha256:" + kernel.digest;
  kernel.upstream_url = kHostileUrl;
  store.add_artifact(kernel);
}

// An engine release zip, bare: its signed SHA256SUMS is not there, so an import refuses it,
// but a report lists it all the same.
void add_engine_release(cache::Store& store) {
  const std::string bytes = "PK\x03\x04" + test::synthetic_bytes("tofu", 6000);
  cache::Artifact tool;
  tool.kind = cache::ArtifactKind::tool_archive;
  tool.address = "tofu";
  tool.version = "1.9.0";
  tool.platform = "linux_amd64";
  tool.filename = "tofu_1.9.0_linux_amd64.zip";
  tool.digest = store.add_bytes(bytes);
  tool.size = static_cast<std::int64_t>(bytes.size());
  tool.upstream_url = "https://github.com/opentofu/opentofu/releases/download/v1.9.0/tofu_1.9.0_linux_amd64.zip";
  tool.trust = cache::Trust::signed_upstream;
  tool.added_at = "2026-11-04T08:00:00Z";
  store.add_artifact(tool);
}

// (kind, name, version, platform, filename, sha256) of a manifest row or a report component.
using RowKey = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string>;

std::string property(const json& component, const std::string& name) {
  for (const auto& p : component.value("properties", json::array()))
    if (p["name"] == "podplane:" + name) return p["value"];
  return "";
}

std::string hash(const json& component, const std::string& alg) {
  for (const auto& h : component.value("hashes", json::array()))
    if (h["alg"] == alg) return h["content"];
  return "";
}

class TransferReport : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = cache::Store::open(online());
    test::fill_store(store);
    add_rows_of_every_kind(store);
    auto keygen = run_podplane({"bundle", "keygen", (dir / "site").string()});
    ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
    key_id = keygen.out.substr(keygen.out.find("(sha256:") + 1, 71);
  }
  fs::path online() const { return dir / "online"; }

  // The store cut into 48 KiB volumes in `media`, signed, with 25% parity.
  std::vector<std::string> create(const fs::path& media) {
    fs::create_directories(media);
    auto created = run_podplane({"bundle", "create", (media / "deps.bundle").string(), "--sign", (dir / "site.key").string(),
                                 "--volume-size", "48K", "--parity", "25"},
                                podplane::test::with_deps_root(online()));
    EXPECT_EQ(created.exit_code, 0) << show(created);
    EXPECT_NE(created.out.find("transfer report: " + (media / "deps.bundle.cdx.json").string()), std::string::npos)
        << show(created);
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(media)) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    return files;
  }

  std::vector<std::string> volumes_of(const std::vector<std::string>& files) {
    std::vector<std::string> volumes;
    for (const auto& f : files)
      if (f.find("-of-") != std::string::npos && !f.ends_with(".par2")) volumes.push_back(f);
    return volumes;
  }

  TempDir dir;
  std::string key_id;
};

TEST_F(TransferReport, ValidatesAgainstCycloneDx16AndListsEveryRowOfTheManifests) {
  {
    auto store = cache::Store::open(online());
    add_engine_release(store);
  }
  ASSERT_TRUE(fs::exists(test::cyclonedx_library())) << "the CycloneDX library is not installed: run scripts/setup";
  const auto files = create(dir / "media");
  const auto volumes = volumes_of(files);
  ASSERT_GE(volumes.size(), 3u);
  const fs::path cdx = dir / "media" / "deps.bundle.cdx.json";

  auto valid = test::validate_cyclonedx(cdx);
  EXPECT_EQ(valid.exit_code, 0) << show(valid);
  EXPECT_EQ(valid.out, "valid\n") << show(valid);
  // The validator is strict: one property the schema does not know fails it.
  json broken = json::parse(podplane::test::read_file(cdx));
  broken["components"][0]["checksum"] = "x";
  podplane::test::write_file(dir / "broken.cdx.json", broken.dump());
  EXPECT_EQ(test::validate_cyclonedx(dir / "broken.cdx.json").exit_code, 1);

  // Every row of every volume's manifest, read back with tar.
  std::set<RowKey> manifest_rows;
  std::set<std::tuple<std::string, std::string, std::string>> manifest_trees;
  std::string bundle_id;
  for (const auto& volume : volumes) {
    auto tar = run({"tar", "-xOf", volume, "manifest.json"});
    ASSERT_EQ(tar.exit_code, 0) << show(tar);
    json manifest = json::parse(tar.out);
    bundle_id = manifest["bundle_id"];
    for (const auto& a : manifest["artifacts"])
      manifest_rows.emplace(a["kind"], a["address"], a["version"], a["platform"], a["filename"], a["digest"]);
    for (const auto& t : manifest["module_trees"]) manifest_trees.emplace(t["address"], t["version"], t["h1"]);
  }
  ASSERT_EQ(manifest_rows.size(), cache::Store::open(online()).artifacts().size());

  json report = json::parse(podplane::test::read_file(cdx));
  EXPECT_EQ(report["bomFormat"], "CycloneDX");
  EXPECT_EQ(report["specVersion"], "1.6");
  std::set<RowKey> component_rows;
  std::set<std::tuple<std::string, std::string, std::string>> component_trees;
  for (const auto& c : report["components"]) {
    const std::string kind = property(c, "kind");
    if (kind == "module_tree") {
      component_trees.emplace(c["name"], c["version"], property(c, "h1"));
      EXPECT_EQ(c["components"].size(), 4u) << c.dump();
      continue;
    }
    component_rows.emplace(kind, c["name"], c["version"], property(c, "platform"), property(c, "filename"), hash(c, "SHA-256"));
    if (kind == "provider_package") {
      EXPECT_EQ(property(c, "signer"), "34365D9472D7468F") << c.dump();
    }
    if (kind == "image_index") {
      EXPECT_EQ(c["type"], "container");
      EXPECT_EQ(c["purl"], "pkg:oci/pause@sha256%3A" + hash(c, "SHA-256") + "?repository_url=registry.k8s.io/pause&tag=3.10");
    }
    if (kind == "seed_snapshot") {
      EXPECT_EQ(hash(c, "SHA-512").size(), 128u) << c.dump();
    }
    if (kind == "vmconfig_artifact" && c["name"] == "initrd") {
      EXPECT_EQ(c["externalReferences"][0]["url"],
                "https://example.invalid/kernel%20%3Cscript%3Ealert(%22x%22)%3C/script%3E&q='1'");
    }
  }
  EXPECT_EQ(component_rows, manifest_rows);
  EXPECT_EQ(component_trees, manifest_trees);
  std::string properties = report["metadata"]["properties"].dump();
  EXPECT_NE(properties.find("{\"name\":\"podplane:bundle_id\",\"value\":\"" + bundle_id + "\"}"), std::string::npos) << properties;
  EXPECT_NE(properties.find("{\"name\":\"podplane:signer\",\"value\":\"" + key_id + "\"}"), std::string::npos) << properties;
  EXPECT_NE(properties.find("{\"name\":\"podplane:parity\",\"value\":\"25%: "), std::string::npos) << properties;

  // The page: every object's digest, the hostile URL escaped, nothing that runs or loads.
  const std::string page = podplane::test::read_file(dir / "media" / "deps.bundle.report.html");
  for (const auto& row : manifest_rows) EXPECT_NE(page.find(std::get<5>(row)), std::string::npos) << std::get<4>(row);
  EXPECT_NE(page.find("kernel &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;q=&#39;1&#39;"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_NE(page.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find(key_id), std::string::npos);

  // The same store and options give the same report, byte for byte.
  create(dir / "again");
  EXPECT_EQ(podplane::test::read_file(dir / "again" / "deps.bundle.cdx.json"), podplane::test::read_file(cdx));
  EXPECT_EQ(podplane::test::read_file(dir / "again" / "deps.bundle.report.html"),
            podplane::test::read_file(dir / "media" / "deps.bundle.report.html"));
}

// A delta's report: it validates, says what inventory it was cut against, lists exactly the rows
// the delta carries, and marks each row whose object stays behind (the receiver holds it: a
// keys document of the same bytes as the one it has) as not carried, on the page too.
TEST_F(TransferReport, ADeltasReportValidatesAndMarksWhatItCarries) {
  ASSERT_TRUE(fs::exists(test::cyclonedx_library())) << "the CycloneDX library is not installed: run scripts/setup";
  std::vector<std::string> import{"bundle", "import", "--trust", (dir / "site.pub").string()};
  for (const auto& file : volumes_of(create(dir / "media"))) import.push_back(file);
  auto imported = run_podplane(import, podplane::test::with_deps_root(dir / "offline"));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  {
    auto store = cache::Store::open(online());
    test::add_provider(store, "aws", "6.3.0", test::kPlatforms, 20000);
  }
  const fs::path inventory = dir / "inventory.json";
  auto listed = run_podplane({"bundle", "inventory", "-o", inventory.string()}, podplane::test::with_deps_root(dir / "offline"));
  ASSERT_EQ(listed.exit_code, 0) << show(listed);
  fs::create_directories(dir / "delta");
  const fs::path delta = dir / "delta" / "delta.bundle";
  auto cut = run_podplane({"bundle", "create", delta.string(), "--since", inventory.string(), "--sign", (dir / "site.key").string()},
                          podplane::test::with_deps_root(online()));
  ASSERT_EQ(cut.exit_code, 0) << show(cut);
  const fs::path cdx = dir / "delta" / "delta.bundle.cdx.json";
  auto valid = test::validate_cyclonedx(cdx);
  EXPECT_EQ(valid.exit_code, 0) << show(valid);
  EXPECT_EQ(valid.out, "valid\n") << show(valid);

  auto tar = run({"tar", "-xOf", delta.string(), "manifest.json"});
  ASSERT_EQ(tar.exit_code, 0) << show(tar);
  const json manifest = json::parse(tar.out);
  std::set<RowKey> manifest_rows;
  for (const auto& a : manifest["artifacts"])
    manifest_rows.emplace(a["kind"], a["address"], a["version"], a["platform"], a["filename"], a["digest"]);
  std::set<std::string> carried;
  for (const auto& o : manifest["objects"]) carried.insert(o["digest"]);

  json report = json::parse(podplane::test::read_file(cdx));
  const std::string properties = report["metadata"]["properties"].dump();
  EXPECT_NE(properties.find("{\"name\":\"podplane:delta_since\",\"value\":\"inventory " +
                            sha256_hex(podplane::test::read_file(inventory)) + " of store "),
            std::string::npos)
      << properties;
  std::set<RowKey> component_rows;
  std::size_t left_behind = 0;
  for (const auto& c : report["components"]) {
    component_rows.emplace(property(c, "kind"), c["name"], c["version"], property(c, "platform"), property(c, "filename"),
                           hash(c, "SHA-256"));
    EXPECT_EQ(c["version"], "6.3.0") << c.dump();
    const bool in_volume = carried.count(hash(c, "SHA-256")) != 0;
    EXPECT_EQ(property(c, "object_carried"), in_volume ? "true" : "false (the receiving store holds it)") << c.dump();
    left_behind += in_volume ? 0 : 1;
  }
  EXPECT_EQ(component_rows, manifest_rows);
  EXPECT_EQ(component_rows.size(), 3 + test::kPlatforms.size());  // SHA256SUMS, signature, keys and a zip a platform
  EXPECT_EQ(left_behind, 1u);  // the keys document: the same bytes as 6.2.0's
  const std::string page = podplane::test::read_file(dir / "delta" / "delta.bundle.report.html");
  EXPECT_NE(page.find("a delta against inventory <code>" + sha256_hex(podplane::test::read_file(inventory)) + "</code>"),
            std::string::npos);
  EXPECT_NE(page.find("not carried: the receiving store holds it"), std::string::npos);
}

// The rows of the table of kinds each as the stored example (tests/support/every_kind.hpp), cut
// into a bundle by the binary: the strict validator accepts the report, its components are
// exactly the rows of the manifest and the module tree, the page names each, and each row names
// the signer the table's rule gives its kind (an image index and manifest: the keys of the
// cosign signature of the index, which only the signature's own provenance records).
TEST(TransferReportOfEveryKind, ValidatesListsEveryRowAndNamesTheSignerTheTableGivesEach) {
  ASSERT_TRUE(fs::exists(test::cyclonedx_library())) << "the CycloneDX library is not installed: run scripts/setup";
  TempDir dir;
  auto store = cache::Store::open(dir / "online");
  const auto every = podplane::test::add_every_kind(store, dir / "work");
  const fs::path bundle = dir / "media" / "all.bundle";
  fs::create_directories(bundle.parent_path());
  auto created = run_podplane({"bundle", "create", bundle.string(), "--volume-size", "64K"},
                              podplane::test::with_deps_root(dir / "online"));
  ASSERT_EQ(created.exit_code, 0) << show(created);
  const fs::path cdx = dir / "media" / "all.bundle.cdx.json";
  auto valid = test::validate_cyclonedx(cdx);
  EXPECT_EQ(valid.exit_code, 0) << show(valid);
  EXPECT_EQ(valid.out, "valid\n") << show(valid);

  std::set<RowKey> manifest_rows;
  std::set<std::pair<std::string, std::string>> manifest_trees;
  for (const auto& entry : fs::directory_iterator(bundle.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name != "all.bundle" && name.find("-of-") == std::string::npos) continue;
    auto tar = run({"tar", "-xOf", entry.path().string(), "manifest.json"});
    ASSERT_EQ(tar.exit_code, 0) << show(tar);
    json manifest = json::parse(tar.out);
    for (const auto& a : manifest["artifacts"])
      manifest_rows.emplace(a["kind"], a["address"], a["version"], a["platform"], a["filename"], a["digest"]);
    for (const auto& t : manifest["module_trees"]) manifest_trees.emplace(t["address"], t["version"]);
  }
  ASSERT_EQ(manifest_rows.size(), store.artifacts().size());

  json report = json::parse(podplane::test::read_file(cdx));
  std::set<RowKey> component_rows;
  std::set<std::pair<std::string, std::string>> component_trees;
  std::map<std::string, json> by_digest;
  for (const auto& c : report["components"]) {
    if (property(c, "kind") == "module_tree") {
      component_trees.emplace(c["name"], c["version"]);
      continue;
    }
    component_rows.emplace(property(c, "kind"), c["name"], c["version"], property(c, "platform"), property(c, "filename"),
                           hash(c, "SHA-256"));
    by_digest[hash(c, "SHA-256")] = c;
  }
  EXPECT_EQ(component_rows, manifest_rows);
  EXPECT_EQ(component_trees, manifest_trees);
  EXPECT_EQ(component_trees.count({every.module.address, every.module.version}), 1u);

  // The keys that signed each example, as its fetch recorded them: the cosign signature's for an image.
  const auto& signature = every.of(cache::kind_info(cache::ArtifactKind::image_attachment));
  const auto cosign_checks = store.provenance_of(signature.id);
  ASSERT_EQ(cosign_checks.size(), 1u);
  const std::string page = podplane::test::read_file(dir / "media" / "all.bundle.report.html");
  for (const auto& kind : cache::kinds()) {
    if (!every.has(kind)) continue;
    const auto& row = every.of(kind);
    const std::string label = std::string(kind.name) + (kind.address.empty() ? "" : " @" + std::string(kind.address));
    ASSERT_EQ(by_digest.count(row.digest), 1u) << label;
    const json& c = by_digest[row.digest];
    EXPECT_EQ(property(c, "kind"), kind.name) << label;
    std::string signer;
    switch (kind.signer) {
      case cache::Signer::openpgp_keys_document:
      case cache::Signer::pinned_release_key: signer = store.provenance_of(row.id).at(0).key_fingerprint; break;
      case cache::Signer::cosign_key:
      case cache::Signer::cosign_attachment: signer = cosign_checks[0].key_fingerprint; break;
      case cache::Signer::unset:
      case cache::Signer::none:
      case cache::Signer::bundle_signature: break;
    }
    EXPECT_EQ(property(c, "signer"), signer) << label << ": " << c.dump();
    // The page: the kind's section, and the row with its digest and signer.
    EXPECT_NE(page.find(">" + std::string(kind.report_title) + " ("), std::string::npos) << label;
    const auto at = page.find(row.digest);
    ASSERT_NE(at, std::string::npos) << label;
    const auto begin = page.rfind("<tr>", at), end = page.find("</tr>", at);
    const std::string html_row = page.substr(begin, end - begin);
    EXPECT_NE(html_row.find(row.filename), std::string::npos) << label << ": " << html_row;
    if (!signer.empty()) {
      EXPECT_NE(html_row.find("key <code>" + signer + "</code>"), std::string::npos) << label << ": " << html_row;
    }
  }
  EXPECT_NE(page.find("<tr><td>" + every.module.address + "</td><td>" + every.module.version + "</td>"), std::string::npos);
}

// `bundle show` needs no store and opens none; its rows are those an import into an empty store
// adds; a volume left out is named.
TEST_F(TransferReport, ShowListsWhatImportAddsWithoutAStore) {
  const auto files = create(dir / "media");
  const auto volumes = volumes_of(files);
  ASSERT_GE(volumes.size(), 3u);
  std::vector<std::string> args{"bundle", "show", "--json"};
  args.insert(args.end(), files.begin(), files.end());  // deps.bundle*: parity files and the report too
  auto shown = run_podplane(args, podplane::test::with_deps_root(dir / "no-store"));
  ASSERT_EQ(shown.exit_code, 0) << show(shown);
  EXPECT_FALSE(fs::exists(dir / "no-store"));
  json out = json::parse(shown.out);
  ASSERT_EQ(out["bundles"].size(), 1u) << shown.out;
  const json& bundle = out["bundles"][0];
  EXPECT_EQ(bundle["volume_count"], volumes.size());
  EXPECT_EQ(bundle["volumes"].size(), volumes.size());
  EXPECT_EQ(bundle["signer"], key_id);
  EXPECT_TRUE(bundle["missing_volumes"].empty());
  ASSERT_TRUE(bundle["parity"].is_object()) << bundle.dump(2);
  EXPECT_EQ(bundle["parity"]["volumes"].size(), volumes.size());
  EXPECT_GT(bundle["parity"]["recovery_blocks"].get<int>(), 0);

  std::vector<std::string> import{"bundle", "import", "--trust", (dir / "site.pub").string()};
  import.insert(import.end(), files.begin(), files.end());
  auto imported = run_podplane(import, podplane::test::with_deps_root(dir / "offline"));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  auto store = cache::Store::open(dir / "offline");
  std::set<RowKey> added, listed;
  for (const auto& a : store.artifacts())
    added.emplace(cache::to_string(a.kind), a.address, a.version, a.platform, a.filename, a.digest);
  for (const auto& a : bundle["artifacts"]) listed.emplace(a["kind"], a["address"], a["version"], a["platform"], a["filename"], a["digest"]);
  EXPECT_EQ(listed, added);
  std::set<std::pair<std::string, std::string>> trees, listed_trees;
  for (const auto& t : store.module_trees()) trees.emplace(t.address, t.version);
  for (const auto& t : bundle["module_trees"]) listed_trees.emplace(t["address"], t["version"]);
  EXPECT_EQ(listed_trees, trees);

  std::vector<std::string> text_args{"bundle", "show"};
  text_args.insert(text_args.end(), files.begin(), files.end());
  auto text = run_podplane(text_args, podplane::test::with_deps_root(dir / "no-store"));
  ASSERT_EQ(text.exit_code, 0) << show(text);
  EXPECT_NE(text.out.find("rows (what import adds to a store that lacks them): " + std::to_string(added.size()) +
                          " artifacts, " + std::to_string(trees.size()) + " module trees"),
            std::string::npos)
      << text.out;
  for (const auto& row : added) EXPECT_NE(text.out.find("sha256:" + std::get<5>(row)), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("signer: " + key_id + " (signature verified"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("note: " + (dir / "media" / "deps.bundle.cdx.json").string() + " is a bundle's transfer report"),
            std::string::npos)
      << text.out;

  std::vector<std::string> without_second{"bundle", "show"};
  for (const auto& f : files)
    if (f != volumes[1]) without_second.push_back(f);
  auto partial = run_podplane(without_second, podplane::test::with_deps_root(dir / "no-store"));
  ASSERT_EQ(partial.exit_code, 0) << show(partial);
  EXPECT_NE(partial.out.find("volume 2 of " + std::to_string(volumes.size()) + ": not given"), std::string::npos) << partial.out;
  EXPECT_FALSE(fs::exists(dir / "no-store"));
}

}  // namespace
}  // namespace podplane::bundle
