// mirror push's progress names each uploaded blob by its whole digest, one a user can look up
// in the store and in the registry (the object file's name alone lacks the first two hex).
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "tests/mirror/registry_fixture.hpp"

namespace podplane::serve_test {
namespace {

TEST(PushProgress, NamesEachUploadedBlobByItsWholeDigest) {
  ASSERT_TRUE(podplane::test::have_program("docker-registry")) << "apt-get install docker-registry";
  podplane::test::TempDir temp;
  (void)fill_store(temp / "deps", temp / "work", 4096, 64 * 1024);
  DockerRegistry registry(temp / "registry");
  podplane::test::ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = (temp / "deps").string();
  auto pushed = podplane::test::run_podplane({"mirror", "push", "oci://" + registry.host() + "/site", "--plain-http"}, options);
  ASSERT_EQ(pushed.exit_code, 0) << pushed.out << pushed.err;

  auto store = cache::Store::open(temp / "deps", cache::Store::Access::read_only);
  std::size_t uploads = 0;
  std::istringstream lines(pushed.out + pushed.err);
  const std::regex uploading("uploading (\\S+) → ");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_search(line, match, uploading)) continue;
    ++uploads;
    const std::string digest = match[1];
    ASSERT_TRUE(std::regex_match(digest, std::regex("sha256:[0-9a-f]{64}"))) << line;
    EXPECT_TRUE(store.has_object(digest.substr(7))) << "no object " << digest << " in the store: " << line;
  }
  EXPECT_GT(uploads, 0u) << "no upload was reported\n" << pushed.out << pushed.err;
}

}  // namespace
}  // namespace podplane::serve_test
