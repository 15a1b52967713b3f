// `podplane deps tools` end to end against loopback release hosts laid out as
// releases.hashicorp.com and OpenTofu's GitHub releases, signed by a fixture gpg key that the
// test pins through PODPLANE_TOOLS_KEYRING_FOR_TESTS: what is fetched and indexed, a warm rerun
// that asks nothing, and a wrong signature, a SHA256SUMS mismatch and a truncated zip refused
// with nothing indexed. Where the machine has a real terraform, the fixture release carries it
// and `tools install` puts it in place offline, and it runs.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <functional>
#include <regex>
#include <sstream>

#include "base/digest.hpp"
#include "cache/store.hpp"
#include "cache/tool_releases.hpp"
#include "tests/support/gpg_keys.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"
#include "tests/support/zip_fixture.hpp"

namespace podplane::test {
namespace {

constexpr const char* kRealTerraform = "/usr/local/bin/terraform";

// Zips `binary` (a file) as the release's one entry, stored as the projects ship it (mode 0755).
// The program zipped as its project ships it; with `zeros`, the entry is that many zero bytes
// instead, streamed (a zip bomb: a few hundred KiB that expand to what `zeros` says).
void zip_binary(const fs::path& zip, const std::string& entry, const fs::path& binary, std::uint64_t zeros = 0) {
  const char* script = R"PY(
import sys, zipfile
zip, name, binary, zeros = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 6))
info.external_attr = 0o100755 << 16
info.create_system = 3
info.compress_type = zipfile.ZIP_DEFLATED
with zipfile.ZipFile(zip, "w", compresslevel=9) as z, z.open(info, "w", force_zip64=True) as out:
    if zeros:
        block = bytes(1 << 20)
        for _ in range(zeros >> 20):
            out.write(block)
    else:
        with open(binary, "rb") as f:
            out.write(f.read())
)PY";
  auto result = run({"python3", "-c", script, zip.string(), entry, binary.string(), std::to_string(zeros)});
  if (result.exit_code != 0) throw std::runtime_error("python3 zipfile failed: " + result.err);
}

// One release host on the fixture upstream, under its own path prefix (so that tests sharing
// the fixture's tree never see each other's releases).
class ReleaseHost {
 public:
  ReleaseHost() {
    write_file(dir_ / "keyring.asc", gpg_keys().armor("rsa"));
    upstream_.write_cli_config(dir_ / "cli.tfrc");
  }
  fs::path root() const { return dir_ / "deps"; }
  std::string prefix() const { return "/releases-" + dir_.path().filename().string(); }
  const FixtureUpstream& upstream() const { return upstream_; }

  struct Release {
    std::string engine = "terraform";
    std::string version = "1.9.8";
    std::vector<std::string> platforms = {"linux_amd64"};
    std::string signer = "rsa";
    fs::path binary{};                 // the program in every zip; a small script when empty
    std::uint64_t program_zeros = 0;   // else: a program of this many zero bytes (a zip bomb)
    std::string listed_wrong{};        // a zip whose SHA256SUMS line names other bytes
    std::string truncated{};           // a zip served cut short (SHA256SUMS names the whole)
  };

  fs::path release_dir(const Release& r) const {
    auto www = upstream_.www() / prefix().substr(1);
    if (r.engine == "terraform") return www / "terraform" / r.version;
    return www / "opentofu" / "opentofu" / "releases" / "download" / ("v" + r.version);
  }

  // Publishes `r` as its project would; returns the sha256 of each zip by platform.
  std::map<std::string, std::string> publish(const Release& r) {
    auto dir = release_dir(r);
    fs::create_directories(dir);
    fs::path binary = r.binary;
    if (binary.empty()) {
      binary = dir_ / ("program-" + r.engine + "-" + r.version);
      write_file(binary, "#!/bin/sh\necho '" + r.engine + " v" + r.version + "'\n");
    }
    std::string sums;
    std::map<std::string, std::string> digests;
    for (const auto& platform : r.platforms) {
      const std::string name = r.engine + "_" + r.version + "_" + platform + ".zip";
      zip_binary(dir / name, r.engine, binary, r.program_zeros);
      std::string bytes = read_file(dir / name);
      digests[platform] = sha256_hex(bytes);
      sums += (name == r.listed_wrong ? sha256_hex("other bytes") : digests[platform]) + "  " + name + "\n";
      if (name == r.truncated) write_file(dir / name, bytes.substr(0, bytes.size() / 2));
    }
    const std::string sums_name = r.engine + "_" + r.version + "_SHA256SUMS";
    write_file(dir / sums_name, sums);
    write_file(dir / (sums_name + (r.engine == "tofu" ? ".gpgsig" : ".sig")), gpg_keys().sign(r.signer, sums));
    return digests;
  }

