// What a root needs, with the real terraform as the judge: `stack check` runs the engine's
// offline `init -lockfile=readonly` through a mirror of the store it starts on loopback (so
// registry modules resolve as on the site), never says all passed when the engine did not
// run, and `deps prune --keep-root/--keep-lock` keeps exactly what that check then needs. The
// upstream is stopped before every check: nothing but the store can answer.
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

std::string required_random() {
  return "terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n"
         "      version = \"~> 3.6\"\n    }\n  }\n}\n";
}

// A module call of the fixture registry's module (versions 2.0.1 and 2.1.0).
std::string network_module(const std::string& version) {
  return "module \"network\" {\n  source  = \"nstance-dev/nstance/aws//modules/network\"\n  version = \"" + version +
         "\"\n}\n";
}

// Two roots in one repository: `pinned` calls the module at 2.0.1 exactly, `latest` at
// whatever is newest (2.1.0), so the store holds both versions after one fill.
class RootNeeds : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_program("terraform")) GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
    upstream.emplace();
    upstream->write_cli_config(dir / "cli.tfrc");
    options.env = upstream->env(dir / "deps", dir / "cli.tfrc");
    options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    ASSERT_EQ(run({"git", "init", "-q", repo().string()}).exit_code, 0);
    write_file(repo() / "pinned/main.tf", required_random() + network_module("2.0.1"));
    write_file(repo() / "latest/main.tf", required_random() + network_module(">= 2.0"));
  }

  fs::path repo() const { return dir / "repo"; }
  ProcessResult podplane(const std::vector<std::string>& args) const { return run_podplane(args, options); }

  void fill(const std::vector<std::string>& roots) {
    std::vector<std::string> args{"--quiet", "deps", "tf", "--engine", "terraform", "--write-lock", "--platform", "linux_amd64"};
    for (const auto& root : roots) args.insert(args.end(), {"--stack", (repo() / root).string()});
    auto filled = podplane(args);
    ASSERT_EQ(filled.exit_code, 0) << show(filled);
  }

  // The upstream goes away: from here on only the store answers.
  void go_offline() { upstream.reset(); }

  ProcessResult stack_check(const std::string& root, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args{"stack", "check", (repo() / root).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return podplane(args);
  }

  TempDir dir;
  std::optional<FixtureUpstream> upstream;
  ProcessOptions options;
};

const std::regex kEngineProved(R"(terraform init -lockfile=readonly \(offline\) +ok \(\S*terraform, through https://127\.0\.0\.1:\d+ alone\))");

