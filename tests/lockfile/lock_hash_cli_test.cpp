// podplane lock hash, end to end through the binary.
#include <gtest/gtest.h>

#include "lockfile/hash.hpp"
#include "tests/support/zip_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::test {
namespace {

ProcessOptions offline_options(const TempDir& dir) {
  ProcessOptions options;
  options.env["PODPLANE_DEPS_CACHE_DIR"] = (dir / "deps").string();
  // Any attempt to reach the network would go to a dead proxy.
  options.env["HTTPS_PROXY"] = "http://127.0.0.1:9";
  options.env["HTTP_PROXY"] = "http://127.0.0.1:9";
  return options;
}

TEST(LockHashCli, PrintsH1ZhAndFileForEachZip) {
  TempDir dir;
  auto flat = dir / "terraform-provider-demo_1.0.0_linux_amd64.zip";
  auto other = dir / "terraform-provider-demo_1.0.0_linux_arm64.zip";
  make_zip(flat, {{"LICENSE", "MIT\n"}, {"terraform-provider-demo_v1.0.0", "hello\n"}});
  make_zip(other, {{"terraform-provider-demo_v1.0.0", "arm\n"}});
  auto result = run_podplane({"lock", "hash", flat.string(), other.string()}, offline_options(dir));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "h1:mC2y7VgNBWb3wR/bC2X7ADvSGaJNwBCOxIEiDbCt16U= " + lockfile::zh_hash_of_file(flat) + " " +
                            flat.string() + "\n" + lockfile::h1_hash_of_zip(other) + " " +
                            lockfile::zh_hash_of_file(other) + " " + other.string() + "\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "deps")) << "lock hash must not touch the store";
}

TEST(LockHashCli, BadZipIsAClearErrorWithExitOne) {
  TempDir dir;
  write_file(dir / "broken.zip", "definitely not a zip");
  auto result = run_podplane({"lock", "hash", (dir / "broken.zip").string()}, offline_options(dir));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_NE(result.err.find("podplane: error: cannot hash " + (dir / "broken.zip").string()), std::string::npos)
      << result.err;

  auto missing = run_podplane({"lock", "hash", (dir / "missing.zip").string()}, offline_options(dir));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("missing.zip"), std::string::npos) << missing.err;
}

TEST(LockHashCli, NoArgumentsIsAUsageError) {
  TempDir dir;
  auto result = run_podplane({"lock", "hash"}, offline_options(dir));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("podplane lock hash --help"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace podplane::test
