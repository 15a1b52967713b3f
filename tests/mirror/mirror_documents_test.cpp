// The network mirror documents (index.json, <version>.json) that `mirror serve` answers and
// those the store's views hold come from one function (cache::provider_mirror_documents):
// the same bytes for the same rows, whatever the rows hold.
#include <gtest/gtest.h>

#include "cache/layout.hpp"
#include "cache/provider_documents.hpp"
#include "cache/views.hpp"
#include "mirror/serve_site.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

TEST(MirrorDocuments, ServeAndViewsPublishTheSameBytes) {
  podplane::test::TempDir dir;
  const fs::path root = dir / "deps";
  (void)fill_store(root, dir / "work", 512, 1024);
  auto store = cache::Store::open(root);
  // A package row without an h1 (its zh stands alone), in a version of its own.
  fs::path zip = make_provider_zip(dir / "work", "null", "3.2.5", "linux_amd64", 256);
  cache::Artifact bare = podplane::test::provider_package_row(store.add_file(zip), "linux_amd64", podplane::test::kNullProvider, "3.2.5");
  bare.size = static_cast<std::int64_t>(fs::file_size(zip));
  bare.trust = cache::Trust::unverified;
  (void)store.add_artifact(bare);

  (void)cache::rebuild_views(store);
  auto site = mirror::MirrorSite::build(store);
  const fs::path providers = cache::layout::providers_dir(root);
  const std::string served = std::string(mirror::site_paths::network_mirror);
  int views = 0;
  for (const auto& entry : fs::recursive_directory_iterator(providers)) {
    if (entry.path().extension() != ".json") continue;
    std::string path = served + entry.path().lexically_relative(providers).generic_string();
    const auto* resource = site.find(path);
    ASSERT_NE(resource, nullptr) << path << " is in the views but not served";
    EXPECT_EQ(resource->body, podplane::test::read_file(entry.path())) << path;
    ++views;
  }
  int documents = 0;
  for (const auto& [path, resource] : site.resources()) {
    if (path.rfind(served, 0) != 0 || resource.kind != mirror::ResourceKind::document) continue;
    EXPECT_TRUE(fs::exists(providers / path.substr(served.size()))) << path << " is served but not in the views";
    ++documents;
  }
  // null (index, 3.2.3, 3.2.4, 3.2.5) and random (index, 3.6.0).
  EXPECT_EQ(views, 6);
  EXPECT_EQ(documents, 6);
  EXPECT_EQ(site.find(served + "registry.opentofu.org/hashicorp/null/3.2.5.json")->body,
            "{\n  \"archives\": {\n    \"linux_amd64\": {\n      \"hashes\": [\n        \"zh:" + bare.digest +
                "\"\n      ],\n      \"url\": \"" + bare.filename + "\"\n    }\n  }\n}");
}

}  // namespace
}  // namespace podplane::serve_test
