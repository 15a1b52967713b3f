// The site catalogue: the pure model and renderers (golden catalogue.json, escaping of
// hostile strings, the ?q= filter, mirror URLs from Host headers), and mirror serve / export
// answering /, /catalogue/ and /catalogue.json from the site map.
#include <gtest/gtest.h>

#include <signal.h>

#include <regex>
#include <tuple>

#include "base/error.hpp"
#include "cache/row_rules.hpp"
#include "mirror/catalogue.hpp"
#include "mirror/serve_site.hpp"
#include "net/oci_reference.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/golden.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::read_file;
using podplane::test::TempDir;

cache::Artifact package(std::int64_t id, const std::string& address, const std::string& version, const std::string& platform,
                        const std::string& digest_char) {
  cache::Artifact a = podplane::test::provider_package_row(std::string(64, digest_char[0]), platform, address, version);
  a.id = id;
  a.size = 1234567;
  a.h1 = "h1:" + std::string(43, digest_char[0]) + "=";
  a.zh = cache::zh_of(a);
  a.upstream_url = "https://releases.example/" + a.filename;
  a.added_at = "2026-11-0" + std::to_string(id % 9 + 1) + "T10:00:00Z";
  return a;
}

// A hand-made snapshot: two providers (one signed by a key with a hostile user id), a module,
// a manifest and an artifact per arch sharing one path, and a bundle import.
mirror::CatalogueSource sample_source(const std::string& hostile = "<script>alert(1)</script>") {
  mirror::CatalogueSource source;
  source.primary_host = "registry.opentofu.org";
  source.artifacts.push_back(package(1, "registry.opentofu.org/hashicorp/aws", "6.2.0", "linux_amd64", "a"));
  source.artifacts.push_back(package(2, "registry.opentofu.org/hashicorp/aws", "6.2.0", "linux_arm64", "b"));
  source.artifacts.push_back(package(3, "registry.opentofu.org/hashicorp/aws", "6.10.0", "linux_amd64", "c"));
  auto unsigned_package = package(4, "registry.terraform.io/hashicorp/random", "3.6.0", "darwin_arm64", "d");
  unsigned_package.trust = cache::Trust::unverified;
  source.artifacts.push_back(unsigned_package);
  for (std::int64_t id : {1, 2, 3})
    source.provenance[id] = {{id, std::string(64, 's'), std::string(64, 'g'), std::string(64, 'k'), "34365D9472D7468F",
                              "signed", "2026-11-01T10:00:00Z"}};
  source.keys[std::string(64, 'k')] = {{"C874011F0AB405110D02105534365D9472D7468F", {"HashiCorp Security " + hostile}}};

  cache::ModuleTree tree;
  tree.id = 1;
  tree.address = "registry.opentofu.org/nstance-dev/nstance/aws";
  tree.version = "2.0.1";
  tree.h1 = "h1:" + std::string(43, 'm') + "=";
  tree.upstream_url = "https://registry.opentofu.org/v1/modules/nstance-dev/nstance/aws/2.0.1/download";
  tree.added_at = "2026-11-02T10:00:00Z";
  source.modules.push_back(tree);
  source.module_file_counts[1] = 12;

  cache::Artifact manifest = podplane::test::vmconfig_manifest_row(std::string(64, 'e'), "vmconfig_knc_debian-13_amd64", "1.4.0", "linux_amd64");
  manifest.id = 10;
  manifest.filename = "vmconfig_knc_debian-13_amd64.json";
  manifest.upstream_url.clear();
  manifest.trust = cache::Trust::checksum;
  manifest.added_at = "2026-11-03T10:00:00Z";
  source.artifacts.push_back(manifest);
  manifest.id = 11;
  manifest.address = "vmconfig_knc_debian-13_arm64";
  manifest.platform = "linux_arm64";
  manifest.filename = "vmconfig_knc_debian-13_arm64.json";
  manifest.digest = std::string(64, 'f');
  source.artifacts.push_back(manifest);
  for (auto [id, arch, digest] : {std::tuple{12, "amd64", '1'}, std::tuple{13, "arm64", '2'}}) {
    cache::Artifact artifact = podplane::test::vmconfig_artifact_row(std::string(64, digest), "kubernetes", "1.34.1", "",
                                                                     std::string("linux_") + arch);
    artifact.id = id;
    artifact.filename = "kubernetes-server.tar.gz";  // no arch in the name: the two share one path
    artifact.size = 4096;
    artifact.added_at = "2026-11-03T10:00:00Z";
    source.artifacts.push_back(artifact);
  }
  // A kernel read out of the amd64 os image.
  cache::Artifact boot = podplane::test::boot_file_row(std::string(64, '6'), "13.2", "vmlinuz-6.12", "linux_amd64");
  boot.id = 14;
  boot.size = 2048;
  boot.added_at = "2026-11-03T10:00:00Z";
  source.artifacts.push_back(boot);
  source.served["/vmconfig/artifacts/os-image/13.2/boot/vmlinuz-6.12"] = boot.digest;
  for (auto [id, kind, platform, digest] : {std::tuple{20, cache::ArtifactKind::image_index, "", '7'},
                                            std::tuple{21, cache::ArtifactKind::image_manifest, "linux_amd64", '8'}}) {
    cache::Artifact image = cache::image_row(kind, "registry.k8s.io/pause", "3.10", platform, "sha256:" + std::string(64, digest), 512, "");
    image.id = id;
    source.artifacts.push_back(image);
    source.served["/v2/mirror/registry.k8s.io/pause/manifests/" + image.filename] = image.digest;
  }
  cache::Artifact seed = podplane::test::seed_snapshot_row(std::string(64, '5'), "recommended", "2026.11.1", "recommended.netsy",
                                                           std::string(128, '5'));
  seed.id = 30;
  seed.size = 24576;
  seed.upstream_url.clear();
  source.artifacts.push_back(seed);
  source.served["/seeds/snapshots/recommended/2026.11.1/recommended.netsy"] = seed.digest;
  source.served["/v1/mirror/registry.opentofu.org/hashicorp/aws/terraform-provider-aws_6.2.0_linux_amd64.zip"] =
      std::string(64, 'a');
  source.served["/v1/providers/registry.opentofu.org/hashicorp/aws/6.2.0/download/linux/amd64"] = "";
  source.served["/v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/2.0.1/package.tar.gz"] = "";
  source.served["/vmconfig/manifests/vmconfig_knc_debian-13_amd64.json"] = std::string(64, 'e');
  source.served["/vmconfig/artifacts/kubernetes/1.34.1/kubernetes-server.tar.gz"] = std::string(64, '1');
  source.served["/arch/amd64/vmconfig/artifacts/kubernetes/1.34.1/kubernetes-server.tar.gz"] = std::string(64, '1');
  source.served["/arch/arm64/vmconfig/artifacts/kubernetes/1.34.1/kubernetes-server.tar.gz"] = std::string(64, '2');

  cache::AuditEntry import;
  import.id = 7;
  import.at = "2026-11-04T09:30:00Z";
  import.action = "bundle-import";
  import.subject = "/media/usb/transfer.bundle";
  import.detail = json{{"ok", true},
                       {"objects_imported", 42},
                       {"bytes_imported", 123456},
                       {"volumes", json::array({{{"file", "/media/usb/transfer.bundle"},
                                                 {"bundle_id", "b-" + hostile},
                                                 {"volume_index", 1},  // from 1, as bundle import records it
                                                 {"volume_count", 1},
                                                 {"complete", true},
                                                 {"signer", "sha256:" + std::string(64, '9')},
                                                 {"trusted", true},
                                                 {"objects", 50},
                                                 {"imported", 42},
                                                 {"already_present", 8},
                                                 {"missing", 0},
                                                 {"error", ""}}})}}
                      .dump();
  source.imports.push_back(import);
  source.signers.push_back({"sha256:" + std::string(64, '9'), "2026-11-04T09:00:00Z", "b-1", "2026-11-04T09:30:00Z"});
  source.usage.objects = 11;
  source.usage.object_bytes = 3750000;
  source.usage.by_family["provider"] = {3, 4, 3703701};
  source.usage.by_family["module"] = {1, 12, 4096};
  return source;
}

