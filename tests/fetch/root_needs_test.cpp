// What a root needs, with the real terraform as the judge: `stack check` runs the engine's
// offline `init -lockfile=readonly` through a mirror of the store it starts on loopback (so
// registry modules resolve as on the site), or through the `mirror serve` given by --mirror,
// never says all passed when the engine did not run, and `deps prune --keep-root/--keep-lock`
// keeps exactly what that check then needs, down through the modules a called module calls.
// The upstream is stopped before every check: nothing but the store can answer.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/background.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/tls.hpp"
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

// A call of the fixture registry's wrapper module (1.0.0), whose package calls the network
// module above at 2.0.1: a nested registry call.
std::string wrapper_module() {
  return "module \"platform\" {\n  source  = \"nstance-dev/wrapper/aws\"\n  version = \"1.0.0\"\n}\n";
}

// The arguments of a printed command line ("podplane stack vendor DIR"), without the program.
std::vector<std::string> words_of(const std::string& printed) {
  std::vector<std::string> argv;
  std::istringstream words(printed);
  for (std::string word; words >> word;) argv.push_back(word);
  if (!argv.empty() && argv.front() == "podplane") argv.erase(argv.begin());
  return argv;
}

// The items of a `deps prune --dry-run --json` or `deps du --json` answer: "family name version" →
// why it is kept ("" when it would go).
std::map<std::string, std::string> kept_items(const std::string& json) {
  std::map<std::string, std::string> items;
  const auto parsed = nlohmann::json::parse(json);  // the items live as long as it does
  for (const auto& item : parsed["items"])
    items[item["family"].get<std::string>() + " " + item["name"].get<std::string>() + " " + item["version"].get<std::string>()] =
        item.value("kept_because", "");
  return items;
}

// The table `stack check` printed for `root`.
std::string root_section(const std::string& out, const fs::path& root) {
  const auto at = out.find("Root " + root.string() + "\n");
  if (at == std::string::npos) return "";
  const auto next = out.find("\nRoot ", at + 1);
  return out.substr(at, next == std::string::npos ? std::string::npos : next - at);
}

