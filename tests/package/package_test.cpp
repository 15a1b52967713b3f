// The release packages of scripts/package (docs/packaging.md), made from the build these tests
// belong to: the tarball runs in a root that holds nothing else, the same commit packages to
// the same bytes, and the deb names its dependencies and installs on this Debian. The arm64
// tarball, made from the cross build scripts/build-arm64 leaves beside it, passes the same
// test under qemu-user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "tests/bundle/bundle_fixture.hpp"
#include "tests/support/background.hpp"
#include "tests/support/every_kind.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/tls.hpp"

namespace podplane::test {
namespace {

const std::string kVersion = PODPLANE_VERSION;
const std::string kTarballDir = "podplane-" + kVersion + "-linux-amd64";
const std::string kTarball = kTarballDir + ".tar.gz";
const std::string kDeb = "podplane_" + kVersion + "_amd64.deb";
const std::string kImage = "podplane-mirror-" + kVersion + "-linux-amd64.oci.tar";
const std::string kArm64TarballDir = "podplane-" + kVersion + "-linux-arm64";
const std::string kArm64Tarball = kArm64TarballDir + ".tar.gz";

// scripts/package --no-build on this build, into `out`.
void package(const fs::path& out) {
  ProcessOptions options;
  options.env["PODPLANE_BUILD_DIR"] = build_dir().string();
  auto packaged = run({(source_dir() / "scripts" / "package").string(), "--no-build", "--out", out.string()}, options);
  ASSERT_EQ(packaged.exit_code, 0) << "scripts/package failed:\n" << packaged.err;
}

// The cross build of scripts/build-arm64, which the CTest test package.build.arm64 runs where
// `PODPLANE_ARM64=1 scripts/setup` installed the cross toolchain.
fs::path arm64_build_dir() {
  if (const char* dir = std::getenv("PODPLANE_ARM64_BUILD_DIR")) return dir;
  return source_dir() / "build-arm64";
}

// The packages of two runs of scripts/package, in first/ and second/: those the CTest fixture
// tests package.make.* made for this run (PODPLANE_TEST_PACKAGES), or, when this binary runs
// by itself, made here once per process.
fs::path packages() {
  if (const char* made = std::getenv("PODPLANE_TEST_PACKAGES")) return made;
  static TempDir own;
  static bool made_here = false;
  if (!made_here) {
    package(own / "first");
    package(own / "second");
    made_here = true;
  }
  return own.path();
}

// Where `program` is on PATH ("" when it is not), for running it with another PATH.
std::string program_path(const std::string& program) {
  auto found = run({"sh", "-c", "command -v " + program});
  return found.exit_code == 0 ? found.out.substr(0, found.out.find('\n')) : std::string();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kProvider = "registry.opentofu.org/hashicorp/null";

// A small store that `deps verify` passes: a provider package for two platforms (recorded as
// checked upstream; the bundle tests' synthetic providers carry signatures that do not verify),
// a module and a vmconfig manifest with its artifact.
void fill_verifiable_store(const fs::path& root) {
  auto store = cache::Store::open(root);
  for (const std::string platform : {"linux_amd64", "linux_arm64"}) {
    (void)store.add_artifact(
        test::provider_package_row(store.add_bytes("PK\x03\x04" + bundle::test::synthetic_bytes(platform, 20000)), platform, kProvider));
  }
  bundle::test::add_module(store, "2.0.1");
  bundle::test::add_vmconfig(store);
}

// That store, filled outside the root and carried in as a bundle the normal binary signed.
struct SignedBundle {
  fs::path bundle;
  fs::path public_key;
};

SignedBundle make_signed_bundle(const fs::path& dir) {
  fill_verifiable_store(dir / "online");
  auto keygen = run_podplane({"bundle", "keygen", (dir / "site").string()});
  EXPECT_EQ(keygen.exit_code, 0) << show(keygen);
  auto create = run_podplane({"bundle", "create", (dir / "site.bundle").string(), "--sign", (dir / "site.key").string()},
                             with_deps_root(dir / "online"));
  EXPECT_EQ(create.exit_code, 0) << show(create);
  return {dir / "site.bundle", dir / "site.pub"};
}

// The tarball unpacked into `dir`/root runs --version through a link elsewhere and, under
// chroot in that root with nothing else in it, imports a bundle made outside, verifies the
// store and serves it to curl outside the root.
void expect_runs_in_an_empty_root(const TempDir& dir, const fs::path& tarball, const std::string& top_dir) {
  const fs::path root = dir / "root";
  fs::create_directories(root);
  auto unpacked = run({"tar", "-xzf", tarball.string(), "-C", root.string()});
  ASSERT_EQ(unpacked.exit_code, 0) << show(unpacked);
  const fs::path installed = root / top_dir;

  // On the host, through a symbolic link elsewhere: the launcher finds lib/ by /proc/self/exe.
  fs::create_symlink(installed / "bin" / "podplane", dir / "podplane");
  auto linked = run({(dir / "podplane").string(), "--version"});
  EXPECT_EQ(linked.exit_code, 0) << show(linked);
  EXPECT_EQ(linked.out, "podplane " + kVersion + "\n");

  if (::geteuid() != 0) GTEST_SKIP() << "chroot needs root (CI runs as root)";
  const std::string chroot = program_path("chroot");
  if (chroot.empty()) GTEST_SKIP() << "no chroot program on PATH";
  const std::string inside = "/" + top_dir + "/bin/podplane";
  // The root holds the unpacked tarball and nothing else: no /proc, no /lib, no /etc, no /tmp.
  auto version = run({chroot, root.string(), inside, "--version"});
  if (version.exit_code == 125) GTEST_SKIP() << "chroot is not permitted here: " << version.err;
  ASSERT_EQ(version.exit_code, 0) << show(version);
  EXPECT_EQ(version.out, "podplane " + kVersion + "\n");
  // Found on PATH, as a shell would: argv[0] is then a bare name, and /proc is still absent.
  ProcessOptions on_path;
  on_path.env["PATH"] = "/" + top_dir + "/bin";
  auto bare = run({chroot, root.string(), "podplane", "--version"}, on_path);
  EXPECT_EQ(bare.exit_code, 0) << show(bare);
  EXPECT_EQ(bare.out, "podplane " + kVersion + "\n");

  // A bundle made outside the root by the normal binary imports inside it and verifies.
  SignedBundle made = make_signed_bundle(dir.path());
  fs::create_directories(root / "in");
  fs::copy_file(made.bundle, root / "in" / "site.bundle");
  fs::copy_file(made.public_key, root / "in" / "site.pub");
  ProcessOptions deps_root;
  deps_root.env["PODPLANE_DEPS_CACHE_DIR"] = "/deps";
  auto imported = run({chroot, root.string(), inside, "--quiet", "bundle", "import", "/in/site.bundle", "--trust", "/in/site.pub"},
                      deps_root);
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  auto verified = run({chroot, root.string(), inside, "deps", "verify"}, deps_root);
  EXPECT_EQ(verified.exit_code, 0) << show(verified);

  // mirror serve inside the root answers curl outside it, on loopback.
  Background serve({chroot, root.string(), inside, "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"}, {{"PODPLANE_DEPS_CACHE_DIR", "/deps"}},
                   dir / "serve.err");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << read_file(dir / "serve.err");
  if (base.back() != '/') base += '/';
  auto index = run({"curl", "-fsS", "--noproxy", "*", base + "v1/mirror/" + kProvider + "/index.json"});
  EXPECT_EQ(index.exit_code, 0) << show(index) << read_file(dir / "serve.err");
  EXPECT_TRUE(contains(index.out, "\"3.2.4\"")) << index.out;
}

TEST(PackageTarball, RunsInAnEmptyRootWithNoLibraryOfTheHost) {
  TempDir dir;
  expect_runs_in_an_empty_root(dir, packages() / "first" / kTarball, kTarballDir);
}

// PODPLANE_TOOLS_KEYRING_FOR_TESTS replaces the pinned engine release keys in the binary the
// tests run; the packaged binary is linked without it (cache/test_settings.hpp): an engine
// release signed by a test key verifies with the one and is refused by the other.
TEST(PackageTarball, IgnoresTheTestKeyringSetting) {
  TempDir dir;
  auto unpacked = run({"tar", "-xzf", (packages() / "first" / kTarball).string(), "-C", dir.path().string()});
  ASSERT_EQ(unpacked.exit_code, 0) << show(unpacked);
  const fs::path root = dir / "deps";
  EveryKind every;
  {
    auto store = cache::Store::open(root);
    every = add_every_kind(store, dir / "work");
  }
  ProcessOptions options = with_deps_root(root);
  options.env["PODPLANE_TOOLS_KEYRING_FOR_TESTS"] = every.keyring.string();
  auto tested = run({podplane_binary().string(), "deps", "verify"}, options);
  EXPECT_EQ(tested.exit_code, 0) << "the tested binary takes the test keyring: " << show(tested);
  auto shipped = run({(dir / kTarballDir / "bin" / "podplane").string(), "deps", "verify"}, options);
  EXPECT_EQ(shipped.exit_code, 1) << show(shipped);
  const std::string said = shipped.out + shipped.err;
  EXPECT_NE(said.find("the pinned release key of"), std::string::npos) << show(shipped);
  EXPECT_EQ(said.find("PODPLANE_TOOLS_KEYRING_FOR_TESTS"), std::string::npos) << show(shipped);
}

// ELF's e_machine of a file's bytes (EM_AARCH64 is 183); 0 when they are not ELF.
int elf_machine(const std::string& bytes) {
  if (bytes.size() < 20 || bytes.compare(0, 4, "\x7f" "ELF") != 0) return 0;
  return static_cast<unsigned char>(bytes[18]) | static_cast<unsigned char>(bytes[19]) << 8;
}

// The arm64 tarball: made twice from the cross build to the same bytes, every program in it an
// aarch64 one, and, run by qemu-user through binfmt_misc, the same empty-root test as amd64's.
TEST(PackageTarballArm64, IsReproducibleAndRunsUnderQemuInAnEmptyRoot) {
  const fs::path cross_build = arm64_build_dir();
  if (!fs::exists(cross_build / "cli" / "podplane"))
    GTEST_SKIP() << "no arm64 build in " << cross_build << ": the test package.build.arm64 makes it with "
                 << "scripts/build-arm64 where PODPLANE_ARM64=1 scripts/setup installed g++-aarch64-linux-gnu";
  if (!fs::exists("/proc/sys/fs/binfmt_misc/qemu-aarch64"))
    GTEST_SKIP() << "qemu-user is not registered with binfmt_misc (scripts/setup registers qemu-user-static's "
                 << "qemu-aarch64 where the kernel has binfmt_misc)";

  TempDir dir;
  ProcessOptions options;
  options.env["PODPLANE_ARM64_BUILD_DIR"] = cross_build.string();
  for (const std::string run_name : {"first", "second"}) {
    auto packaged = run({(source_dir() / "scripts" / "package").string(), "--arch", "arm64", "--no-build", "--out",
                         (dir / run_name).string()},
                        options);
    ASSERT_EQ(packaged.exit_code, 0) << "scripts/package --arch arm64 failed:\n" << packaged.err;
  }
  const fs::path tarball = dir / "first" / kArm64Tarball;
  std::string first = read_file(tarball);
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(first == read_file(dir / "second" / kArm64Tarball)) << kArm64Tarball << " differs between two runs";

  constexpr int kAarch64 = 183;
  for (const std::string member : {"bin/podplane", "lib/podplane", "lib/ld-linux-aarch64.so.1", "lib/libc.so.6", "lib/librnp.so.0"}) {
    auto bytes = run({"tar", "-xOzf", tarball.string(), kArm64TarballDir + "/" + member});
    ASSERT_EQ(bytes.exit_code, 0) << member << ": " << bytes.err;
    EXPECT_EQ(elf_machine(bytes.out), kAarch64) << member << " is not an aarch64 program";
  }
  auto licences = run({"tar", "-xOzf", tarball.string(), kArm64TarballDir + "/licenses/packages.txt"});
  EXPECT_TRUE(contains(licences.out, "librnp0 ")) << licences.out;

  expect_runs_in_an_empty_root(dir, tarball, kArm64TarballDir);
}

// The launcher's one decision besides where lib/ is: the CA bundle on a host without Debian's.
// env(1) stands in for lib/podplane (it needs only the carried libc) and prints what it got.
TEST(PackageTarball, PointsAtRhelsCaBundleWhereDebiansIsMissing) {
  if (::geteuid() != 0) GTEST_SKIP() << "chroot needs root (CI runs as root)";
  const std::string chroot = program_path("chroot");
  const std::string env = program_path("env");
  if (chroot.empty() || env.empty()) GTEST_SKIP() << "no chroot or env program on PATH";
  TempDir dir;
  const fs::path root = dir / "root";
  fs::create_directories(root);
  auto unpacked = run({"tar", "-xzf", (packages() / "first" / kTarball).string(), "-C", root.string()});
  ASSERT_EQ(unpacked.exit_code, 0) << show(unpacked);
  fs::remove(root / kTarballDir / "lib" / "podplane");
  fs::copy_file(env, root / kTarballDir / "lib" / "podplane");
  const std::string inside = "/" + kTarballDir + "/bin/podplane";
  ProcessOptions unset;
  unset.unset_env = {"SSL_CERT_FILE", "CURL_CA_BUNDLE"};

  write_file(root / "etc/pki/tls/certs/ca-bundle.crt", "");
  auto rhel = run({chroot, root.string(), inside}, unset);
  if (rhel.exit_code == 125) GTEST_SKIP() << "chroot is not permitted here: " << rhel.err;
  ASSERT_EQ(rhel.exit_code, 0) << show(rhel);
  EXPECT_TRUE(contains("\n" + rhel.out, "\nSSL_CERT_FILE=/etc/pki/tls/certs/ca-bundle.crt\n")) << rhel.out;
  EXPECT_TRUE(contains("\n" + rhel.out, "\nCURL_CA_BUNDLE=/etc/pki/tls/certs/ca-bundle.crt\n")) << rhel.out;

  ProcessOptions chosen = unset;
  chosen.env["CURL_CA_BUNDLE"] = "/site-ca.crt";
  auto kept = run({chroot, root.string(), inside}, chosen);
  EXPECT_FALSE(contains("\n" + kept.out, "\nSSL_CERT_FILE=")) << "the user's choice stands:\n" << kept.out;

  write_file(root / "etc/ssl/certs/ca-certificates.crt", "");
  auto debian = run({chroot, root.string(), inside}, unset);
  EXPECT_FALSE(contains("\n" + debian.out, "\nSSL_CERT_FILE=")) << "Debian's bundle is there:\n" << debian.out;
}

TEST(PackageReproducible, TwoRunsGiveTheSameBytes) {
  for (const std::string& name : {kTarball, kDeb, kImage}) {
    std::string first = read_file(packages() / "first" / name);
    EXPECT_FALSE(first.empty()) << name;
    EXPECT_TRUE(first == read_file(packages() / "second" / name)) << name << " differs between two runs";
  }
  // Nor does the packaged binary depend on where this checkout and its build are.
  auto binary = run({"tar", "-xOzf", (packages() / "first" / kTarball).string(), kTarballDir + "/lib/podplane"});
  ASSERT_EQ(binary.exit_code, 0) << binary.err;
  EXPECT_FALSE(contains(binary.out, source_dir().string()));
  EXPECT_FALSE(contains(binary.out, build_dir().string()));
}

// Podplane itself crosses the air gap (docs/tools.md "Podplane's own releases"): the release
// files of this build go into a store with `deps tools --podplane-release`, over in a signed
// bundle to another store, out of its `mirror serve`, and `tools install podplane --from` that
// mirror puts the tree in place; its bin/podplane runs and names this version.
TEST(PackageTarball, CrossesTheAirGapInABundleAndInstallsFromTheSiteMirror) {
  ASSERT_TRUE(have_program("curl"));
  TempDir dir;
  const fs::path dist = packages() / "first";
  ASSERT_EQ(run_podplane({"bundle", "keygen", (dir / "release").string()}).exit_code, 0);
  auto added = run_podplane({"deps", "tools", "--podplane-release", dist.string(), "--sign", (dir / "release.key").string()},
                            with_deps_root(dir / "online"));
  ASSERT_EQ(added.exit_code, 0) << show(added);
  EXPECT_TRUE(contains(added.out, "added " + kTarball)) << added.out;
  ASSERT_EQ(run_podplane({"bundle", "keygen", (dir / "site").string()}).exit_code, 0);
  auto created = run_podplane({"bundle", "create", (dir / "deps.bundle").string(), "--sign", (dir / "site.key").string()},
                              with_deps_root(dir / "online"));
  ASSERT_EQ(created.exit_code, 0) << show(created);
  auto imported = run_podplane({"bundle", "import", (dir / "deps.bundle").string(), "--trust", (dir / "site.pub").string()},
                               with_deps_root(dir / "site-deps"));
  ASSERT_EQ(imported.exit_code, 0) << show(imported);

  Background serve({podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"},
                   {{"PODPLANE_DEPS_CACHE_DIR", (dir / "site-deps").string()}}, dir / "serve.err");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << read_file(dir / "serve.err");
  if (base.back() == '/') base.pop_back();
  auto installed = run_podplane({"tools", "install", "podplane", kVersion, "--platform", "linux_amd64", "--to",
                                 (dir / "opt").string(), "--from", base, "--trust", (dir / "release.pub").string()},
                                with_deps_root(dir / "no-store"));
  ASSERT_EQ(installed.exit_code, 0) << show(installed);
  const fs::path program = dir / "opt" / kTarballDir / "bin" / "podplane";
  EXPECT_TRUE(contains(installed.out, program.string())) << installed.out;
  auto version = run({program.string(), "--version"});
  EXPECT_EQ(version.exit_code, 0) << show(version);
  EXPECT_EQ(version.out, "podplane " + kVersion + "\n");
}

TEST(PackageDeb, NamesItsDependenciesAndInstallsOnThisDebian) {
  const std::string deb = (packages() / "first" / kDeb).string();

  auto info = run({"dpkg-deb", "-I", deb});
  ASSERT_EQ(info.exit_code, 0) << show(info);
  EXPECT_TRUE(contains(info.out, " Package: podplane\n")) << info.out;
  EXPECT_TRUE(contains(info.out, " Version: " + kVersion + "\n")) << info.out;
  EXPECT_TRUE(contains(info.out, " Architecture: amd64\n")) << info.out;
  for (const char* dependency : {"libc6 (>= ", "libcurl4 (>= ", "libarchive13 (>= ", "librnp0 (>= ", "libsqlite3-0 (>= "}) {
    EXPECT_TRUE(contains(info.out, dependency)) << dependency << " is not in\n" << info.out;
  }

  auto contents = run({"dpkg-deb", "-c", deb});
  ASSERT_EQ(contents.exit_code, 0) << show(contents);
  std::vector<std::string> expected = {"-rwxr-xr-x root/root", "./usr/bin/podplane\n", "./usr/share/doc/podplane/README.md\n",
                                       "./usr/share/doc/podplane/docs/packaging.md\n"};
  const fs::path units = source_dir() / "packaging" / "systemd";
  if (fs::is_directory(units)) {
    for (const auto& unit : fs::directory_iterator(units)) expected.push_back("./lib/systemd/system/" + unit.path().filename().string() + "\n");
  }
  for (const auto& line : expected) EXPECT_TRUE(contains(contents.out, line)) << line << " is not in\n" << contents.out;
  EXPECT_FALSE(contains(contents.out, "./usr/lib/")) << "the deb carries a library:\n" << contents.out;

  const std::string apt_get = program_path("apt-get");
  if (apt_get.empty()) GTEST_SKIP() << "no apt-get: not a Debian host";
  auto simulated = run({apt_get, "install", "-s", "--no-install-recommends", deb});
  EXPECT_EQ(simulated.exit_code, 0) << show(simulated);
  EXPECT_TRUE(contains(simulated.out, "Inst podplane ")) << simulated.out;
}

// podman with what this kind of machine needs: runc where it is installed (crun refuses the
// hybrid cgroup hierarchy of some VMs and CI runners), and no default ulimits (raising them is
// not permitted inside an unprivileged sandbox). Neither changes what the image is.
std::vector<std::string> podman(const fs::path& containers_conf, std::vector<std::string> args) {
  std::vector<std::string> argv{"env", "CONTAINERS_CONF=" + containers_conf.string(), "podman"};
  if (!program_path("runc").empty()) argv.insert(argv.end(), {"--runtime", "runc"});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The OCI image of the mirror, as an operator runs it: loaded with podman, the store and the
// TLS pair mounted read-only, the port published on loopback; /healthz and a provider index
// answer over HTTPS from outside the container.
TEST(PackageImage, RunsUnderPodmanWithTheStoreMountedAndAnswersHealthz) {
  if (program_path("podman").empty()) GTEST_SKIP() << "no podman on PATH (scripts/setup installs it)";
  TempDir dir;
  const fs::path conf = dir / "containers.conf";
  write_file(conf, "[containers]\ndefault_ulimits = []\n");

  auto loaded = run(podman(conf, {"load", "-i", (packages() / "first" / kImage).string()}));
  ASSERT_EQ(loaded.exit_code, 0) << show(loaded);
  const std::string image = "localhost/podplane-mirror:" + kVersion;
  EXPECT_TRUE(contains(loaded.out + loaded.err, image)) << show(loaded);

  // The server runs as the image's own user (65532): the store and the pair must be readable
  // by others, as docs/operations.md says.
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  fill_verifiable_store(dir / "store");
  test::write_test_tls(dir / "tls", {.common_name = "localhost",
                                      .alt_names = {"IP:127.0.0.1"},
                                      .cert_file = "mirror-tls.crt",
                                      .key_file = "mirror-tls.key",
                                      .key_readable_by_all = true});

  const std::string name = "podplane-mirror-test-" + std::to_string(::getpid());
  // The container, then the image, go when the test ends, however it ends.
  struct Remove {
    std::vector<std::vector<std::string>> commands;
    ~Remove() {
      for (const auto& argv : commands) (void)run(argv);
    }
  } remove{{podman(conf, {"rm", "-f", name}), podman(conf, {"rmi", image})}};
  Background serve(podman(conf, {"run", "--rm", "--name", name, "-v", (dir / "store").string() + ":/var/lib/podplane/deps:ro",
                                 "-v", (dir / "tls").string() + ":/etc/podplane:ro", "-p", "127.0.0.1::8443", image}),
                   {}, dir / "serve.err");
  // The server's first line is its URL, printed once the site is loaded and the port listens.
  const std::string ready = serve.first_line();
  ASSERT_FALSE(ready.empty()) << read_file(dir / "serve.err");
  auto port = run(podman(conf, {"port", name, "8443"}));
  ASSERT_EQ(port.exit_code, 0) << show(port);
  const std::string published = port.out.substr(0, port.out.find('\n'));  // 127.0.0.1:<port>
  const std::string base = "https://" + published + "/";

  const std::string ca = (dir / "tls" / "mirror-tls.crt").string();
  auto health = run({"curl", "-fsS", "--noproxy", "*", "--cacert", ca, base + "healthz"});
  EXPECT_EQ(health.exit_code, 0) << show(health) << read_file(dir / "serve.err");
  auto index = run({"curl", "-fsS", "--noproxy", "*", "--cacert", ca, base + "v1/mirror/" + kProvider + "/index.json"});
  EXPECT_EQ(index.exit_code, 0) << show(index) << read_file(dir / "serve.err");
  EXPECT_TRUE(contains(index.out, "\"3.2.4\"")) << index.out;

  // It runs as the image's user, not as root.
  auto user = run(podman(conf, {"inspect", "--format", "{{.Config.User}}", name}));
  EXPECT_EQ(user.out, "65532:65532\n") << show(user);
}

}  // namespace
}  // namespace podplane::test