TEST(CatalogueTest, JsonMatchesTheGoldenFile) {
  auto catalogue = mirror::build_catalogue(sample_source("<b>"));
  podplane::test::expect_golden("serve/catalogue.json", mirror::render_catalogue_json(catalogue));
}

TEST(CatalogueTest, ModelOrdersVersionsNewestFirstAndSaysWhatIsServed) {
  auto catalogue = mirror::build_catalogue(sample_source());
  auto data = json::parse(mirror::render_catalogue_json(catalogue));
  auto aws = data["providers"][0];
  EXPECT_EQ(aws["address"], "registry.opentofu.org/hashicorp/aws");
  EXPECT_EQ(aws["versions"][0]["version"], "6.10.0");  // go-versions order, not text order
  EXPECT_EQ(aws["versions"][1]["version"], "6.2.0");
  EXPECT_EQ(aws["versions"][1]["registry_protocol"], true);
  EXPECT_EQ(aws["versions"][0]["registry_protocol"], false);
  EXPECT_EQ(aws["versions"][1]["platforms"][0]["signature"]["signers"][0], "HashiCorp Security <script>alert(1)</script>");
  EXPECT_EQ(data["vmconfig_arches"], json::array({"amd64", "arm64"}));
  EXPECT_EQ(data["origin_hosts"], json::array({"registry.opentofu.org", "registry.terraform.io"}));
  // The arm64 artifact's plain path holds the amd64 bytes: it is served at its arch's base.
  EXPECT_EQ(data["vmconfig-artifacts"][0]["path"], "/vmconfig/artifacts/kubernetes/1.34.1/kubernetes-server.tar.gz");
  EXPECT_EQ(data["vmconfig-artifacts"][1]["path"], "/arch/arm64/vmconfig/artifacts/kubernetes/1.34.1/kubernetes-server.tar.gz");
  EXPECT_EQ(catalogue.arch_shared_paths.at("arm64"), 1u);
  // Boot files, images and seeds have rows of their own, linked to where they are served.
  ASSERT_EQ(data["vmconfig-artifacts"].size(), 3u);
  EXPECT_EQ(data["vmconfig-artifacts"][2]["kind"], "boot_file");
  EXPECT_EQ(data["vmconfig-artifacts"][2]["path"], "/vmconfig/artifacts/os-image/13.2/boot/vmlinuz-6.12");
  ASSERT_EQ(data["images"].size(), 2u);
  EXPECT_EQ(data["images"][0]["platform"], "index");
  EXPECT_EQ(data["images"][1]["path"], "/v2/mirror/registry.k8s.io/pause/manifests/sha256:" + std::string(64, '8'));
  EXPECT_EQ(catalogue.image_registries, std::vector<std::string>{"registry.k8s.io"});
  ASSERT_EQ(data["seeds"].size(), 1u);
  EXPECT_EQ(data["seeds"][0]["path"], "/seeds/snapshots/recommended/2026.11.1/recommended.netsy");
  // A single volume is volume 1 of 1.
  EXPECT_EQ(data["bundles"][0]["volumes"][0]["volume_index"], 1);
  auto bundles = mirror::render_catalogue_html(catalogue, {"bundles", "/catalogue/bundles/", "", ""});
  EXPECT_NE(bundles.find("<td>1 of 1</td>"), std::string::npos);
  EXPECT_EQ(bundles.find("2 of 1"), std::string::npos);
  EXPECT_EQ(data["bundles"][0]["volumes"][0]["imported"], 42);
}