// Roots in one repository: `pinned` calls the module at 2.0.1 exactly, `latest` at whatever is
// newest (2.1.0), so the store holds both versions after one fill; `nested` calls the wrapper,
// which calls the module at 2.0.1 in turn.
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
    write_file(repo() / "nested/main.tf", required_random() + wrapper_module());
  }

  // A root whose module call is the upstream's archive URL of the module's 2.1.0 package.
  void write_archived_root() {
    write_file(repo() / "archived/main.tf",
               required_random() + "module \"network\" {\n  source = \"" +
                   upstream->url(upstream->fixture()["modules"][0]["versions"][1]["archive_path"]) +
                   "//modules/network\"\n}\n");
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

  // `mirror serve` of the store over TLS, as a site runs it. Returns its URL, without a trailing slash.
  std::string serve_store() {
    write_test_tls(dir.path());
    serve.emplace(std::vector<std::string>{podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0",
                                           "--tls-cert", (dir / "cert.pem").string(), "--tls-key", (dir / "key.pem").string()},
                  std::map<std::string, std::string>{{"PODPLANE_DEPS_CACHE_DIR", (dir / "deps").string()}}, dir / "serve.err");
    std::string base = serve->first_line();
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base;
  }

  // `stack check --mirror` of `roots` against serve_store()'s mirror, trusting its certificate.
  ProcessResult check_through(const std::string& mirror, const std::vector<std::string>& roots) const {
    ProcessOptions trusting = options;
    trusting.env["SSL_CERT_FILE"] = (dir / "cert.pem").string();
    std::vector<std::string> args{"stack", "check", "--mirror", mirror};
    for (const auto& root : roots) args.push_back((repo() / root).string());
    return run_podplane(args, trusting);
  }

  TempDir dir;
  std::optional<FixtureUpstream> upstream;
  std::optional<Background> serve;
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
  write_archived_root();
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
  const auto argv = words_of(printed[1].str());
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

// Through `mirror serve` (--mirror) an archive URL call is what it is from the store: no mirror
// can serve it, since the engine fetches it from its own host. The check says so and prints the
// vendor fix, not a fill or a bundle that could never help; run as printed, the fix vendors the
// package and the engine then inits the root through the mirror.
TEST_F(RootNeeds, AnArchiveCallThroughAMirrorCannotBeRedirectedAndTheVendorFixWorks) {
  write_archived_root();
  fill({"archived"});
  go_offline();
  const std::string mirror = serve_store();
  ASSERT_FALSE(mirror.empty()) << read_file(dir / "serve.err");
  auto check = check_through(mirror, {"archived"});
  EXPECT_EQ(check.exit_code, 1) << show(check);
  EXPECT_NE(check.out.find("CANNOT REDIRECT: the engine fetches an archive URL from its own host"), std::string::npos)
      << check.out;
  EXPECT_EQ(check.out.find("MISSING: no package"), std::string::npos) << check.out;
  EXPECT_EQ(check.err.find("\n  podplane deps tf"), std::string::npos) << "a fill alone cannot help an archive call:\n" << check.err;
  EXPECT_TRUE(std::regex_search(check.out, std::regex(R"(terraform init -lockfile=readonly \(offline\) +FAILED)"))) << check.out;

  std::smatch printed;
  ASSERT_TRUE(std::regex_search(check.err, printed, std::regex("(podplane stack vendor \\S+) \\(offline\\)"))) << check.err;
  auto vendored = podplane(words_of(printed[1].str()));
  ASSERT_EQ(vendored.exit_code, 0) << show(vendored);
  auto again = check_through(mirror, {"archived"});
  EXPECT_EQ(again.exit_code, 0) << show(again);
  EXPECT_TRUE(std::regex_search(again.out, kEngineProved)) << again.out;
  EXPECT_NE(again.out.find("All checks passed"), std::string::npos) << again.out;
}

// An archive URL call inside a module package (here a git module the test publishes on the
// upstream) cannot be vendored: `stack vendor` changes only the repository's files. The check
// says so instead of printing the vendor command, and the way out it prints (copy the module
// into the repository, call the copy by a local path, then vendor the root) works.
TEST_F(RootNeeds, AnArchiveCallInsideAModulePackageNamesTheWayOutThatWorks) {
  FixtureOptions own;
  own.sharing = FixtureOptions::Sharing::private_copy;  // the test adds a git repository to it
  upstream.emplace(own);
  upstream->write_cli_config(dir / "cli.tfrc");
  options.env = upstream->env(dir / "deps", dir / "cli.tfrc");

  const fs::path module = dir / "archiver";
  const std::string archive = upstream->url(upstream->fixture()["modules"][0]["versions"][1]["archive_path"]);
  write_file(module / "main.tf", "module \"network\" {\n  source = \"" + archive + "//modules/network\"\n}\n");
  ProcessOptions git;
  git.env = {{"GIT_AUTHOR_NAME", "t"}, {"GIT_AUTHOR_EMAIL", "t@t"}, {"GIT_COMMITTER_NAME", "t"}, {"GIT_COMMITTER_EMAIL", "t@t"}};
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"git", "-C", module.string(), "init", "-q"}, {"git", "-C", module.string(), "add", "main.tf"},
        {"git", "-C", module.string(), "commit", "-q", "-m", "archiver"}, {"git", "-C", module.string(), "tag", "v1.0.0"},
        {"git", "clone", "-q", "--bare", module.string(), (upstream->www() / "git" / "archiver.git").string()}}) {
    auto done = run(step, git);
    ASSERT_EQ(done.exit_code, 0) << show(done);
  }
  write_file(repo() / "wrapped/main.tf", required_random() + "module \"archiver\" {\n  source = \"git::" +
                                            upstream->url("/git/archiver.git") + "?ref=v1.0.0\"\n}\n");
  fill({"wrapped"});
  go_offline();

  auto check = stack_check("wrapped");
  EXPECT_EQ(check.exit_code, 1) << show(check);
  EXPECT_NE(check.out.find("CANNOT REDIRECT: the engine fetches an archive URL from its own host"), std::string::npos)
      << check.out;
  EXPECT_NE(check.err.find("the call is inside a module package"), std::string::npos) << check.err;
  EXPECT_EQ(check.err.find("podplane stack vendor " + (repo() / "wrapped").string() + " (offline)"), std::string::npos)
      << "stack vendor cannot change a call inside a package:\n" << check.err;
  auto vendor_alone = podplane({"stack", "vendor", (repo() / "wrapped").string()});
  EXPECT_NE((vendor_alone.out + vendor_alone.err).find("inside a module package that is not vendored"), std::string::npos)
      << "the vendor command the check no longer prints leaves the call where it is:\n" << show(vendor_alone);

  // The way out as printed: the module copied into the repository and called by a local path,
  // then the root vendored.
  fs::create_directories(repo() / "modules" / "archiver");
  fs::copy_file(module / "main.tf", repo() / "modules" / "archiver" / "main.tf");
  write_file(repo() / "wrapped/main.tf", required_random() + "module \"archiver\" {\n  source = \"../modules/archiver\"\n}\n");
  auto vendored = podplane({"stack", "vendor", (repo() / "wrapped").string()});
  ASSERT_EQ(vendored.exit_code, 0) << show(vendored);
  auto again = stack_check("wrapped");
  EXPECT_EQ(again.exit_code, 0) << show(again);
  EXPECT_TRUE(std::regex_search(again.out, kEngineProved)) << again.out;
  EXPECT_NE(again.out.find("All checks passed"), std::string::npos) << again.out;
}

