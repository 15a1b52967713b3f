// os.boot of a vmconfig manifest: the kernel and initrd digests must be digests, or the
// manifest is refused with the item named (fetch/vmconfig.hpp).
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "fetch/vmconfig.hpp"

namespace podplane::fetch {
namespace {

std::string manifest_with_boot(const std::string& kernel_digest) {
  nlohmann::json image{{"version", "1"}, {"url", "https://example.invalid/i.qcow2"}, {"type", "qcow2"},
                       {"digest", "sha256:" + std::string(64, 'a')}, {"size", 1}};
  nlohmann::json boot{{"cmdline", "ro"},
                      {"kernel", {{"partition", 1}, {"path", "/boot/vmlinuz"}, {"digest", kernel_digest}}},
                      {"initrd", {{"partition", 1}, {"path", "/boot/initrd.img"}, {"digest", "sha512:" + std::string(128, 'b')}}}};
  return nlohmann::json{{"vmconfig",
                         {{"version", "1.0.0"}, {"kind", "knc"},
                          {"os", {{"name", "debian-13"}, {"arch", "amd64"}, {"image", image}, {"boot", boot}}},
                          {"dependencies", nlohmann::json::object()}}}}
      .dump();
}

TEST(VmconfigBoot, DigestsOfKernelAndInitrdAreAccepted) {
  auto manifest = parse_vmconfig_manifest(manifest_with_boot("sha256:" + std::string(64, 'c')), "vmconfig_knc_debian-13_amd64");
  EXPECT_EQ(manifest.items.size(), 1u);
}

TEST(VmconfigBoot, AKernelDigestThatIsNotOneIsRefused) {
  try {
    (void)parse_vmconfig_manifest(manifest_with_boot("md5:abc"), "vmconfig_knc_debian-13_amd64");
    FAIL() << "accepted";
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("os.boot.kernel.digest must be sha256:<64 hex> or sha512:<128 hex>, got \"md5:abc\""),
              std::string::npos) << message;
  }
}

// The path goes to debugfs as a command argument: only plain absolute paths; partitions 1..128.
TEST(VmconfigBoot, APathOrPartitionThatCannotBeReadSafelyRefusesTheManifest) {
  for (auto [field, value, expected] : std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"path", "/boot/vmlinuz x /tmp/out", "os.boot.kernel.path must be an absolute path of plain segments"},
           {"path", "/boot/\"quoted\"", "os.boot.kernel.path must be an absolute path of plain segments"},
           {"path", "boot/vmlinuz", "os.boot.kernel.path must be an absolute path of plain segments"},
           {"path", "/boot/../etc/shadow", "os.boot.kernel.path must be an absolute path of plain segments"},
           {"partition", 0, "os.boot.kernel.partition must be a partition number from 1 to 128, got 0"},
           {"partition", "1", "os.boot.kernel.partition must be a partition number from 1 to 128, got \"1\""}}) {
    auto document = nlohmann::json::parse(manifest_with_boot("sha256:" + std::string(64, 'c')));
    document["vmconfig"]["os"]["boot"]["kernel"][field] = value;
    try {
      (void)parse_vmconfig_manifest(document.dump(), "vmconfig_knc_debian-13_amd64");
      ADD_FAILURE() << field << " " << value << " accepted";
    } catch (const Error& error) {
      EXPECT_NE(error.message().find(expected), std::string::npos) << error.message();
    }
  }
}

TEST(VmconfigBoot, TheFilesToReadAreListedWithPartitionPathAndDigest) {
  auto manifest = parse_vmconfig_manifest(manifest_with_boot("sha256:" + std::string(64, 'c')), "vmconfig_knc_debian-13_amd64");
  ASSERT_EQ(manifest.boot_files.size(), 2u);
  EXPECT_EQ(manifest.boot_files[0].part, "kernel");
  EXPECT_EQ(manifest.boot_files[0].partition, 1);
  EXPECT_EQ(manifest.boot_files[0].file_name(), "vmlinuz");
  EXPECT_EQ(manifest.boot_files[0].view_path("20260512-2476"), "vmconfig/artifacts/os-image/20260512-2476/boot/vmlinuz");
  EXPECT_EQ(manifest.boot_files[1].digest, "sha512:" + std::string(128, 'b'));
}

}  // namespace
}  // namespace podplane::fetch