cache::Artifact image_row(std::int64_t id, cache::ArtifactKind kind, const std::string& address, const std::string& version,
                          const std::string& platform, char digest) {
  cache::Artifact a = cache::image_row(kind, address, version, platform, "sha256:" + std::string(64, digest), 0, "");
  a.id = id;
  a.added_at = "2026-11-05T10:00:00Z";
  return a;
}

TEST(CatalogueTest, ImagesShowTheKeyThatSignedThemOrUnsigned) {
  auto source = sample_source();
  using cache::ArtifactKind;
  std::erase_if(source.artifacts, [](const cache::Artifact& a) {
    return a.kind == ArtifactKind::image_index || a.kind == ArtifactKind::image_manifest;
  });
  EXPECT_TRUE(mirror::build_catalogue(source).image_registries.empty());
  // A signed multi-arch image (its index, two manifests, the .sig of the index) and an
  // unsigned single-platform one, every manifest served.
  for (auto row : {image_row(20, ArtifactKind::image_index, "registry.k8s.io/pause", "3.10.2", "", '3'),
                   image_row(21, ArtifactKind::image_manifest, "registry.k8s.io/pause", "3.10.2", "linux_amd64", '4'),
                   image_row(22, ArtifactKind::image_manifest, "registry.k8s.io/pause", "3.10.2", "linux_arm64", '5'),
                   image_row(24, ArtifactKind::image_manifest, "ghcr.io/acme/api", "1.4", "linux_amd64", '8')}) {
    source.served["/v2/mirror/" + row.address + "/manifests/" + row.filename] = row.digest;
    source.artifacts.push_back(row);
  }
  source.artifacts.push_back(
      image_row(23, ArtifactKind::image_attachment, "registry.k8s.io/pause", "sha256-" + std::string(64, '3') + ".sig", "", '6'));
  source.provenance[23] = {{23, "", std::string(64, '6'), "", "sha256:" + std::string(64, '7'), "cosign signature of sha256:… verified",
                            "2026-11-05T10:00:00Z"}};
  auto catalogue = mirror::build_catalogue(source);
  EXPECT_EQ(catalogue.image_registries, (std::vector<std::string>{"ghcr.io", "registry.k8s.io"}));
  auto images = json::parse(mirror::render_catalogue_json(catalogue))["images"];
  // The index first, then the platform manifests by image; the attachment is no row of its own.
  ASSERT_EQ(images.size(), 4u) << images.dump();
  EXPECT_EQ(images[0]["image"], "registry.k8s.io/pause");
  EXPECT_EQ(images[0]["platform"], "index");
  EXPECT_EQ(images[0]["digest"], "sha256:" + std::string(64, '3'));
  EXPECT_EQ(images[0]["signed_by"], json::array({"sha256:" + std::string(64, '7')}));
  EXPECT_EQ(images[1]["image"], "ghcr.io/acme/api");
  EXPECT_EQ(images[1]["signed"], false);
  EXPECT_EQ(images[1]["signed_by"], json::array());
  // A platform manifest of a signed index is covered by the index's signature.
  for (int i : {2, 3}) {
    EXPECT_EQ(images[i]["image"], "registry.k8s.io/pause");
    EXPECT_EQ(images[i]["signed_by"], json::array({"sha256:" + std::string(64, '7')}));
  }
  auto html = mirror::render_catalogue_html(catalogue, {"", "/", "https://mirror.site:8443", ""});
  EXPECT_NE(html.find("unsigned"), std::string::npos);
  EXPECT_NE(html.find("sha256:" + std::string(64, '7')), std::string::npos);
  EXPECT_EQ(html.find("Needs images in this mirror"), std::string::npos);
}

