// Git module sources offline, their sources unchanged, with the real terraform and the real git
// as the judges: `deps tf --stack` keeps each git source's objects, `stack check` proves the
// engine clones them from a mirror of the store, a bundle carries them, `mirror serve` hands
// them to git with upstream's commit ids through the catalogue's own insteadOf lines, and
// `mirror export` writes them as bare repositories a site git server takes. The upstream is
// stopped before anything is checked: nothing but the store can answer.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "tests/support/background.hpp"
#include "tests/support/catalogue_page.hpp"
#include "tests/support/radosgw.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/tls.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

const std::regex kEngineProved(R"(terraform init -lockfile=readonly \(offline\) +ok \(\S*terraform, through https://127\.0\.0\.1:\d+ alone\))");

// What a VM or a CI runner has: git's and terraform's settings in a HOME of its own, none of
// this machine's proxies or caches.
ProcessOptions client_options(const fs::path& home) {
  ProcessOptions options;
  fs::create_directories(home);
  options.env = {{"HOME", home.string()}, {"GIT_CONFIG_NOSYSTEM", "1"}, {"CHECKPOINT_DISABLE", "1"},
                 {"GIT_TERMINAL_PROMPT", "0"}};
  options.unset_env = {"TF_PLUGIN_CACHE_DIR", "TF_CLI_CONFIG_FILE", "http_proxy", "https_proxy", "HTTPS_PROXY",
                       "ALL_PROXY",           "GIT_SSL_CAINFO",     "SSL_CERT_FILE"};
  return options;
}

class GitSources : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_program("terraform")) GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
    ASSERT_TRUE(have_program("git"));
    upstream.emplace();
    upstream->write_cli_config(dir / "cli.tfrc");
    options.env = upstream->env(dir / "deps", dir / "cli.tfrc");
    options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    repository_url = upstream->base_url() + upstream->fixture()["modules"][0]["git_path"].get<std::string>();
    for (const auto& version : upstream->fixture()["modules"][0]["versions"])
      commits[version["version"].get<std::string>()] = version["git_commit"].get<std::string>();
    ASSERT_EQ(commits.count("2.0.1"), 1u);
    ASSERT_EQ(run({"git", "init", "-q", repo().string()}).exit_code, 0);
    // Every way a root names a ref: a tag, a branch, a full commit id, a tag with depth=.
    write_file(repo() / "gitroot/main.tf",
               "terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n"
               "      version = \"~> 3.6\"\n    }\n  }\n}\n" +
                   call("by_tag", "?ref=v2.0.1") + call("by_branch", "?ref=main") +
                   call("by_commit", "?ref=" + commits["2.0.1"]) + call("shallow", "?ref=v2.0.1&depth=1"));
  }

  std::string call(const std::string& name, const std::string& query) const {
    return "module \"" + name + "\" {\n  source = \"git::" + repository_url + "//modules/network" + query + "\"\n}\n";
  }
  fs::path repo() const { return dir / "repo"; }
  ProcessResult podplane(const std::vector<std::string>& args) const { return run_podplane(args, options); }

  void fill() {
    auto filled = podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--write-lock", "--platform", "linux_amd64",
                            "--stack", (repo() / "gitroot").string()});
    ASSERT_EQ(filled.exit_code, 0) << show(filled);
  }

  // The refs upstream serves (`git ls-remote`), read before it goes away.
  std::string upstream_refs() const {
    ProcessOptions git = options;
    git.env["GIT_SSL_CAINFO"] = options.env.at("SSL_CERT_FILE");
    auto listed = run({"git", "ls-remote", repository_url}, git);
    EXPECT_EQ(listed.exit_code, 0) << show(listed);
    return listed.out;
  }

  void go_offline() { upstream.reset(); }

  TempDir dir;
  std::optional<FixtureUpstream> upstream;
  ProcessOptions options;
  std::string repository_url;
  std::map<std::string, std::string> commits;  // module version → the commit its tag names
};

