// The export plan both writers consume (mirror/export_plan.hpp): its publishing order, and the
// s3:// targets `mirror export` accepts.
#include <gtest/gtest.h>

#include <map>

#include "base/error.hpp"
#include "mirror/export_plan.hpp"
#include "mirror/s3_export.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::TempDir;

TEST(ExportPlan, EveryDocumentComesAfterTheFilesItNames) {
  TempDir temp;
  auto contents = fill_store(temp / "deps", temp / "work", 2048, 4096);
  auto store = cache::Store::open(temp / "deps", cache::Store::Access::read_only);
  auto plan = mirror::plan_export(store, {});
  ASSERT_GT(plan.files.size(), 10u);
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < plan.files.size(); ++i) {
    const auto& file = plan.files[i];
    EXPECT_TRUE(position.emplace(file.path, i).second) << file.path << " is planned twice";
    if (i > 0) { EXPECT_LE(plan.files[i - 1].stage, file.stage) << file.path; }
    EXPECT_FALSE(file.path.starts_with("/") || file.path.starts_with("v2/")) << file.path;
    EXPECT_FALSE(file.content_type.empty()) << file.path;
  }
  EXPECT_EQ(plan.files.front().path, ".podplane-export");
  auto before = [&](const std::string& first, const std::string& then) {
    ASSERT_TRUE(position.contains(first)) << first;
    ASSERT_TRUE(position.contains(then)) << then;
    EXPECT_LT(position[first], position[then]) << first << " should go before " << then;
  };
  // Network mirror: zip → <version>.json → index.json; registry: zip → download answer → versions.
  const auto& provider = contents.providers.front();
  const auto slash = provider.address.find('/');
  const std::string mirror_dir = "v1/mirror/" + provider.address + "/";
  const std::string type = provider.address.substr(provider.address.rfind('/') + 1);
  const std::string zip = mirror_dir + "terraform-provider-" + type + "_" + provider.version + "_linux_amd64.zip";
  before(zip, mirror_dir + provider.version + ".json");
  before(mirror_dir + provider.version + ".json", mirror_dir + "index.json");
  const std::string registry_dir = "v1/providers/" + provider.address + "/";
  before(zip, registry_dir + provider.version + "/download/linux/amd64");
  before(registry_dir + provider.version + "/download/linux/amd64", registry_dir + "versions");
  ASSERT_NE(slash, std::string::npos);
  // Modules: package → download → versions; the vmconfig manifest after the artifacts it lists.
  const std::string module_dir = "v1/modules/" + contents.module_address + "/" + contents.module_version + "/";
  before(module_dir + "package.tar.gz", module_dir + "download");
  before(module_dir + "download", "v1/modules/" + contents.module_address + "/versions");
  before(contents.artifact_path.substr(1), "vmconfig/manifests/" + contents.manifest_name);
  // The entry points last: the catalogue names everything, .well-known the registries.
  before(registry_dir + "versions", "catalogue.json");
  before(mirror_dir + "index.json", ".well-known/terraform.json");
  before(mirror_dir + "index.json", "index.html");
  EXPECT_EQ(plan.files.at(position.at("catalogue/index.html")).stage, mirror::PublishStage::entry_point);
  EXPECT_EQ(plan.files.at(position.at(zip)).source, mirror::FileSource::store_object);
  EXPECT_EQ(plan.files.at(position.at(module_dir + "package.tar.gz")).source, mirror::FileSource::module_package);
}

TEST(S3Target, BucketAndPrefixOrAUsageError) {
  auto target = mirror::parse_s3_target("s3://podplane-mirror/sites/hall-a/");
  EXPECT_EQ(target.bucket, "podplane-mirror");
  EXPECT_EQ(target.prefix, "sites/hall-a/");
  EXPECT_EQ(mirror::parse_s3_target("s3://podplane-mirror").prefix, "");
  EXPECT_EQ(mirror::parse_s3_target("s3://podplane-mirror/").prefix, "");
  EXPECT_TRUE(mirror::is_s3_target("s3://x"));
  EXPECT_FALSE(mirror::is_s3_target("S3://x"));
  EXPECT_FALSE(mirror::is_s3_target("/srv/s3://x"));
  for (const char* bad : {"s3://", "s3://ab", "s3:///prefix", "s3://bucket/../x", "s3://bucket/a//b", "s3://bucket/./a",
                          "s3://bu cket/x", "s3://bucket/a b", "gs://bucket/x"}) {
    try {
      (void)mirror::parse_s3_target(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const UsageError& error) {
      EXPECT_NE(error.message().find("s3://BUCKET[/PREFIX]"), std::string::npos) << error.message();
    }
  }
}

}  // namespace
}  // namespace podplane::serve_test
