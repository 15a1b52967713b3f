// `podplane deps download` and `deps status` end to end against the fixture's vmconfig
// manifests: both kinds and arches, the provider filter, sha256 and sha512 digests, dry-run,
// a warm rerun, a digest mismatch that indexes nothing, status before/after an upstream change,
// and a run killed with SIGKILL whose scratch `deps gc` removes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "base/digest.hpp"
#include "cache/store.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

using nlohmann::json;

class VmconfigRun {
 public:
  explicit VmconfigRun(const FixtureUpstream& upstream) : upstream_(upstream) {
    upstream.write_cli_config(dir_ / "cli.tfrc");
  }
  fs::path root() const { return dir_ / "deps"; }
  ProcessResult podplane(std::vector<std::string> args) const {
    ProcessOptions options;
    options.env = upstream_.env(root(), dir_ / "cli.tfrc");
    options.unset_env = {"PODPLANE_ARCH"};
    return run_podplane(args, options);
  }

 private:
  TempDir dir_;
  const FixtureUpstream& upstream_;
};

const json& manifest_entry(const FixtureUpstream& upstream, const std::string& name) {
  for (const auto& manifest : upstream.fixture()["vmconfig"]["manifests"]) {
    if (manifest["name"] == name) return manifest;
  }
  throw std::runtime_error("fixture has no manifest " + name);
}

std::size_t artifact_requests(const FixtureUpstream& upstream) { return upstream.requests("^/artifacts/").size(); }

std::vector<cache::Artifact> stored(const fs::path& root, cache::ArtifactKind kind) {
  if (!fs::exists(root / "store" / "index.db")) return {};
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  cache::ArtifactQuery query;
  query.kind = kind;
  return store.artifacts(query);
}

TEST(DepsDownload, FetchesBothKindsFilteredByProviderAndVerifiesEveryDigest) {
  FixtureUpstream upstream;
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "amd64", "--providers", "aws"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  // Per manifest: what arrived and what was there. knd's shared items came with knc's.
  EXPECT_NE(result.out.find("vmconfig knc_debian-13_amd64: fetched "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("vmconfig knd_debian-13_amd64: fetched "), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("up to date"), std::string::npos) << "a run that fetched says so\n" << result.out;
  auto again = deps.podplane({"deps", "download", "--arch", "amd64", "--providers", "aws"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("All dependencies for knc_debian-13_amd64 are up to date (fetched 0, present "), std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("All dependencies for knd_debian-13_amd64 are up to date (fetched 0, present "), std::string::npos)
      << again.out;
  // knc and knd share most artifacts: each one crosses the wire once.
  std::map<std::string, int> gets;
  for (const auto& request : upstream.requests("^/artifacts/", 200)) ++gets[request.path];
  EXPECT_FALSE(gets.empty());
  for (const auto& [path, count] : gets) EXPECT_EQ(count, 1) << path << " fetched " << count << " times";

  for (const char* name : {"vmconfig_knc_debian-13_amd64", "vmconfig_knd_debian-13_amd64"}) {
    EXPECT_TRUE(fs::exists(deps.root() / "vmconfig" / "manifests" / (std::string(name) + ".json"))) << name;
    for (const auto& item : manifest_entry(upstream, name)["items"]) {
      auto view = deps.root() / "vmconfig" / "artifacts" / item["name"].get<std::string>() /
                  item["version"].get<std::string>() / item["filename"].get<std::string>();
      auto providers = item["providers"].get<std::vector<std::string>>();
      bool wanted = providers.empty() || std::find(providers.begin(), providers.end(), "aws") != providers.end();
      EXPECT_EQ(fs::exists(view), wanted) << view;
      if (wanted && fs::exists(view)) {
        EXPECT_EQ(file_digest_hex(view), item["sha256"]) << view;
      }
    }
  }
  auto artifacts = stored(deps.root(), cache::ArtifactKind::vmconfig_artifact);
  EXPECT_FALSE(artifacts.empty());
  bool saw_sha512 = false;
  for (const auto& a : artifacts) {
    EXPECT_EQ(a.trust, cache::Trust::checksum);
    saw_sha512 = saw_sha512 || a.upstream_digest.starts_with("sha512:");
  }
  EXPECT_TRUE(saw_sha512);
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::vmconfig_manifest).size(), 2u);

  // Warm: nothing transferred again.
  auto before = artifact_requests(upstream);
  auto warm = deps.podplane({"deps", "download", "--arch", "amd64", "--providers", "aws"});
  ASSERT_EQ(warm.exit_code, 0) << warm.out << warm.err;
  EXPECT_EQ(artifact_requests(upstream), before);
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::vmconfig_manifest).size(), 2u);

  auto status = deps.podplane({"deps", "status", "--arch", "amd64"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out, "No new packages available.\n");
}

