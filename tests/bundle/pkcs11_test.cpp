// Bundle keys in a PKCS#11 token (base/pkcs11.hpp), with Debian's SoftHSM2 as the token: a
// token of the test's own (SOFTHSM2_CONF names its directory), a key made by `bundle keygen
// --pkcs11` or by pkcs11-tool, `bundle create --sign pkcs11:…` signing through the module (the
// key is never extractable), the exported PEM trusted by `bundle verify --trust`, the same key
// signing a podplane release (`deps tools --sign pkcs11:…`), and a wrong PIN failing clearly
// with nothing written.
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/ed25519.hpp"
#include "cache/podplane_releases.hpp"
#include "cache/store.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::bundle {
namespace {

namespace fs = std::filesystem;
using podplane::test::ProcessOptions;
using podplane::test::ProcessResult;
using podplane::test::run;
using podplane::test::run_podplane;
using podplane::test::show;
using podplane::test::TempDir;

constexpr const char* kModule = "/usr/lib/softhsm/libsofthsm2.so";
constexpr const char* kToken = "pkcs11:token=site-hsm;object=bundle-key";

class Pkcs11BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kModule)) << kModule << " is needed: scripts/setup installs softhsm2";
    ASSERT_TRUE(podplane::test::have_program("softhsm2-util")) << "softhsm2-util is needed: scripts/setup installs softhsm2";
    fs::create_directories(dir_ / "tokens");
    podplane::test::write_file(dir_ / "softhsm2.conf", "directories.tokendir = " + (dir_ / "tokens").string() +
                                                           "\nobjectstore.backend = file\nlog.level = ERROR\n");
    env_.env["SOFTHSM2_CONF"] = (dir_ / "softhsm2.conf").string();
    auto init = run({"softhsm2-util", "--init-token", "--free", "--label", "site-hsm", "--pin", "1234", "--so-pin", "5678"}, env_);
    ASSERT_EQ(init.exit_code, 0) << show(init);
    auto store = cache::Store::open(dir_ / "deps");
    bundle::test::add_provider(store, "random", "3.7.1", {"linux_amd64"}, 4000);
  }

  ProcessResult podplane(const std::vector<std::string>& args, bool module_from_environment = false) const {
    ProcessOptions options = podplane::test::with_deps_root(dir_ / "deps");
    options.env["SOFTHSM2_CONF"] = env_.env.at("SOFTHSM2_CONF");
    if (module_from_environment) options.env["PODPLANE_PKCS11_MODULE"] = kModule;
    // Under AddressSanitizer (scripts/test-sanitize): SoftHSM2 leaks what it decodes of an
    // Ed25519 key's parameters, through libcrypto, which keeps no frame pointers. The slow
    // unwinder gets past it to our frame that called the module, which lsan.supp names.
    if (const char* asan = std::getenv("ASAN_OPTIONS")) options.env["ASAN_OPTIONS"] = std::string(asan) + ":fast_unwind_on_malloc=0";
    return run_podplane(args, options);
  }

  TempDir dir_;
  ProcessOptions env_;
};

TEST_F(Pkcs11BundleTest, AKeyMadeInTheTokenSignsABundleThatItsExportedPublicKeyVerifies) {
  auto keygen = podplane({"bundle", "keygen", (dir_ / "site").string(), "--pkcs11", std::string(kToken) + "?pin-value=1234",
                          "--pkcs11-module", kModule});
  ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
  EXPECT_TRUE(fs::exists(dir_ / "site.pub"));
  EXPECT_FALSE(fs::exists(dir_ / "site.key")) << "the private key stays in the token";
  EXPECT_EQ(keygen.out.find("1234"), std::string::npos) << "the PIN is never shown: " << keygen.out;

  // The module named by the environment this time.
  auto created = podplane({"bundle", "create", (dir_ / "out.bundle").string(), "--sign", std::string(kToken) + "?pin-value=1234"},
                          true);
  ASSERT_EQ(created.exit_code, 0) << show(created);
  auto verified = podplane({"bundle", "verify", (dir_ / "out.bundle").string(), "--trust", (dir_ / "site.pub").string()});
  EXPECT_EQ(verified.exit_code, 0) << show(verified);

  auto listed = run({"pkcs11-tool", "--module", kModule, "--token-label", "site-hsm", "--login", "--pin", "1234",
                     "--list-objects", "--type", "privkey"},
                    env_);
  ASSERT_EQ(listed.exit_code, 0) << show(listed);
  EXPECT_NE(listed.out.find("never extractable"), std::string::npos) << listed.out;
}

