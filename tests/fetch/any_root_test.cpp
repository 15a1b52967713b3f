// `podplane deps tf --stack` for roots we did not generate, shaped like the users' repos: a
// Proxmox + Cloudflare shop (tofu/proxmox/environments/prod with modules under
// tofu/proxmox/modules/…) and a homelab (terraform/, clusters/<site>/{bootstrap,talos}) whose
// roots pin one provider at different versions. Each root resolves on its own; --write-lock
// writes what `terraform providers lock` writes (the real terraform is the judge).
#include <gtest/gtest.h>

#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cache/store.hpp"
#include "tests/support/background.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/tls.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

// The fixture upstream with the shop's providers beside the default ones.
FixtureOptions with_user_providers() {
  FixtureOptions options;
  options.add_provider = {"bpg/proxmox=0.66.0,0.70.0", "cloudflare/cloudflare=4.40.0,4.52.0"};
  return options;
}

class Repo {
 public:
  // A git repository, as a root's repository is: its roots call local modules anywhere in it.
  explicit Repo(const FixtureUpstream& upstream) : upstream_(upstream) {
    upstream.write_cli_config(dir_ / "cli.tfrc");
    auto init = run({"git", "init", "-q", (dir_ / "repo").string()});
    if (init.exit_code != 0) throw std::runtime_error("git init failed:\n" + init.err);
  }
  fs::path root() const { return dir_ / "deps"; }
  fs::path path(const std::string& relative) const { return dir_ / "repo" / relative; }
  const TempDir& dir() const { return dir_; }
  // How podplane runs against the fixture: its CLI config, CA and this repo's deps root.
  ProcessOptions options() const {
    ProcessOptions options;
    options.env = upstream_.env(root(), dir_ / "cli.tfrc");
    options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    return options;
  }
  ProcessResult podplane(const std::vector<std::string>& args) const { return run_podplane(args, options()); }
  // The real terraform against the fixture upstream (the same host blocks and CA as podplane).
  ProcessResult terraform(const std::vector<std::string>& args, const fs::path& cwd) const {
    ProcessOptions options;
    options.cwd = cwd;
    options.env = {{"TF_CLI_CONFIG_FILE", (dir_ / "cli.tfrc").string()},
                   {"SSL_CERT_FILE", upstream_.ca_file().string()},
                   {"HOME", (dir_ / "home").string()},
                   {"CHECKPOINT_DISABLE", "1"}};
    options.unset_env = {"TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    std::vector<std::string> argv{"terraform"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, options);
  }

 private:
  TempDir dir_;
  const FixtureUpstream& upstream_;
};

std::string required(const std::vector<std::pair<std::string, std::string>>& providers) {
  std::string text = "terraform {\n  required_providers {\n";
  for (const auto& [source, constraint] : providers) {
    auto name = source.substr(source.rfind('/') + 1);
    text += "    " + name + " = {\n      source  = \"" + source + "\"\n      version = \"" + constraint + "\"\n    }\n";
  }
  return text + "  }\n}\n";
}

// The shop: one root that calls three local modules, each with its own versions.tf (one of
// them versions.tf.json).
void write_shop(const Repo& repo) {
  write_file(repo.path("tofu/proxmox/environments/prod/main.tf"),
             required({{"bpg/proxmox", ">= 0.66.0"}, {"cloudflare/cloudflare", "~> 4.40"}}) +
                 "module \"vm\" {\n  source = \"../../modules/vm\"\n}\n"
                 "module \"vlan\" {\n  source = \"../../modules/node-vlan\"\n}\n"
                 "module \"dns\" {\n  source = \"../../modules/cloudflare-dns-record\"\n}\n");
  write_file(repo.path("tofu/proxmox/modules/vm/versions.tf"), required({{"bpg/proxmox", ">= 0.60"}}));
  write_file(repo.path("tofu/proxmox/modules/node-vlan/versions.tf"), required({{"bpg/proxmox", "~> 0.66"}}));
  // Written by a generator in terraform's JSON syntax: a root that mixes .tf and .tf.json.
  write_file(repo.path("tofu/proxmox/modules/cloudflare-dns-record/versions.tf.json"),
             R"({"terraform": [{"required_providers": [{"cloudflare": {"source": "cloudflare/cloudflare",)"
             R"( "version": ">= 4.0, < 4.50"}}]}], "//": "generated"})");
}

// The homelab: three roots, two of them locking hashicorp/random at different versions.
void write_homelab(const Repo& repo, const std::string& host, const std::string& random_360_h1) {
  write_file(repo.path("terraform/main.tf"), required({{"hashicorp/random", "~> 3.6"}, {"hashicorp/null", ">= 3.2"}}));
  write_file(repo.path("clusters/home/bootstrap/main.tf"), required({{"hashicorp/random", "~> 3.6"}}));
  // Committed by an earlier `init` on linux_amd64: kept at 3.6.0 (no --upgrade), its hash kept.
  write_file(repo.path("clusters/home/bootstrap/.terraform.lock.hcl"),
             "# This file is maintained automatically by \"terraform init\".\n"
             "# Manual edits may be lost in future updates.\n\n"
             "provider \"" + host + "/hashicorp/random\" {\n"
             "  version     = \"3.6.0\"\n"
             "  constraints = \"~> 3.6\"\n"
             "  hashes = [\n"
             "    \"" + random_360_h1 + "\",\n"
             "  ]\n"
             "}\n");
  write_file(repo.path("clusters/home/talos/main.tf"), required({{"hashicorp/random", ">= 3.7"}, {"bpg/proxmox", "0.66.0"}}));
}

const nlohmann::json& package_of(const FixtureUpstream& upstream, const std::string& type, const std::string& version,
                                 const std::string& platform) {
  for (const auto& provider : upstream.fixture()["providers"]) {
    if (provider["type"] != type) continue;
    for (const auto& entry : provider["versions"]) {
      if (entry["version"] == version) return entry["packages"][platform];
    }
  }
  throw std::runtime_error("fixture has no " + type + " " + version + " " + platform);
}

void copy_tree(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

std::string selection_text(const fs::path& root) {
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  auto selection = store.tf_selection();
  std::string text;
  if (!selection) return text;
  for (const auto& p : selection->providers) text += p.address + " " + p.version + "\n";
  return text + selection->module_address + " " + selection->module_version + " " + selection->engine + "\n";
}

// Roots that lock one provider at different versions are normal: one run fills them all, and
// neither that run nor a later plain `deps tf` touches what the other relies on.
TEST(AnyRoot, RootsWithDifferentPinsFillTogetherAndLeavePodplanesSelection) {
  FixtureUpstream upstream(with_user_providers());
  Repo repo(upstream);
  // The roots' locks name registry.opentofu.org: tofu's, whatever engine this machine has.
  auto plain = repo.podplane({"deps", "tf", "--engine", "tofu", "--platform", "linux_amd64"});
  ASSERT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  const auto store_lock = read_file(repo.root() / "tf" / ".terraform.lock.hcl");
  const auto selection = selection_text(repo.root());

  write_homelab(repo, "registry.opentofu.org", package_of(upstream, "random", "3.6.0", "linux_amd64")["h1"]);
  write_file(repo.path("clusters/home/bootstrap/.terraform.lock.hcl"),
             "provider \"registry.opentofu.org/hashicorp/random\" {\n  version     = \"3.6.0\"\n"
             "  constraints = \"~> 3.6\"\n}\n");
  auto roots = repo.podplane({"deps", "tf", "--engine", "tofu", "--platform", "linux_amd64", "--stack", repo.path("terraform").string(),
                              "--stack", repo.path("clusters/home/bootstrap").string(), "--stack",
                              repo.path("clusters/home/talos").string()});
  ASSERT_EQ(roots.exit_code, 0) << roots.out << roots.err;
  EXPECT_NE(roots.out.find("provider registry.opentofu.org/hashicorp/random 3.6.0 (" +
                           repo.path("clusters/home/bootstrap").string() + ")"),
            std::string::npos)
      << roots.out;
  EXPECT_NE(roots.out.find("provider registry.opentofu.org/hashicorp/random 3.7.2 (" + repo.path("terraform").string() + ")"),
            std::string::npos)
      << roots.out;
  auto providers = repo.root() / "tf" / "providers" / "registry.opentofu.org";
  EXPECT_TRUE(fs::exists(providers / "hashicorp/random/terraform-provider-random_3.6.0_linux_amd64.zip"));
  EXPECT_TRUE(fs::exists(providers / "hashicorp/random/terraform-provider-random_3.7.2_linux_amd64.zip"));
  EXPECT_TRUE(fs::exists(providers / "bpg/proxmox/terraform-provider-proxmox_0.66.0_linux_amd64.zip"));
  // Podplane's stack's lock and selection are its own: the roots' run leaves them.
  EXPECT_EQ(read_file(repo.root() / "tf" / ".terraform.lock.hcl"), store_lock);
  EXPECT_EQ(selection_text(repo.root()), selection);
  EXPECT_FALSE(fs::exists(repo.path("terraform/.terraform.lock.hcl"))) << "no lock is written without --write-lock";

  // A plain run again: every package the roots rely on stays, in the index and the views.
  auto again = repo.podplane({"deps", "tf", "--engine", "tofu", "--platform", "linux_amd64"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_TRUE(fs::exists(providers / "hashicorp/random/terraform-provider-random_3.6.0_linux_amd64.zip"));
  EXPECT_TRUE(fs::exists(providers / "bpg/proxmox/terraform-provider-proxmox_0.66.0_linux_amd64.zip"));
  EXPECT_EQ(read_file(repo.root() / "tf" / ".terraform.lock.hcl"), store_lock);
}

// Every root's written lock equals what `terraform providers lock` writes for it, for two
// platforms, keeping a committed lock's version and hashes.
TEST(AnyRoot, WrittenLocksEqualTerraformProvidersLock) {
  if (!have_program("terraform")) GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
  FixtureUpstream upstream(with_user_providers());
  Repo repo(upstream);
  const std::string host = "registry.terraform.io";
  write_shop(repo);
  write_homelab(repo, host, package_of(upstream, "random", "3.6.0", "linux_amd64")["h1"]);
  const std::vector<std::string> roots = {"tofu/proxmox/environments/prod", "terraform", "clusters/home/bootstrap",
                                          "clusters/home/talos"};
  const std::vector<std::string> platforms = {"linux_amd64", "linux_arm64"};
  copy_tree(repo.path(""), repo.dir() / "by-terraform");

  std::vector<std::string> args{"deps", "tf", "--engine", "terraform", "--write-lock"};
  for (const auto& platform : platforms) args.insert(args.end(), {"--platform", platform});
  for (const auto& root : roots) args.insert(args.end(), {"--stack", repo.path(root).string()});
  auto result = repo.podplane(args);
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;

  for (const auto& root : roots) {
    SCOPED_TRACE(root);
    const fs::path theirs = repo.dir() / "by-terraform" / root;
    auto get = repo.terraform({"get", "-no-color"}, theirs);  // `providers lock` wants the local modules installed
    ASSERT_EQ(get.exit_code, 0) << get.out << get.err;
    auto lock = repo.terraform({"providers", "lock", "-no-color", "-platform=linux_amd64", "-platform=linux_arm64"}, theirs);
    ASSERT_EQ(lock.exit_code, 0) << lock.out << lock.err;
    const std::string expected = read_file(theirs / ".terraform.lock.hcl");
    const std::string written = read_file(repo.path(root) / ".terraform.lock.hcl");
    EXPECT_EQ(written, expected);  // a zh for every SHA256SUMS line, as terraform writes
  }
  const std::string bootstrap = read_file(repo.path("clusters/home/bootstrap/.terraform.lock.hcl"));
  EXPECT_NE(bootstrap.find("version     = \"3.6.0\""), std::string::npos) << bootstrap;

  // --upgrade chooses afresh within the constraints, as `init -upgrade` does.
  auto upgraded = repo.podplane({"deps", "tf", "--engine", "terraform", "--write-lock", "--upgrade", "--platform",
                                 "linux_amd64", "--stack", repo.path("clusters/home/bootstrap").string()});
  ASSERT_EQ(upgraded.exit_code, 0) << upgraded.out << upgraded.err;
  const std::string after = read_file(repo.path("clusters/home/bootstrap/.terraform.lock.hcl"));
  EXPECT_NE(after.find("version     = \"3.7.2\""), std::string::npos) << after;
}

// The four roots of the shop and the homelab, filled for terraform on linux_amd64 with their
// locks written: what the readiness and offline tests start from.
const std::vector<std::string> kRoots = {"tofu/proxmox/environments/prod", "terraform", "clusters/home/bootstrap",
                                         "clusters/home/talos"};

ProcessResult fill_roots(const Repo& repo, const std::vector<std::string>& platforms = {"linux_amd64"},
                         const std::vector<std::string>& roots = kRoots) {
  std::vector<std::string> args{"deps", "tf", "--engine", "terraform", "--write-lock"};
  for (const auto& platform : platforms) args.insert(args.end(), {"--platform", platform});
  for (const auto& root : roots) args.insert(args.end(), {"--stack", repo.path(root).string()});
  return repo.podplane(args);
}

ProcessResult stack_check(const Repo& repo, const std::vector<std::string>& roots, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"stack", "check"};
  for (const auto& root : roots) args.push_back(repo.path(root).string());
  args.insert(args.end(), extra.begin(), extra.end());
  return repo.podplane(args);
}

// The lines of a check table whose PLATFORM column is `platform` and whose CHECK has `item`.
std::size_t rows_with(const std::string& table, const std::string& platform, const std::string& item) {
  std::size_t count = 0, at = 0;
  while (at < table.size()) {
    auto end = table.find('\n', at);
    std::string line = table.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (line.rfind(platform + " ", 0) == 0 && line.find(item) != std::string::npos) ++count;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return count;
}

// `stack check`, offline, on roots we did not generate: passes after a fill (and the engine
// itself agrees where it is installed), and names the command that fixes a missing platform or
// a module the store does not have.
TEST(AnyRoot, StackCheckPassesAfterAFillAndNamesTheFix) {
  FixtureUpstream upstream(with_user_providers());
  Repo repo(upstream);
  write_shop(repo);
  write_homelab(repo, "registry.terraform.io", package_of(upstream, "random", "3.6.0", "linux_amd64")["h1"]);
  auto fill = fill_roots(repo);
  ASSERT_EQ(fill.exit_code, 0) << fill.out << fill.err;

  auto passed = stack_check(repo, kRoots);
  ASSERT_EQ(passed.exit_code, 0) << passed.out << passed.err;
  EXPECT_NE(passed.out.find("All checks passed"), std::string::npos) << passed.out;
  EXPECT_EQ(rows_with(passed.out, "linux_amd64", "provider registry.terraform.io/bpg/proxmox 0.66.0"), 1u) << passed.out;
  EXPECT_EQ(rows_with(passed.out, "linux_amd64", "provider registry.terraform.io/bpg/proxmox 0.70.0"), 1u) << passed.out;
  EXPECT_EQ(rows_with(passed.out, "linux_amd64", "provider registry.terraform.io/cloudflare/cloudflare 4.40.0"), 1u)
      << passed.out;
  EXPECT_EQ(rows_with(passed.out, "linux_amd64", "provider registry.terraform.io/hashicorp/random 3.6.0"), 1u) << passed.out;
  EXPECT_EQ(rows_with(passed.out, "linux_arm64", "provider"), 0u) << "only the platforms the store holds:\n" << passed.out;
  if (have_program("terraform")) {
    EXPECT_EQ(rows_with(passed.out, "-", "terraform init -lockfile=readonly (offline)"), kRoots.size()) << passed.out;
    EXPECT_EQ(passed.out.find("FAILED"), std::string::npos) << passed.out;
  }

  // A platform the store lacks: every provider row of it fails, and the fix is the fill command.
  const std::string talos = repo.path("clusters/home/talos").string();
  auto arm = stack_check(repo, {"clusters/home/talos"}, {"--platform", "linux_amd64,linux_arm64"});
  EXPECT_EQ(arm.exit_code, 1) << arm.out << arm.err;
  EXPECT_EQ(rows_with(arm.out, "linux_arm64", "MISSING: no package in the store"), 2u) << arm.out;
  EXPECT_EQ(rows_with(arm.out, "linux_amd64", "MISSING"), 0u) << arm.out;
  EXPECT_NE(arm.err.find("podplane deps tf --engine terraform --stack " + talos + " --platform linux_arm64 (online)"),
            std::string::npos)
      << arm.err;

  // A module version the store does not have: its row fails with the fill command of that root.
  write_file(repo.path("clusters/home/talos/network.tf"),
             "module \"network\" {\n  source  = \"nstance-dev/nstance/aws//modules/network\"\n  version = \"9.9.9\"\n}\n");
  auto module = stack_check(repo, {"clusters/home/talos"});
  EXPECT_EQ(module.exit_code, 1) << module.out << module.err;
  EXPECT_EQ(rows_with(module.out, "-", "module registry.terraform.io/nstance-dev/nstance/aws 9.9.9"), 1u) << module.out;
  EXPECT_NE(module.out.find("MISSING: the store has no version that \"9.9.9\" allows"), std::string::npos) << module.out;
  EXPECT_NE(module.err.find("podplane deps tf --engine terraform --stack " + talos +
                            " (online), or import a bundle that has module registry.terraform.io/nstance-dev/nstance/aws"),
            std::string::npos)
      << module.err;

  // A root without a lock: `init -lockfile=readonly` cannot pass; the fix writes the lock.
  fs::remove(repo.path("terraform/.terraform.lock.hcl"));
  auto unlocked = stack_check(repo, {"terraform"});
  EXPECT_EQ(unlocked.exit_code, 1) << unlocked.out << unlocked.err;
  EXPECT_NE(unlocked.err.find("podplane deps tf --stack " + repo.path("terraform").string() + " --write-lock"),
            std::string::npos)
      << unlocked.err;
}

// The roots of the other shapes the suite's tests take, beside the users' repos: a registry
// module at its newest (`latest`), through a module that calls another (`nested`), a git source
// by tag (`git`), an archive URL vendored into the root (`vendored`), and a root outside any git
// checkout whose `../` call needs --repo-root (`workspace/stacks/prod`, not in the repository).
const std::vector<std::string> kOtherShapes = {"shapes/latest", "shapes/nested", "shapes/git", "shapes/vendored"};

void write_other_shapes(const Repo& repo, const FixtureUpstream& upstream) {
  const auto& module = upstream.fixture()["modules"][0];
  const std::string random = required({{"hashicorp/random", "~> 3.6"}});
  write_file(repo.path("shapes/latest/main.tf"),
             random + "module \"network\" {\n  source  = \"nstance-dev/nstance/aws//modules/network\"\n"
                      "  version = \">= 2.0\"\n}\n");
  write_file(repo.path("shapes/nested/main.tf"),
             random + "module \"platform\" {\n  source  = \"nstance-dev/wrapper/aws\"\n  version = \"1.0.0\"\n}\n");
  write_file(repo.path("shapes/git/main.tf"), random + "module \"network\" {\n  source = \"git::" +
                                                  upstream.url(module["git_path"]) + "//modules/network?ref=v2.0.1\"\n}\n");
  write_file(repo.path("shapes/vendored/main.tf"), random + "module \"network\" {\n  source = \"" +
                                                       upstream.url(module["versions"][1]["archive_path"]) +
                                                       "//modules/network\"\n}\n");
  write_file(repo.dir() / "workspace/stacks/prod/main.tf", random + "module \"net\" {\n  source = \"../../modules/net\"\n}\n");
  write_file(repo.dir() / "workspace/modules/net/main.tf",
             "module \"network\" {\n  source  = \"nstance-dev/nstance/aws//modules/network\"\n  version = \"2.0.1\"\n}\n");
}

// Every root shape in the suite, pruned to the newest version of each name but what the roots
// need (--keep-root, one definition with stack check's): each root's check passes after, the
// engine proving it, and what no root needs is gone (the homelab's bootstrap pins random 3.6.0,
// an older version --keep 1 alone would drop). One --repo-root above the repository and the
// workspace bounds the local calls of every root.
TEST(AnyRoot, PruneKeepingTheRootsLeavesEveryRootsCheckPassing) {
  if (!have_program("terraform")) GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
  FixtureUpstream upstream(with_user_providers());
  Repo repo(upstream);
  write_shop(repo);
  write_homelab(repo, "registry.terraform.io", package_of(upstream, "random", "3.6.0", "linux_amd64")["h1"]);
  write_file(repo.path("clusters/home/talos/network.tf"),
             "module \"network\" {\n  source  = \"nstance-dev/nstance/aws//modules/network\"\n  version = \"2.0.1\"\n}\n");
  write_other_shapes(repo, upstream);
  // A root no one keeps: the older aws and null it pins go, and the module version its
  // unconstrained call selects (2.1.0) stays only as the newest.
  write_file(repo.path("old/main.tf"), required({{"hashicorp/aws", "6.0.0"}, {"hashicorp/null", "3.2.3"}}) +
                                           "module \"network\" {\n  source  = \"nstance-dev/nstance/aws//modules/network\"\n}\n");
  std::vector<fs::path> kept;
  for (const auto& root : kRoots) kept.push_back(repo.path(root));
  for (const auto& root : kOtherShapes) kept.push_back(repo.path(root));
  kept.push_back(repo.dir() / "workspace/stacks/prod");
  const std::string repo_root = repo.dir().path().string();
  std::vector<std::string> fill{"--quiet", "deps", "tf", "--engine", "terraform", "--write-lock", "--platform", "linux_amd64",
                                "--repo-root", repo_root, "--stack", repo.path("old").string()};
  for (const auto& root : kept) fill.insert(fill.end(), {"--stack", root.string()});
  auto filled = repo.podplane(fill);
  ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;
  auto vendored = repo.podplane({"stack", "vendor", repo.path("shapes/vendored").string()});
  ASSERT_EQ(vendored.exit_code, 0) << vendored.out << vendored.err;

  std::vector<std::string> prune{"deps", "prune", "--keep", "1", "--repo-root", repo_root};
  for (const auto& root : kept) prune.insert(prune.end(), {"--keep-root", root.string()});
  auto pruned = repo.podplane(prune);
  ASSERT_EQ(pruned.exit_code, 0) << pruned.out << pruned.err;
  for (const char* gone : {"removed provider registry.terraform.io/hashicorp/aws 6.0.0",
                           "removed provider registry.terraform.io/hashicorp/null 3.2.3"})
    EXPECT_NE(pruned.out.find(gone), std::string::npos) << pruned.out;
  EXPECT_EQ(pruned.out.find("removed module"), std::string::npos) << pruned.out;
  EXPECT_EQ(pruned.out.find("removed provider registry.terraform.io/hashicorp/random 3.6.0"), std::string::npos) << pruned.out;

  std::vector<std::string> check{"stack", "check", "--repo-root", repo_root};
  for (const auto& root : kept) check.push_back(root.string());
  auto checked = repo.podplane(check);
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  EXPECT_EQ(rows_with(checked.out, "-", "terraform init -lockfile=readonly (offline)"), kept.size()) << checked.out;
  EXPECT_EQ(checked.out.find("FAILED"), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find("All checks passed"), std::string::npos) << checked.out;
}

// Moves this test process, and so every program it starts, into a network namespace of its own
// with only loopback up (what `unshare -n` plus `ip link set lo up` do): the fixture upstream and
// `mirror serve` answer on 127.0.0.1, and nothing else is reachable. Returns why not, or "".
std::string leave_the_network() {
  if (::unshare(CLONE_NEWNET) != 0) return std::string("unshare(CLONE_NEWNET) refused: ") + std::strerror(errno);
  auto up = run({"ip", "link", "set", "lo", "up"});
  if (up.exit_code != 0) return "ip link set lo up failed in the new network namespace: " + up.err;
  return "";
}

// The real terraform in `root`, through `tfrc` alone: `init -lockfile=readonly`, its data dir
// fresh (TF_DATA_DIR), this machine's HOME, plugin caches and proxies out of reach.
ProcessResult terraform_init(const fs::path& root, const fs::path& tfrc, const fs::path& data_dir,
                             const std::optional<fs::path>& ca_file = std::nullopt) {
  ProcessOptions options;
  options.cwd = root;
  options.env = {{"TF_CLI_CONFIG_FILE", tfrc.string()},
                 {"TF_DATA_DIR", data_dir.string()},
                 {"HOME", (data_dir.parent_path() / "home").string()},
                 {"CHECKPOINT_DISABLE", "1"}};
  if (ca_file) options.env["SSL_CERT_FILE"] = ca_file->string();
  options.unset_env = {"TF_PLUGIN_CACHE_DIR", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
  if (!ca_file) options.unset_env.push_back("SSL_CERT_FILE");
  return run({"terraform", "init", "-backend=false", "-lockfile=readonly", "-input=false", "-no-color"}, options);
}

// The whole day of the users' repos, with the real terraform as the judge and no network but
// loopback: every root inits offline from the store's tfrc, and through `mirror serve` (host
// blocks and its CA); a version bump on a branch is filled online, carried as a delta bundle,
// imported while the mirror runs, and the next init on the branch gets the new version from it
// without any signal to the server.
TEST(AnyRoot, TerraformInitsEveryRootOfflineFromTheStoreAndThroughMirrorServeWhichPicksUpADelta) {
  if (!have_program("terraform")) GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
  if (!have_program("ip")) GTEST_SKIP() << "no ip (iproute2) to bring loopback up in an offline network namespace";
  if (auto why = leave_the_network(); !why.empty()) GTEST_SKIP() << why;
  FixtureOptions options = with_user_providers();
  options.sharing = FixtureOptions::Sharing::private_copy;  // rebuilt below with a new release
  FixtureUpstream upstream(options);
  Repo repo(upstream);
  write_shop(repo);
  write_homelab(repo, "registry.terraform.io", package_of(upstream, "random", "3.6.0", "linux_amd64")["h1"]);
  auto fill = fill_roots(repo);
  ASSERT_EQ(fill.exit_code, 0) << fill.out << fill.err;
  std::map<std::string, std::string> locks;
  for (const auto& root : kRoots) locks[root] = read_file(repo.path(root) / ".terraform.lock.hcl");

  // The site's store, filled from a bundle of the online one.
  const fs::path site = repo.dir() / "site";
  ProcessOptions at_site;
  at_site.env["PODPLANE_DEPS_CACHE_DIR"] = site.string();
  auto full = repo.podplane({"bundle", "create", (repo.dir() / "full.bundle").string()});
  ASSERT_EQ(full.exit_code, 0) << full.out << full.err;
  auto imported = run_podplane({"bundle", "import", (repo.dir() / "full.bundle").string(), "--allow-unsigned"}, at_site);
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;

  int run_number = 0;
  auto data_dir = [&] { return repo.dir() / "tfdata" / std::to_string(++run_number); };
  for (const auto& root : kRoots) {
    SCOPED_TRACE("store's tfrc: " + root);
    auto init = terraform_init(repo.path(root), site / "tf" / "podplane.tfrc", data_dir());
    EXPECT_EQ(init.exit_code, 0) << init.out << init.err;
    EXPECT_EQ(read_file(repo.path(root) / ".terraform.lock.hcl"), locks[root]) << "the lock is accepted as it is";
  }

  // The site's mirror over TLS; terraform reaches it by host blocks, trusting its CA.
  write_test_tls(repo.dir().path());
  Background serve({podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--tls-cert",
                    (repo.dir() / "cert.pem").string(), "--tls-key", (repo.dir() / "key.pem").string(), "--watch-interval",
                    "50"},
                   {{"PODPLANE_DEPS_CACHE_DIR", site.string()}}, repo.dir() / "serve.err");
  const std::string base = serve.first_line();
  ASSERT_EQ(base.rfind("https://127.0.0.1:", 0), 0u) << base << read_file(repo.dir() / "serve.err");
  const fs::path mirror_tfrc = repo.dir() / "mirror.tfrc";
  write_file(mirror_tfrc, mirror_serve_host_blocks(base));
  ProcessOptions against_mirror;
  against_mirror.env = {{"SSL_CERT_FILE", (repo.dir() / "cert.pem").string()}, {"PODPLANE_DEPS_CACHE_DIR", "/nonexistent"}};
  auto mirror_check = [&](const std::vector<fs::path>& roots) {
    std::vector<std::string> args{"stack", "check", "--mirror", base};
    for (const auto& root : roots) args.push_back(root.string());
    return run_podplane(args, against_mirror);
  };
  std::vector<fs::path> all_roots;
  for (const auto& root : kRoots) all_roots.push_back(repo.path(root));
  auto checked = mirror_check(all_roots);
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  EXPECT_EQ(rows_with(checked.out, "linux_amd64", "ok: " + base.substr(0, base.size() - 1)), 7u) << checked.out;
  for (const auto& root : kRoots) {
    SCOPED_TRACE("mirror serve: " + root);
    auto init = terraform_init(repo.path(root), mirror_tfrc, data_dir(), repo.dir() / "cert.pem");
    EXPECT_EQ(init.exit_code, 0) << init.out << init.err;
    EXPECT_EQ(read_file(repo.path(root) / ".terraform.lock.hcl"), locks[root]);
  }

  // Renovate's bump on a branch: hashicorp/random 3.8.0 is released, the branch asks for it and
  // is filled online (its lock rewritten), then carried to the site as a delta.
  upstream.rebuild({"--add-version", "random=3.8.0"});
  const fs::path branch = repo.dir() / "branch";
  copy_tree(repo.path(""), branch);
  write_file(branch / "terraform/main.tf", required({{"hashicorp/random", "~> 3.8"}, {"hashicorp/null", ">= 3.2"}}));
  auto bump = repo.podplane({"deps", "tf", "--engine", "terraform", "--write-lock", "--upgrade", "--platform", "linux_amd64",
                             "--stack", (branch / "terraform").string()});
  ASSERT_EQ(bump.exit_code, 0) << bump.out << bump.err;
  ASSERT_NE(read_file(branch / "terraform/.terraform.lock.hcl").find("version     = \"3.8.0\""), std::string::npos);
  auto before = terraform_init(branch / "terraform", mirror_tfrc, data_dir(), repo.dir() / "cert.pem");
  EXPECT_NE(before.exit_code, 0) << "the site cannot have 3.8.0 before the delta:\n" << before.out;
  auto missing = mirror_check({branch / "terraform"});
  EXPECT_EQ(missing.exit_code, 1) << missing.out << missing.err;
  EXPECT_EQ(rows_with(missing.out, "linux_amd64", "provider registry.terraform.io/hashicorp/random 3.8.0"), 1u) << missing.out;
  EXPECT_NE(missing.err.find("podplane deps tf --engine terraform --stack " + (branch / "terraform").string()),
            std::string::npos)
      << missing.err;

  auto inventory = run_podplane({"bundle", "inventory", "-o", (repo.dir() / "inventory.json").string()}, at_site);
  ASSERT_EQ(inventory.exit_code, 0) << inventory.err;
  auto delta = repo.podplane({"bundle", "create", (repo.dir() / "delta.bundle").string(), "--since",
                              (repo.dir() / "inventory.json").string()});
  ASSERT_EQ(delta.exit_code, 0) << delta.out << delta.err;
  auto import = run_podplane({"bundle", "import", (repo.dir() / "delta.bundle").string(), "--allow-unsigned"}, at_site);
  ASSERT_EQ(import.exit_code, 0) << import.out << import.err;

  // Readiness probe (bounded): the running server lists 3.8.0 once it has noticed the import.
  const std::string versions = base + "v1/providers/registry.terraform.io/hashicorp/random/versions";
  bool listed = false;
  for (int i = 0; i < 1500 && !listed; ++i) {
    auto answer = run({"curl", "-sf", "--cacert", (repo.dir() / "cert.pem").string(), versions});
    listed = answer.exit_code == 0 && answer.out.find("\"3.8.0\"") != std::string::npos;
    if (!listed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(listed) << read_file(repo.dir() / "serve.err");
  const fs::path after_dir = data_dir();
  auto after = terraform_init(branch / "terraform", mirror_tfrc, after_dir, repo.dir() / "cert.pem");
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;
  EXPECT_TRUE(fs::exists(after_dir / "providers/registry.terraform.io/hashicorp/random/3.8.0/linux_amd64")) << after.out;
  auto found = mirror_check({branch / "terraform"});
  EXPECT_EQ(found.exit_code, 0) << found.out << found.err;
  EXPECT_EQ(serve.stop(), 0) << "the server ran throughout, no signal but the final stop";
}

// No secret is read: a terraform.tfvars and a .env beside every root hold a marker. Under
// strace, neither file is opened by `deps tf --stack` or `stack check` (the engine's own init
// included, -f follows it), and the marker is in no store file, written lock, bundle or output.
TEST(AnyRoot, NoSecretBesideTheRootsIsOpenedOrCopied) {
  if (!have_program("strace")) GTEST_SKIP() << "no strace on PATH (scripts/setup installs it)";
  FixtureUpstream upstream(with_user_providers());
  Repo repo(upstream);
  write_shop(repo);
  write_homelab(repo, "registry.terraform.io", package_of(upstream, "random", "3.6.0", "linux_amd64")["h1"]);
  const std::string marker = "MARKER-secret-5e0c1d7a";
  for (const auto& root : kRoots) {
    write_file(repo.path(root) / "terraform.tfvars", "proxmox_api_token = \"" + marker + "\"\n");
    write_file(repo.path(root) / ".env", "CLOUDFLARE_API_TOKEN=" + marker + "\n");
  }
  write_file(repo.path(".env"), "TOKEN=" + marker + "\n");

  std::vector<ProcessResult> results;
  auto traced = [&](const std::string& name, std::vector<std::string> args) {
    const fs::path trace = repo.dir() / ("trace-" + name + ".txt");
    std::vector<std::string> argv{"strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", trace.string(),
                                  podplane_binary().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    results.push_back(run(argv, traceable(repo.options())));
    return read_file(trace);
  };
  std::vector<std::string> fill{"deps", "tf", "--engine", "terraform", "--write-lock", "--platform", "linux_amd64"};
  std::vector<std::string> check{"stack", "check"};
  for (const auto& root : kRoots) {
    fill.insert(fill.end(), {"--stack", repo.path(root).string()});
    check.push_back(repo.path(root).string());
  }
  const std::string fill_trace = traced("deps-tf", fill);
  ASSERT_EQ(results.back().exit_code, 0) << results.back().out << results.back().err;
  const std::string check_trace = traced("stack-check", check);
  ASSERT_EQ(results.back().exit_code, 0) << results.back().out << results.back().err;

  for (const auto& [name, trace] : {std::pair{"deps tf", fill_trace}, std::pair{"stack check", check_trace}}) {
    SCOPED_TRACE(name);
    // The trace is real: it shows the roots' own files being read.
    EXPECT_NE(trace.find(repo.path("clusters/home/talos/main.tf").string()), std::string::npos);
    EXPECT_NE(trace.find("/.terraform.lock.hcl\""), std::string::npos);
    std::istringstream lines(trace);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_EQ(line.find("terraform.tfvars"), std::string::npos) << line;
      EXPECT_EQ(line.find("/.env\""), std::string::npos) << line;
    }
  }
  if (have_program("terraform")) {
    EXPECT_NE(check_trace.find("terraform"), std::string::npos) << "the engine's init ran under the trace too";
  }

  auto bundle = repo.podplane({"bundle", "create", (repo.dir() / "all.bundle").string()});
  ASSERT_EQ(bundle.exit_code, 0) << bundle.err;
  results.push_back(bundle);
  for (const auto& result : results) {
    EXPECT_EQ(result.out.find(marker), std::string::npos) << result.out;
    EXPECT_EQ(result.err.find(marker), std::string::npos) << result.err;
  }
  std::vector<fs::path> files{repo.dir() / "all.bundle"};
  for (const auto& entry : fs::recursive_directory_iterator(repo.root()))
    if (entry.is_regular_file()) files.push_back(entry.path());
  for (const auto& root : kRoots) files.push_back(repo.path(root) / ".terraform.lock.hcl");
  EXPECT_GT(files.size(), 20u);
  for (const auto& file : files) EXPECT_EQ(read_file(file).find(marker), std::string::npos) << file;
}

}  // namespace
}  // namespace podplane::test