TEST(DepsDownload, DryRunListsAndWritesNothing) {
  FixtureUpstream upstream;
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "arm64", "--kind", "knc", "--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("VMConfig manifest: " + upstream.url("/manifests/vmconfig_knc_debian-13_arm64.json")),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("VMConfig artifacts that would be downloaded:"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("vmconfig/artifacts/netsy/1.1.0/netsy_1.1.0_linux_arm64.tar.gz"), std::string::npos) << result.out;
  // The boot files os.boot names, read from the image once it is there.
  EXPECT_NE(result.out.find("  \u2022 vmconfig/artifacts/os-image/20260512-2476/boot/vmlinuz-6.12.86+deb13-cloud-arm64 (read from "
                            "the image, partition 1 /boot/vmlinuz-6.12.86+deb13-cloud-arm64)\n"),
            std::string::npos)
      << result.out;
  // No --providers and no cluster config here: every provider's items (docs/deps.md).
  EXPECT_NE(result.out.find("nstance-agent"), std::string::npos) << "an aws item left out without --providers\n" << result.out;
  EXPECT_EQ(artifact_requests(upstream), 0u);
  EXPECT_FALSE(fs::exists(deps.root() / "vmconfig"));
  EXPECT_TRUE(stored(deps.root(), cache::ArtifactKind::vmconfig_manifest).empty());
}

