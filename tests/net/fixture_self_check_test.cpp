// Checks of the test fixture, not of podplane: the fixture upstream serves the registry
// protocols over TLS that verifies with its CA, its signatures verify with real gpg, git clones
// over HTTPS, and faults happen as asked. Each behaviour is also tested through podplane:
//   ServesDiscoveryAndRegistryJsonOverVerifiedTls   DepsTf.ColdFillWarmRerunAndAddedPlatform,
//                                                   DepsTf.UpstreamWhoseCertificateDoesNotVerifyIsRefused,
//                                                   DepsTf.PlatformTheRegistryLacksFailsAndKeepsTheStore
//   SignaturesVerifyWithGpgAgainstTheListedKey      DepsTf.ColdFillWarmRerunAndAddedPlatform (provenance),
//                                                   SignatureRecheck.EveryFetchedPackageVerifiesOfflineFromStoredMaterial
//   WrongKeyFaultSignsWithAKeyTheRegistryDoesNotList  DepsTf.SignatureByTheWrongKeyIsRefused
//   ModuleRegistryPointsAtGitAndArchivesAndGitClonesOverHttps
//                                                   DepsTf.StackDirectoryWithLockedVersionsAndGitModule (git),
//                                                   DepsTf.ColdFillWarmRerunAndAddedPlatform (archive),
//                                                   DepsTf.StackWithDirectGitAndArchiveSources
//   VmconfigManifestsNameAbsoluteArtifactUrlsWithDigests
//                                                   DepsDownload.FetchesBothKindsFilteredByProviderAndVerifiesEveryDigest
//   AnswerIsLoggedBeforeItsClientHasIt              HostileUpstream.EngineStopsAt503ForeverAfterTheRetries,
//                                                   PushTest.GivesUpOnARegistryThatAnswers503Forever
//   FaultsAreInjectedAndLogged                      DepsTf.ServiceUnavailableThenSuccess,
//                                                   DepsTf.TransferCutOffHalfWayIsResumed
//   RebuildAddsAVersionWithoutChangingExistingFiles DepsTf.NewUpstreamVersionsArePickedUpAndWhatIsStoredStays,
//                                                   DepsDownload.StatusSeesANewUpstreamManifest
//   CliConfigSendsTheDefaultRegistriesToTheFixture  DepsTf.NetworkMirrorIsTheProviderUpstreamWhenConfigured,
//                                                   DepsTf.TerraformEngineUsesItsOwnRegistryHost
#include <gtest/gtest.h>

#include <thread>

#include "net/http.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

