// Registry answers keep the plugin protocols upstream listed (issue 11): the fixture registry
// lists ["6.0"] for podplane/podplane, ["5.0", "6.0"] for hashicorp/random and none at all for
// hashicorp/null. `deps tf` records them, and `mirror serve` (over HTTP), `mirror export` and a
// store filled only from a bundle answer with exactly those lists, [] where upstream gave none.
#include <gtest/gtest.h>

#include "cache/layout.hpp"
#include "cache/store.hpp"
#include "mirror/serve_site.hpp"
#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::read_file;
using podplane::test::run_podplane;
using podplane::test::TempDir;
using podplane::test::with_deps_root;

// NAMESPACE/TYPE → what the fixture registry lists for every version of it ([] for none); the
// same for either origin host (the engine on PATH picks the host).
std::map<std::string, json> listed_protocols(const podplane::test::FixtureUpstream& upstream) {
  std::map<std::string, json> listed;
  for (const auto& provider : upstream.fixture()["providers"]) {
    std::string name = provider["namespace"].get<std::string>() + "/" + provider["type"].get<std::string>();
    listed[name] = provider["protocols"].is_null() ? json::array() : provider["protocols"];
  }
  return listed;
}

std::string without_host(const std::string& address) { return address.substr(address.find('/') + 1); }

// Checks the registry answers of every stored package, read by `get` (a site path → the body,
// or "" when absent), against `listed`; returns how many packages were checked per address.
std::map<std::string, int> check_answers(const fs::path& root, const std::map<std::string, json>& listed,
                                         const std::function<std::string(const std::string&)>& get,
                                         const std::string& where) {
  std::map<std::string, int> checked;
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  for (const auto& package : store.artifacts({.kind = cache::ArtifactKind::provider_package})) {
    SCOPED_TRACE(where + ": " + package.address + " " + package.version + " " + package.platform);
    auto expected = listed.find(without_host(package.address));
    if (expected == listed.end()) continue;
    // The row itself: known, and what upstream said.
    EXPECT_TRUE(package.protocols.has_value()) << "the store does not know the protocols";
    if (package.protocols) {
      EXPECT_EQ(json(*package.protocols), expected->second);
    }

    std::string registry = "/v1/providers/" + package.address;
    auto versions_body = get(registry + "/versions");
    if (versions_body.empty()) {
      ADD_FAILURE() << registry << "/versions is not answered";
      continue;
    }
    auto versions = json::parse(versions_body);
    bool found = false;
    for (const auto& entry : versions["versions"]) {
      if (entry["version"] != package.version) continue;
      found = true;
      EXPECT_EQ(entry.value("protocols", json()), expected->second) << versions_body;
    }
    EXPECT_TRUE(found) << versions_body;
    auto os = package.platform.substr(0, package.platform.find('_'));
    auto arch = package.platform.substr(package.platform.find('_') + 1);
    auto download_body = get(registry + "/" + package.version + "/download/" + os + "/" + arch);
    if (download_body.empty()) {
      ADD_FAILURE() << "no download answer";
      continue;
    }
    auto download = json::parse(download_body);
    EXPECT_EQ(download.value("protocols", json()), expected->second) << download_body;
    ++checked[without_host(package.address)];
  }
  return checked;
}

void expect_all_three_cases(const std::map<std::string, int>& checked) {
  for (const char* address : {"podplane/podplane", "hashicorp/random", "hashicorp/null"}) {
    auto it = checked.find(address);
    EXPECT_TRUE(it != checked.end() && it->second > 0) << "no package of " << address << " was checked";
  }
}