TEST_F(Pkcs11BundleTest, AKeyMadeWithPkcs11ToolIsExportedAndSigns) {
  auto made = run({"pkcs11-tool", "--module", kModule, "--token-label", "site-hsm", "--login", "--pin", "1234", "--keypairgen",
                   "--key-type", "EC:edwards25519", "--label", "tool-key", "--id", "02"},
                  env_);
  ASSERT_EQ(made.exit_code, 0) << show(made);
  const std::string uri = "pkcs11:token=site-hsm;id=%02?pin-value=1234";
  auto exported = podplane({"bundle", "keygen", (dir_ / "tool").string(), "--pkcs11", uri, "--export", "--pkcs11-module", kModule});
  ASSERT_EQ(exported.exit_code, 0) << show(exported);
  auto created = podplane({"bundle", "create", (dir_ / "out.bundle").string(), "--sign", uri, "--pkcs11-module", kModule});
  ASSERT_EQ(created.exit_code, 0) << show(created);
  auto verified = podplane({"bundle", "verify", (dir_ / "out.bundle").string(), "--trust", (dir_ / "tool.pub").string()});
  EXPECT_EQ(verified.exit_code, 0) << show(verified);
}

TEST_F(Pkcs11BundleTest, AWrongPinFailsClearlyAndWritesNothing) {
  ASSERT_EQ(podplane({"bundle", "keygen", (dir_ / "site").string(), "--pkcs11", std::string(kToken) + "?pin-value=1234",
                      "--pkcs11-module", kModule})
                .exit_code,
            0);
  auto created = podplane({"bundle", "create", (dir_ / "out.bundle").string(), "--sign", std::string(kToken) + "?pin-value=9999",
                           "--pkcs11-module", kModule});
  EXPECT_EQ(created.exit_code, 1) << show(created);
  EXPECT_NE(created.err.find("the PIN for pkcs11:token=site-hsm;object=bundle-key?pin-value=… (module " + std::string(kModule) +
                             ") is wrong: the token answered CKR_PIN_INCORRECT"),
            std::string::npos)
      << created.err;
  EXPECT_EQ(created.err.find("9999"), std::string::npos) << "the PIN is never shown";
  for (const auto& entry : fs::directory_iterator(dir_.path()))
    EXPECT_EQ(entry.path().filename().string().rfind("out.bundle", 0), std::string::npos) << entry.path() << " was written";

  auto no_module = podplane({"bundle", "create", (dir_ / "out.bundle").string(), "--sign", std::string(kToken) + "?pin-value=1234"});
  EXPECT_EQ(no_module.exit_code, 2) << show(no_module);
  EXPECT_NE(no_module.err.find("PODPLANE_PKCS11_MODULE"), std::string::npos) << no_module.err;
}

// The same token key signs a podplane release's SHA256SUMS (`deps tools --podplane-release DIR
// --sign pkcs11:…`); a wrong PIN adds nothing of the release.
TEST_F(Pkcs11BundleTest, ATokenKeySignsAPodplaneReleaseAndAWrongPinAddsNothing) {
  auto keygen = podplane({"bundle", "keygen", (dir_ / "release").string(), "--pkcs11", std::string(kToken) + "?pin-value=1234",
                          "--pkcs11-module", kModule});
  ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
  const std::string key_id = ed25519::PublicKey::load(dir_ / "release.pub").key_id();
  podplane::test::write_file(dir_ / "dist" / "podplane_9.8.7_amd64.deb", "!<arch>\nstand-in for a deb\n");

  auto refused = podplane({"deps", "tools", "--podplane-release", (dir_ / "dist").string(), "--sign",
                           std::string(kToken) + "?pin-value=9999", "--pkcs11-module", kModule});
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_NE(refused.err.find("is wrong: the token answered CKR_PIN_INCORRECT"), std::string::npos) << refused.err;
  {
    auto store = cache::Store::open(dir_ / "deps", cache::Store::Access::read_only);
    EXPECT_TRUE(store.artifacts({.address = std::string(cache::kPodplaneReleaseAddress)}).empty()) << "nothing of the release";
  }

  auto signed_release = podplane({"deps", "tools", "--podplane-release", (dir_ / "dist").string(), "--sign",
                                  std::string(kToken) + "?pin-value=1234", "--pkcs11-module", kModule});
  ASSERT_EQ(signed_release.exit_code, 0) << show(signed_release);
  EXPECT_NE(signed_release.out.find("signed with " + key_id), std::string::npos) << signed_release.out;
  auto store = cache::Store::open(dir_ / "deps", cache::Store::Access::read_only);
  const std::string release(cache::kPodplaneReleaseAddress);
  auto signatures = store.artifacts({.kind = cache::ArtifactKind::tool_signature, .address = release});
  ASSERT_EQ(signatures.size(), 1u);
  auto sums = store.artifacts({.kind = cache::ArtifactKind::tool_shasums, .address = release});
  ASSERT_EQ(sums.size(), 1u);
  auto signature = ed25519::DetachedSignature::parse(store.read_object(signatures[0].digest), "the stored signature");
  EXPECT_EQ(signature.key_id, key_id);
  EXPECT_TRUE(ed25519::PublicKey::load(dir_ / "release.pub").verifies(store.read_object(sums[0].digest), signature.signature_hex))
      << "the exported public key verifies what the token signed";
}

}  // namespace
}  // namespace podplane::bundle