// Each ref shape inits offline from the store alone, then again after a bundle carried the
// store into an empty one; a prune keeping the root keeps the git objects its calls need.
TEST_F(GitSources, StackCheckClonesEveryRefFromTheStoreAloneAndAcrossABundle) {
  fill();
  go_offline();
  auto check = podplane({"stack", "check", (repo() / "gitroot").string()});
  ASSERT_EQ(check.exit_code, 0) << show(check);
  EXPECT_TRUE(std::regex_search(check.out, kEngineProved)) << check.out;
  EXPECT_NE(check.out.find("All checks passed"), std::string::npos) << check.out;

  auto pruned = podplane({"deps", "prune", "--keep", "1", "--keep-root", (repo() / "gitroot").string()});
  ASSERT_EQ(pruned.exit_code, 0) << show(pruned);
  EXPECT_EQ(pruned.out.find("removed module"), std::string::npos) << pruned.out;

  ASSERT_EQ(podplane({"bundle", "keygen", (dir / "site").string()}).exit_code, 0);
  auto created = podplane({"bundle", "create", (dir / "git.bundle").string(), "--sign", (dir / "site.key").string()});
  ASSERT_EQ(created.exit_code, 0) << show(created);
  options.env["PODPLANE_DEPS_CACHE_DIR"] = (dir / "site-deps").string();
  auto imported = podplane({"bundle", "import", (dir / "git.bundle").string(), "--trust", (dir / "site.pub").string()});
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  auto on_site = podplane({"stack", "check", (repo() / "gitroot").string()});
  EXPECT_EQ(on_site.exit_code, 0) << show(on_site);
  EXPECT_TRUE(std::regex_search(on_site.out, kEngineProved)) << on_site.out;
  auto verified = podplane({"deps", "verify"});
  EXPECT_EQ(verified.exit_code, 0) << show(verified);
}