// `stack check --mirror` of roots calling registry modules, one of them through a module that
// calls another: the engine's row really ran through `mirror serve` and passed, and each module
// version the calls select, the nested one too, is a row the mirror answered.
TEST_F(RootNeeds, StackCheckThroughMirrorServeRunsTheEngineForRegistryModules) {
  fill({"pinned", "nested"});
  go_offline();
  const std::string mirror = serve_store();
  ASSERT_FALSE(mirror.empty()) << read_file(dir / "serve.err");
  auto check = check_through(mirror, {"pinned", "nested"});
  ASSERT_EQ(check.exit_code, 0) << show(check);
  std::size_t proved = 0;
  for (auto it = std::sregex_iterator(check.out.begin(), check.out.end(), kEngineProved); it != std::sregex_iterator(); ++it)
    ++proved;
  EXPECT_EQ(proved, 2u) << check.out;
  EXPECT_EQ(check.out.find("not run"), std::string::npos) << check.out;
  EXPECT_EQ(check.out.find("NOT RUN"), std::string::npos) << check.out;
  // What the modules the nested call selects require (hashicorp/aws) is read through the mirror too.
  const std::string nested = root_section(check.out, repo() / "nested");
  EXPECT_NE(nested.find("lock covers the 2 providers the root requires"), std::string::npos) << check.out;
  for (const std::string row : {"module registry.terraform.io/nstance-dev/wrapper/aws 1.0.0",
                                "module registry.terraform.io/nstance-dev/nstance/aws 2.0.1"})
    EXPECT_NE(nested.find(row), std::string::npos) << row << "\n" << check.out;
  EXPECT_NE(nested.find("ok: 1.0.0 from " + mirror), std::string::npos) << check.out;
  EXPECT_NE(nested.find("ok: 2.0.1 from " + mirror), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("All checks passed"), std::string::npos) << check.out;
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

// A module that calls another: `nested` calls the wrapper 1.0.0, whose package calls the network
// module at 2.0.1. --keep 1 would drop 2.0.1 (`latest` filled 2.1.0); --keep-root and
// --keep-lock of `nested` keep it, naming the root, and a real prune by the lock leaves the
// root's check passing while it removes what no kept root needs (`old`'s random 3.6.0).
TEST_F(RootNeeds, PruneKeepsTheModuleVersionsACalledModuleCalls) {
  write_file(repo() / "old/main.tf",
             "terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n"
             "      version = \"3.6.0\"\n    }\n  }\n}\n");
  fill({"nested", "latest", "old"});
  go_offline();
  const std::string nested = (repo() / "nested").string();
  for (const std::vector<std::string>& keep : {std::vector<std::string>{"--keep-root", nested},
                                               std::vector<std::string>{"--keep-lock", nested + "/.terraform.lock.hcl"}}) {
    std::vector<std::string> args{"deps", "prune", "--keep", "1", "--dry-run", "--json"};
    args.insert(args.end(), keep.begin(), keep.end());
    auto plan = podplane(args);
    ASSERT_EQ(plan.exit_code, 0) << show(plan);
    const auto items = kept_items(plan.out);
    const std::string network = "module registry.terraform.io/nstance-dev/nstance/aws 2.0.1";
    ASSERT_EQ(items.count(network), 1u) << plan.out;
    EXPECT_NE(items.at(network).find("root " + nested), std::string::npos)
        << keep[0] << " does not keep " << network << " for the root (kept because: \"" << items.at(network) << "\")";
    // The wrapper's only version: kept as the newest, whoever pins it.
    const std::string wrapper = "module registry.terraform.io/nstance-dev/wrapper/aws 1.0.0";
    ASSERT_EQ(items.count(wrapper), 1u) << plan.out;
    EXPECT_NE(items.at(wrapper), "") << plan.out;
  }
  auto pruned = podplane({"deps", "prune", "--keep", "1", "--keep-lock", nested + "/.terraform.lock.hcl"});
  ASSERT_EQ(pruned.exit_code, 0) << show(pruned);
  EXPECT_NE(pruned.out.find("removed provider registry.terraform.io/hashicorp/random 3.6.0"), std::string::npos) << pruned.out;
  EXPECT_EQ(pruned.out.find("removed module"), std::string::npos) << pruned.out;
  auto check = stack_check("nested");
  EXPECT_EQ(check.exit_code, 0) << show(check);
  EXPECT_TRUE(std::regex_search(check.out, kEngineProved)) << check.out;
  EXPECT_NE(check.out.find("module registry.terraform.io/nstance-dev/nstance/aws 2.0.1"), std::string::npos) << check.out;
}

// A stored package that cannot be read (a file of the wrapper's gone from the store) hides the
// calls inside it: its row is UNREADABLE, from the store and through a mirror of it, never ok,
// and `deps prune --keep-root` refuses the root rather than keep less than it needs. The printed
// fix (deps verify --repair, then the fill), run as printed, makes the check pass.
TEST_F(RootNeeds, AStoredPackageThatCannotBeReadFailsItsRowAndStopsThePrune) {
  fill({"nested"});
  const std::string digest = upstream->fixture()["modules"][2]["versions"][0]["files"]["main.tf"]["sha256"];
  const fs::path object = dir / "deps/store/objects/sha256" / digest.substr(0, 2) / digest.substr(2);
  ASSERT_TRUE(fs::exists(object)) << object;
  fs::remove(object);
  const std::regex unreadable(R"(module registry\.terraform\.io/nstance-dev/wrapper/aws 1\.0\.0 +UNREADABLE: )");

  const std::string mirror = serve_store();
  ASSERT_FALSE(mirror.empty()) << read_file(dir / "serve.err");
  auto through = check_through(mirror, {"nested"});
  EXPECT_EQ(through.exit_code, 1) << show(through);
  EXPECT_TRUE(std::regex_search(through.out, unreadable)) << through.out;
  EXPECT_NE(through.err.find("on the mirror's host, which lists the package but does not hand it out: podplane deps "
                             "verify --repair, then podplane deps tf"),
            std::string::npos)
      << through.err;
  serve.reset();

  auto check = stack_check("nested");
  EXPECT_EQ(check.exit_code, 1) << show(check);
  EXPECT_TRUE(std::regex_search(check.out, unreadable)) << check.out;
  EXPECT_EQ(check.out.find("All checks passed"), std::string::npos) << check.out;
  auto pruned = podplane({"deps", "prune", "--keep", "1", "--keep-root", (repo() / "nested").string()});
  EXPECT_EQ(pruned.exit_code, 1) << show(pruned);
  EXPECT_NE(pruned.err.find("nothing can say what it needs"), std::string::npos) << pruned.err;
  EXPECT_NE(pruned.err.find("podplane deps verify"), std::string::npos) << pruned.err;

  const std::string repair = "podplane deps verify --repair";
  const std::string refill = "podplane deps tf --engine terraform --stack " + (repo() / "nested").string();
  ASSERT_NE(check.err.find(repair + " (it sets the damaged package aside), then " + refill + " (online)"), std::string::npos)
      << check.err;
  // It sets the tree aside; its missing object stays a problem (exit 1) until the fill takes it again.
  auto repaired = podplane(words_of(repair));
  EXPECT_NE(repaired.out.find("quarantined module registry.terraform.io/nstance-dev/wrapper/aws 1.0.0"), std::string::npos)
      << show(repaired);
  auto refilled = podplane(words_of(refill));
  ASSERT_EQ(refilled.exit_code, 0) << show(refilled);
  go_offline();
  auto again = stack_check("nested");
  EXPECT_EQ(again.exit_code, 0) << show(again);
  EXPECT_TRUE(std::regex_search(again.out, kEngineProved)) << again.out;
  auto verified = podplane({"deps", "verify"});
  EXPECT_EQ(verified.exit_code, 0) << show(verified);
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
// root's `../modules` call leaves the root, and every command that reads the root (deps tf,
// deps prune --keep-root, deps du --keep-root, bundle create --for-root, stack vendor, stack
// check) names the flag that sets the boundary; the flag, added as printed, makes it work.
TEST_F(RootNeeds, ARootOutsideAGitCheckoutNamesTheRepoRootFlag) {
  const fs::path tree = dir / "workspace";
  // The root also calls an archive URL, so that `stack vendor` has something to vendor.
  write_file(tree / "stacks/prod/main.tf",
             required_random() + "module \"net\" {\n  source = \"../../modules/net\"\n}\n" +
                 "module \"archived\" {\n  source = \"" +
                 upstream->url(upstream->fixture()["modules"][0]["versions"][1]["archive_path"]) + "//modules/network\"\n}\n");
  write_file(tree / "modules/net/main.tf", network_module("2.0.1"));
  const std::string prod = (tree / "stacks/prod").string();
  const std::string flag = "--repo-root " + tree.string();
  // Runs `args`, which must be refused naming the flag; then again with the flag as printed.
  auto with_the_printed_flag = [&](std::vector<std::string> args) {
    auto refused = podplane(args);
    EXPECT_EQ(refused.exit_code, 1) << show(refused);
    std::smatch printed;
    EXPECT_TRUE(std::regex_search(refused.err, printed, std::regex("pass (--repo-root \\S+) ")))
        << "no flag named:\n" << show(refused);
    EXPECT_EQ(printed.size() > 1 ? printed[1].str() : "", flag) << refused.err;
    const auto words = words_of(flag);
    args.insert(args.end(), words.begin(), words.end());
    return podplane(args);
  };
  const std::vector<std::string> fill{"--quiet", "deps", "tf", "--engine", "terraform", "--write-lock",
                                      "--platform", "linux_amd64", "--stack", prod};
  auto filled = with_the_printed_flag(fill);
  ASSERT_EQ(filled.exit_code, 0) << show(filled);
  this->fill({"latest"});  // 2.1.0: the root's 2.0.1 is then kept only because the root needs it
  go_offline();

  // prune and du keep what the root needs (the module version its local module calls).
  for (const std::string command : {"prune", "du"}) {
    std::vector<std::string> args{"deps", command, "--keep", "1", "--keep-root", prod, "--json"};
    if (command == "prune") args.push_back("--dry-run");
    auto kept = with_the_printed_flag(args);
    ASSERT_EQ(kept.exit_code, 0) << show(kept);
    const auto items = kept_items(kept.out);
    const std::string module = "module registry.terraform.io/nstance-dev/nstance/aws 2.0.1";
    ASSERT_EQ(items.count(module), 1u) << kept.out;
    EXPECT_NE(items.at(module).find("root " + prod), std::string::npos) << command << ": " << items.at(module);
  }
  auto pruned = with_the_printed_flag({"deps", "prune", "--keep", "1", "--keep-root", prod});
  EXPECT_EQ(pruned.exit_code, 0) << show(pruned);

  // The bundle for the root carries both module packages it calls: the registry one and the archive.
  auto bundled = with_the_printed_flag({"bundle", "create", (dir / "prod.bundle").string(), "--for-root", prod});
  EXPECT_EQ(bundled.exit_code, 0) << show(bundled);
  EXPECT_NE(bundled.out.find(" 2 module trees,"), std::string::npos) << bundled.out;

  auto vendored = with_the_printed_flag({"stack", "vendor", prod});
  ASSERT_EQ(vendored.exit_code, 0) << show(vendored);
  EXPECT_NE(read_file(tree / "stacks/prod/main.tf").find("source = \"./vendor/modules/"), std::string::npos)
      << read_file(tree / "stacks/prod/main.tf");

  auto check = podplane({"stack", "check", prod});
  EXPECT_EQ(check.exit_code, 1) << show(check);
  const std::string printed = "podplane stack check " + prod + " " + flag;
  ASSERT_NE(check.err.find(printed), std::string::npos) << check.err;
  auto fixed = podplane(words_of(printed));
  EXPECT_EQ(fixed.exit_code, 0) << show(fixed);
  EXPECT_TRUE(std::regex_search(fixed.out, kEngineProved)) << fixed.out;
}

}  // namespace
}  // namespace podplane::test