  // Lists `versions` in the engine's release index, in the shape its project serves:
  // releases.hashicorp.com's terraform/index.json, or OpenTofu's get.opentofu.org/tofu/api.json.
  void publish_index(const std::string& engine, const std::vector<std::string>& versions) const {
    auto www = upstream_.www() / prefix().substr(1);
    if (engine == "terraform") {
      std::string listed;
      for (const auto& v : versions)
        listed += std::string(listed.empty() ? "" : ",") + "\"" + v + "\":{\"name\":\"terraform\",\"version\":\"" + v + "\"}";
      fs::create_directories(www / "terraform");
      write_file(www / "terraform" / "index.json", "{\"name\":\"terraform\",\"versions\":{" + listed + "}}");
    } else {
      std::string listed;
      for (const auto& v : versions) listed += std::string(listed.empty() ? "" : ",") + "{\"id\":\"" + v + "\",\"files\":[]}";
      fs::create_directories(www / "tofu");
      write_file(www / "tofu" / "api.json", "{\"versions\":[" + listed + "]}");
    }
  }

  std::map<std::string, std::string> env(bool test_keyring = true) const {
    auto env = upstream_.env(root(), dir_ / "cli.tfrc");
    env["PODPLANE_TERRAFORM_RELEASES_URL"] = upstream_.url(prefix());
    env["PODPLANE_TOFU_RELEASES_URL"] = upstream_.url(prefix());
    env["PODPLANE_TOFU_VERSIONS_URL"] = upstream_.url(prefix() + "/tofu/api.json");
    if (test_keyring) env["PODPLANE_TOOLS_KEYRING_FOR_TESTS"] = (dir_ / "keyring.asc").string();
    return env;
  }

  ProcessResult podplane(const std::vector<std::string>& args, bool test_keyring = true) const {
    ProcessOptions options;
    options.env = env(test_keyring);
    return run_podplane(args, options);
  }

  std::vector<cache::Artifact> rows(std::optional<cache::ArtifactKind> kind = std::nullopt) const {
    if (!fs::exists(root() / "store" / "index.db")) return {};
    auto store = cache::Store::open(root(), cache::Store::Access::read_only);
    return store.artifacts({.kind = kind});
  }

  const TempDir& dir() const { return dir_; }

 private:
  FixtureUpstream upstream_;
  TempDir dir_;
};

TEST(DepsTools, FetchesATerraformReleaseVerifiesItsSignatureAndIndexesEveryFile) {
  ReleaseHost host;
  auto digests = host.publish({.platforms = {"linux_amd64", "linux_arm64"}});
  auto result = host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8", "--platform",
                               "linux_amd64,linux_arm64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("terraform 1.9.8 linux_amd64: fetched terraform_1.9.8_linux_amd64.zip (sha256:" +
                            digests["linux_amd64"]),
            std::string::npos)
      << result.out;

  auto archives = host.rows(cache::ArtifactKind::tool_archive);
  ASSERT_EQ(archives.size(), 2u);
  auto store = cache::Store::open(host.root(), cache::Store::Access::read_only);
  for (const auto& archive : archives) {
    EXPECT_EQ(archive.address, "terraform");
    EXPECT_EQ(archive.digest, digests[archive.platform]) << archive.platform;
    EXPECT_EQ(archive.trust, cache::Trust::signed_upstream);
    EXPECT_EQ(archive.upstream_url, host.upstream().url(host.prefix() + "/terraform/1.9.8/" + archive.filename));
    auto provenance = store.provenance_of(archive.id);
    ASSERT_EQ(provenance.size(), 1u);
    EXPECT_EQ(provenance[0].key_fingerprint, gpg_keys().fingerprint("rsa"));
    EXPECT_EQ(provenance[0].result, "signed");
  }
  auto sums = host.rows(cache::ArtifactKind::tool_shasums);
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums[0].filename, "terraform_1.9.8_SHA256SUMS");
  auto signature = host.rows(cache::ArtifactKind::tool_signature);
  ASSERT_EQ(signature.size(), 1u);
  EXPECT_EQ(signature[0].filename, "terraform_1.9.8_SHA256SUMS.sig");

  // deps ls lists them; deps verify rehashes them and checks the signature again offline.
  auto ls = host.podplane({"deps", "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_NE(ls.out.find("tool_archive"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("linux_arm64"), std::string::npos) << ls.out;
  auto verify = host.podplane({"deps", "verify"});
  ASSERT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("2 engine release zips against 1 release signatures: ok"), std::string::npos) << verify.out;

  // Additive: a rerun asks the release host nothing.
  auto before = host.upstream().requests("^" + host.prefix() + "/").size();
  auto again = host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8", "--platform",
                              "linux_amd64,linux_arm64"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("terraform 1.9.8: up to date (2 platform(s) stored)"), std::string::npos) << again.out;
  EXPECT_EQ(host.upstream().requests("^" + host.prefix() + "/").size(), before);
}

