// os.boot of a vmconfig manifest: the kernel and initrd digests must be digests, or the
// manifest is refused with the item named (mirror/vmconfig.hpp).
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "mirror/vmconfig.hpp"

namespace podplane::mirror {
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

}  // namespace
}  // namespace podplane::mirror
