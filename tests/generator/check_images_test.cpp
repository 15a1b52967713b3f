// `cluster check` rows for what apply and first boot fetch besides providers and modules: every
// container image the stack's manifests pin (index, manifest, blobs, each hashing to its
// digest) and the stack's Netsy seed snapshot, with the command that fetches what is missing.
#include <gtest/gtest.h>

#include "tests/generator/cluster_env.hpp"

namespace podplane::test {
namespace {

// The table line of `check`, "" when absent.
std::string line_of(const std::string& table, const std::string& check) {
  std::size_t at = table.find("  " + check + "  ");
  if (at == std::string::npos) return "";
  std::size_t start = table.rfind('\n', at);
  std::size_t end = table.find('\n', at);
  return table.substr(start == std::string::npos ? 0 : start + 1, end == std::string::npos ? std::string::npos : end - start - 1);
}

// A cluster whose config names the seed without a path, so the stack reads the stored one.
std::unique_ptr<ClusterEnv> env_with_images_and_seed() {
  StoreFixtureOptions options;
  options.images = true;
  options.seed = true;
  auto env = std::make_unique<ClusterEnv>("aws", options);
  std::string config = read_file(env->config());
  const std::string path = ", \"path\": \"/srv/podplane/seeds/recommended.netsy\"";
  auto at = config.find(path);
  if (at == std::string::npos) throw std::runtime_error("the aws sample config no longer names a seed path");
  config.erase(at, path.size());
  write_file(env->config(), config);
  return env;
}

TEST(ClusterCheckImages, ListsEveryPinnedImageAndTheSeedOnAFilledStore) {
  auto env = env_with_images_and_seed();
  auto created = env->cluster({"create", "--no-apply"});
  ASSERT_EQ(created.exit_code, 0) << show(created);
  auto result = env->cluster({"check"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  for (const char* arch : {"amd64", "arm64"}) {
    std::string line = line_of(result.out, "image registry.example/pause:3.10.2 linux/" + std::string(arch));
    EXPECT_NE(line.find("ok: sha256:"), std::string::npos) << result.out;
    EXPECT_NE(line.find("and its 2 blobs, digests ok"), std::string::npos) << line;
  }
  // knc and knd pin the same images: each is listed once.
  EXPECT_EQ(result.out.find("linux/amd64"), result.out.rfind("linux/amd64")) << result.out;
  std::string seed = line_of(result.out, "seed recommended v1.2.3-1");
  EXPECT_NE(seed.find("ok: "), std::string::npos) << result.out;
  EXPECT_NE(seed.find("seeds/snapshots/recommended/v1.2.3-1/recommended.netsy"), std::string::npos) << seed;
}

TEST(ClusterCheckImages, ARemovedOrDamagedBlobFailsWithTheCommandThatFetchesIt) {
  auto env = env_with_images_and_seed();
  ASSERT_EQ(env->cluster({"create", "--no-apply"}).exit_code, 0);
  auto& store = env->fixture->store();
  fs::remove(store.object_path(env->fixture->image().layer.at("arm64").substr(7)));
  auto result = env->cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(line_of(result.out, "image registry.example/pause:3.10.2 linux/arm64").find("MISSING 1 of 2 blobs: sha256:"),
            std::string::npos)
      << result.out;
  EXPECT_NE(line_of(result.out, "image registry.example/pause:3.10.2 linux/amd64").find("ok: "), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("podplane deps download --arch arm64 (online)"), std::string::npos) << result.err;

  // Same length, other bytes: only hashing tells.
  fs::path layer = store.object_path(env->fixture->image().layer.at("amd64").substr(7));
  std::string bytes = read_file(layer);
  bytes[0] ^= 0x20;
  fs::remove(layer);
  write_file(layer, bytes);
  result = env->cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(line_of(result.out, "image registry.example/pause:3.10.2 linux/amd64").find("CORRUPT 1 of 2 blobs"), std::string::npos)
      << result.out;
  EXPECT_NE(result.err.find("podplane deps verify --repair"), std::string::npos) << result.err;
}

TEST(ClusterCheckImages, AnImageTheStoreNeverHadFails) {
  auto env = env_with_images_and_seed();
  ASSERT_EQ(env->cluster({"create", "--no-apply"}).exit_code, 0);
  fs::path manifest = env->stack / "podplane.cluster.vmconfig_knd_debian-13_amd64.json";
  std::string text = read_file(manifest);
  std::string digest = env->fixture->image().manifest.at("amd64");
  text.replace(text.find(digest), digest.size(), "sha256:" + std::string(64, 'e'));
  write_file(manifest, text);
  auto result = env->cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(result.out.find("MISSING: its manifest sha256:eeeeeeee"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("podplane deps download --arch amd64"), std::string::npos) << result.err;
}

TEST(ClusterCheckImages, AMissingSeedFailsWithTheCommandAndSkipSeedsNoted) {
  auto env = env_with_images_and_seed();
  ASSERT_EQ(env->cluster({"create", "--no-apply"}).exit_code, 0);
  fs::remove(env->deps() / "seeds" / "snapshots" / "recommended" / "v1.2.3-1" / "recommended.netsy");
  auto result = env->cluster({"check"});
  EXPECT_EQ(result.exit_code, 1) << show(result);
  EXPECT_NE(line_of(result.out, "seed recommended v1.2.3-1").find("MISSING: "), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("podplane deps download (online"), std::string::npos) << result.err;  // no <arch> to fill in
  EXPECT_NE(result.err.find("without --skip-seeds"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace podplane::test
