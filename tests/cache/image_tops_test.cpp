// The top of an image (cache/image_tops.hpp): what its tag names, an index or a manifest stored
// without one; what a cosign signature signs.
#include <gtest/gtest.h>

#include <vector>

#include "cache/image_tops.hpp"
#include "cache/row_rules.hpp"
#include "cache/store.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::cache {
namespace {

constexpr const char* kApp = "registry.example.invalid/team/app";

std::string digest_of(char c) { return "sha256:" + std::string(64, c); }

Artifact image(ArtifactKind kind, const std::string& version, const std::string& digest, const std::string& platform = "") {
  return image_row(kind, kApp, version, platform, digest, 0, "");
}

TEST(ImageTops, AnIndexIsTheTopOfItsTagAndAManifestOnlyWhereItsTagHasNone) {
  const Artifact index = image(ArtifactKind::image_index, "1.0", digest_of('a'));
  const Artifact below = image(ArtifactKind::image_manifest, "1.0", digest_of('b'), "linux_amd64");
  const Artifact alone = image(ArtifactKind::image_manifest, "2.0", digest_of('c'), "linux_amd64");
  const Artifact blob = image(ArtifactKind::image_blob, digest_of('b'), digest_of('d'));
  const Artifact signature = image(ArtifactKind::image_attachment, image_signature_tag(digest_of('a')), digest_of('e'));
  const ImageTops tops({index, below, alone, blob, signature});

  EXPECT_TRUE(tops.is_top(index));
  EXPECT_FALSE(tops.is_top(below));
  EXPECT_TRUE(tops.is_top(alone));
  EXPECT_FALSE(tops.is_top(blob));
  EXPECT_FALSE(tops.is_top(signature));
  EXPECT_FALSE(tops.is_top(test::provider_package_row(std::string(64, 'f'))));

  EXPECT_EQ(tops.top_digest(index), digest_of('a'));
  EXPECT_EQ(tops.top_digest(below), digest_of('a'));
  EXPECT_EQ(tops.top_digest(alone), digest_of('c'));
  // The same repository's other tag, or another repository's same tag, is another image.
  EXPECT_EQ(tops.top_digest(image(ArtifactKind::image_manifest, "1.1", digest_of('9'))), digest_of('9'));
  Artifact elsewhere = below;
  elsewhere.address = "registry.example.invalid/team/other";
  EXPECT_TRUE(tops.is_top(elsewhere));
}

// Rows being imported are judged with the indexes the store already holds for their tags.
TEST(ImageTops, AStoredIndexMakesItsTagsManifestNoTop) {
  test::TempDir dir;
  auto store = Store::open(dir / "store");
  const std::string bytes = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]})";
  (void)store.add_artifact(image(ArtifactKind::image_index, "1.0", "sha256:" + store.add_bytes(bytes)));
  const std::vector<Artifact> rows{image(ArtifactKind::image_manifest, "1.0", digest_of('b'), "linux_amd64"),
                                   image(ArtifactKind::image_manifest, "2.0", digest_of('c'), "linux_amd64")};

  const ImageTops with_store(rows, &store);
  EXPECT_FALSE(with_store.is_top(rows[0]));
  EXPECT_TRUE(with_store.is_top(rows[1]));
  EXPECT_TRUE(ImageTops(rows).is_top(rows[0]));
}

}  // namespace
}  // namespace podplane::cache
