// Every fix a check prints works as printed: for a failing row of `cluster check`, `stack check`
// and `deps verify`, the test takes the command from the check's own output, runs it exactly
// as printed (online where it fetches, in the directory the check ran in), and runs the check
// again, which must pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "base/digest.hpp"
#include "cache/layout.hpp"
#include "cache/store.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::e2e {
namespace {

namespace fs = std::filesystem;
using test::ProcessOptions;
using test::ProcessResult;
using test::read_file;
using test::run;
using test::run_podplane;
using test::show;
using test::TempDir;
using test::write_file;

// The podplane commands a check's output names as fixes, each once, in order: a remedy that
// starts with the command ends before " (online", " (offline" or ", or "; else the first `podplane …` quoted
// in backticks.
std::vector<std::string> printed_fixes(const std::string& text) {
  std::vector<std::string> commands;
  std::set<std::string> seen;
  std::istringstream lines(text);
  const std::regex quoted("`(podplane [^`]*)`");
  for (std::string line; std::getline(lines, line);) {
    std::string remedy = line.substr(std::min(line.find_first_not_of(' '), line.size()));
    std::string command;
    if (remedy.starts_with("podplane ")) {
      command = remedy;
      for (const char* end : {" (online", " (offline", ", or ", ", then "})
        if (auto at = command.find(end); at != std::string::npos) command.resize(at);
    } else if (std::smatch match; std::regex_search(remedy, match, quoted)) {
      command = match[1];
    }
    if (!command.empty() && seen.insert(command).second) commands.push_back(command);
  }
  return commands;
}

// Runs a printed command as printed: split at spaces (they quote nothing), podplane the binary.
ProcessResult run_as_printed(const std::string& command, const ProcessOptions& options) {
  std::vector<std::string> argv;
  std::istringstream words(command);
  for (std::string word; words >> word;) argv.push_back(word);
  argv.front() = test::podplane_binary().string();
  return run(argv, options);
}

class PrintedFixes : public ::testing::Test {
 protected:
  void SetUp() override {
    online.env = upstream.env(root, upstream.write_cli_config(dir / "cli.tfrc"));
    // No engine on PATH: deps tf takes tofu, as documented, and the checks judge by podplane's
    // own reading (--without-engine): these are the fixes of podplane's rows.
    online.env["PATH"] = "/usr/bin:/bin";
    online.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
  }
  ProcessResult podplane(const std::vector<std::string>& args, const std::optional<fs::path>& cwd = std::nullopt) {
    ProcessOptions options = online;
    options.cwd = cwd;
    return run_podplane(args, options);
  }
  // A check that fails, then each fix it printed run as printed in `cwd`, then the check again.
  void expect_printed_fixes_fix(const std::vector<std::string>& check, const fs::path& cwd, const std::string& names) {
    auto failed = podplane(check, cwd);
    ASSERT_EQ(failed.exit_code, 1) << show(failed);
    EXPECT_NE((failed.out + failed.err).find(names), std::string::npos) << show(failed);
    auto fixes = printed_fixes(failed.out + "\n" + failed.err);
    ASSERT_FALSE(fixes.empty()) << "the check printed no command\n" << show(failed);
    ProcessOptions options = online;
    options.cwd = cwd;
    for (const auto& fix : fixes) {
      auto fixed = run_as_printed(fix, options);
      EXPECT_EQ(fixed.exit_code, 0) << "the printed fix `" << fix << "` failed as printed\n" << show(fixed);
    }
    auto again = podplane(check, cwd);
    EXPECT_EQ(again.exit_code, 0) << "after the printed fixes:\n" << [&] {
      std::string list;
      for (const auto& fix : fixes) list += "  " + fix + "\n";
      return list;
    }() << show(again);
  }