// containerd gets one hosts.toml per registry whose images are served, each pointing at that
// registry's mirror root with override_path (docs/images.md); Docker Hub's API host is
// registry-1.docker.io, a port is written with '_' in the mirror path, and a plain HTTP mirror
// needs no CA. tests/mirror/containerd_test.cpp pulls with such a file through real containerd.
TEST(CatalogueTest, ContainerdHostsTomlPerRegistryWhoseImagesAreServed) {
  auto source = sample_source();
  using cache::ArtifactKind;
  std::erase_if(source.artifacts, [](const cache::Artifact& a) {
    return a.kind == ArtifactKind::image_index || a.kind == ArtifactKind::image_manifest;
  });
  auto empty = mirror::render_catalogue_html(mirror::build_catalogue(source), {"", "/", "https://mirror.site:8443", ""});
  EXPECT_NE(empty.find("Needs images in this mirror"), std::string::npos);
  EXPECT_NE(empty.find("[host.\"<span class=\"mirror-url\">https://mirror.site:8443</span>/v2/mirror/&lt;registry&gt;\"]"),
            std::string::npos)
      << empty;

  for (auto row : {image_row(20, ArtifactKind::image_manifest, "registry.k8s.io/pause", "3.10.2", "linux_amd64", '3'),
                   image_row(21, ArtifactKind::image_manifest, "docker.io/library/alpine", "3.20", "linux_amd64", '4'),
                   image_row(22, ArtifactKind::image_manifest, "10.0.0.5:5000/team/app", "1.0", "linux_amd64", '5')}) {
    source.served["/v2/" + net::mirror_repository(row.address) + "/manifests/" + row.filename] = row.digest;
    source.artifacts.push_back(row);
  }
  auto catalogue = mirror::build_catalogue(source);
  EXPECT_EQ(catalogue.image_registries, (std::vector<std::string>{"10.0.0.5:5000", "docker.io", "registry.k8s.io"}));
  auto html = mirror::render_catalogue_html(catalogue, {"", "/", "https://mirror.site:8443", ""});
  EXPECT_EQ(html.find("Needs images in this mirror"), std::string::npos);
  const std::string url = "<span class=\"mirror-url\">https://mirror.site:8443</span>";
  for (const auto& [registry, server, root] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"10.0.0.5:5000", "10.0.0.5:5000", "10.0.0.5_5000"},
           {"docker.io", "registry-1.docker.io", "docker.io"},
           {"registry.k8s.io", "registry.k8s.io", "registry.k8s.io"}}) {
    const std::string file = "<p>In <code>/etc/containerd/certs.d/" + registry +
                             "/hosts.toml</code>:</p>\n<pre><code>server = \"https://" + server + "\"\n\n[host.\"" + url +
                             "/v2/mirror/" + root +
                             "\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
                             "  ca = \"/etc/ssl/certs/podplane-mirror-ca.pem\"\n  override_path = true\n</code></pre>";
    EXPECT_NE(html.find(file), std::string::npos) << registry << "\n" << html;
  }
  EXPECT_EQ(html.find("https://docker.io"), std::string::npos);
  auto plain = mirror::render_catalogue_html(catalogue, {"", "/", "http://mirror.site:8080", ""});
  EXPECT_EQ(plain.find("podplane-mirror-ca.pem\"\n  override_path"), std::string::npos) << "a plain HTTP mirror has no CA";
  EXPECT_NE(plain.find("/v2/mirror/docker.io\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true"),
            std::string::npos);
}

