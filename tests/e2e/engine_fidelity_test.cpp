// The real engine as the judge of what podplane writes and serves (issue "Ready means ready"):
// locks byte for byte what `terraform providers lock` writes, one store serving both engines'
// origins without downloading a zip twice, and module views that never move under a stack.
// Terraform is not a Debian package; the machine image ships one at /usr/local/bin/terraform.
// tofu is not installed here: its side is covered by the protocol facts (same lock code).
#include <gtest/gtest.h>

#include <regex>

#include "lockfile/lock_file.hpp"
#include "tests/support/background.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

const std::vector<std::string> kProxies = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
const std::vector<std::string> kThreePlatforms = {"linux_amd64", "linux_arm64", "darwin_amd64"};

struct Site {
  FixtureUpstream& upstream;
  TempDir dir;
  fs::path root = dir / "deps";
  ProcessOptions online;

  explicit Site(FixtureUpstream& up) : upstream(up) {
    online.env = upstream.env(root, upstream.write_cli_config(dir / "cli.tfrc"));
    online.unset_env = kProxies;
  }
  ProcessResult podplane(const std::vector<std::string>& args, const fs::path& cwd = {}) const {
    ProcessOptions options = online;
    if (!cwd.empty()) options.cwd = cwd;
    return run_podplane(args, options);
  }
  std::vector<std::string> deps_tf(const std::string& engine) const {
    std::vector<std::string> args{"--quiet", "deps", "tf", "--engine", engine};
    for (const auto& platform : kThreePlatforms) args.insert(args.end(), {"--platform", platform});
    return args;
  }
  // cluster init + create --no-apply of one cloud in dir/<name>.
  fs::path create_stack(const std::string& cloud, const std::string& name) const {
    fs::path stack = dir / name;
    fs::create_directories(stack);
    auto init = podplane({"cluster", "init", "--provider", cloud, "--id", name}, stack);
    EXPECT_EQ(init.exit_code, 0) << show(init);
    auto create = podplane({"cluster", "create", "--no-apply"}, stack);
    EXPECT_EQ(create.exit_code, 0) << show(create);
    return stack;
  }
};

// A root module that requires exactly the providers and constraints of `lock`.
std::string root_requiring(const lockfile::LockFile& lock) {
  std::string text = "terraform {\n  required_providers {\n";
  for (const auto& provider : lock.providers) {
    auto address = lockfile::ProviderAddress::parse(provider.address, "registry.terraform.io");
    text += "    " + address.type + " = { source = \"" + address.ns + "/" + address.type + "\", version = \"" +
            provider.constraints + "\" }\n";
  }
  return text + "  }\n}\n";
}