  test::FixtureUpstream upstream;
  TempDir dir;
  fs::path root = dir / "deps";
  ProcessOptions online;
};

// An AWS cluster whose store has only another provider's items: the `deps download` that
// `cluster check` prints, run in the cluster's directory, takes the AWS ones.
TEST_F(PrintedFixes, ClusterCheckMissingProviderItems) {
  ASSERT_EQ(podplane({"--quiet", "deps", "tf", "--platform", "linux_amd64"}).exit_code, 0);
  ASSERT_EQ(podplane({"--quiet", "deps", "download", "--arch", "amd64", "--providers", "google"}).exit_code, 0);
  const fs::path stack = dir / "stack";
  fs::create_directories(stack);
  ASSERT_EQ(podplane({"cluster", "init", "--provider", "aws", "--id", "fixes", "--arch", "amd64", "--deps-mirror-url",
                      "https://mirror.site.internal:8443"},
                     stack)
                .exit_code,
            0);
  {
    // A Netsy seed from the store (deps download fetched seeds.json and the snapshots).
    std::string config = read_file(stack / "podplane.cluster.jsonc");
    const std::string id = "\"id\": \"fixes\",";
    ASSERT_NE(config.find(id), std::string::npos) << config;
    config.insert(config.find(id) + id.size(), "\n    \"seed\": { \"name\": \"minimal\", \"version\": \"2026.11.1\" },");
    write_file(stack / "podplane.cluster.jsonc", config);
  }
  auto created = podplane({"cluster", "create", "--no-apply"}, stack);
  ASSERT_EQ(created.exit_code, 0) << show(created);
  expect_printed_fixes_fix({"cluster", "check", "--without-engine"}, stack, "nstance-agent");

  // The seed snapshot apply reads, gone from the store's views: the printed `deps download`
  // names no placeholder and puts it back.
  std::smatch seed_path;
  const std::string main_tf = read_file(stack / "podplane.cluster.main.tf");
  ASSERT_TRUE(std::regex_search(main_tf, seed_path, std::regex("seed_path += \"([^\"]+)\""))) << main_tf;
  const fs::path seed = stack / std::string(seed_path[1]);
  ASSERT_TRUE(fs::exists(seed)) << seed;
  fs::remove(seed);
  expect_printed_fixes_fix({"cluster", "check", "--without-engine"}, stack, "MISSING: " + std::string(seed_path[1]));
  EXPECT_TRUE(fs::exists(seed)) << seed;
}

// A first bundle has no inventory from the other side yet: the refusal says to leave --since
// out, and so left out the bundle is made.
TEST_F(PrintedFixes, BundleSinceAMissingInventorySaysToLeaveItOut) {
  ASSERT_EQ(podplane({"--quiet", "deps", "tf", "--platform", "linux_amd64"}).exit_code, 0);
  auto refused = podplane({"bundle", "create", (dir / "deps.bundle").string(), "--since", (dir / "inventory.json").string()});
  EXPECT_EQ(refused.exit_code, 1) << show(refused);
  EXPECT_NE(refused.err.find("does not exist; for a first bundle leave --since out"), std::string::npos) << show(refused);
  EXPECT_FALSE(fs::exists(dir / "deps.bundle"));
  auto made = podplane({"bundle", "create", (dir / "deps.bundle").string()});
  EXPECT_EQ(made.exit_code, 0) << show(made);
}

// A Proxmox starter config: pools of the nodes' own arch, amd64.
TEST_F(PrintedFixes, ProxmoxStarterConfigIsAmd64) {
  const fs::path site = dir / "site";
  fs::create_directories(site);
  ASSERT_EQ(podplane({"cluster", "init", "--provider", "proxmox", "--id", "edge"}, site).exit_code, 0);
  const std::string config = read_file(site / "podplane.cluster.jsonc");
  EXPECT_NE(config.find("\"control-plane\": { \"arch\": \"amd64\""), std::string::npos) << config;
  EXPECT_EQ(config.find("arm64\""), std::string::npos) << config;
}

// A root whose constraints moved past its lock: `deps tf --write-lock` alone names --upgrade,
// and `stack check` prints the command with it, which then fixes the lock.
TEST_F(PrintedFixes, StackCheckLockBehindItsConstraints) {
  const fs::path infra = dir / "infra";
  auto constrain = [&](const std::string& version) {
    write_file(infra / "main.tf", "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \"" +
                                      version + "\" }\n  }\n}\n");
  };
  constrain("6.0.0");
  auto locked = podplane({"--quiet", "deps", "tf", "--stack", infra.string(), "--write-lock", "--platform", "linux_amd64"});
  ASSERT_EQ(locked.exit_code, 0) << show(locked);
  ASSERT_NE(read_file(infra / ".terraform.lock.hcl").find("version     = \"6.0.0\""), std::string::npos)
      << read_file(infra / ".terraform.lock.hcl");
  constrain("~> 6.2");

  auto kept = podplane({"--quiet", "deps", "tf", "--stack", infra.string(), "--write-lock", "--platform", "linux_amd64"});
  EXPECT_EQ(kept.exit_code, 1) << show(kept);
  EXPECT_NE(kept.err.find("with --upgrade"), std::string::npos) << "the refusal should name --upgrade\n" << show(kept);

  expect_printed_fixes_fix({"stack", "check", infra.string(), "--without-engine"}, dir.path(), "LOCK: the lock has 6.0.0");
  EXPECT_NE(read_file(infra / ".terraform.lock.hcl").find("version     = \"6.2.0\""), std::string::npos)
      << read_file(infra / ".terraform.lock.hcl");
}

// A damaged provider package and a damaged vmconfig artifact: `deps verify` prints
// `deps verify --repair`; once they are quarantined it prints, for each, the one command of
// its kind that takes it again.
TEST_F(PrintedFixes, DepsVerifyDamagedObjectsOfEachKind) {
  ASSERT_EQ(podplane({"--quiet", "deps", "tf", "--platform", "linux_amd64"}).exit_code, 0);
  ASSERT_EQ(podplane({"--quiet", "deps", "download", "--arch", "amd64", "--kind", "knc", "--providers", "all"}).exit_code, 0);
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  auto packages = store.artifacts({.kind = cache::ArtifactKind::provider_package});
  auto artifacts = store.artifacts({.kind = cache::ArtifactKind::vmconfig_artifact});
  ASSERT_FALSE(packages.empty());
  ASSERT_FALSE(artifacts.empty());
  for (const auto& digest : {packages.front().digest, artifacts.front().digest}) {
    fs::path object = cache::layout::objects_dir(root) / digest.substr(0, 2) / digest.substr(2);
    std::string bytes = read_file(object);
    bytes[bytes.size() / 2] ^= 0x5a;  // same size, other content
    fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
    write_file(object, bytes);
  }
  // First the repair it prints, then the commands the quarantined objects print, then clean.
  auto damaged = podplane({"deps", "verify"});
  ASSERT_EQ(damaged.exit_code, 1) << show(damaged);
  auto repair = printed_fixes(damaged.out + damaged.err);
  ASSERT_EQ(repair, std::vector<std::string>{"podplane deps verify --repair"}) << show(damaged);
  (void)run_as_printed(repair.front(), online);

  auto quarantined = podplane({"deps", "verify"});
  ASSERT_EQ(quarantined.exit_code, 1) << show(quarantined);
  const std::string text = quarantined.out + quarantined.err;
  EXPECT_NE(text.find("take it again: `podplane deps tf --engine tofu --platform linux_amd64`"), std::string::npos) << text;
  EXPECT_NE(text.find("take it again: `podplane deps download --providers all --arch amd64`"), std::string::npos) << text;
  expect_printed_fixes_fix({"deps", "verify"}, dir.path(), "was quarantined");
}

// A provider zip both engines' rows share (one sha256 under registry.terraform.io and
// registry.opentofu.org), damaged while the store's selection is tofu's: the take-again command
// names the selected row's engine, runs as printed (no `--stack <…>` for a provider Podplane's
// stack selects), restores the zip and leaves the selection on tofu.
TEST_F(PrintedFixes, DepsVerifyDamagedZipBothEnginesShare) {
  ASSERT_EQ(podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--platform", "linux_amd64"}).exit_code, 0);
  ASSERT_EQ(podplane({"--quiet", "deps", "tf", "--engine", "tofu", "--platform", "linux_amd64"}).exit_code, 0);
  cache::Artifact package;
  {
    auto store = cache::Store::open(root, cache::Store::Access::read_only);
    auto packages = store.artifacts({.kind = cache::ArtifactKind::provider_package});
    // Terraform's row (the older one, filled first) of a zip whose tofu row names the same object.
    for (const auto& row : packages) {
      if (!row.address.starts_with("registry.terraform.io/")) continue;
      if (std::any_of(packages.begin(), packages.end(), [&](const cache::Artifact& other) {
            return other.digest == row.digest && other.address.starts_with("registry.opentofu.org/");
          }))
        package = row;
    }
    ASSERT_FALSE(package.digest.empty()) << "no zip is shared by both engines' rows";
    ASSERT_EQ(store.tf_selection()->engine, "tofu");
  }
  fs::path object = cache::layout::objects_dir(root) / package.digest.substr(0, 2) / package.digest.substr(2);
  std::string bytes = read_file(object);
  bytes[bytes.size() / 2] ^= 0x5a;  // same size, other content
  fs::permissions(object, fs::perms::owner_write, fs::perm_options::add);
  write_file(object, bytes);

  auto damaged = podplane({"deps", "verify"});
  ASSERT_EQ(damaged.exit_code, 1) << show(damaged);
  EXPECT_NE(damaged.out.find("`podplane deps tf --engine tofu --platform linux_amd64` online"), std::string::npos)
      << show(damaged);
  auto repair = printed_fixes(damaged.out + damaged.err);
  ASSERT_EQ(repair, std::vector<std::string>{"podplane deps verify --repair"}) << show(damaged);
  (void)run_as_printed(repair.front(), online);
  expect_printed_fixes_fix({"deps", "verify"}, dir.path(), "was quarantined");

  EXPECT_EQ(file_digest_hex(object), package.digest) << "the printed command took the zip again";
  EXPECT_EQ(cache::Store::open(root, cache::Store::Access::read_only).tf_selection()->engine, "tofu")
      << "taking a zip again must not switch the store's engine";
}

}  // namespace
}  // namespace podplane::e2e