ProcessResult curl(const FixtureUpstream& up, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"curl", "-sS", "--cacert", up.ca_file().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

TEST(FixtureUpstreamSelfCheck, ServesDiscoveryAndRegistryJsonOverVerifiedTls) {
  ASSERT_TRUE(have_program("curl"));
  FixtureUpstream up;
  auto discovery = curl(up, {"-f", up.url("/.well-known/terraform.json")});
  ASSERT_EQ(discovery.exit_code, 0) << discovery.err;
  auto services = nlohmann::json::parse(discovery.out);
  EXPECT_EQ(services["providers.v1"], "/v1/providers/");
  EXPECT_EQ(services["modules.v1"], "/v1/modules/");

  // Without the fixture CA the certificate must not verify.
  auto untrusted = run({"curl", "-sS", "--cacert", "/dev/null", up.url("/.well-known/terraform.json")});
  EXPECT_NE(untrusted.exit_code, 0);
  // localhost is in the certificate too.
  auto by_name = curl(up, {"-f", "https://localhost:" + std::to_string(up.port()) + "/v1/providers/hashicorp/aws/versions"});
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  auto versions = nlohmann::json::parse(by_name.out);
  EXPECT_EQ(versions["versions"].size(), 2u);

  auto answer = curl(up, {"-f", "-w", "\n%{content_type}", up.url("/v1/providers/hashicorp/aws/6.2.0/download/linux/arm64")});
  ASSERT_EQ(answer.exit_code, 0) << answer.err;
  auto body = answer.out.substr(0, answer.out.rfind('\n'));
  EXPECT_EQ(answer.out.substr(answer.out.rfind('\n') + 1), "application/json");
  auto doc = nlohmann::json::parse(body);
  EXPECT_EQ(doc["filename"], "terraform-provider-aws_6.2.0_linux_arm64.zip");
  EXPECT_EQ(doc["os"], "linux");
  EXPECT_EQ(doc["arch"], "arm64");
  EXPECT_EQ(doc["download_url"], "/releases/aws/6.2.0/terraform-provider-aws_6.2.0_linux_arm64.zip");
  EXPECT_EQ(doc["shasum"].get<std::string>().size(), 64u);
  EXPECT_NE(doc["signing_keys"]["gpg_public_keys"][0]["ascii_armor"].get<std::string>().find("BEGIN PGP PUBLIC KEY"),
            std::string::npos);

  // The zip is what fixture.json and shasum say.
  TempDir tmp;
  auto zip = curl(up, {"-f", "-o", (tmp / "p.zip").string(), up.url(doc["download_url"].get<std::string>())});
  ASSERT_EQ(zip.exit_code, 0) << zip.err;
  auto sum = run({"sha256sum", (tmp / "p.zip").string()});
  EXPECT_EQ(sum.out.substr(0, 64), doc["shasum"].get<std::string>());

  // A platform the registry lacks: cloudinit has no darwin_arm64.
  auto missing = curl(up, {"-o", "/dev/null", "-w", "%{http_code}", up.url("/v1/providers/hashicorp/cloudinit/2.3.7/download/darwin/arm64")});
  EXPECT_EQ(missing.out, "404");
}

TEST(FixtureUpstreamSelfCheck, SignaturesVerifyWithGpgAgainstTheListedKey) {
  ASSERT_TRUE(have_program("gpg"));
  FixtureUpstream up;
  const auto& fx = up.fixture();
  TempDir home;
  fs::permissions(home.path(), fs::perms::owner_all, fs::perm_options::replace);
  for (const auto& provider : fx["providers"]) {
    if (provider["type"] != "aws" && provider["type"] != "podplane") continue;
    const auto& version = provider["versions"][0];
    const std::string key = provider["key"];
    auto imported = run({"gpg", "--homedir", home.path().string(), "--batch", "--import",
                         fx["keys"][key]["armor_file"].get<std::string>()});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    const fs::path sums = up.www() / version["shasums_url"].get<std::string>().substr(1);
    const fs::path sig = up.www() / version["shasums_signature_url"].get<std::string>().substr(1);
    auto verified = run({"gpg", "--homedir", home.path().string(), "--batch", "--status-fd", "1", "--verify",
                         sig.string(), sums.string()});
    EXPECT_EQ(verified.exit_code, 0) << verified.err;
    EXPECT_NE(verified.out.find("VALIDSIG " + provider["key_fingerprint"].get<std::string>()), std::string::npos)
        << verified.out;
  }
  EXPECT_EQ(fx["keys"]["rsa"]["algo"], "rsa3072");
  EXPECT_EQ(fx["keys"]["ed25519"]["algo"], "ed25519");
}

TEST(FixtureUpstreamSelfCheck, WrongKeyFaultSignsWithAKeyTheRegistryDoesNotList) {
  FixtureOptions options;
  options.wrong_key = {"hashicorp/random"};
  FixtureUpstream up(options);
  for (const auto& provider : up.fixture()["providers"]) {
    if (provider["type"] == "random") {
      EXPECT_NE(provider["signed_by"], provider["key_fingerprint"]);
    } else {
      EXPECT_EQ(provider["signed_by"], provider["key_fingerprint"]);
    }
  }
}

TEST(FixtureUpstreamSelfCheck, ModuleRegistryPointsAtGitAndArchivesAndGitClonesOverHttps) {
  ASSERT_TRUE(have_program("git"));
  FixtureUpstream up;
  auto headers = curl(up, {"-D", "-", "-o", "/dev/null", up.url("/v1/modules/nstance-dev/nstance/aws/2.0.1/download")});
  ASSERT_EQ(headers.exit_code, 0) << headers.err;
  EXPECT_NE(headers.out.find("HTTP/1.1 204"), std::string::npos) << headers.out;
  const std::string git_url = up.base_url() + "/git/terraform-aws-nstance.git";
  EXPECT_NE(headers.out.find("X-Terraform-Get: git::" + git_url + "?ref=v2.0.1"), std::string::npos) << headers.out;
  auto archive = curl(up, {"-D", "-", "-o", "/dev/null", up.url("/v1/modules/nstance-dev/nstance/aws/2.1.0/download")});
  EXPECT_NE(archive.out.find("X-Terraform-Get: " + up.base_url() + "/archives/terraform-aws-nstance-2.1.0.tar.gz"),
            std::string::npos)
      << archive.out;

  TempDir tmp;
  ProcessOptions git_env;
  git_env.env = {{"GIT_SSL_CAINFO", up.ca_file().string()}, {"GIT_TERMINAL_PROMPT", "0"}};
  auto clone = run({"git", "clone", "-q", "--branch", "v2.0.1", git_url, (tmp / "nstance").string()}, git_env);
  ASSERT_EQ(clone.exit_code, 0) << clone.err;
  for (const char* sub : {"cluster", "account", "network", "shard"}) {
    EXPECT_TRUE(fs::exists(tmp / "nstance" / "modules" / sub / "versions.tf")) << sub;
  }
  EXPECT_NE(read_file(tmp / "nstance" / "modules" / "shard" / "versions.tf").find("hashicorp/cloudinit"), std::string::npos);
  auto tags = run({"git", "-C", (tmp / "nstance").string(), "tag"});
  EXPECT_EQ(tags.out, "v2.0.1\nv2.1.0\n");
}

TEST(FixtureUpstreamSelfCheck, VmconfigManifestsNameAbsoluteArtifactUrlsWithDigests) {
  FixtureUpstream up;
  auto got = curl(up, {"-f", up.url("/manifests/vmconfig_knd_debian-13_arm64.json")});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  auto manifest = nlohmann::json::parse(got.out)["vmconfig"];
  EXPECT_EQ(manifest["kind"], "knd");
  EXPECT_EQ(manifest["os"]["arch"], "arm64");
  bool saw_sha512 = false, saw_providers = false;
  for (const auto& [name, dep] : manifest["dependencies"].items()) {
    EXPECT_EQ(dep["url"].get<std::string>().rfind(up.base_url() + "/artifacts/", 0), 0u) << name;
    saw_sha512 |= dep["digest"].get<std::string>().rfind("sha512:", 0) == 0;
    saw_providers |= dep.contains("providers");
  }
  EXPECT_TRUE(saw_sha512);
  EXPECT_TRUE(saw_providers);
  auto image = curl(up, {"-f", "-o", "/dev/null", "-w", "%{size_download}", manifest["os"]["image"]["url"].get<std::string>()});
  EXPECT_EQ(image.out, std::to_string(manifest["os"]["image"]["size"].get<int>()));
}

// Tests count log lines as soon as a client is done: each request's line must be in the file
// before the client can have the answer's last byte (a 200, an injected 503, a 404 alike), with
// no waiting. Four keep-alive clients at once, so that the server's threads compete (a line
// written after the answer then lags it often), each reading the log right after every answer.
TEST(FixtureUpstreamSelfCheck, AnswerIsLoggedBeforeItsClientHasIt) {
  ServeOptions serve;
  serve.fail_first = {"1000000:/unavailable/:503"};
  FixtureUpstream up({}, serve);
  net::HttpOptions options;
  options.ca_file = up.ca_file();
  options.max_retries = 0;
  std::vector<std::string> problems(4);
  std::vector<std::thread> clients;
  for (std::size_t c = 0; c < problems.size(); ++c) {
    clients.emplace_back([&, c] {
      net::HttpClient http(options);
      for (int i = 0; i < 40 && problems[c].empty(); ++i) {
        const std::string tag = std::to_string(c) + "-" + std::to_string(i);
        const std::string path = i % 3 == 0 ? "/unavailable/" + tag : i % 3 == 1 ? "/missing/" + tag : "/v1/providers/hashicorp/aws/versions";
        const int expected = i % 3 == 0 ? 503 : i % 3 == 1 ? 404 : 200;
        auto answer = http.get(up.url(path));
        if (answer.status != expected) {
          problems[c] = path + ": status " + std::to_string(answer.status);
        } else if (i % 3 != 2 && up.requests("^" + path + "$").size() != 1) {
          problems[c] = path + ": its line was not in the log when its answer had arrived";
        }
      }
    });
  }
  for (auto& client : clients) client.join();
  for (const auto& problem : problems) EXPECT_EQ(problem, "");
  EXPECT_EQ(up.requests("/versions$", 200).size(), 4u * 13u);
}

TEST(FixtureUpstreamSelfCheck, FaultsAreInjectedAndLogged) {
  ServeOptions serve;
  serve.fail_first = {"1:linux_amd64\\.zip$:503:1"};
  serve.cut_after = {"4000:linux_arm64\\.zip$"};
  FixtureUpstream up({}, serve);
  const std::string zip = "/releases/aws/6.0.0/terraform-provider-aws_6.0.0_linux_amd64.zip";
  auto first = curl(up, {"-o", "/dev/null", "-w", "%{http_code}", up.url(zip)});
  auto second = curl(up, {"-o", "/dev/null", "-w", "%{http_code}", up.url(zip)});
  EXPECT_EQ(first.out, "503");
  EXPECT_EQ(second.out, "200");

  TempDir tmp;
  const std::string cut = "/releases/aws/6.0.0/terraform-provider-aws_6.0.0_linux_arm64.zip";
  auto partial = curl(up, {"-o", (tmp / "z").string(), up.url(cut)});
  EXPECT_NE(partial.exit_code, 0);  // the transfer was cut
  EXPECT_EQ(fs::file_size(tmp / "z"), 4000u);
  auto resumed = curl(up, {"-f", "-C", "-", "-o", (tmp / "z").string(), up.url(cut)});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  auto sum = run({"sha256sum", (tmp / "z").string()});
  std::string expected;
  for (const auto& p : up.fixture()["providers"]) {
    if (p["type"] == "aws") expected = p["versions"][0]["packages"]["linux_arm64"]["sha256"];
  }
  EXPECT_EQ(sum.out.substr(0, 64), expected);

  auto log = up.requests("linux_(amd|arm)64\\.zip$");
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0].status, 503);
  EXPECT_EQ(log[0].fault, "fail-first");
  EXPECT_EQ(log[2].fault, "cut");
  EXPECT_EQ(log[2].bytes, 4000u);
  EXPECT_EQ(log[3].status, 206);
  EXPECT_EQ(log[3].range.value_or(""), "bytes=4000-");
}