// Helm gets a `helm pull oci://` line for each Helm chart served at its tag (an artifact whose
// config is Helm's; a Flux artifact is none): the mirror's host without scheme, the chart's mirror
// repository, its version (the tag, '_' read as '+'), and the CA, or --plain-http on a plain HTTP
// mirror. A mirror below a path gets a note instead: helm asks https://<host>/v2/ alone.
// OciArtifactsTest.TheCataloguesHelmPullLineFetchesTheStoredChartFromServeAlone runs the line.
TEST(CatalogueTest, HelmPullLinePerHelmChartServedAtATag) {
  auto source = sample_source();
  using cache::ArtifactKind;
  auto none = mirror::render_catalogue_html(mirror::build_catalogue(source), {"", "/", "https://mirror.site:8443", ""});
  EXPECT_NE(none.find("Needs Helm charts in this mirror"), std::string::npos);
  EXPECT_NE(none.find("helm pull oci://<span class=\"mirror-host\">mirror.site:8443</span>/mirror/&lt;registry&gt;/&lt;repository&gt; "
                      "--version &lt;version&gt; --ca-file /etc/ssl/certs/podplane-mirror-ca.pem\n"),
            std::string::npos)
      << none;

  const auto chart = image_row(30, ArtifactKind::image_manifest, "ghcr.io/acme/charts/webapp", "0.1.0_build.7", "unknown_unknown", 'a');
  const auto flux = image_row(31, ArtifactKind::image_manifest, "ghcr.io/acme/deploy", "v1", "unknown_unknown", 'b');
  const auto by_digest = image_row(32, ArtifactKind::image_manifest, "10.0.0.5:5000/charts/db", "sha256:" + std::string(64, 'c'),
                                   "unknown_unknown", 'c');
  for (const auto& row : {chart, flux, by_digest}) {
    source.artifacts.push_back(row);
    source.served["/v2/" + net::mirror_repository(row.address) + "/manifests/" + row.filename] = row.digest;
    source.served["/v2/" + net::mirror_repository(row.address) + "/manifests/" + row.version] = row.digest;
  }
  source.artifact_config_types[chart.filename] = "application/vnd.cncf.helm.config.v1+json";
  source.artifact_config_types[flux.filename] = "application/vnd.cncf.flux.config.v1+json";
  source.artifact_config_types[by_digest.filename] = "application/vnd.cncf.helm.config.v1+json";
  const auto catalogue = mirror::build_catalogue(source);
  ASSERT_EQ(catalogue.helm_charts.size(), 1u) << "the Flux artifact is no chart, and a chart stored by digest has no tag";
  EXPECT_EQ(catalogue.helm_charts[0].repository, "mirror/ghcr.io/acme/charts/webapp");
  EXPECT_EQ(catalogue.helm_charts[0].tag, "0.1.0_build.7");

  auto html = mirror::render_catalogue_html(catalogue, {"", "/", "https://mirror.site:8443", ""});
  EXPECT_EQ(html.find("Needs Helm charts in this mirror"), std::string::npos);
  EXPECT_NE(html.find("<pre><code>helm pull oci://<span class=\"mirror-host\">mirror.site:8443</span>/mirror/ghcr.io/acme/charts/webapp "
                      "--version 0.1.0+build.7 --ca-file /etc/ssl/certs/podplane-mirror-ca.pem\n</code></pre>"),
            std::string::npos)
      << html;
  auto plain = mirror::render_catalogue_html(catalogue, {"", "/", "http://mirror.site:8080", ""});
  EXPECT_NE(plain.find("/mirror/ghcr.io/acme/charts/webapp --version 0.1.0+build.7 --plain-http\n"), std::string::npos) << plain;
  auto below_a_path = mirror::render_catalogue_html(catalogue, {"", "/", "https://proxy.site/podplane", ""});
  EXPECT_EQ(below_a_path.find("helm pull"), std::string::npos);
  EXPECT_NE(below_a_path.find("Helm reaches an OCI registry at the root of its host only"), std::string::npos);

  // Not served at its tag: no line.
  source.served.erase("/v2/mirror/ghcr.io/acme/charts/webapp/manifests/0.1.0_build.7");
  EXPECT_TRUE(mirror::build_catalogue(source).helm_charts.empty());
}

TEST(CatalogueTest, CosignAttestationsAndSbomsAreRowsOfTheirImageNotSignatures) {
  auto source = sample_source();
  using cache::ArtifactKind;
  std::erase_if(source.artifacts, [](const cache::Artifact& a) {
    return a.kind == ArtifactKind::image_index || a.kind == ArtifactKind::image_manifest;
  });
  const std::string index = "sha256:" + std::string(64, '3');
  const std::string hex = std::string(64, '3');
  for (auto row : {image_row(20, ArtifactKind::image_index, "registry.k8s.io/pause", "3.10.2", "", '3'),
                   image_row(23, ArtifactKind::image_attachment, "registry.k8s.io/pause", "sha256-" + hex + ".sig", "", '6'),
                   image_row(25, ArtifactKind::image_attachment, "registry.k8s.io/pause", "sha256-" + hex + ".att", "", '8'),
                   image_row(26, ArtifactKind::image_attachment, "registry.k8s.io/pause", "sha256-" + hex + ".sbom", "", '9')}) {
    source.served["/v2/mirror/" + row.address + "/manifests/" + row.filename] = row.digest;
    source.artifacts.push_back(row);
  }
  source.provenance[23] = {{23, "", std::string(64, '6'), "", "sha256:" + std::string(64, '7'), "cosign signature of sha256:… verified",
                            "2026-11-05T10:00:00Z"}};
  auto images = json::parse(mirror::render_catalogue_json(mirror::build_catalogue(source)))["images"];
  // The index (signed by the .sig, which is no row), then the attestation and the SBOM.
  ASSERT_EQ(images.size(), 3u) << images.dump();
  EXPECT_EQ(images[0]["platform"], "index");
  EXPECT_EQ(images[0]["signed_by"], json::array({"sha256:" + std::string(64, '7')}));
  std::map<std::string, json> attached;
  for (int i : {1, 2}) attached[images[i]["platform"].get<std::string>()] = images[i];
  ASSERT_EQ(attached.size(), 2u) << images.dump();
  EXPECT_EQ(attached["attestation"]["tag"], "sha256-" + hex + ".att");
  EXPECT_EQ(attached["sbom"]["tag"], "sha256-" + hex + ".sbom");
  for (const auto& [kind, row] : attached) {
    EXPECT_EQ(row["attached_to"], index) << kind;
    EXPECT_EQ(row["signed"], false) << kind << ": an attachment is not verified, whatever signs its image";
  }
}