TEST(DepsDownload, DigestMismatchIndexesNothingAndSaysExpectedAndGot) {
  FixtureOptions fixture;
  fixture.sharing = FixtureOptions::Sharing::private_copy;
  FixtureUpstream upstream(fixture);
  // Damage one sha256 and one sha512 artifact after the manifest was written.
  for (const char* path : {"artifacts/containerd/2.3.1/containerd-2.3.1-linux-amd64.tar.gz",
                           "artifacts/netsy/1.1.0/netsy_1.1.0_linux_amd64.tar.gz"}) {
    auto file = upstream.www() / path;
    auto bytes = read_file(file);
    bytes[bytes.size() / 2] ^= 0x5a;
    write_file(file, bytes);
  }
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("containerd-2.3.1-linux-amd64.tar.gz"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("checksum mismatch for vmconfig/artifacts/netsy/1.1.0/netsy_1.1.0_linux_amd64.tar.gz"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("expected: sha512:"), std::string::npos) << result.err;
  EXPECT_TRUE(stored(deps.root(), cache::ArtifactKind::vmconfig_artifact).empty());
  EXPECT_TRUE(stored(deps.root(), cache::ArtifactKind::vmconfig_manifest).empty());
  EXPECT_FALSE(fs::exists(deps.root() / "vmconfig"));
}

TEST(DepsDownload, AnArtifactLargerThanItsDeclaredSizeIsStoppedThereAndIndexesNothing) {
  // The server streams 32 MiB for an artifact the manifest declares much smaller.
  const std::string path = "artifacts/containerd/2.3.1/containerd-2.3.1-linux-amd64.tar.gz";
  const std::uint64_t streamed = 32 << 20;
  ServeOptions serve;
  serve.stream = {std::to_string(streamed) + ":containerd-2\\.3\\.1-linux-amd64\\.tar\\.gz$"};
  FixtureUpstream upstream({}, serve);
  const auto declared = fs::file_size(upstream.www() / path);
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("containerd-2.3.1-linux-amd64.tar.gz"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("the server sends more than its declared size (stopped; nothing was kept)\n  expected: " +
                            std::to_string(declared) + " bytes\n  got:      at least "),
            std::string::npos)
      << result.err;
  EXPECT_TRUE(stored(deps.root(), cache::ArtifactKind::vmconfig_artifact).empty());
  std::vector<AccessLogEntry> sent;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       (sent = upstream.requests("containerd-2\\.3\\.1-linux-amd64\\.tar\\.gz$")).empty() &&
       std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the server logs once its writes fail
  ASSERT_EQ(sent.size(), 1u) << "stopped, not retried";
  for (const auto& entry : sent) EXPECT_LT(entry.bytes, streamed / 2) << "the transfer went on after the declared size";
}

// os.boot (docs/deps.md "Boot kernel and initrd"): the kernel and initrd are read out of the
// fixture's real qcow2 image (GPT, ext4 partition 1), checked against the manifest, stored as
// vmconfig_boot_file rows laid out beside the image, verified by `deps verify`, carried by a
// bundle, and a second run does nothing.
TEST(DepsDownload, TheBootKernelAndInitrdAreReadOutOfTheImageStoredAndVerified) {
  if (!have_program("qemu-img")) GTEST_SKIP() << "qemu-img is not installed (scripts/setup installs qemu-utils)";
  FixtureUpstream upstream;
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "amd64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto& boot = manifest_entry(upstream, "vmconfig_knc_debian-13_amd64")["boot"];
  ASSERT_EQ(boot.size(), 2u);
  auto rows = stored(deps.root(), cache::ArtifactKind::vmconfig_boot_file);
  ASSERT_EQ(rows.size(), 2u) << "one row per file, shared by knc and knd";
  for (const auto& file : boot) {
    auto row = std::find_if(rows.begin(), rows.end(), [&](const auto& a) { return a.filename == file["file_name"]; });
    ASSERT_NE(row, rows.end()) << file;
    EXPECT_EQ(row->address, "os-image");
    EXPECT_EQ(row->version, "20260512-2476");
    EXPECT_EQ(row->platform, "linux_amd64");
    EXPECT_EQ(row->digest, file["sha256"]);
    EXPECT_EQ(row->upstream_digest, "sha256:" + file["sha256"].get<std::string>());
    EXPECT_EQ(row->trust, cache::Trust::checksum);
    for (const fs::path& base : {deps.root(), deps.root() / "arch" / "amd64"}) {
      auto view = base / "vmconfig/artifacts/os-image/20260512-2476/boot" / file["file_name"].get<std::string>();
      ASSERT_TRUE(fs::exists(view)) << view;
      EXPECT_EQ(file_digest_hex(view), file["sha256"]) << view;
    }
  }
  auto verify = deps.podplane({"deps", "verify"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find(": ok"), std::string::npos) << verify.out;

  auto again = deps.podplane({"deps", "download", "--arch", "amd64"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("All dependencies for knc_debian-13_amd64 are up to date (fetched 0, present 12)."), std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("No new artifacts: nothing was transferred."), std::string::npos) << again.out;

  // A store whose image came before its boot files were read (an older podplane): they are
  // read out of the stored image, with nothing downloaded.
  ASSERT_TRUE(have_program("sqlite3"));
  auto forget = run({"sqlite3", (deps.root() / "store" / "index.db").string(),
                     "DELETE FROM artifacts WHERE kind = 'vmconfig_boot_file'"});
  ASSERT_EQ(forget.exit_code, 0) << forget.err;
  ASSERT_TRUE(stored(deps.root(), cache::ArtifactKind::vmconfig_boot_file).empty());
  auto requests = artifact_requests(upstream);
  auto refill = deps.podplane({"deps", "download", "--arch", "amd64"});
  ASSERT_EQ(refill.exit_code, 0) << refill.out << refill.err;
  EXPECT_EQ(artifact_requests(upstream), requests) << "the image was downloaded again";
  EXPECT_NE(refill.out.find("vmconfig knc_debian-13_amd64: fetched 2, present 10."), std::string::npos) << refill.out;
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::vmconfig_boot_file).size(), 2u);

  // A bundle carries them to another store.
  TempDir other;
  auto create = deps.podplane({"bundle", "create", (other / "b.bundle").string()});
  ASSERT_EQ(create.exit_code, 0) << create.out << create.err;
  ProcessOptions import_options;
  import_options.env = {{"PODPLANE_DEPS_CACHE_DIR", (other / "deps").string()}};
  auto import = run_podplane({"bundle", "import", (other / "b.bundle").string(), "--allow-unsigned"}, import_options);
  ASSERT_EQ(import.exit_code, 0) << import.out << import.err;
  EXPECT_EQ(stored(other / "deps", cache::ArtifactKind::vmconfig_boot_file).size(), 2u);
  EXPECT_TRUE(fs::exists(other / "deps/vmconfig/artifacts/os-image/20260512-2476/boot" /
                         boot[0]["file_name"].get<std::string>()));
}

// What the index and the views hold, for "nothing already in the store is lost or changed".
std::string store_state(const fs::path& root) {
  std::string state;
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  for (const auto& a : store.artifacts())
    state += std::string(cache::to_string(a.kind)) + " " + a.address + " " + a.version + " " + a.platform + " " + a.filename +
             " " + a.digest + " " + a.upstream_digest + "\n";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    auto relative = fs::relative(entry.path(), root).string();
    if (relative.starts_with("store") || !entry.is_regular_file()) continue;
    state += relative + " " + file_digest_hex(entry.path()) + "\n";
  }
  return state;
}