TEST(FixtureUpstreamSelfCheck, RebuildAddsAVersionWithoutChangingExistingFiles) {
  FixtureOptions options;
  options.sharing = FixtureOptions::Sharing::private_copy;
  FixtureUpstream up(options);
  const fs::path old_zip = up.www() / "releases/aws/6.2.0/terraform-provider-aws_6.2.0_linux_amd64.zip";
  const fs::path old_sig = up.www() / "releases/aws/6.2.0/terraform-provider-aws_6.2.0_SHA256SUMS.sig";
  const auto zip_before = read_file(old_zip), sig_before = read_file(old_sig);
  up.rebuild({"--add-version", "aws=6.3.0", "--add-version", "module=2.2.0"});
  EXPECT_EQ(read_file(old_zip), zip_before);
  EXPECT_EQ(read_file(old_sig), sig_before);
  auto versions = curl(up, {"-f", up.url("/v1/providers/hashicorp/aws/versions")});
  EXPECT_EQ(nlohmann::json::parse(versions.out)["versions"].size(), 3u);
  auto modules = curl(up, {"-f", up.url("/v1/modules/nstance-dev/nstance/aws/versions")});
  EXPECT_EQ(nlohmann::json::parse(modules.out)["modules"][0]["versions"].size(), 3u);
  EXPECT_TRUE(fs::exists(up.www() / "releases/aws/6.3.0/terraform-provider-aws_6.3.0_SHA256SUMS.sig"));
}