// `stack check --mirror` against the running mirror proves the engine clones each ref through
// it. The catalogue's lines, run as printed by a client that never saw upstream: git's insteadOf
// sends the upstream URL to the mirror, the clone has upstream's commit ids and refs, and
// terraform (the catalogue's host blocks and SSL_CERT_FILE) inits the root through the mirror.
TEST_F(GitSources, MirrorServeHandsGitTheSameCommitsThroughTheCataloguesLines) {
  fill();
  const std::string refs_upstream = upstream_refs();
  ASSERT_NE(refs_upstream.find(commits["2.0.1"] + "\trefs/tags/v2.0.1"), std::string::npos) << refs_upstream;
  go_offline();

  write_test_tls(dir.path());
  Background serve({podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--tls-cert",
                    (dir / "cert.pem").string(), "--tls-key", (dir / "key.pem").string()},
                   {{"PODPLANE_DEPS_CACHE_DIR", (dir / "deps").string()}}, dir / "serve.err");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << read_file(dir / "serve.err");
  if (base.back() != '/') base += '/';

  // `stack check --mirror` of the root: each ref is answered by the mirror, and the engine's
  // row really ran, cloning every ref through it.
  ProcessOptions checking = options;
  checking.env["SSL_CERT_FILE"] = (dir / "cert.pem").string();
  auto checked = run_podplane({"stack", "check", "--mirror", base, (repo() / "gitroot").string()}, checking);
  EXPECT_EQ(checked.exit_code, 0) << show(checked) << "\nserver log:\n" << read_file(dir / "serve.err");
  EXPECT_TRUE(std::regex_search(checked.out, kEngineProved)) << checked.out;
  EXPECT_EQ(checked.out.find("NOT RUN"), std::string::npos) << checked.out;
  const std::string mirror = base.substr(0, base.size() - 1);
  for (const std::string& ref : {std::string("v2.0.1"), std::string("main"), commits["2.0.1"]})
    EXPECT_NE(checked.out.find("ok: " + ref + " from " + mirror), std::string::npos) << ref << "\n" << checked.out;
  EXPECT_NE(checked.out.find("All checks passed"), std::string::npos) << checked.out;

  const fs::path home = dir / "client-home";
  ProcessOptions client = client_options(home);
  auto page = run({"curl", "-sSf", "--cacert", (dir / "cert.pem").string(), base}, client);
  ASSERT_EQ(page.exit_code, 0) << show(page);
  // Where the site installs its CA (the catalogue names /etc/ssl/certs/podplane-mirror-ca.pem):
  // here the test's certificate file, the only change to what is printed.
  const std::string ca_line = catalogue_snippet(page.out, "Trust the mirror's certificate");
  ASSERT_NE(ca_line.find("export SSL_CERT_FILE="), std::string::npos) << page.out;
  const std::string git_lines = catalogue_snippet(page.out, "git");
  ASSERT_NE(git_lines.find(".insteadOf"), std::string::npos) << page.out;
  const std::string host_blocks = catalogue_snippet(page.out, "tofu / terraform: registry protocol");
  ASSERT_NE(host_blocks.find("registry.terraform.io"), std::string::npos) << page.out;
  const std::string network_mirror = catalogue_snippet(page.out, "tofu / terraform: network mirror");
  ASSERT_NE(network_mirror.find("network_mirror"), std::string::npos) << page.out;

  const std::string ca = with_ca_file(ca_line, (dir / "cert.pem").string());
  write_file(dir / "client.sh", ca + git_lines);
  auto configured = run({"bash", "-e", (dir / "client.sh").string()}, client);
  ASSERT_EQ(configured.exit_code, 0) << show(configured) << "\n" << read_file(dir / "client.sh");

  // git, with the upstream URL as the root wrote it.
  auto listed = run({"git", "ls-remote", repository_url}, client);
  ASSERT_EQ(listed.exit_code, 0) << show(listed) << "\nserver log:\n" << read_file(dir / "serve.err");
  EXPECT_NE(listed.out.find(commits["2.0.1"] + "\trefs/tags/v2.0.1"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("\trefs/heads/main"), std::string::npos) << listed.out;
  auto cloned = run({"git", "clone", "-q", "--branch", "v2.0.1", repository_url, (dir / "clone").string()}, client);
  ASSERT_EQ(cloned.exit_code, 0) << show(cloned);
  auto head = run({"git", "-C", (dir / "clone").string(), "rev-parse", "HEAD"}, client);
  EXPECT_EQ(trimmed(head.out), commits["2.0.1"]);
  auto fsck = run({"git", "-C", (dir / "clone").string(), "fsck", "--strict"}, client);
  EXPECT_EQ(fsck.exit_code, 0) << show(fsck);

  // terraform, through the catalogue's host blocks, SSL_CERT_FILE and git's insteadOf.
  write_file(home / ".terraformrc", host_blocks);
  client.cwd = repo() / "gitroot";
  client.env["SSL_CERT_FILE"] = (dir / "cert.pem").string();
  client.env["TF_DATA_DIR"] = (dir / "tf-data").string();
  auto init = run({"terraform", "init", "-backend=false", "-lockfile=readonly", "-input=false", "-no-color"}, client);
  EXPECT_EQ(init.exit_code, 0) << show(init) << "\nserver log:\n" << read_file(dir / "serve.err");
  EXPECT_NE(read_file(dir / "serve.err").find("/git/"), std::string::npos) << "terraform's git did not come here";

  // The other way to take providers: the catalogue's network mirror block alone.
  write_file(home / ".terraformrc", network_mirror);
  client.env["TF_DATA_DIR"] = (dir / "tf-data-network-mirror").string();
  auto mirrored = run({"terraform", "init", "-backend=false", "-lockfile=readonly", "-input=false", "-no-color"}, client);
  EXPECT_EQ(mirrored.exit_code, 0) << show(mirrored) << "\nserver log:\n" << read_file(dir / "serve.err");
  EXPECT_NE(read_file(dir / "serve.err").find("/v1/mirror/"), std::string::npos) << "terraform did not use the network mirror";
}

// `mirror export` writes each repository bare, with upstream's refs; a site git server takes it
// with `git push --mirror`, and clones from there have the same commits.
TEST_F(GitSources, ExportWritesBareRepositoriesASiteGitServerTakes) {
  fill();
  const std::string refs_upstream = upstream_refs();
  go_offline();
  auto exported = podplane({"mirror", "export", (dir / "export").string()});
  ASSERT_EQ(exported.exit_code, 0) << show(exported);
  EXPECT_NE(exported.err.find("1 git repositories"), std::string::npos) << exported.err;

  // <export>/git/<host:port>/<path>.git, as served at /git/.
  const std::string rest = repository_url.substr(repository_url.find("://") + 3);
  const fs::path bare = dir / "export" / "git" / rest;
  ASSERT_TRUE(fs::is_directory(bare)) << bare;
  EXPECT_TRUE(fs::exists(bare / "info" / "refs")) << "no update-server-info: a static web server cannot serve it";

  // A static web server serves it to git as it is (git's dumb HTTP protocol).
  Background web({"python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", "0", "--directory",
                  (dir / "export").string()},
                 {}, dir / "web.err");
  std::smatch port;
  const std::string serving = web.first_line();
  ASSERT_TRUE(std::regex_search(serving, port, std::regex("port (\\d+)"))) << serving << read_file(dir / "web.err");
  auto over_http = run({"git", "clone", "-q", "http://127.0.0.1:" + port[1].str() + "/git/" + rest,
                        (dir / "from-web").string()});
  ASSERT_EQ(over_http.exit_code, 0) << show(over_http);
  auto web_tag = run({"git", "-C", (dir / "from-web").string(), "rev-parse", "v2.0.1^{commit}"});
  EXPECT_EQ(trimmed(web_tag.out), commits["2.0.1"]);
  web.stop();

  ASSERT_EQ(run({"git", "init", "-q", "--bare", (dir / "site-server.git").string()}).exit_code, 0);
  auto pushed = run({"git", "-C", bare.string(), "push", "-q", "--mirror", (dir / "site-server.git").string()});
  ASSERT_EQ(pushed.exit_code, 0) << show(pushed);
  auto listed = run({"git", "ls-remote", (dir / "site-server.git").string()});
  ASSERT_EQ(listed.exit_code, 0) << show(listed);
  // Every tag and branch the roots named, with upstream's ids.
  for (const std::string ref : {"refs/tags/v2.0.1", "refs/heads/main"}) {
    std::smatch up;
    ASSERT_TRUE(std::regex_search(refs_upstream, up, std::regex("([0-9a-f]{40})\t" + ref + "\n"))) << refs_upstream;
    EXPECT_NE(listed.out.find(up[1].str() + "\t" + ref), std::string::npos) << ref << "\n" << listed.out;
  }
  auto cloned = run({"git", "clone", "-q", (dir / "site-server.git").string(), (dir / "from-site").string()});
  ASSERT_EQ(cloned.exit_code, 0) << show(cloned);
  auto tag = run({"git", "-C", (dir / "from-site").string(), "rev-parse", "v2.0.1^{commit}"});
  EXPECT_EQ(trimmed(tag.out), commits["2.0.1"]);
}

// `mirror export s3://` holds the same bare repositories, file for file, and the files fetched
// back from the bucket are a repository git clones.
TEST_F(GitSources, ExportToABucketHoldsTheSameBareRepositoriesThatGitClones) {
  if (auto missing = RadosGateway::missing_programs(); !missing.empty()) GTEST_SKIP() << missing;
  fill();
  go_offline();
  RadosGateway gateway(dir / "ceph");
  gateway.create_bucket("site-mirror");
  auto to_dir = podplane({"mirror", "export", (dir / "export").string()});
  ASSERT_EQ(to_dir.exit_code, 0) << show(to_dir);
  ProcessOptions aws = options;
  for (const auto& [name, value] : gateway.aws_env()) aws.env[name] = value;
  auto to_bucket = run_podplane({"mirror", "export", "s3://site-mirror/site"}, aws);
  ASSERT_EQ(to_bucket.exit_code, 0) << show(to_bucket);
  EXPECT_NE(to_bucket.err.find("(1 git repositories)"), std::string::npos) << to_bucket.err;

  const auto listed = gateway.list("site-mirror", "site/git/");
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "export" / "git")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    const std::string key = "site/git/" + fs::relative(entry.path(), dir / "export" / "git").string();
    ASSERT_TRUE(listed.contains(key)) << key;
    EXPECT_EQ(listed.at(key).size, fs::file_size(entry.path())) << key;
  }
  EXPECT_EQ(listed.size(), files);
  EXPECT_GT(files, 3u);

  // What a site git server takes: the repository's objects fetched back from the bucket make a
  // repository git clones, with upstream's commits.
  const fs::path copy = dir / "bucket-copy";
  for (const auto& [key, object] : listed) write_file(copy / key.substr(std::string("site/git/").size()), gateway.get("site-mirror", key).first);
  const std::string rest = repository_url.substr(repository_url.find("://") + 3);
  auto cloned = run({"git", "clone", "-q", (copy / rest).string(), (dir / "from-bucket").string()}, client_options(dir / "git-home"));
  ASSERT_EQ(cloned.exit_code, 0) << show(cloned);
  auto tag = run({"git", "-C", (dir / "from-bucket").string(), "rev-parse", "v2.0.1^{commit}"});
  EXPECT_EQ(trimmed(tag.out), commits["2.0.1"]);
}

}  // namespace
}  // namespace podplane::test