// The image's own digest matches its manifest entry, but the kernel inside it is not the one
// os.boot names: the image is refused, nothing is indexed, and what the store held stays.
TEST(DepsDownload, AnImageWhoseKernelDiffersFromOsBootIsRefusedAndTheStoreIsUnchanged) {
  if (!have_program("qemu-img")) GTEST_SKIP() << "qemu-img is not installed (scripts/setup installs qemu-utils)";
  FixtureUpstream good;
  FixtureOptions fault;
  fault.boot_fault = "kernel-digest";
  FixtureUpstream tampered(fault);
  TempDir dir;
  auto deps_at = [&](const FixtureUpstream& upstream, std::vector<std::string> args) {
    ProcessOptions options;
    options.env = upstream.env(dir / "deps", dir / "cli.tfrc");
    options.unset_env = {"PODPLANE_ARCH"};
    return run_podplane(args, options);
  };
  // First an empty store: the image never enters it.
  auto refused = deps_at(tampered, {"deps", "download", "--arch", "arm64", "--kind", "knc", "--skip-seeds"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  const auto& kernel = manifest_entry(tampered, "vmconfig_knc_debian-13_arm64")["boot"][0];
  EXPECT_NE(refused.err.find("boot kernel " + kernel["path"].get<std::string>() + " (partition 1) of os-image 20260512-2476 "
                             "(debian-13-genericcloud-arm64-20260512-2476.qcow2) does not match the manifest's "
                             "os.boot.kernel.digest\n  expected: sha256:"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("\n  got:      sha256:" + kernel["sha256"].get<std::string>()), std::string::npos) << refused.err;
  {
    auto store = cache::Store::open(dir / "deps", cache::Store::Access::read_only);
    EXPECT_TRUE(store.artifacts().empty());
    for (const auto& item : manifest_entry(tampered, "vmconfig_knc_debian-13_arm64")["items"]) {
      if (item["name"] != "os-image") continue;
      EXPECT_FALSE(store.has_object(item["sha256"].get<std::string>())) << "the image was stored";
    }
    EXPECT_FALSE(store.has_object(kernel["sha256"].get<std::string>())) << "the kernel was stored";
  }
  EXPECT_FALSE(fs::exists(dir / "deps" / "vmconfig"));

  // Then a store that holds the same image from a good manifest: the tampered one changes nothing.
  auto filled = deps_at(good, {"deps", "download", "--arch", "arm64", "--kind", "knc", "--skip-seeds"});
  ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;
  const std::string before = store_state(dir / "deps");
  auto again = deps_at(tampered, {"deps", "download", "--arch", "arm64", "--kind", "knc", "--skip-seeds"});
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_NE(again.err.find("does not match the manifest's os.boot.kernel.digest"), std::string::npos) << again.err;
  EXPECT_EQ(store_state(dir / "deps"), before);
}

// A digest-pinned "image" that is no qcow2 at all: qemu-img's own words, nothing indexed.
TEST(DepsDownload, AnImageThatIsNoQcow2IsRefusedWithQemuImgsWords) {
  if (!have_program("qemu-img")) GTEST_SKIP() << "qemu-img is not installed (scripts/setup installs qemu-utils)";
  FixtureOptions fault;
  fault.boot_fault = "corrupt-qcow2";
  FixtureUpstream upstream(fault);
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "amd64", "--kind", "knd", "--skip-seeds"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("os-image 20260512-2476 (debian-13-genericcloud-amd64-20260512-2476.qcow2) is not a readable "
                            "qcow2 image: qemu-img failed (exit 1):\nqemu-img: "),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("Image is not in qcow2 format"), std::string::npos) << result.err;
  EXPECT_TRUE(stored(deps.root(), cache::ArtifactKind::vmconfig_artifact).empty());
}

// Seeds (docs/podplane-layout.md §3): seeds.json and every snapshot, sha512-checked, laid out where
// Podplane keeps them; the fixture image the manifests pin is stored with them.
TEST(DepsDownload, SeedsAndPinnedImagesAreStoredAndLaidOutAsPodplaneDoes) {
  FixtureUpstream upstream;
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "arm64", "--kind", "knc"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto& seeds = upstream.fixture()["seeds"];
  std::string version = seeds["version"];
  for (const auto& [name, snapshot] : seeds["snapshots"].items()) {
    auto view = deps.root() / "seeds" / "snapshots" / name / version / (name + ".netsy");
    ASSERT_TRUE(fs::exists(view)) << view;
    EXPECT_EQ("sha512:" + file_digest_hex(view, DigestAlgorithm::sha512), snapshot["digest"]);
  }
  EXPECT_TRUE(fs::exists(deps.root() / "seeds" / "manifests" / "seeds.json"));
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::seed_snapshot).size(), seeds["snapshots"].size());
  // The arm64 manifest pins the fixture image's arm64 platform: that manifest and its blobs only.
  auto manifests = stored(deps.root(), cache::ArtifactKind::image_manifest);
  ASSERT_EQ(manifests.size(), 1u);
  EXPECT_EQ(manifests[0].platform, "linux_arm64");
  EXPECT_EQ(manifests[0].filename, upstream.fixture()["image"]["manifests"]["linux/arm64"]["digest"]);
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::image_blob).size(), 3u) << "config, shared layer, own layer";
  // A warm rerun asks for neither again.
  auto before = upstream.requests("^/(seeds|v2)/").size();
  auto again = deps.podplane({"deps", "download", "--arch", "arm64", "--kind", "knc"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(upstream.requests("^/(seeds|v2)/").size(), before);
}

TEST(DepsDownload, ATamperedSeedIsRefusedInPodplanesWordsAndSkipSeedsSkipsThem) {
  FixtureOptions fixture;
  fixture.sharing = FixtureOptions::Sharing::private_copy;
  FixtureUpstream upstream(fixture);
  std::string version = upstream.fixture()["seeds"]["version"];
  auto file = upstream.www() / "seeds" / "minimal" / version / "minimal.netsy";
  auto bytes = read_file(file);
  bytes[10] ^= 0x01;
  write_file(file, bytes);
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  std::string want = upstream.fixture()["seeds"]["snapshots"]["minimal"]["digest"];
  EXPECT_NE(result.err.find("podplane seed file digest is sha512:"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(", want " + want), std::string::npos) << result.err;
  EXPECT_TRUE(stored(deps.root(), cache::ArtifactKind::seed_snapshot).empty());

  auto skipped = deps.podplane({"deps", "download", "--arch", "amd64", "--kind", "knc", "--skip-seeds"});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.out << skipped.err;
  EXPECT_TRUE(stored(deps.root(), cache::ArtifactKind::seed_snapshot).empty());
  EXPECT_FALSE(fs::exists(deps.root() / "seeds"));
}

TEST(DepsDownload, StatusSeesANewUpstreamManifest) {
  FixtureOptions fixture;
  fixture.sharing = FixtureOptions::Sharing::private_copy;
  FixtureUpstream upstream(fixture);
  VmconfigRun deps(upstream);
  auto before = deps.podplane({"deps", "status", "--arch", "amd64", "--kind", "knc"});
  EXPECT_EQ(before.out, "New packages are available to download.\n") << before.err;
  ASSERT_EQ(deps.podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"}).exit_code, 0);
  EXPECT_EQ(deps.podplane({"deps", "status", "--arch", "amd64", "--kind", "knc"}).out, "No new packages available.\n");
  upstream.rebuild({"--add-version", "vmconfig=1.0.0"});
  auto after = deps.podplane({"deps", "status", "--arch", "amd64", "--kind", "knc"});
  EXPECT_EQ(after.out, "New packages are available to download.\n") << after.err;
  // Fetching the new manifest adds to the store; the old manifest row stays.
  auto fetched = deps.podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.out << fetched.err;
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::vmconfig_manifest).size(), 2u);
  EXPECT_NE(read_file(deps.root() / "vmconfig/manifests/vmconfig_knc_debian-13_amd64.json").find("\"1.0.0\""),
            std::string::npos);
}

TEST(DepsDownload, BothArchesAtOnce) {
  FixtureUpstream upstream;
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "amd64,arm64", "--kind", "knd"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(fs::exists(deps.root() / "vmconfig/manifests/vmconfig_knd_debian-13_arm64.json"));
  EXPECT_TRUE(fs::exists(deps.root() / "vmconfig/artifacts/zot/2.1.17/zot-linux-arm64"));
  EXPECT_TRUE(fs::exists(deps.root() / "vmconfig/artifacts/zot/2.1.17/zot-linux-amd64"));
  // kubelet's two builds share Podplane's plain path; each arch's base holds its own.
  for (const char* arch : {"amd64", "arm64"}) {
    std::string name = std::string("vmconfig_knd_debian-13_") + arch;
    for (const auto& item : manifest_entry(upstream, name)["items"]) {
      if (item["name"] != "kubelet") continue;
      auto view = deps.root() / "arch" / arch / "vmconfig/artifacts/kubelet" / item["version"].get<std::string>() /
                  item["filename"].get<std::string>();
      ASSERT_TRUE(fs::exists(view)) << view;
      EXPECT_EQ(file_digest_hex(view), item["sha256"]) << view;
      if (std::string(arch) == "amd64") {
        EXPECT_EQ(file_digest_hex(deps.root() / "vmconfig/artifacts/kubelet" / item["version"].get<std::string>() /
                                            item["filename"].get<std::string>()),
                  item["sha256"])
            << "the plain path keeps amd64's build (docs/mirror.md)";
      }
    }
  }
  auto verify = deps.podplane({"deps", "verify"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}

// ---- hostile upstreams: every retry loop ends (budgets: docs/download.md) ----------------------

ProcessResult podplane_bounded(const FixtureUpstream& upstream, const fs::path& root, const fs::path& cli_config,
                               const std::vector<std::string>& args) {
  ProcessOptions options;
  options.env = upstream.env(root, cli_config);
  options.env["PODPLANE_HTTP_RETRIES"] = "2";
  options.env["PODPLANE_HTTP_BACKOFF"] = "10ms";
  options.env["PODPLANE_HTTP_LOW_SPEED_TIME"] = "1s";
  options.unset_env = {"PODPLANE_ARCH"};
  // A run that would never end is killed and fails the test instead of hanging the suite.
  std::vector<std::string> argv{"timeout", "-s", "KILL", "120", podplane_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

TEST(DepsDownload, ArtifactDripEnds) {
  ServeOptions serve;
  serve.drip = {"1:containerd-2\\.3\\.1-linux-amd64\\.tar\\.gz$"};
  FixtureUpstream upstream({}, serve);
  TempDir dir;
  auto cli = upstream.write_cli_config(dir / "cli.tfrc");
  // knc and knd both list the artifact: it is tried within one budget, not once per manifest.
  auto result = podplane_bounded(upstream, dir / "deps", cli, {"deps", "download", "--arch", "amd64"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find(upstream.url("/artifacts/containerd/2.3.1/containerd-2.3.1-linux-amd64.tar.gz")),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("too slow"), std::string::npos) << result.err;
  EXPECT_EQ(upstream.requests("containerd-2\\.3\\.1-linux-amd64").size(), 3u);
  EXPECT_TRUE(stored(dir / "deps", cache::ArtifactKind::vmconfig_artifact).empty());
}

TEST(DepsDownload, ManifestThatLiesAboutItsLengthEnds) {
  ServeOptions serve;
  serve.lie_length = {"100000000:10:^/manifests/"};
  FixtureUpstream upstream({}, serve);
  TempDir dir;
  auto cli = upstream.write_cli_config(dir / "cli.tfrc");
  auto result = podplane_bounded(upstream, dir / "deps", cli, {"deps", "download", "--arch", "amd64", "--kind", "knc"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find(upstream.url("/manifests/vmconfig_knc_debian-13_amd64.json")), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("3 attempts"), std::string::npos) << result.err;
  // seeds.json is asked alongside the vmconfig manifest (and lies as well): only the
  // manifest's own attempts are counted.
  EXPECT_EQ(upstream.requests("^/manifests/vmconfig_").size(), 3u);
}

std::size_t held_too_long(const FixtureUpstream& upstream) {
  std::size_t count = 0;
  for (const auto& entry : upstream.access_log()) count += entry.fault == "hold-timeout" ? 1 : 0;
  return count;
}

// `deps images --arch all` of the fixture's multi-arch image, from `upstream`.
ProcessResult deps_images_of_fixture_image(const FixtureUpstream& upstream, const VmconfigRun& deps) {
  TempDir dir;
  const std::string host = upstream.base_url().substr(upstream.base_url().find("://") + 3);
  write_file(dir / "images.txt", host + "/podplane-fixture/pause:3.10.2\n");
  return deps.podplane({"deps", "images", "-f", (dir / "images.txt").string(), "--arch", "all"});
}

// The images a manifest pins come in the same run as its artifacts: the server holds the amd64
// os image until an image blob is in flight too. A run that fetched the images after the
// artifacts would hold it 20 s and log "hold-timeout".
TEST(DepsDownload, ImagesShareOneRunWithTheArtifacts) {
  ServeOptions serve;
  serve.hold_until = {"2:(/v2/.*/blobs/|amd64-[0-9-]+\\.qcow2$)"};
  FixtureUpstream upstream({}, serve);
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "amd64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(held_too_long(upstream), 0u) << "the os image waited for the images";
  EXPECT_FALSE(upstream.requests("/v2/.*/blobs/", 200).empty());
  EXPECT_FALSE(stored(deps.root(), cache::ArtifactKind::image_blob).empty());
  EXPECT_FALSE(stored(deps.root(), cache::ArtifactKind::vmconfig_boot_file).empty());
}

// The platform manifests of one index are fetched at once: the server holds them until all
// three are in flight (one at a time would be held 20 s each and logged "hold-timeout").
TEST(DepsDownload, ImagePlatformManifestsOfAnIndexComeAtOnce) {
  ServeOptions serve;
  serve.hold_until = {"3:/v2/.*/manifests/sha256:"};
  FixtureUpstream upstream({}, serve);
  VmconfigRun deps(upstream);
  auto result = deps_images_of_fixture_image(upstream, deps);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(held_too_long(upstream), 0u) << "the platform manifests came one after another";
  EXPECT_EQ(upstream.requests("/v2/.*/manifests/sha256:", 200).size(), 3u);
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::image_manifest).size(), 3u);
}

// The lookups beside an image's top manifest (its referrers, cosign's .att and .sbom tags)
// are made at once: the server holds them until all three are in flight (one after another
// each would be held 20 s and logged "hold-timeout"). The fixture has none of them: three 404s.
TEST(DepsDownload, ImageAttachmentLookupsComeAtOnce) {
  ServeOptions serve;
  serve.hold_until = {"3:/v2/.*/(referrers/sha256:|manifests/sha256-[0-9a-f]+\\.(att|sbom)$)"};
  FixtureUpstream upstream({}, serve);
  VmconfigRun deps(upstream);
  auto result = deps_images_of_fixture_image(upstream, deps);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(held_too_long(upstream), 0u) << "the lookups beside the top manifest came one after another";
  EXPECT_EQ(upstream.requests("/v2/.*/referrers/sha256:", 404).size(), 1u);
  EXPECT_EQ(upstream.requests("/v2/.*/manifests/sha256-[0-9a-f]+\\.(att|sbom)$", 404).size(), 2u);
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::image_manifest).size(), 3u);
}

// Nor do the image's platform manifests wait for them: the server holds the referrers request
// until it and the three platform manifests are in flight together.
TEST(DepsDownload, ImagePlatformManifestsDoNotWaitForTheReferrers) {
  ServeOptions serve;
  serve.hold_until = {"4:/v2/.*/(referrers|manifests)/sha256:"};
  FixtureUpstream upstream({}, serve);
  VmconfigRun deps(upstream);
  auto result = deps_images_of_fixture_image(upstream, deps);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(held_too_long(upstream), 0u) << "the platform manifests waited for the referrers";
  EXPECT_EQ(upstream.requests("/v2/.*/referrers/sha256:", 404).size(), 1u);
  EXPECT_EQ(upstream.requests("/v2/.*/manifests/sha256:", 200).size(), 3u);
  EXPECT_EQ(stored(deps.root(), cache::ArtifactKind::image_manifest).size(), 3u);
}

// ---- a run killed with SIGKILL ------------------------------------------------------------------

// The directories in store/tmp: a run's scratch, where its sha512 items and os images stream so
// that each becomes its object without a copy.
std::vector<fs::path> scratch_dirs_in_store(const fs::path& root) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (fs::directory_iterator it(root / "store" / "tmp", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) dirs.push_back(it->path());
  }
  return dirs;
}

// No handler runs on SIGKILL, so the killed run's scratch directory (on a real site, os images
// of hundreds of MiB) stays in store/tmp. While the run lived, `deps verify` called it work in
// progress; once the run is gone it names it garbage for `podplane deps gc`, and that command,
// run as printed, removes it.
TEST(DepsDownload, AKilledRunsScratchInTheStoreIsGarbageThatGcRemoves) {
  ServeOptions serve;
  // A sha512 item: 16 KiB in about 55 s, so that a loaded machine's `deps verify` below still
  // runs while the download lives (at 2000 bytes/s, 8 s, a busy CI runner saw the run finish).
  serve.drip = {"300:netsy_1\\.1\\.0_linux_amd64\\.tar\\.gz$"};
  FixtureUpstream upstream({}, serve);
  TempDir dir;
  const fs::path root = dir / "deps";
  ProcessOptions options;
  options.env = upstream.env(root, upstream.write_cli_config(dir / "cli.tfrc"));
  // Its scratch outside the store (seeds, boot files) stays in the test's dir, not in /tmp.
  options.env["TMPDIR"] = (dir / "tmp").string();
  options.unset_env = {"PODPLANE_ARCH"};
  // Below the default 1024 bytes/s for 30 s the client abandons a download; the drip is slower.
  options.env["PODPLANE_HTTP_LOW_SPEED_LIMIT"] = "1";
  fs::create_directories(dir / "tmp");

  const pid_t pid = start_podplane({"deps", "download", "--arch", "amd64", "--kind", "knc"}, options);
  // Bounded wait (60 s) for the dripping item to stream into the run's scratch directory.
  bool streaming = false;
  for (int i = 0; i < 600 && !streaming; ++i) {
    streaming = !upstream.requests("netsy_1\\.1\\.0_linux_amd64").empty() && !scratch_dirs_in_store(root).empty();
    if (!streaming) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto live = run_podplane({"deps", "verify", "--json"}, options);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(streaming) << "the run never streamed its sha512 item";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";
  const auto left = scratch_dirs_in_store(root);
  ASSERT_EQ(left.size(), 1u);
  const std::string scratch = left.front().string();

  const auto live_report = json::parse(live.out);
  EXPECT_NE(live_report["notes"].dump().find("scratch directory of a running podplane: " + scratch), std::string::npos)
      << live_report.dump(2);
  EXPECT_EQ(live_report["garbage"].dump().find(scratch), std::string::npos) << live_report.dump(2);

  auto verify = run_podplane({"deps", "verify"}, options);
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("garbage: scratch directory " + scratch + "\n"), std::string::npos) << verify.out;
  const std::string fix = "podplane deps gc";
  ASSERT_NE(verify.out.find("garbage item(s) for `" + fix + "`"), std::string::npos) << verify.out;

  auto dry = run_podplane({"deps", "gc", "--dry-run"}, options);
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("would remove scratch directory " + scratch + "\n"), std::string::npos) << dry.out;
  EXPECT_TRUE(fs::exists(scratch)) << "--dry-run removes nothing";

  auto gc = run_podplane({"deps", "gc"}, options);  // the fix, as printed
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed scratch directory " + scratch + "\n"), std::string::npos) << gc.out;
  EXPECT_NE(gc.out.find(" 1 scratch directory(ies), "), std::string::npos) << gc.out;
  EXPECT_FALSE(fs::exists(scratch));
  auto after = run_podplane({"deps", "verify", "--json"}, options);
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;
  EXPECT_TRUE(json::parse(after.out)["garbage"].empty()) << "gc removed all that verify named garbage\n" << after.out;
}

TEST(DepsDownload, UnknownArchIsAUsageError) {
  FixtureUpstream upstream;
  VmconfigRun deps(upstream);
  auto result = deps.podplane({"deps", "download", "--arch", "riscv64"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("unsupported arch \"riscv64\""), std::string::npos) << result.err;
}

}  // namespace
}  // namespace podplane::test