// The root calls a registry module: podplane's reading alone used to pass it while its engine
// row said "not run". Now the engine proves it through the store's loopback mirror.
TEST_F(RootNeeds, StackCheckRunsTheEngineThroughAMirrorOfTheStore) {
  fill({"pinned", "latest"});
  go_offline();
  auto check = stack_check("pinned");
  ASSERT_EQ(check.exit_code, 0) << show(check);
  EXPECT_TRUE(std::regex_search(check.out, kEngineProved)) << check.out;
  EXPECT_NE(check.out.find("module registry.terraform.io/nstance-dev/nstance/aws 2.0.1"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("All checks passed"), std::string::npos) << check.out;
  EXPECT_EQ(check.out.find("NOT RUN"), std::string::npos) << check.out;
}

// What the engine refuses fails the check, whatever podplane's own reading says: an archive
// URL module is in the store, but nothing can send the engine's fetch of it to the mirror. The
// printed fix, run as printed, vendors the package into the root, and the engine then inits it.
TEST_F(RootNeeds, WhatTheEngineRefusesFailsTheCheck) {
  write_file(repo() / "archived/main.tf", required_random() + "module \"network\" {\n  source = \"" +
                                               upstream->url(upstream->fixture()["modules"][0]["versions"][1]["archive_path"]) +
                                               "//modules/network\"\n}\n");
  fill({"archived"});
  go_offline();
  auto check = stack_check("archived");
  EXPECT_EQ(check.exit_code, 1) << show(check);
  EXPECT_TRUE(std::regex_search(check.out, std::regex(R"(terraform init -lockfile=readonly \(offline\) +FAILED)"))) << check.out;
  EXPECT_EQ(check.out.find("All checks passed"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("CANNOT REDIRECT: the engine fetches an archive URL from its own host"), std::string::npos)
      << check.out;

  std::smatch printed;
  ASSERT_TRUE(std::regex_search(check.err, printed, std::regex("(podplane stack vendor \\S+) \\(offline\\)"))) << check.err;
  std::vector<std::string> argv;
  std::istringstream words(printed[1].str());
  for (std::string word; words >> word;) argv.push_back(word);
  argv.erase(argv.begin());
  auto vendored = podplane(argv);
  ASSERT_EQ(vendored.exit_code, 0) << show(vendored);
  EXPECT_NE(read_file(repo() / "archived/main.tf").find("source = \"./vendor/modules/"), std::string::npos)
      << read_file(repo() / "archived/main.tf");
  auto again = stack_check("archived");
  EXPECT_EQ(again.exit_code, 0) << show(again);
  EXPECT_TRUE(std::regex_search(again.out, kEngineProved)) << again.out;
  // A second run finds nothing left to do and changes nothing.
  const std::string before = read_file(repo() / "archived/main.tf");
  auto twice = podplane(argv);
  EXPECT_EQ(twice.exit_code, 0) << show(twice);
  EXPECT_EQ(read_file(repo() / "archived/main.tf"), before);
}

// No engine on PATH: the row did not run, so the check is not passed; the printed
// --without-engine command accepts podplane's reading alone, and says so.
TEST_F(RootNeeds, WithoutTheEngineNothingIsCalledPassed) {
  fill({"pinned"});
  go_offline();
  options.env["PATH"] = "/usr/bin:/bin";
  auto check = stack_check("pinned");
  EXPECT_EQ(check.exit_code, 1) << show(check);
  EXPECT_NE(check.out.find("NOT RUN: terraform is not on PATH"), std::string::npos) << check.out;
  EXPECT_EQ(check.out.find("All checks passed"), std::string::npos) << check.out;
  const std::string printed = "podplane stack check " + (repo() / "pinned").string() + " --without-engine";
  ASSERT_NE(check.err.find("`" + printed + "`"), std::string::npos) << check.err;
  auto accepted = stack_check("pinned", {"--without-engine"});
  EXPECT_EQ(accepted.exit_code, 0) << show(accepted);
  EXPECT_NE(accepted.out.find("without the engine (--without-engine)"), std::string::npos) << accepted.out;
  EXPECT_EQ(accepted.out.find("All checks passed"), std::string::npos) << accepted.out;
}

// --keep 1 would drop 2.0.1 (2.1.0 is newer); the root that pins it keeps it, by --keep-root
// and by --keep-lock of the lock committed in it, and its check passes after the prune.
TEST_F(RootNeeds, PruneKeepsTheModuleVersionARootPins) {
  fill({"pinned", "latest"});
  go_offline();
  for (const std::vector<std::string>& keep :
       {std::vector<std::string>{"--keep-root", (repo() / "pinned").string()},
        std::vector<std::string>{"--keep-lock", (repo() / "pinned/.terraform.lock.hcl").string()}}) {
    std::vector<std::string> args{"deps", "prune", "--keep", "1", "--dry-run", "--json"};
    args.insert(args.end(), keep.begin(), keep.end());
    auto plan = podplane(args);
    ASSERT_EQ(plan.exit_code, 0) << show(plan);
    std::string kept_because;
    const auto parsed = nlohmann::json::parse(plan.out);  // the items live as long as it does
    for (const auto& item : parsed["items"])
      if (item["family"] == "module" && item["version"] == "2.0.1") kept_because = item["kept_because"].get<std::string>();
    const bool kept = kept_because.find("root " + (repo() / "pinned").string()) != std::string::npos;
    EXPECT_TRUE(kept) << keep[0] << " does not keep module 2.0.1 (kept because: \"" << kept_because << "\"):\n" << plan.out;
  }
  auto pruned = podplane({"deps", "prune", "--keep", "1", "--keep-root", (repo() / "pinned").string()});
  ASSERT_EQ(pruned.exit_code, 0) << show(pruned);
  auto check = stack_check("pinned");
  EXPECT_EQ(check.exit_code, 0) << show(check);
  EXPECT_TRUE(std::regex_search(check.out, kEngineProved)) << check.out;
}

// A bundle cut for one root carries what its check needs and nothing else: imported into an
// empty store, the engine inits the root from it, and the other root's module version stayed
// behind.
TEST_F(RootNeeds, ABundleForARootCarriesWhatItsCheckNeeds) {
  fill({"pinned", "latest"});
  go_offline();
  ASSERT_EQ(podplane({"bundle", "keygen", (dir / "site").string()}).exit_code, 0);
  auto created = podplane({"bundle", "create", (dir / "pinned.bundle").string(), "--for-root", (repo() / "pinned").string(),
                           "--sign", (dir / "site.key").string()});
  ASSERT_EQ(created.exit_code, 0) << show(created);

  options.env["PODPLANE_DEPS_CACHE_DIR"] = (dir / "site-deps").string();
  auto imported = podplane({"bundle", "import", (dir / "pinned.bundle").string(), "--trust", (dir / "site.pub").string()});
  ASSERT_EQ(imported.exit_code, 0) << show(imported);
  auto listed = podplane({"deps", "ls", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << show(listed);
  const auto rows = nlohmann::json::parse(listed.out);
  std::set<std::string> modules, providers;
  for (const auto& row : rows) {
    if (row["kind"] == "module") modules.insert(row["version"].get<std::string>());
    if (row["kind"] == "provider_package") providers.insert(row["address"].get<std::string>());
  }
  EXPECT_EQ(modules, std::set<std::string>{"2.0.1"}) << listed.out;
  EXPECT_EQ(providers, (std::set<std::string>{"registry.terraform.io/hashicorp/aws", "registry.terraform.io/hashicorp/random"}))
      << listed.out;
  auto check = stack_check("pinned");
  EXPECT_EQ(check.exit_code, 0) << show(check);
  EXPECT_TRUE(std::regex_search(check.out, kEngineProved)) << check.out;
}

// A root's lock that is a link out of its repository (to a secret, to a token file) is neither
// read nor written: no message quotes what it points at, and a dangling one does not make
// --write-lock create a file out there.
TEST_F(RootNeeds, ALockLinkedOutOfTheRepositoryIsNeitherReadNorWritten) {
  fill({"pinned"});
  const fs::path secret = dir / "secret.hcl";
  write_file(secret, "provider \"registry.terraform.io/hashicorp/random\" {\n  version = \"TOPSECRET-9f8e7d\"\n}\n");
  const fs::path lock = repo() / "pinned/.terraform.lock.hcl";
  fs::remove(lock);
  fs::create_symlink(secret, lock);
  auto check = stack_check("pinned", {"--without-engine"});
  EXPECT_EQ(check.exit_code, 1) << show(check);
  EXPECT_NE(check.out.find("is a link that leads outside " + repo().string()), std::string::npos) << check.out;
  EXPECT_EQ((check.out + check.err).find("TOPSECRET"), std::string::npos) << show(check);
  const std::vector<std::string> write_lock{"--quiet", "deps", "tf", "--engine", "terraform", "--write-lock",
                                            "--platform", "linux_amd64", "--stack", (repo() / "pinned").string()};
  auto written = podplane(write_lock);
  EXPECT_EQ(written.exit_code, 1) << show(written);
  EXPECT_EQ((written.out + written.err).find("TOPSECRET"), std::string::npos) << show(written);
  EXPECT_EQ(read_file(secret), "provider \"registry.terraform.io/hashicorp/random\" {\n  version = \"TOPSECRET-9f8e7d\"\n}\n");

  const fs::path outside = dir / "created-outside.hcl";
  fs::remove(lock);
  fs::create_symlink(outside, lock);
  auto dangling = podplane(write_lock);
  EXPECT_EQ(dangling.exit_code, 1) << show(dangling);
  EXPECT_FALSE(fs::exists(outside)) << "--write-lock wrote through a dangling link out of the repository";

  // A link to a lock inside the repository (a shared one) is followed, as the engines follow it.
  fs::remove(lock);
  fs::create_symlink(repo() / "shared.lock.hcl", lock);
  auto shared = podplane(write_lock);
  EXPECT_EQ(shared.exit_code, 0) << show(shared);
  EXPECT_TRUE(fs::is_symlink(lock));
  EXPECT_NE(read_file(repo() / "shared.lock.hcl").find("registry.terraform.io/hashicorp/random"), std::string::npos);
}

// A tree that is not a git checkout (a tarball of a repo, a CI workspace without .git): a
// root's `../modules` call leaves the root, and every command names the flag that sets the
// boundary; the printed command, run as printed, passes.
TEST_F(RootNeeds, ARootOutsideAGitCheckoutNamesTheRepoRootFlag) {
  const fs::path tree = dir / "workspace";
  write_file(tree / "stacks/prod/main.tf", required_random() + "module \"net\" {\n  source = \"../../modules/net\"\n}\n");
  write_file(tree / "modules/net/main.tf", network_module("2.0.1"));
  const std::string prod = (tree / "stacks/prod").string();
  auto refused = podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--write-lock", "--platform", "linux_amd64",
                           "--stack", prod});
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_NE(refused.err.find("pass --repo-root " + tree.string()), std::string::npos) << refused.err;
  auto filled = podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--write-lock", "--platform", "linux_amd64",
                          "--stack", prod, "--repo-root", tree.string()});
  ASSERT_EQ(filled.exit_code, 0) << show(filled);
  go_offline();

  auto check = podplane({"stack", "check", prod});
  EXPECT_EQ(check.exit_code, 1) << show(check);
  const std::string printed = "podplane stack check " + prod + " --repo-root " + tree.string();
  ASSERT_NE(check.err.find(printed), std::string::npos) << check.err;
  std::vector<std::string> argv;
  std::istringstream words(printed);
  for (std::string word; words >> word;) argv.push_back(word);
  argv.erase(argv.begin());
  auto fixed = podplane(argv);
  EXPECT_EQ(fixed.exit_code, 0) << show(fixed);
  EXPECT_TRUE(std::regex_search(fixed.out, kEngineProved)) << fixed.out;
}

}  // namespace
}  // namespace podplane::test
