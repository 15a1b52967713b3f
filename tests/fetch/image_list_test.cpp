// The image lists `deps images` reads, and the images a vmconfig manifest pins (fetch/images.hpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "fetch/images.hpp"

namespace podplane::fetch {
namespace {

using ::testing::HasSubstr;

TEST(ImageList, CommentsBlankLinesAndLineNumbersInErrors) {
  auto requests = parse_image_list("# app\n\nnginx:1.27  # web\nghcr.io/a/b@sha256:" + std::string(64, 'd') + "\n", "images.txt",
                                  {"linux/amd64"});
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].reference.str(), "docker.io/library/nginx:1.27");
  EXPECT_EQ(requests[0].source, "images.txt:3");
  EXPECT_EQ(requests[1].platforms, std::vector<std::string>{"linux/amd64"});
  try {
    (void)parse_image_list("ok:1\nBAD/Name\n", "list", {});
    ADD_FAILURE() << "accepted a bad line";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("list:2"));
  }
}

TEST(VmconfigImages, EveryEntryNeedsItsPins) {
  auto document = nlohmann::json::parse(R"({"vmconfig": {"images": [{"image": "registry.k8s.io/pause:3.10.2",
      "digest": "sha256:nothex", "platform": "linux/amd64"}]}})");
  try {
    (void)vmconfig_image_requests(document, "vmconfig_knc_debian-13_amd64");
    ADD_FAILURE() << "accepted a bad digest";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("vmconfig_knc_debian-13_amd64 images[0]: digest"));
  }
}

}  // namespace
}  // namespace podplane::fetch