TEST(RegistryProtocols, ServedExportedAndCarriedAsUpstreamListedThem) {
  TempDir dir;
  const fs::path online = dir / "online";
  std::map<std::string, json> listed;
  {
    podplane::test::FixtureUpstream upstream;
    listed = listed_protocols(upstream);
    // The fixture covers the three cases this test is about.
    ASSERT_EQ(listed["podplane/podplane"], json({"6.0"}));
    ASSERT_EQ(listed["hashicorp/random"], json({"5.0", "6.0"}));
    ASSERT_EQ(listed["hashicorp/null"], json::array());
    podplane::test::ProcessOptions options;
    options.env = upstream.env(online, upstream.write_cli_config(dir / "upstream.tfrc"));
    options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    auto filled = run_podplane({"--quiet", "deps", "tf", "--platform", "linux_amd64", "--platform", "linux_arm64"}, options);
    ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;
  }  // upstream gone: everything below answers from the store alone

  {
    MirrorServe serve(online, {"--listen", "127.0.0.1:0", "--plain-http"}, dir / "serve.err");
    ASSERT_TRUE(serve.started()) << serve.log();
    CurlSession http;
    auto get = [&](const std::string& path) {
      auto answer = http.fetch(serve.url() + path);
      return answer.status == 200 ? answer.body : std::string();
    };
    expect_all_three_cases(check_answers(online, listed, get, "mirror serve"));
  }

  const fs::path exported = dir / "export";
  auto exported_run = run_podplane({"mirror", "export", exported.string()}, with_deps_root(online));
  ASSERT_EQ(exported_run.exit_code, 0) << exported_run.err;
  auto read_exported = [&](const std::string& path) {
    fs::path file = exported / path.substr(1);
    return fs::is_regular_file(file) ? read_file(file) : std::string();
  };
  expect_all_three_cases(check_answers(online, listed, read_exported, "mirror export"));

  // Through a bundle into a store that never saw the upstream.
  const fs::path airgap = dir / "airgap";
  auto created = run_podplane({"bundle", "create", (dir / "all.bundle").string()}, with_deps_root(online));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  auto imported = run_podplane({"bundle", "import", (dir / "all.bundle").string(), "--allow-unsigned"}, with_deps_root(airgap));
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  MirrorServe serve(airgap, {"--listen", "127.0.0.1:0", "--plain-http"}, dir / "airgap-serve.err");
  ASSERT_TRUE(serve.started()) << serve.log();
  CurlSession http;
  auto get = [&](const std::string& path) {
    auto answer = http.fetch(serve.url() + path);
    return answer.status == 200 ? answer.body : std::string();
  };
  expect_all_three_cases(check_answers(airgap, listed, get, "mirror serve after bundle import"));
}

// A store filled before protocols were recorded (its rows hold '') learns them on the next
// `deps tf`, from the registry's versions document, though no package is fetched again.
TEST(RegistryProtocols, AStoreFilledBeforeLearnsThemOnTheNextDepsTf) {
  if (!podplane::test::have_program("sqlite3")) GTEST_SKIP() << "the sqlite3 shell is not installed (apt-get install sqlite3)";
  TempDir dir;
  const fs::path root = dir / "deps";
  podplane::test::FixtureUpstream upstream;
  auto listed = listed_protocols(upstream);
  podplane::test::ProcessOptions options;
  options.env = upstream.env(root, upstream.write_cli_config(dir / "upstream.tfrc"));
  options.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
  auto filled = run_podplane({"--quiet", "deps", "tf", "--platform", "linux_amd64"}, options);
  ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;
  auto forgot = podplane::test::run({"sqlite3", cache::layout::index_db(root).string(), "UPDATE artifacts SET protocols = ''"});
  ASSERT_EQ(forgot.exit_code, 0) << forgot.err;
  {
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    for (const auto& package : store.artifacts({.kind = cache::ArtifactKind::provider_package}))
      ASSERT_FALSE(package.protocols) << "the setup did not make the rows old";
  }
  auto again = run_podplane({"deps", "tf", "--platform", "linux_amd64"}, options);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("Nothing new"), std::string::npos) << again.out;
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  const auto site = mirror::MirrorSite::build(store);  // what `mirror serve` answers
  auto get = [&](const std::string& path) -> std::string {
    const auto* resource = site.find(path);
    return resource ? resource->body : std::string();
  };
  expect_all_three_cases(check_answers(root, listed, get, "after a second deps tf"));
}

}  // namespace
}  // namespace podplane::serve_test