TEST(DepsTools, FetchesAnOpenTofuReleaseFromTheGitHubLayout) {
  ReleaseHost host;
  auto digests = host.publish({.engine = "tofu", .version = "1.8.5"});
  auto result = host.podplane({"deps", "tools", "--engine", "tofu", "--version", "1.8.5"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto archives = host.rows(cache::ArtifactKind::tool_archive);
  ASSERT_EQ(archives.size(), 1u);
  EXPECT_EQ(archives[0].filename, "tofu_1.8.5_linux_amd64.zip");
  EXPECT_EQ(archives[0].digest, digests["linux_amd64"]);
  EXPECT_EQ(archives[0].upstream_url,
            host.upstream().url(host.prefix() + "/opentofu/opentofu/releases/download/v1.8.5/tofu_1.8.5_linux_amd64.zip"));
  auto signature = host.rows(cache::ArtifactKind::tool_signature);
  ASSERT_EQ(signature.size(), 1u);
  EXPECT_EQ(signature[0].filename, "tofu_1.8.5_SHA256SUMS.gpgsig");
}

// Without --version: the newest release upstream lists that Podplane's stacks allow
// (required_version ">= 1.6.0"), never a prerelease, and never a name that is not a version.
TEST(DepsToolsDefaults, TheNewestReleaseThatPodplanesStacksAllow) {
  ReleaseHost host;
  host.publish({.version = "1.5.7"});
  auto digests = host.publish({.version = "1.9.8"});
  host.publish_index("terraform", {"1.5.7", "1.9.8", "1.10.0-rc1", "not-a-version"});
  auto result = host.podplane({"deps", "tools", "--engine", "terraform"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("terraform: 1.9.8, the newest release that every required_version allows (>= 1.6.0 in "
                            "Podplane's stacks)"),
            std::string::npos)
      << result.out;
  auto archives = host.rows(cache::ArtifactKind::tool_archive);
  ASSERT_EQ(archives.size(), 1u);
  EXPECT_EQ(archives[0].version, "1.9.8");
  EXPECT_EQ(archives[0].digest, digests["linux_amd64"]);

  // A cluster config chooses its cloud's stack, which asks the same.
  const fs::path cluster = source_dir() / "tests" / "data" / "generator" / "proxmox" / "podplane.cluster.jsonc";
  auto config = host.podplane({"deps", "tools", "--engine", "terraform", "-f", cluster.string()});
  EXPECT_NE(config.out.find("terraform: 1.9.8, the newest release that every required_version allows (>= 1.6.0 in "
                            "Podplane's proxmox stack, "),
            std::string::npos)
      << config.out << config.err;
}

// --stack roots' required_version choose, from OpenTofu's index; one that nothing satisfies is
// refused, naming the root, with nothing indexed.
TEST(DepsToolsDefaults, EachStackRootsRequiredVersionChooses) {
  ReleaseHost host;
  host.publish({.engine = "tofu", .version = "1.7.3"});
  host.publish({.engine = "tofu", .version = "1.8.5"});
  host.publish_index("tofu", {"1.8.5", "1.7.3", "1.6.2"});
  const fs::path root = host.dir() / "stack";
  fs::create_directories(root);
  write_file(root / "versions.tf", "terraform {\n  required_version = \"~> 1.7.0\"\n}\n");
  auto result = host.podplane({"deps", "tools", "--engine", "tofu", "--stack", root.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("tofu: 1.7.3, the newest release that every required_version allows (~> 1.7.0 in " + root.string() + ")"),
            std::string::npos)
      << result.out;
  ASSERT_EQ(host.rows(cache::ArtifactKind::tool_archive).size(), 1u);

  write_file(root / "versions.tf", "terraform {\n  required_version = \">= 2.0\"\n}\n");
  auto none = host.podplane({"deps", "tools", "--engine", "tofu", "--stack", root.string()});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("no tofu release listed at " + host.upstream().url(host.prefix() + "/tofu/api.json") +
                          " satisfies \">= 2.0\" (" + root.string() + "): name one with --version"),
            std::string::npos)
      << none.err;
  EXPECT_EQ(host.rows(cache::ArtifactKind::tool_archive).size(), 1u);

  auto both = host.podplane({"deps", "tools", "--engine", "tofu", "--stack", root.string(), "--version", "1.8.5"});
  EXPECT_EQ(both.exit_code, 2) << both.err;  // a usage error: --stack chooses the version
}

// Without --engine: the engine on PATH, as `deps tf` chooses it, and the run says so.
TEST(DepsToolsDefaults, TheEngineOnPath) {
  ReleaseHost host;
  host.publish({.engine = "tofu", .version = "1.8.5"});
  const fs::path bin = host.dir() / "bin";
  fs::create_directories(bin);
  write_file(bin / "tofu", "#!/bin/sh\nexit 0\n");
  fs::permissions(bin / "tofu", fs::perms::owner_all);
  ProcessOptions options;
  options.env = host.env();
  options.env["PATH"] = bin.string() + ":/usr/bin:/bin";
  options.unset_env = {"PODPLANE_TF_CMD"};
  auto result = run_podplane({"deps", "tools", "--version", "1.8.5"}, options);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("engine: tofu (found " + (bin / "tofu").string() + "; pass --engine to choose)"), std::string::npos)
      << result.out;
  auto archives = host.rows(cache::ArtifactKind::tool_archive);
  ASSERT_EQ(archives.size(), 1u);
  EXPECT_EQ(archives[0].filename, "tofu_1.8.5_linux_amd64.zip");
}

// Each refusal leaves the rows of an earlier good fetch as they were and adds none of its own.
class DepsToolsRefuses : public ::testing::Test {
 protected:
  void SetUp() override {
    host.publish({.version = "1.9.7"});
    auto good = host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.7"});
    ASSERT_EQ(good.exit_code, 0) << good.out << good.err;
    rows_before = host.rows().size();
  }
  void expect_refused(const std::vector<std::string>& args, const std::string& message, bool test_keyring = true) {
    auto result = host.podplane(args, test_keyring);
    EXPECT_NE(result.exit_code, 0) << result.out;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_EQ(host.rows().size(), rows_before) << "nothing of a refused release is indexed";
    for (const auto& row : host.rows()) EXPECT_EQ(row.version, "1.9.7") << row.filename;
  }
  ReleaseHost host;
  std::size_t rows_before = 0;
};

TEST_F(DepsToolsRefuses, ASignatureByAnotherKey) {
  host.publish({.signer = "wrong"});
  expect_refused({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"},
                 "signature check failed for terraform_1.9.8_SHA256SUMS");
}

TEST_F(DepsToolsRefuses, TheFixtureKeyWithoutTheTestSettingForTheReleaseKeyIsPinned) {
  host.publish({});
  expect_refused({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"},
                 "signature check failed for terraform_1.9.8_SHA256SUMS", /*test_keyring=*/false);
}

// The refusal names the pinned key(s) it wanted and the key that signed, and librnp's own log
// stays off stderr: with the test keyring, and with the real pinned HashiCorp key.
TEST_F(DepsToolsRefuses, ASignatureByAnotherKeyNamesThePinnedAndTheSigningKeys) {
  host.publish({.signer = "wrong"});
  auto result = host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"});
  EXPECT_NE(result.exit_code, 0) << result.out;
  EXPECT_NE(result.err.find("expected: a signature by the keys of PODPLANE_TOOLS_KEYRING_FOR_TESTS (a test setting, in place "
                            "of the pinned release key of terraform): " + gpg_keys().fingerprint("rsa")),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("got:      a signature by " + gpg_keys().fingerprint("wrong")), std::string::npos) << result.err;
  EXPECT_EQ(librnp_log_lines(result.err), std::vector<std::string>{}) << result.err;

  auto pinned = host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"}, /*test_keyring=*/false);
  EXPECT_NE(pinned.exit_code, 0) << pinned.out;
  EXPECT_NE(pinned.err.find("expected: a signature by the pinned release key of terraform: " +
                            std::string(cache::pinned_tool_key_fingerprint(lockfile::Engine::terraform))),
            std::string::npos)
      << pinned.err;
  EXPECT_NE(pinned.err.find("got:      a signature by " + gpg_keys().fingerprint("wrong")), std::string::npos) << pinned.err;
  EXPECT_EQ(librnp_log_lines(pinned.err), std::vector<std::string>{}) << pinned.err;
}

TEST_F(DepsToolsRefuses, AZipThatIsNotTheOneSha256sumsLists) {
  host.publish({.platforms = {"linux_amd64", "linux_arm64"}, .listed_wrong = "terraform_1.9.8_linux_arm64.zip"});
  expect_refused({"deps", "tools", "--engine", "terraform", "--version", "1.9.8", "--platform", "linux_amd64,linux_arm64"},
                 "terraform_1.9.8_linux_arm64.zip");
}

TEST_F(DepsToolsRefuses, ATruncatedZip) {
  host.publish({.truncated = "terraform_1.9.8_linux_amd64.zip"});
  expect_refused({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"}, "terraform_1.9.8_linux_amd64.zip");
}

TEST_F(DepsToolsRefuses, APlatformTheReleaseDoesNotHave) {
  host.publish({});
  expect_refused({"deps", "tools", "--engine", "terraform", "--version", "1.9.8", "--platform", "plan9_amd64"},
                 "terraform_1.9.8_SHA256SUMS lists no terraform_1.9.8_plan9_amd64.zip");
}

// Runs podplane on another deps root (the air-gapped side), with the fixture key pinned.
ProcessResult podplane_at(const ReleaseHost& host, const fs::path& root, const std::vector<std::string>& args,
                          std::vector<std::string> unset_env = {}) {
  ProcessOptions options;
  options.env = host.env();
  options.env["PODPLANE_DEPS_CACHE_DIR"] = root.string();
  for (const auto& name : unset_env) options.env.erase(name);
  options.unset_env = std::move(unset_env);
  return run_podplane(args, options);
}

// Releases travel in bundles, full and delta, and are checked again as they are imported.
TEST(DepsTools, ReleasesTravelInBundlesAndAreVerifiedAgainAtImport) {
  ReleaseHost host;
  host.publish({});
  ASSERT_EQ(host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"}).exit_code, 0);
  const fs::path site = host.dir() / "site";
  const fs::path full = host.dir() / "full.bundle";
  auto created = host.podplane({"bundle", "create", full.string()});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  auto imported = podplane_at(host, site, {"bundle", "import", "--allow-unsigned", full.string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  auto site_store = [&] { return cache::Store::open(site, cache::Store::Access::read_only); };
  {
    auto store = site_store();
    auto archives = store.artifacts({.kind = cache::ArtifactKind::tool_archive});
    ASSERT_EQ(archives.size(), 1u);
    ASSERT_EQ(store.provenance_of(archives[0].id).size(), 1u);
    EXPECT_EQ(store.provenance_of(archives[0].id)[0].key_fingerprint, gpg_keys().fingerprint("rsa"));
  }

  // A delta against the site's inventory carries only the new release.
  const fs::path inventory = host.dir() / "site.inventory";
  ASSERT_EQ(podplane_at(host, site, {"bundle", "inventory", "-o", inventory.string()}).exit_code, 0);
  host.publish({.version = "1.10.0"});
  ASSERT_EQ(host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.10.0"}).exit_code, 0);
  const fs::path delta = host.dir() / "delta.bundle";
  auto cut = host.podplane({"bundle", "create", delta.string(), "--since", inventory.string()});
  ASSERT_EQ(cut.exit_code, 0) << cut.out << cut.err;
  auto applied = podplane_at(host, site, {"bundle", "import", "--allow-unsigned", delta.string()});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_EQ(site_store().artifacts({.kind = cache::ArtifactKind::tool_archive}).size(), 2u);

  // A site that pins only the real release keys refuses the fixture's signature at import.
  const fs::path other = host.dir() / "other-site";
  auto refused = podplane_at(host, other, {"bundle", "import", "--allow-unsigned", full.string()},
                             {"PODPLANE_TOOLS_KEYRING_FOR_TESTS"});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE((refused.out + refused.err).find("engine release not verified: terraform 1.9.8 terraform_1.9.8_linux_amd64.zip"),
            std::string::npos)
      << refused.out << refused.err;
  if (fs::exists(other / "store" / "index.db")) {
    EXPECT_TRUE(cache::Store::open(other, cache::Store::Access::read_only).artifacts({.kind = cache::ArtifactKind::tool_archive}).empty());
  }
}

TEST(ToolsInstall, WritesTheProgramFromTheStoreOnlyAfterItsDigestChecks) {
  ReleaseHost host;
  host.publish({});
  ASSERT_EQ(host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"}).exit_code, 0);
  const fs::path bin = host.dir() / "bin";
  auto installed = host.podplane({"tools", "install", "terraform", "1.9.8", "--to", bin.string(), "--platform", "linux_amd64"});
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  struct stat info {};
  ASSERT_EQ(::stat((bin / "terraform").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0755u);
  EXPECT_EQ(run({(bin / "terraform").string()}).out, "terraform v1.9.8\n");

  // A release the store lacks names the command that fetches it; nothing is written.
  const fs::path empty = host.dir() / "empty";
  auto missing = host.podplane({"tools", "install", "terraform", "1.2.3", "--to", empty.string(), "--platform", "linux_amd64"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("terraform_1.2.3_linux_amd64.zip is not in the store"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(empty));

  // A damaged object in the store is found before anything is written.
  auto store = cache::Store::open(host.root(), cache::Store::Access::read_only);
  auto archive = store.artifacts({.kind = cache::ArtifactKind::tool_archive}).at(0);
  const fs::path object = store.object_path(archive.digest);
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  std::string bytes = read_file(object);
  bytes[bytes.size() / 2] ^= 0x01;
  write_file(object, bytes);
  const fs::path damaged = host.dir() / "damaged";
  auto refused = host.podplane({"tools", "install", "terraform", "1.9.8", "--to", damaged.string(), "--platform", "linux_amd64"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("hash mismatch for terraform_1.9.8_linux_amd64.zip in the store"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(damaged / "terraform"));
}

// What stands where the program goes and is not a regular file is refused, never written
// through: a symbolic link (to a file elsewhere, left as it was), a FIFO (a write would hang)
// and, as root, a device node.
TEST(ToolsInstall, RefusesWhatIsNotARegularFileWhereTheProgramGoes) {
  ReleaseHost host;
  host.publish({});
  ASSERT_EQ(host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"}).exit_code, 0);
  const fs::path bin = host.dir() / "bin";
  fs::create_directories(bin);
  write_file(host.dir() / "elsewhere", "not to be overwritten\n");
  ProcessOptions options;
  options.env = host.env();
  auto install = [&] {
    // timeout: the old code opened a FIFO for writing and waited there for a reader forever.
    return run({"timeout", "30", podplane_binary().string(), "tools", "install", "terraform", "1.9.8", "--to", bin.string(),
                "--platform", "linux_amd64"},
               options);
  };
  std::vector<std::pair<std::string, std::function<void()>>> plants = {
      {"a symbolic link", [&] { fs::create_symlink(host.dir() / "elsewhere", bin / "terraform"); }},
      {"a FIFO", [&] { ASSERT_EQ(::mkfifo((bin / "terraform").c_str(), 0600), 0); }}};
  if (::geteuid() == 0)
    plants.push_back({"a device", [&] { ASSERT_EQ(::mknod((bin / "terraform").c_str(), S_IFCHR | 0600, ::makedev(1, 3)), 0); }});
  for (const auto& [what, plant] : plants) {
    plant();
    auto refused = install();
    EXPECT_EQ(refused.exit_code, 1) << what << "\n" << refused.out << refused.err;
    EXPECT_NE(refused.err.find("it is " + what + ", and tools install replaces only a regular file there"), std::string::npos)
        << refused.err;
    struct stat st {};
    ASSERT_EQ(::lstat((bin / "terraform").c_str(), &st), 0) << what;
    EXPECT_FALSE(S_ISREG(st.st_mode)) << what << " was replaced";
    fs::remove(bin / "terraform");
  }
  EXPECT_EQ(read_file(host.dir() / "elsewhere"), "not to be overwritten\n");
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(bin)) left.push_back(entry.path().filename().string());
  EXPECT_TRUE(left.empty()) << "a temp file was left in " << bin << ": " << left.front();
  auto installed = install();
  EXPECT_EQ(installed.exit_code, 0) << installed.err;
  EXPECT_EQ(run({(bin / "terraform").string()}).out, "terraform v1.9.8\n");
}

// A release zip whose program expands to 600 MiB (a zip bomb of about 600 KiB): refused, with
// the memory of the install flat (the old install held the whole program in memory) and no
// program written.
TEST(ToolsInstall, AZipBombIsRefusedWithFlatMemory) {
  ReleaseHost host;
  host.publish({.program_zeros = std::uint64_t{600} << 20});
  ASSERT_EQ(host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"}).exit_code, 0);
  const fs::path bin = host.dir() / "bin";
  ProcessOptions options;
  options.env = host.env();
  // Python runs the install as its only child, so RUSAGE_CHILDREN is that install's peak RSS.
  auto measured = run({"python3", "-c",
                       "import resource, subprocess, sys\n"
                       "code = subprocess.run(sys.argv[1:]).returncode\n"
                       "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n",
                       podplane_binary().string(), "tools", "install", "terraform", "1.9.8", "--to", bin.string(),
                       "--platform", "linux_amd64"},
                      options);
  std::istringstream words(measured.out);
  int code = -1;
  long peak_kib = 0;
  words >> code >> peak_kib;
  EXPECT_EQ(code, 1) << measured.out << measured.err;
  EXPECT_NE(measured.err.find("terraform expands to more than 512 MiB, which no release of it does; refused"), std::string::npos)
      << measured.err;
  EXPECT_GT(peak_kib, 0) << measured.out;
#if !defined(__SANITIZE_ADDRESS__)
  // The plain build's bound. Under AddressSanitizer (scripts/test-sanitize) the allocator's
  // quarantine keeps every freed inflate buffer up to 256 MiB, so the bound says nothing there;
  // the refusal and the empty directory are still checked.
  EXPECT_LT(peak_kib, 100 * 1024) << "peak RSS of the install: " << peak_kib << " KiB";
#endif
  EXPECT_FALSE(fs::exists(bin / "terraform"));
  if (fs::exists(bin))
    for (const auto& entry : fs::directory_iterator(bin)) ADD_FAILURE() << "left behind: " << entry.path();
}

// The real engine crosses the air gap: fetched from the fixture release host, installed from
// the store with no network at all (a private network namespace), and run.
TEST(ToolsInstall, TheRealTerraformInstalledOfflineRuns) {
  if (!fs::exists(kRealTerraform)) GTEST_SKIP() << kRealTerraform << " is absent: no real engine to carry";
  auto version_of_real = run({kRealTerraform, "version"});
  std::smatch m;
  const std::regex pattern(R"(Terraform v(\d+\.\d+\.\d+))");
  ASSERT_TRUE(std::regex_search(version_of_real.out, m, pattern)) << version_of_real.out;
  const std::string version = m[1];
  ReleaseHost host;
  host.publish({.version = version, .binary = kRealTerraform});
  auto fetched = host.podplane({"deps", "tools", "--engine", "terraform", "--version", version});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.out << fetched.err;

  const fs::path bin = host.dir() / "bin";
  std::vector<std::string> install = {"tools", "install", "terraform", version, "--to", bin.string(), "--platform", "linux_amd64"};
  ProcessResult installed;
  if (have_program("unshare") && run({"unshare", "-rn", "true"}).exit_code == 0) {
    std::vector<std::string> argv = {"unshare", "-rn", podplane_binary().string()};
    argv.insert(argv.end(), install.begin(), install.end());
    ProcessOptions options;
    options.env = host.env();
    installed = run(argv, options);
  } else {
    installed = host.podplane(install);
  }
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  ProcessOptions quiet;
  quiet.env["TF_CLI_CONFIG_FILE"] = "/dev/null";
  auto ran = run({(bin / "terraform").string(), "version"}, quiet);
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_NE(ran.out.find("Terraform v" + version), std::string::npos) << ran.out;
}

// mirror export (the same site mirror serve answers from) lays releases out under /tools/
// like the upstream, lists them in the catalogue, and a machine installs from that tree served
// by any web server (here the fixture's) with the digest and signature checked.
TEST(ToolsInstall, FromASiteMirrorExportedToAWebServer) {
  ReleaseHost host;
  auto digests = host.publish({});
  ASSERT_EQ(host.podplane({"deps", "tools", "--engine", "terraform", "--version", "1.9.8"}).exit_code, 0);
  const std::string site_prefix = host.prefix() + "-site";
  const fs::path site = host.upstream().www() / site_prefix.substr(1);
  auto exported = host.podplane({"mirror", "export", site.string()});
  ASSERT_EQ(exported.exit_code, 0) << exported.out << exported.err;
  const fs::path release = site / "tools" / "terraform" / "1.9.8";
  EXPECT_EQ(sha256_hex(read_file(release / "terraform_1.9.8_linux_amd64.zip")), digests["linux_amd64"]);
  EXPECT_TRUE(fs::exists(release / "terraform_1.9.8_SHA256SUMS"));
  EXPECT_TRUE(fs::exists(release / "terraform_1.9.8_SHA256SUMS.sig"));
  auto catalogue = nlohmann::json::parse(read_file(site / "catalogue.json"));
  ASSERT_TRUE(catalogue.contains("tools")) << catalogue.dump(2);
  ASSERT_EQ(catalogue["tools"].size(), 1u);
  EXPECT_EQ(catalogue["tools"][0]["sha256"], digests["linux_amd64"]);
  EXPECT_EQ(catalogue["tools"][0]["path"], "/tools/terraform/1.9.8/terraform_1.9.8_linux_amd64.zip");
  EXPECT_EQ(catalogue["tools"][0]["install"],
            "podplane tools install terraform 1.9.8 --platform linux_amd64 --to /usr/local/bin --from MIRROR_URL");
  // The page puts the mirror's URL in the placeholder's place (an export's page: its origin, by script).
  const std::string page = read_file(site / "catalogue" / "tools" / "index.html");
  EXPECT_NE(page.find("--from <span class=\"mirror-url\">"), std::string::npos) << page;
  EXPECT_EQ(page.find("MIRROR_URL"), std::string::npos) << page;

  const fs::path bin = host.dir() / "bin";
  auto installed = host.podplane({"tools", "install", "terraform", "1.9.8", "--platform", "linux_amd64", "--to", bin.string(),
                                  "--from", host.upstream().url(site_prefix)});
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  EXPECT_EQ(run({(bin / "terraform").string()}).out, "terraform v1.9.8\n");

  // A zip the mirror serves damaged is refused before anything is written.
  // (A new file in its place: the exported one may be a hard link to the store's object.)
  fs::remove(release / "terraform_1.9.8_linux_amd64.zip");
  write_file(release / "terraform_1.9.8_linux_amd64.zip", "not the release");
  const fs::path other = host.dir() / "other-bin";
  auto refused = host.podplane({"tools", "install", "terraform", "1.9.8", "--platform", "linux_amd64", "--to", other.string(),
                                "--from", host.upstream().url(site_prefix)});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("hash mismatch for terraform_1.9.8_linux_amd64.zip"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(other / "terraform"));
}

}  // namespace
}  // namespace podplane::test