// Runs the engine with only loopback reachable and nothing of this machine's config.
ProcessResult terraform(const std::vector<std::string>& args, const fs::path& cwd,
                        std::map<std::string, std::string> env, const fs::path& home) {
  ProcessOptions options;
  options.cwd = cwd;
  env.insert({{"HOME", home.string()},
              {"CHECKPOINT_DISABLE", "1"},
              {"HTTPS_PROXY", "http://127.0.0.1:9"},
              {"https_proxy", "http://127.0.0.1:9"},
              {"NO_PROXY", "127.0.0.1"},
              {"no_proxy", "127.0.0.1"}});
  options.env = std::move(env);
  options.unset_env = {"TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR"};
  std::vector<std::string> argv{"terraform"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

#define REQUIRE_TERRAFORM()                                                                    \
  if (!have_program("terraform")) {                                                            \
    GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";    \
  }

// Section 1: the store's lock and a generated stack's lock are byte for byte what
// `terraform providers lock -platform=a -platform=b -platform=c` writes for the same
// requirements (h1 of each platform plus the zh of every SHA256SUMS line, including platforms
// not fetched and the _manifest.json line); then `init -lockfile=readonly` through `mirror
// serve` neither warns nor changes the file.
TEST(LockFidelity, StoreAndStackLocksAreWhatTerraformProvidersLockWrites) {
  REQUIRE_TERRAFORM();
  FixtureUpstream upstream;
  Site site(upstream);
  auto filled = site.podplane(site.deps_tf("terraform"));
  ASSERT_EQ(filled.exit_code, 0) << show(filled);
  const fs::path store_lock = site.root / "tf" / ".terraform.lock.hcl";
  const auto lock = lockfile::read_lock_file(store_lock);
  ASSERT_EQ(lock.providers.size(), 6u) << read_file(store_lock);

  // The engine's own lock for the same requirements, from the fixture registry.
  const fs::path root = site.dir / "root";
  write_file(root / "main.tf", root_requiring(lock));
  std::vector<std::string> args{"providers", "lock", "-no-color"};
  for (const auto& platform : kThreePlatforms) args.push_back("-platform=" + platform);
  auto locked = terraform(args, root,
                          {{"TF_CLI_CONFIG_FILE", (site.dir / "cli.tfrc").string()},
                           {"SSL_CERT_FILE", upstream.ca_file().string()}},
                          site.dir.path());
  ASSERT_EQ(locked.exit_code, 0) << show(locked);
  const std::string engine_lock = read_file(root / ".terraform.lock.hcl");
  // The release's extra platforms and _manifest.json line are in the engine's lock (the fixture
  // is like HashiCorp's releases), so the comparison below can fail.
  for (const auto& provider : upstream.fixture()["providers"]) {
    if (provider["type"] != "aws") continue;
    for (const auto& release : provider["versions"]) {
      if (release["version"] == "6.2.0") {
        ASSERT_EQ(release["release_zh"].size(), 7u);
      }
    }
  }
  EXPECT_EQ(read_file(store_lock), engine_lock) << "ours:\n" << read_file(store_lock) << "terraform's:\n" << engine_lock;
  EXPECT_EQ(run({"cmp", store_lock.string(), (root / ".terraform.lock.hcl").string()}).exit_code, 0);

  // A generated stack's lock is the same file.
  ASSERT_EQ(site.podplane({"--quiet", "deps", "download", "--arch", "amd64,arm64", "--providers", "all"}).exit_code, 0);
  const fs::path stack = site.create_stack("aws", "stack");
  EXPECT_EQ(run({"cmp", (stack / ".terraform.lock.hcl").string(), (root / ".terraform.lock.hcl").string()}).exit_code, 0)
      << read_file(stack / ".terraform.lock.hcl");

  // `init -lockfile=readonly` through `mirror serve` (registry host blocks only): no warning,
  // and the file is unchanged.
  Background serve({podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--tls-cert",
                    (upstream.root() / "tls" / "server.pem").string(), "--tls-key",
                    (upstream.root() / "tls" / "server.key").string()},
                   {{"PODPLANE_DEPS_CACHE_DIR", site.root.string()}}, site.dir / "serve.err");
  std::string base = serve.first_line();
  ASSERT_FALSE(base.empty()) << read_file(site.dir / "serve.err");
  write_file(site.dir / "serve.tfrc", mirror_serve_host_blocks(base) + "disable_checkpoint = true\n");
  const fs::path consumer = site.dir / "consumer";
  write_file(consumer / "main.tf", root_requiring(lock));
  write_file(consumer / ".terraform.lock.hcl", read_file(stack / ".terraform.lock.hcl"));
  const std::string before = read_file(consumer / ".terraform.lock.hcl");
  auto init = terraform({"init", "-backend=false", "-lockfile=readonly", "-input=false", "-no-color"}, consumer,
                        {{"TF_CLI_CONFIG_FILE", (site.dir / "serve.tfrc").string()},
                         {"SSL_CERT_FILE", upstream.ca_file().string()}},
                        site.dir.path());
  ASSERT_EQ(init.exit_code, 0) << show(init) << read_file(site.dir / "serve.err");
  EXPECT_EQ((init.out + init.err).find("Provider lock file not updated"), std::string::npos) << show(init);
  EXPECT_EQ(read_file(consumer / ".terraform.lock.hcl"), before);
}

// Section 3: one store serves both origins side by side, and a zip whose sha256 the signed
// SHA256SUMS vouches for is never downloaded twice: switching engines fetches metadata only.
TEST(EngineSwitch, TheOtherOriginCostsMetadataOnly) {
  FixtureUpstream upstream;
  Site site(upstream);
  auto tofu = site.podplane({"deps", "tf", "--engine", "tofu", "--platform", "linux_amd64"});
  ASSERT_EQ(tofu.exit_code, 0) << show(tofu);
  EXPECT_NE(tofu.out.find("Engine: tofu (--engine); lock entries for registry.opentofu.org"), std::string::npos) << tofu.out;
  const auto zips_before = upstream.requests("\\.zip$", 200).size();
  ASSERT_EQ(zips_before, 6u);

  auto terraform = site.podplane({"deps", "tf", "--engine", "terraform", "--platform", "linux_amd64"});
  ASSERT_EQ(terraform.exit_code, 0) << show(terraform);
  EXPECT_EQ(upstream.requests("\\.zip$", 200).size(), zips_before) << "a zip already stored was downloaded again";
  EXPECT_NE(terraform.out.find("6 provider packages were already in the store under another origin"), std::string::npos)
      << terraform.out;
  for (const char* host : {"registry.opentofu.org", "registry.terraform.io"}) {
    EXPECT_TRUE(fs::exists(site.root / "tf" / "providers" / host / "hashicorp" / "aws" /
                           "terraform-provider-aws_6.2.0_linux_amd64.zip"))
        << host;
  }
  EXPECT_NE(read_file(site.root / "tf" / ".terraform.lock.hcl").find("\"terraform init\""), std::string::npos);

  // Without --engine, deps tf says which engine it took and why.
  auto detected = site.podplane({"deps", "tf", "--platform", "linux_amd64"});
  ASSERT_EQ(detected.exit_code, 0) << show(detected);
  std::string expected = have_program("tofu") ? "Engine: tofu (found " : have_program("terraform") ? "Engine: terraform (found " : "Engine: tofu (neither";
  EXPECT_NE(detected.out.find(expected), std::string::npos) << detected.out;
}

// Section 3: a stack for terraform against a store filled for tofu only: `cluster check` says
// so and names the command that fixes it.
TEST(EngineSwitch, CheckNamesTheCommandForAStackOfAnotherEngine) {
  FixtureUpstream upstream;
  Site terraform_site(upstream);
  ASSERT_EQ(terraform_site.podplane(terraform_site.deps_tf("terraform")).exit_code, 0);
  ASSERT_EQ(terraform_site.podplane({"--quiet", "deps", "download", "--arch", "amd64,arm64", "--providers", "all"}).exit_code, 0);
  const fs::path stack = terraform_site.create_stack("aws", "stack");

  Site tofu_site(upstream);  // another store, filled for tofu only
  ASSERT_EQ(tofu_site.podplane(tofu_site.deps_tf("tofu")).exit_code, 0);
  auto check = tofu_site.podplane({"cluster", "check"}, stack);
  EXPECT_EQ(check.exit_code, 1) << show(check);
  EXPECT_NE(check.out.find("ENGINE: the store holds no registry.terraform.io package"), std::string::npos) << check.out;
  EXPECT_NE(check.err.find("podplane deps tf --engine terraform --platform darwin_amd64 --platform linux_amd64 "
                           "--platform linux_arm64"),
            std::string::npos)
      << check.err;
}

std::string module_source(const fs::path& stack) {
  std::smatch match;
  std::string main = read_file(stack / "podplane.cluster.main.tf");
  static const std::regex source("source += \"([^\"]*)/modules/cluster\"");
  return std::regex_search(main, match, source) ? match[1].str() : "";
}

// Section 4: filling the other cloud's stack into a store never moves a path a generated stack
// references. Both clouds' stacks pass `cluster check` (with the real terraform init offline in
// it, under `unshare -n` where the kernel allows) whichever cloud came first.
void fill_one_cloud_then_the_other(const std::string& first, const std::string& second) {
  FixtureUpstream upstream;
  Site site(upstream);
  ASSERT_EQ(site.podplane({"--quiet", "deps", "download", "--arch", "amd64,arm64", "--providers", "all"}).exit_code, 0);
  auto fill = [&](const std::string& cloud) {
    auto init = site.podplane({"cluster", "init", "--provider", cloud, "--id", cloud + "-c", "-f",
                               (site.dir / (cloud + ".jsonc")).string()});
    ASSERT_EQ(init.exit_code, 0) << show(init);
    auto args = site.deps_tf("terraform");
    args.insert(args.end(), {"-f", (site.dir / (cloud + ".jsonc")).string()});
    auto filled = site.podplane(args);
    ASSERT_EQ(filled.exit_code, 0) << show(filled);
  };
  fill(first);
  const fs::path first_stack = site.create_stack(first, first + "-stack");
  const std::string first_source = module_source(first_stack);
  ASSERT_FALSE(first_source.empty());
  const std::string first_readme = read_file(first_stack / first_source / "README.md");
  EXPECT_NE(first_readme.find("terraform-" + first + "-nstance"), std::string::npos) << first_readme;

  fill(second);
  const fs::path second_stack = site.create_stack(second, second + "-stack");
  const std::string second_source = module_source(second_stack);
  EXPECT_NE(fs::weakly_canonical(first_stack / first_source), fs::weakly_canonical(second_stack / second_source));
  EXPECT_EQ(read_file(first_stack / first_source / "README.md"), first_readme) << "the first stack's module moved";
  EXPECT_NE(read_file(second_stack / second_source / "README.md").find("terraform-" + second + "-nstance"),
            std::string::npos);
  // Podplane's own path stays with the package that took it first; the other lives at its address.
  EXPECT_NE(first_source.find("/tf/modules/nstance/2.1.0"), std::string::npos) << first_source;
  EXPECT_NE(second_source.find("/tf/modules/registry.terraform.io/nstance-dev/nstance/" + second + "/2.1.0"),
            std::string::npos)
      << second_source;

  const bool isolate = run({"unshare", "-n", "true"}).exit_code == 0;
  if (!isolate) std::cout << "[ NOTE ] unshare -n refused here; cluster check runs with the network reachable\n";
  for (const auto& stack : {first_stack, second_stack}) {
    std::vector<std::string> argv{podplane_binary().string(), "cluster", "check"};
    if (isolate) argv.insert(argv.begin(), {"unshare", "-n"});
    ProcessOptions options = site.online;
    options.cwd = stack;
    auto check = run(argv, options);
    EXPECT_EQ(check.exit_code, 0) << stack << "\n" << show(check);
    if (have_program("terraform")) {
      EXPECT_NE(check.out.find("terraform init -lockfile=readonly (offline)"), std::string::npos) << check.out;
      EXPECT_EQ(check.out.find("not run"), std::string::npos) << check.out;
    }
  }
}

TEST(ModuleViews, AGoogleFillNeverMovesTheAwsStack) { fill_one_cloud_then_the_other("aws", "google"); }
TEST(ModuleViews, AnAwsFillNeverMovesTheGoogleStack) { fill_one_cloud_then_the_other("google", "aws"); }

}  // namespace
}  // namespace podplane::test
