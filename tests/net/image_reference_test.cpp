// Image references as users write them (net/oci_reference.hpp), and the mirror names `mirror
// serve` publishes them under.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "net/oci_reference.hpp"

namespace podplane::net {
namespace {

using ::testing::HasSubstr;

TEST(ImageReference, ParsesAndNormalises) {
  auto pause = ImageReference::parse("registry.k8s.io/pause:3.10.2");
  EXPECT_EQ(pause.registry, "registry.k8s.io");
  EXPECT_EQ(pause.repository, "pause");
  EXPECT_EQ(pause.tag, "3.10.2");
  EXPECT_EQ(ImageReference::parse("nginx").address(), "docker.io/library/nginx");
  EXPECT_EQ(ImageReference::parse("nginx").tag, "latest");
  EXPECT_EQ(ImageReference::parse("bitnami/redis:7").address(), "docker.io/bitnami/redis");
  auto pinned = ImageReference::parse("127.0.0.1:5000/a/b@sha256:" + std::string(64, 'c'));
  EXPECT_EQ(pinned.registry, "127.0.0.1:5000");
  EXPECT_EQ(pinned.repository, "a/b");
  EXPECT_TRUE(pinned.tag.empty());
  EXPECT_EQ(pinned.digest, "sha256:" + std::string(64, 'c'));
  EXPECT_EQ(ImageReference::parse("Index.Docker.IO/library/x:1").address(), "docker.io/library/x");
}

TEST(ImageReference, RefusesWhatIsNotAReference) {
  for (const std::string& bad : std::vector<std::string>{"", "registry.k8s.io/Pause:1", "x:bad tag", "x@sha256:abc", "x@md5:" + std::string(32, 'a'),
                                "registry.k8s.io/../x", "a//b"}) {
    try {
      (void)ImageReference::parse(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& error) {
      EXPECT_THAT(error.what(), HasSubstr("image reference"));
    }
  }
}

TEST(ImageReference, MirrorNamesRoundTripAndAreValidRepositoryNames) {
  EXPECT_EQ(mirror_repository("registry.k8s.io/pause"), "mirror/registry.k8s.io/pause");
  EXPECT_EQ(mirror_repository("127.0.0.1:5000/a/b"), "mirror/127.0.0.1_5000/a/b");
  EXPECT_EQ(address_of_mirror_repository("mirror/127.0.0.1_5000/a/b"), "127.0.0.1:5000/a/b");
  EXPECT_EQ(address_of_mirror_repository("other/x"), "");
}

}  // namespace
}  // namespace podplane::net
