// Every row of the table of kinds (cache/kinds.hpp) goes through the stages of mirror/ the table
// gives it, with a stored example of each (tests/support/every_kind.hpp): mirror serve answers
// each served kind with its bytes, mirror export writes them, mirror push sends each pushed one,
// and the catalogue lists each listed one with its signer. A kind whose row names a stage that
// then leaves it out fails here; so does one served, pushed or listed against its row's word.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "base/digest.hpp"
#include "cache/kinds.hpp"
#include "mirror/catalogue.hpp"
#include "mirror/export.hpp"
#include "mirror/push.hpp"
#include "mirror/serve_site.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/gpg_keys.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::serve_test {
namespace {

using ::testing::HasSubstr;
using podplane::test::TempDir;

std::string label(const cache::KindInfo& kind) {
  return std::string(kind.name) + (kind.address.empty() ? "" : " @" + std::string(kind.address));
}

struct EveryKindStore {
  TempDir dir;
  fs::path root = dir / "deps";
  test::EveryKind every = [this] {
    auto store = cache::Store::open(root);
    return test::add_every_kind(store, dir / "work");
  }();
};

// Where the site serves a row: the paths of objects holding its digest, and the documents whose
// bytes name it.
std::vector<std::string> objects_at(const mirror::MirrorSite& site, const std::string& digest) {
  std::vector<std::string> paths;
  for (const auto& [path, resource] : site.resources())
    if (resource.kind == mirror::ResourceKind::object && resource.digest == digest) paths.push_back(path);
  return paths;
}

TEST(EveryKind, MirrorServeAnswersEachServedKindWithItsBytesAndNoOther) {
  EveryKindStore s;
  auto store = cache::Store::open(s.root, cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  EXPECT_THAT(site.skipped(), ::testing::IsEmpty());
  for (const auto& kind : cache::kinds()) {
    if (!s.every.has(kind)) continue;
    const auto& row = s.every.of(kind);
    const auto paths = objects_at(site, row.digest);
    switch (kind.served) {
      case cache::Served::unset: ADD_FAILURE() << label(kind) << ": served undecided"; break;
      case cache::Served::none:
      case cache::Served::module_package: EXPECT_THAT(paths, ::testing::IsEmpty()) << label(kind); break;
      case cache::Served::provider_keys_inline: {
        // Not a file: its keys are in the registry's download answers.
        EXPECT_THAT(paths, ::testing::IsEmpty()) << label(kind);
        const auto* download = site.find("/v1/providers/registry.opentofu.org/hashicorp/null/3.2.4/download/linux/amd64");
        ASSERT_NE(download, nullptr) << label(kind);
        EXPECT_THAT(download->body, HasSubstr(test::gpg_keys().fingerprint("ed25519").substr(24))) << label(kind);
        break;
      }
      case cache::Served::provider_package:
      case cache::Served::provider_shasums:
      case cache::Served::provider_signature:
      case cache::Served::vmconfig_manifest:
      case cache::Served::vmconfig_file:
      case cache::Served::seeds_manifest:
      case cache::Served::seed_snapshot:
      case cache::Served::tool_release_file:
      case cache::Served::oci_index:
      case cache::Served::oci_manifest:
      case cache::Served::oci_attachment:
      case cache::Served::oci_blob: EXPECT_THAT(paths, ::testing::Not(::testing::IsEmpty())) << label(kind); break;
      case cache::Served::git_repository: {
        // Not a file: the repository of its address, answered by git http-backend with its commit.
        EXPECT_THAT(paths, ::testing::IsEmpty()) << label(kind);
        EXPECT_THAT(site.git()->repositories(), ::testing::Contains(row.address)) << label(kind);
        mirror::GitRequest request;
        request.method = "GET";
        request.path = row.address + ".git/info/refs";
        request.query = "service=git-upload-pack";
        const auto answer = site.git()->answer(request);
        EXPECT_EQ(answer.status, 200) << label(kind) << answer.body;
        EXPECT_THAT(answer.body, HasSubstr(row.filename.substr(0, row.filename.find('.')) + " refs/tags/" + row.version))
            << label(kind);
        break;
      }
    }
    const bool api = std::any_of(paths.begin(), paths.end(), [](const std::string& p) { return p.rfind("/v2/", 0) == 0; });
    EXPECT_EQ(api, kind.served == cache::Served::oci_index || kind.served == cache::Served::oci_manifest ||
                       kind.served == cache::Served::oci_attachment || kind.served == cache::Served::oci_blob)
        << label(kind);
  }
  EXPECT_NE(site.find("/v1/modules/" + s.every.module.address + "/" + s.every.module.version + "/package.tar.gz"), nullptr);
}

TEST(EveryKind, MirrorExportWritesEachServedKind) {
  EveryKindStore s;
  TempDir out;
  (void)mirror::export_site(s.root, out / "site");
  std::map<std::string, std::string> files;  // sha256 of every exported file → its path
  for (auto it = fs::recursive_directory_iterator(out / "site"); it != fs::recursive_directory_iterator(); ++it)
    if (it->is_regular_file()) files[file_digest_hex(it->path())] = it->path().string();
  for (const auto& kind : cache::kinds()) {
    if (!s.every.has(kind)) continue;
    const auto& row = s.every.of(kind);
    const bool exported = files.count(row.digest) != 0;
    switch (kind.served) {
      case cache::Served::unset: ADD_FAILURE() << label(kind) << ": served undecided"; break;
      case cache::Served::none:
      case cache::Served::module_package:
      case cache::Served::provider_keys_inline: EXPECT_FALSE(exported) << label(kind); break;
      case cache::Served::oci_index:
      case cache::Served::oci_manifest:
      case cache::Served::oci_attachment:
      case cache::Served::oci_blob:
        ASSERT_TRUE(exported) << label(kind);
        EXPECT_THAT(files[row.digest], HasSubstr("/registry/mirror/registry.example.invalid/team/app/blobs/sha256/")) << label(kind);
        break;
      case cache::Served::git_repository:
        // A bare repository of its address, which holds its objects (the pack as stored).
        EXPECT_TRUE(fs::is_directory(out / "site" / "git" / (row.address + ".git") / "objects")) << label(kind);
        EXPECT_TRUE(fs::exists(out / "site" / "git" / (row.address + ".git") / "info" / "refs")) << label(kind);
        break;
      default: EXPECT_TRUE(exported) << label(kind); break;
    }
  }
}

TEST(EveryKind, MirrorPushSendsEachPushedKindAndNoOther) {
  ASSERT_TRUE(podplane::test::have_program("docker-registry")) << "apt-get install docker-registry";
  EveryKindStore s;
  TempDir data;
  DockerRegistry registry(data / "registry");
  mirror::PushOptions options;
  options.transport = mirror::Transport::plain_http;
  auto stats = mirror::push_to_oci(s.root, "oci://" + registry.host() + "/site", options, nullptr);
  for (const auto& kind : cache::kinds()) {
    if (!s.every.has(kind)) continue;
    const auto& row = s.every.of(kind);
    const bool pushed = fs::exists(registry.blob_file("sha256:" + row.digest));
    EXPECT_NE(kind.pushed, cache::Pushed::unset) << label(kind);
    EXPECT_EQ(pushed, kind.pushed != cache::Pushed::none) << label(kind);
  }
  EXPECT_THAT(stats.references, ::testing::Contains(HasSubstr("/site/modules/" + s.every.module.address + ":1.0.0")));
  EXPECT_THAT(stats.references, ::testing::Contains(HasSubstr("/site/providers/registry.opentofu.org/hashicorp/null:3.2.4")));
  EXPECT_THAT(stats.references, ::testing::Contains(HasSubstr("/site/mirror/registry.example.invalid/team/app:1.0")));
}

TEST(EveryKind, TheCatalogueListsEachListedKindWithItsSigner) {
  EveryKindStore s;
  auto store = cache::Store::open(s.root, cache::Store::Access::read_only);
  auto site = mirror::MirrorSite::build(store);
  const auto& catalogue = *site.catalogue();
  auto data = nlohmann::json::parse(mirror::render_catalogue_json(catalogue));
  auto section_of = [&](const std::string& id) { return data.contains(id) ? data[id].dump() : std::string(); };
  const std::string all = data.dump();
  for (const auto& kind : cache::kinds()) {
    if (!s.every.has(kind)) continue;
    const auto& row = s.every.of(kind);
    std::string id;
    switch (kind.listed) {
      case cache::Listed::unset: ADD_FAILURE() << label(kind) << ": listed undecided"; continue;
      case cache::Listed::not_listed: EXPECT_THAT(all, ::testing::Not(HasSubstr(row.digest))) << label(kind); continue;
      case cache::Listed::signer_names:
        EXPECT_THAT(section_of("providers"), HasSubstr("Test ed25519 <ed25519@test.invalid>")) << label(kind);
        continue;
      case cache::Listed::modules: id = "modules"; break;
      case cache::Listed::providers: id = "providers"; break;
      case cache::Listed::vmconfig_manifests: id = "vmconfig-manifests"; break;
      case cache::Listed::vmconfig_artifacts:
      case cache::Listed::vmconfig_boot_files: id = "vmconfig-artifacts"; break;
      case cache::Listed::image_indexes:
      case cache::Listed::image_manifests:
      case cache::Listed::image_attachments: id = "images"; break;
      case cache::Listed::seeds: id = "seeds"; break;
      case cache::Listed::engines: id = "tools"; break;
      case cache::Listed::podplane_releases: id = "podplane"; break;
      case cache::Listed::git_repositories: id = "git"; break;
    }
    if (kind.listed == cache::Listed::image_attachments) {
      // A cosign signature is not a row: it is the Signature of the image it signs.
      EXPECT_THAT(section_of(id), ::testing::Not(HasSubstr(row.digest))) << label(kind);
      EXPECT_THAT(section_of(id), HasSubstr("sha256:" + sha256_hex("a test cosign key"))) << label(kind);
      continue;
    }
    EXPECT_THAT(section_of(id), HasSubstr(row.digest)) << label(kind) << " in section " << id;
    switch (kind.signer) {
      case cache::Signer::openpgp_keys_document:
      case cache::Signer::pinned_release_key:
        EXPECT_THAT(section_of(id), HasSubstr(test::gpg_keys().fingerprint("ed25519"))) << label(kind);
        break;
      case cache::Signer::cosign_key:
      case cache::Signer::cosign_attachment:
        EXPECT_THAT(section_of(id), HasSubstr("sha256:" + sha256_hex("a test cosign key"))) << label(kind);
        break;
      case cache::Signer::unset: ADD_FAILURE() << label(kind) << ": signer undecided"; break;
      case cache::Signer::none:
      case cache::Signer::bundle_signature: break;
    }
  }
  EXPECT_THAT(section_of("modules"), HasSubstr(s.every.module.h1));
}

}  // namespace
}  // namespace podplane::serve_test