TEST(CatalogueTest, HtmlEscapeCoversTextAndAttributeContexts) {
  EXPECT_EQ(mirror::html_escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(mirror::html_escape("\" onmouseover='x' &amp;"), "&quot; onmouseover=&#39;x&#39; &amp;amp;");
  EXPECT_EQ(mirror::html_escape(std::string("a\0b\x1b" "c\n\td", 8)), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\n\td");
  EXPECT_EQ(mirror::html_escape("plain ünïcode"), "plain ünïcode");
}

TEST(CatalogueTest, HostileStringsFromTheIndexRenderAsText) {
  std::string hostile = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>";
  auto source = sample_source(hostile);
  source.artifacts[0].upstream_url = "javascript:alert(3)";
  source.modules[0].upstream_url = "https://x/\"><script>alert(4)</script>";
  auto catalogue = mirror::build_catalogue(source);
  for (const std::string section : {"", "providers", "bundles", "modules"}) {
    std::string path = section.empty() ? "/" : "/catalogue/" + section + "/";
    auto html = mirror::render_catalogue_html(catalogue, {section, path, "https://mirror.site:8443", hostile});
    EXPECT_EQ(html.find("<script>alert"), std::string::npos) << path;
    EXPECT_EQ(html.find("<img"), std::string::npos) << path;
    EXPECT_EQ(html.find("href=\"javascript"), std::string::npos) << path;
    // Exactly our own script element.
    std::regex script("<script");
    EXPECT_EQ(std::distance(std::sregex_iterator(html.begin(), html.end(), script), std::sregex_iterator()), 1) << path;
  }
  auto all = mirror::render_catalogue_html(catalogue, {"", "/", "https://mirror.site:8443", ""});
  EXPECT_NE(all.find("HashiCorp Security &lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img src=x"), std::string::npos);
  // The filter box echoes the query in an attribute, escaped.
  auto filtered = mirror::render_catalogue_html(catalogue, {"", "/", "", "\"><script>alert(5)</script>"});
  EXPECT_NE(filtered.find("value=\"&quot;&gt;&lt;script&gt;alert(5)&lt;/script&gt;\""), std::string::npos);
}

std::size_t provider_rows(const std::string& html) {
  auto start = html.find("id=\"providers\"");
  auto end = html.find("</section>", start);
  auto part = html.substr(start, end - start);
  std::size_t rows = 0;
  for (auto at = part.find("<tr>\n"); at != std::string::npos; at = part.find("<tr>\n", at + 1)) ++rows;
  return rows;
}

TEST(CatalogueTest, QueryKeepsRowsMatchingEveryTerm) {
  auto catalogue = mirror::build_catalogue(sample_source());
  auto page = [&](const std::string& q) { return mirror::render_catalogue_html(catalogue, {"providers", "/catalogue/providers/", "", q}); };
  EXPECT_EQ(provider_rows(page("")), 4u);
  EXPECT_EQ(provider_rows(page("arm64")), 2u);            // aws linux_arm64 and random darwin_arm64
  EXPECT_EQ(provider_rows(page("ARM64 linux")), 1u);     // every term, case-insensitive
  EXPECT_EQ(provider_rows(page("aws 6.2.0")), 2u);
  EXPECT_EQ(provider_rows(page("nothing-like-this")), 0u);
  EXPECT_NE(page("arm64").find("2 of 4 rows"), std::string::npos);
}

TEST(CatalogueTest, SnippetsNameTheMirrorUrlAndEveryOriginHost) {
  auto catalogue = mirror::build_catalogue(sample_source());
  auto html = mirror::render_catalogue_html(catalogue, {"", "/", "https://mirror.site:8443", ""});
  EXPECT_NE(html.find("\"providers.v1\" = \"<span class=\"mirror-url\">https://mirror.site:8443</span>/v1/providers/registry.terraform.io/\""),
            std::string::npos);
  EXPECT_NE(html.find("url = \"<span class=\"mirror-url\">https://mirror.site:8443</span>/v1/mirror/\""), std::string::npos);
  // One variable per client: curl reads CURL_CA_BUNDLE, not SSL_CERT_FILE (TrustSnippet.* runs each).
  EXPECT_NE(html.find("<pre><code>export SSL_CERT_FILE=/etc/ssl/certs/podplane-mirror-ca.pem\n"
                      "export CURL_CA_BUNDLE=/etc/ssl/certs/podplane-mirror-ca.pem\n</code></pre>"),
            std::string::npos);
  EXPECT_NE(html.find("\"deps_mirror_url\": \"<span class=\"mirror-url\">https://mirror.site:8443</span>\""), std::string::npos);
  // arm64's bytes lost the plain path to amd64's: the advice names the arch base its VMs use.
  EXPECT_NE(html.find("share Podplane's plain path with another arch's bytes: the stacks give these VMs "
                      "<code>&lt;deps_mirror_url&gt;/arch/arm64</code> as their base"),
            std::string::npos);
  EXPECT_EQ(html.find("fetch them from upstream"), std::string::npos);
  EXPECT_EQ(html.find("Needs images in this mirror"), std::string::npos) << "it serves an image";
  auto without_images = sample_source();
  std::erase_if(without_images.artifacts, [](const cache::Artifact& a) { return a.kind == cache::ArtifactKind::image_index ||
                                                                                a.kind == cache::ArtifactKind::image_manifest; });
  EXPECT_NE(mirror::render_catalogue_html(mirror::build_catalogue(without_images), {"", "/", "", ""}).find("Needs images in this mirror"),
            std::string::npos);
  // Links stay relative to where the page is.
  EXPECT_NE(html.find("href=\"v1/mirror/registry.opentofu.org/hashicorp/aws/terraform-provider-aws_6.2.0_linux_amd64.zip\""),
            std::string::npos);
  auto nested = mirror::render_catalogue_html(catalogue, {"providers", "/catalogue/providers/", "", ""});
  EXPECT_NE(nested.find("href=\"../../v1/mirror/registry.opentofu.org/hashicorp/aws/"), std::string::npos);
  EXPECT_NE(nested.find("href=\"../../catalogue.json\""), std::string::npos);
}

TEST(CatalogueTest, MirrorUrlFromHostRefusesAnythingButHostAndPort) {
  EXPECT_EQ(mirror::mirror_url_from_host("https", "mirror.site:8443"), "https://mirror.site:8443");
  EXPECT_EQ(mirror::mirror_url_from_host("http", "127.0.0.1:8080"), "http://127.0.0.1:8080");
  EXPECT_EQ(mirror::mirror_url_from_host("https", "[::1]:8443"), "https://[::1]:8443");
  EXPECT_EQ(mirror::mirror_url_from_host("https", "mirror"), "https://mirror");
  for (const std::string& bad : std::vector<std::string>{"", "evil\"><script>", "a b", "host:99999", "host:", "[::1", "[zz]:1", "-x", "h/p",
                                "user@host", "host:80:80", std::string(400, 'a')})
    EXPECT_EQ(mirror::mirror_url_from_host("https", bad), "") << bad;
  EXPECT_EQ(mirror::checked_public_url("https://mirror.site:8443/"), "https://mirror.site:8443");
  EXPECT_EQ(mirror::checked_public_url("http://10.0.0.1/deps"), "http://10.0.0.1/deps");
  for (const std::string bad : {"mirror.site", "ftp://x", "https://", "https://a\"b", "https://x/<p>", "https://x y"})
    EXPECT_THROW((void)mirror::checked_public_url(bad), UsageError) << bad;
}

// ---------------------------------------------------------------------------------------------
// mirror serve and export over a real store.

class CatalogueServeTest : public ::testing::Test {
 protected:
  void SetUp() override { contents_ = fill_store(temp_ / "deps", temp_ / "work", 4096, 64 * 1024); }
  TempDir temp_;
  StoreContents contents_;
};

TEST_F(CatalogueServeTest, ServeAnswersThePagesFromTheSiteMapAndReloadsThemOnSighup) {
  MirrorServe serve(temp_ / "deps", {"--listen", "127.0.0.1:0", "--plain-http"}, temp_ / "serve.err");
  ASSERT_TRUE(serve.started()) << serve.log();
  CurlSession http;
  auto root = http.fetch(serve.url() + "/");
  ASSERT_EQ(root.status, 200) << root.body;
  EXPECT_EQ(root.header("content-type"), "text/html; charset=utf-8");
  for (const auto& provider : contents_.providers)
    for (const auto& [platform, digest] : provider.zip_digest) {
      EXPECT_NE(root.body.find(provider.version), std::string::npos) << provider.version;
      EXPECT_NE(root.body.find(provider.zip_h1.at(platform)), std::string::npos) << platform;
    }
  // The fixture key's user id, found through the keys document of the release.
  EXPECT_NE(root.body.find("Podplane Test Signer &lt;test@podplane.invalid&gt;"), std::string::npos);
  // Snippets name the URL the client used.
  EXPECT_NE(root.body.find("<span class=\"mirror-url\">" + serve.url() + "</span>/v1/mirror/"), std::string::npos);

  // A hostile Host header never reaches the page: the listen address is used instead.
  HttpRequest hostile_host;
  hostile_host.headers = {"Host: x\"><script>alert(1)</script>"};
  auto hostile = http.fetch(serve.url() + "/", hostile_host);
  EXPECT_EQ(hostile.status, 200);
  EXPECT_EQ(hostile.body.find("<script>alert"), std::string::npos);
  EXPECT_NE(hostile.body.find("<span class=\"mirror-url\">" + serve.url() + "</span>"), std::string::npos);
  HttpRequest named_host;
  named_host.headers = {"Host: mirror.site.internal:8443"};
  auto named = http.fetch(serve.url() + "/", named_host);
  EXPECT_NE(named.body.find("<span class=\"mirror-url\">http://mirror.site.internal:8443</span>"), std::string::npos);

  auto filtered = http.fetch(serve.url() + "/catalogue/providers/?q=linux_arm64");
  ASSERT_EQ(filtered.status, 200);
  EXPECT_NE(filtered.body.find("1 of 4 rows"), std::string::npos);
  EXPECT_EQ(http.fetch(serve.url() + "/catalogue/").status, 200);
  EXPECT_EQ(http.fetch(serve.url() + "/catalogue/vmconfig-artifacts/").status, 200);
  EXPECT_EQ(http.fetch(serve.url() + "/catalogue/nothing/").status, 404);

  auto data = http.fetch(serve.url() + "/catalogue.json");
  ASSERT_EQ(data.status, 200);
  EXPECT_EQ(data.header("content-type"), "application/json");
  auto document = json::parse(data.body);
  EXPECT_EQ(document["format"], "podplane-catalogue/1");
  EXPECT_EQ(document["providers"].size(), 2u);

  // A new release in the index appears after SIGHUP, not before.
  {
    auto store = cache::Store::open(temp_ / "deps");
    fs::path zip = make_provider_zip(temp_ / "work", "null", "3.3.0", "linux_amd64", 100);
    cache::Artifact row = podplane::test::provider_package_row(store.add_file(zip), "linux_amd64", podplane::test::kNullProvider, "3.3.0");
    row.filename = zip.filename().string();
    row.size = static_cast<std::int64_t>(fs::file_size(zip));
    row.h1 = lockfile::h1_hash_of_zip(zip);
    row.trust = cache::Trust::unverified;
    (void)store.add_artifact(row);
  }
  EXPECT_EQ(json::parse(http.fetch(serve.url() + "/catalogue.json").body)["providers"][0]["versions"].size(), 2u);
  ::kill(serve.pid(), SIGHUP);
  bool reloaded = false;
  for (int i = 0; i < 200 && !reloaded; ++i) {
    auto versions = json::parse(http.fetch(serve.url() + "/catalogue.json").body)["providers"][0]["versions"];
    reloaded = versions.size() == 3 && versions[0]["version"] == "3.3.0";
    if (!reloaded) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(reloaded) << serve.log();
  EXPECT_NE(http.fetch(serve.url() + "/?q=3.3.0").body.find("3.3.0"), std::string::npos);
  EXPECT_EQ(serve.stop(), 0);
}

TEST_F(CatalogueServeTest, StoreSizeShowsTheFiguresOfDepsDu) {
  podplane::test::ProcessOptions env;
  env.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
  auto du = podplane::test::run_podplane({"deps", "du", "--json"}, env);
  ASSERT_EQ(du.exit_code, 0) << du.err;
  const auto usage = json::parse(du.out);
  ASSERT_FALSE(usage["by_family"].empty()) << du.out;

  MirrorServe serve(temp_ / "deps", {"--listen", "127.0.0.1:0", "--plain-http"}, temp_ / "serve.err");
  ASSERT_TRUE(serve.started()) << serve.log();
  CurlSession http;
  auto data = http.fetch(serve.url() + "/catalogue.json");
  ASSERT_EQ(data.status, 200);
  const auto shown = json::parse(data.body)["store-usage"];
  EXPECT_EQ(shown["objects"], usage["objects"]) << shown.dump(2);
  EXPECT_EQ(shown["object_bytes"], usage["object_bytes"]);
  EXPECT_EQ(shown["by_family"], usage["by_family"]) << shown.dump(2) << "\n" << usage["by_family"].dump(2);
  EXPECT_FALSE(shown.contains("error"));

  // The page's table: a row per kind, with du's counts.
  auto page = http.fetch(serve.url() + "/catalogue/store-usage/");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find(std::to_string(usage["objects"].get<std::size_t>()) + " objects, "), std::string::npos);
  for (const auto& [family, totals] : usage["by_family"].items()) {
    EXPECT_NE(page.body.find("<code>" + family + "</code>"), std::string::npos) << family;
    EXPECT_NE(page.body.find("<td>" + std::to_string(totals["rows"].get<std::size_t>()) + "</td>"), std::string::npos) << family;
  }
  EXPECT_EQ(serve.stop(), 0);
}

TEST_F(CatalogueServeTest, ExportWritesTheSamePagesAsStaticFiles) {
  fs::path out = temp_ / "export";
  podplane::test::ProcessOptions env;
  env.env["PODPLANE_DEPS_CACHE_DIR"] = (temp_ / "deps").string();
  auto exported = podplane::test::run_podplane({"mirror", "export", out.string(), "--public-url", "https://mirror.site.internal:8443/"}, env);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  auto index = read_file(out / "index.html");
  EXPECT_NE(index.find("<span class=\"mirror-url\">https://mirror.site.internal:8443</span>/v1/mirror/"), std::string::npos);
  EXPECT_NE(index.find("Podplane Test Signer"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "catalogue" / "index.html"));
  EXPECT_TRUE(fs::exists(out / "catalogue" / "providers" / "index.html"));
  auto document = json::parse(read_file(out / "catalogue.json"));
  EXPECT_EQ(document["providers"][0]["address"], "registry.opentofu.org/hashicorp/null");

  // Without --public-url the page leaves the URL to its script (the page's own origin).
  fs::path plain = temp_ / "export-plain";
  ASSERT_EQ(podplane::test::run_podplane({"mirror", "export", plain.string()}, env).exit_code, 0);
  EXPECT_NE(read_file(plain / "index.html").find("data-mirror-url=\"\""), std::string::npos);

  auto refused = podplane::test::run_podplane({"mirror", "export", (temp_ / "x").string(), "--public-url", "https://a\"b/"}, env);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--public-url"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace podplane::serve_test