TEST(FixtureUpstreamSelfCheck, CliConfigSendsTheDefaultRegistriesToTheFixture) {
  FixtureUpstream up;
  TempDir tmp;
  CliConfigOptions config;
  config.providers = CliConfigOptions::ProviderSource::network_mirror;
  auto file = up.write_cli_config(tmp / "podplane.tfrc", config);
  const auto text = read_file(file);
  EXPECT_NE(text.find("host \"registry.opentofu.org\""), std::string::npos);
  EXPECT_NE(text.find("host \"registry.terraform.io\""), std::string::npos);
  EXPECT_NE(text.find("\"providers.v1\" = \"" + up.base_url() + "/v1/providers/\""), std::string::npos);
  EXPECT_NE(text.find("url = \"" + up.base_url() + "/mirror/\""), std::string::npos);
  auto env = up.env(tmp / "deps", file);
  EXPECT_EQ(env.at("SSL_CERT_FILE"), up.ca_file().string());
  EXPECT_EQ(env.at("PODPLANE_DEPS_URL"), up.base_url());
  // The mirror layout answers as docs/protocols.md §2 says.
  auto index = curl(up, {"-f", up.url("/mirror/registry.opentofu.org/podplane/podplane/index.json")});
  ASSERT_EQ(index.exit_code, 0) << index.err;
  EXPECT_TRUE(nlohmann::json::parse(index.out)["versions"].contains("1.3.0"));
  auto archives = curl(up, {"-f", up.url("/mirror/registry.opentofu.org/hashicorp/cloudinit/2.3.7.json")});
  auto doc = nlohmann::json::parse(archives.out)["archives"];
  EXPECT_FALSE(doc.contains("darwin_arm64"));
  EXPECT_EQ(doc["linux_amd64"]["hashes"][0].get<std::string>().rfind("h1:", 0), 0u);
  EXPECT_EQ(doc["linux_amd64"]["hashes"][1].get<std::string>().rfind("zh:", 0), 0u);
}

}  // namespace
}  // namespace podplane::test
