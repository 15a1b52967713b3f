// `podplane deps tf` end to end against the fixture upstream (tests/tools/upstream): cold
// fill, warm rerun, added platform, --stack, network mirror, transfer faults, every trust
// check, a SIGKILL in the middle of a run, and the lock checked by HashiCorp's parser.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <thread>

#include "base/digest.hpp"
#include "cache/store.hpp"
#include "lockfile/lock_file.hpp"
#include "tests/support/gpg_keys.hpp"
#include "tests/support/gocheck.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

using nlohmann::json;

const std::string kHost = "registry.opentofu.org";

// One deps root and CLI config per test, against an upstream.
class DepsRun {
 public:
  explicit DepsRun(const FixtureUpstream& upstream, CliConfigOptions config = {}) : upstream_(&upstream) {
    upstream.write_cli_config(dir_ / "cli.tfrc", config);
    fs::create_directories(tmp());
  }
  // podplane's own temp dirs: inside the test's, so that even a killed run leaves nothing in /tmp.
  fs::path tmp() const { return dir_ / "tmp"; }
  fs::path root() const { return dir_ / "deps"; }
  const TempDir& dir() const { return dir_; }
  // Neither tofu nor terraform on PATH, so deps tf without --engine takes its default, tofu
  // (the engine on PATH is tested in tests/e2e/engine_fidelity_test).
  std::map<std::string, std::string> env() const {
    auto env = upstream_->env(root(), dir_ / "cli.tfrc");
    env["PATH"] = "/usr/bin:/bin";
    env["TMPDIR"] = tmp().string();
    return env;
  }
  void use(const FixtureUpstream& upstream) { upstream_ = &upstream; upstream.write_cli_config(dir_ / "cli.tfrc"); }
  ProcessResult podplane(std::vector<std::string> args) const {
    ProcessOptions options;
    options.env = env();
    options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    return run_podplane(args, options);
  }

 private:
  TempDir dir_;
  const FixtureUpstream* upstream_;
};

const json& provider_entry(const FixtureUpstream& upstream, const std::string& type) {
  for (const auto& provider : upstream.fixture()["providers"]) {
    if (provider["type"] == type) return provider;
  }
  throw std::runtime_error("fixture has no provider " + type);
}

const json& package_entry(const FixtureUpstream& upstream, const std::string& type, const std::string& version,
                          const std::string& platform) {
  for (const auto& entry : provider_entry(upstream, type)["versions"]) {
    if (entry["version"] == version) return entry["packages"][platform];
  }
  throw std::runtime_error("fixture has no " + type + " " + version);
}

// Zip downloads seen by the server, by file name.
std::vector<std::string> zip_requests(const FixtureUpstream& upstream, std::size_t from = 0) {
  std::vector<std::string> names;
  auto log = upstream.access_log();
  for (std::size_t i = from; i < log.size(); ++i) {
    if (log[i].path.ends_with(".zip") && log[i].path.starts_with("/releases/")) {
      names.push_back(log[i].path.substr(log[i].path.rfind('/') + 1));
    }
  }
  return names;
}

std::uint64_t zip_bytes(const FixtureUpstream& upstream, std::size_t from) {
  std::uint64_t bytes = 0;
  auto log = upstream.access_log();
  for (std::size_t i = from; i < log.size(); ++i) {
    if (log[i].path.ends_with(".zip")) bytes += log[i].bytes;
  }
  return bytes;
}

fs::path provider_view(const fs::path& root, const std::string& type, const std::string& version,
                       const std::string& platform, const std::string& ns = "hashicorp", const std::string& host = kHost) {
  return root / "tf" / "providers" / host / ns / type /
         ("terraform-provider-" + type + "_" + version + "_" + platform + ".zip");
}

// Everything the index says, as one comparable text (artifacts, trees, selection).
std::string index_snapshot(const fs::path& root) {
  if (!fs::exists(root / "store" / "index.db")) return "";  // no store is the same as an empty one
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  std::string text;
  for (const auto& a : store.artifacts()) {
    text += std::string(cache::to_string(a.kind)) + " " + a.address + " " + a.version + " " + a.platform + " " +
            a.filename + " " + a.digest + "\n";
  }
  for (const auto& tree : store.module_trees()) text += "module " + tree.address + " " + tree.version + " " + tree.h1 + "\n";
  if (auto selection = store.tf_selection()) {
    for (const auto& p : selection->providers) text += "selected " + p.address + " " + p.version + "\n";
    for (const auto& p : selection->platforms) text += "platform " + p + "\n";
  }
  return text;
}

// A listing of tf/ and vmconfig/ (paths and sizes).
std::string views_snapshot(const fs::path& root) {
  std::string text;
  for (const char* top : {"tf", "vmconfig"}) {
    if (!fs::exists(root / top)) continue;
    std::vector<std::string> lines;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      lines.push_back(fs::relative(entry.path(), root).string() +
                      (entry.is_regular_file() ? " " + std::to_string(entry.file_size()) : ""));
    }
    std::sort(lines.begin(), lines.end());
    for (const auto& line : lines) text += line + "\n";
  }
  return text;
}

void expect_failure_leaves_store_unchanged(const DepsRun& deps, const std::vector<std::string>& args,
                                           const std::vector<std::string>& message_parts) {
  auto index_before = index_snapshot(deps.root());
  auto views_before = views_snapshot(deps.root());
  auto result = deps.podplane(args);
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  for (const auto& part : message_parts) EXPECT_NE(result.err.find(part), std::string::npos) << "missing \"" << part << "\" in:\n" << result.err;
  EXPECT_EQ(index_snapshot(deps.root()), index_before);
  EXPECT_EQ(views_snapshot(deps.root()), views_before);
}

// ---- cold, warm, added platform ----------------------------------------------------------------

TEST(DepsTf, ColdFillWarmRerunAndAddedPlatform) {
  FixtureUpstream upstream;
  DepsRun deps(upstream);

  auto cold = deps.podplane({"deps", "tf", "--platform", "linux_amd64", "--platform", "linux_arm64"});
  ASSERT_EQ(cold.exit_code, 0) << cold.out << cold.err;
  EXPECT_NE(cold.out.find("Cached cluster OpenTofu/Terraform dependencies"), std::string::npos) << cold.out;

  // Podplane's defaults and everything the nstance modules ask for, newest allowed versions.
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"aws", {"hashicorp", "6.2.0"}},     {"random", {"hashicorp", "3.7.2"}}, {"null", {"hashicorp", "3.2.4"}},
      {"tls", {"hashicorp", "4.1.0"}},     {"cloudinit", {"hashicorp", "2.3.7"}},
      {"podplane", {"podplane", "1.3.0"}}};
  for (const auto& [type, ns_version] : expected) {
    for (const char* platform : {"linux_amd64", "linux_arm64"}) {
      auto view = provider_view(deps.root(), type, ns_version.second, platform, ns_version.first);
      ASSERT_TRUE(fs::exists(view)) << view;
      EXPECT_EQ(file_digest_hex(view), package_entry(upstream, type, ns_version.second, platform)["sha256"])
          << view;
    }
  }
  auto cold_zips = zip_requests(upstream);
  EXPECT_EQ(cold_zips.size(), 12u);
  EXPECT_EQ(read_file(deps.root() / "tf" / "platforms"), "linux_amd64\nlinux_arm64\n");
  EXPECT_EQ(read_file(deps.root() / "tf" / "modules" / "nstance" / "current-version"), "2.1.0\n");
  for (const char* sub : {"cluster", "account", "network", "shard"}) {
    EXPECT_TRUE(fs::exists(deps.root() / "tf" / "modules" / "nstance" / "2.1.0" / "modules" / sub / "versions.tf")) << sub;
  }
  EXPECT_EQ(fs::status(deps.root() / "tf/modules/nstance/2.1.0/modules/shard/scripts/bootstrap.sh").permissions() &
                fs::perms::owner_exec,
            fs::perms::owner_exec);

  // Provenance: SHA256SUMS, signature and keys stored, the verifying key recorded.
  {
    auto store = cache::Store::open(deps.root(), cache::Store::Access::read_only);
    auto aws = store.find_artifact(cache::ArtifactKind::provider_package, kHost + "/hashicorp/aws", "6.2.0", "linux_amd64",
                                   "terraform-provider-aws_6.2.0_linux_amd64.zip");
    ASSERT_TRUE(aws);
    EXPECT_EQ(aws->trust, cache::Trust::signed_upstream);
    EXPECT_EQ(aws->h1, package_entry(upstream, "aws", "6.2.0", "linux_amd64")["h1"]);
    auto provenance = store.provenance_of(aws->id);
    ASSERT_EQ(provenance.size(), 1u);
    EXPECT_EQ(provenance[0].key_fingerprint, provider_entry(upstream, "aws")["key_fingerprint"]);
    EXPECT_EQ(provenance[0].shasums_digest, provider_entry(upstream, "aws")["versions"][1]["shasums_sha256"]);
    EXPECT_TRUE(store.has_object(provenance[0].signature_digest));
    EXPECT_TRUE(store.has_object(provenance[0].keys_digest));
    auto podplane = store.find_artifact(cache::ArtifactKind::provider_package, kHost + "/podplane/podplane", "1.3.0",
                                        "linux_arm64", "terraform-provider-podplane_1.3.0_linux_arm64.zip");
    ASSERT_TRUE(podplane);
    EXPECT_EQ(store.provenance_of(podplane->id).at(0).key_fingerprint, provider_entry(upstream, "podplane")["key_fingerprint"]);
    auto tree = store.find_module_tree(kHost + "/nstance-dev/nstance/aws", "2.1.0");
    ASSERT_TRUE(tree);
    EXPECT_EQ(tree->h1, gocheck_hashdir(deps.root() / "tf/modules/nstance/2.1.0"));
  }

  // Lock: HashiCorp's parser accepts it; each h1 is Go's dirhash of the view's zip.
  auto lock_path = deps.root() / "tf" / ".terraform.lock.hcl";
  auto parsed = gocheck_hclparse({lock_path});
  EXPECT_EQ(parsed.exit_code, 0) << parsed.err;
  auto lock = lockfile::read_lock_file(lock_path);
  ASSERT_EQ(lock.providers.size(), 6u);
  for (const auto& entry : lock.providers) {
    auto type = entry.address.substr(entry.address.rfind('/') + 1);
    auto ns = entry.address.substr(kHost.size() + 1, entry.address.rfind('/') - kHost.size() - 1);
    for (const char* platform : {"linux_amd64", "linux_arm64"}) {
      auto view = provider_view(deps.root(), type, entry.version, platform, ns);
      auto h1 = gocheck_hashzip(view);
      EXPECT_NE(std::find(entry.hashes.begin(), entry.hashes.end(), h1), entry.hashes.end()) << entry.address << " " << h1;
      auto zh = "zh:" + file_digest_hex(view);
      EXPECT_NE(std::find(entry.hashes.begin(), entry.hashes.end(), zh), entry.hashes.end()) << entry.address << " " << zh;
    }
    // h1 of both platforms, and the zh of every line of the release's signed SHA256SUMS.
    std::size_t release_lines = 0;
    for (const auto& release : provider_entry(upstream, type)["versions"])
      if (release["version"] == entry.version) release_lines = release["release_zh"].size();
    EXPECT_GT(release_lines, 2u);
    EXPECT_EQ(entry.hashes.size(), 2u + release_lines) << entry.address;
  }

  // Warm rerun: no package bytes at all, and it says so.
  auto before_warm = upstream.access_log().size();
  auto warm = deps.podplane({"deps", "tf", "--platform", "linux_amd64"});
  ASSERT_EQ(warm.exit_code, 0) << warm.out << warm.err;
  EXPECT_TRUE(zip_requests(upstream, before_warm).empty());
  EXPECT_EQ(zip_bytes(upstream, before_warm), 0u);
  EXPECT_TRUE(upstream.requests("\\.tar\\.gz$|/git/").size() == 1u) << "module package fetched again";
  EXPECT_NE(warm.out.find("no package bytes transferred"), std::string::npos) << warm.out;

  // An added platform: only its packages are fetched; the platform set grows.
  auto before_added = upstream.access_log().size();
  auto added = deps.podplane({"deps", "tf", "--platform", "darwin_amd64"});
  ASSERT_EQ(added.exit_code, 0) << added.out << added.err;
  auto added_zips = zip_requests(upstream, before_added);
  EXPECT_EQ(added_zips.size(), 6u);
  for (const auto& name : added_zips) EXPECT_NE(name.find("darwin_amd64"), std::string::npos) << name;
  EXPECT_EQ(read_file(deps.root() / "tf" / "platforms"), "darwin_amd64\nlinux_amd64\nlinux_arm64\n");
  auto relock = lockfile::read_lock_file(lock_path);
  for (const auto& entry : relock.providers) {  // one more h1; the release's zh lines were all there
    auto type = entry.address.substr(entry.address.rfind('/') + 1);
    for (const auto& release : provider_entry(upstream, type)["versions"])
      if (release["version"] == entry.version) {
        EXPECT_EQ(entry.hashes.size(), 3u + release["release_zh"].size()) << entry.address;
      }
  }
}

// ---- --stack, engine, network mirror -----------------------------------------------------------

TEST(DepsTf, StackDirectoryWithLockedVersionsAndGitModule) {
  FixtureUpstream upstream;
  DepsRun deps(upstream);
  auto stack = deps.dir() / "stack";
  write_file(stack / "main.tf", R"(
terraform {
  required_providers {
    random = { source = "hashicorp/random", version = "~> 3.6" }
  }
}
module "vendored" {
  source = "./modules/local"
}
module "nstance" {
  source  = "nstance-dev/nstance/aws//modules/network"
  version = "2.0.1"
}
)");
  write_file(stack / "modules" / "local" / "versions.tf", R"(
terraform {
  required_providers {
    tls = { source = "hashicorp/tls", version = ">= 4.0, < 4.1" }
  }
}
)");
  write_file(stack / ".terraform.lock.hcl", R"(# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/hashicorp/random" {
  version     = "3.6.0"
  constraints = "~> 3.6"
}
)");
  auto result = deps.podplane({"deps", "tf", "--stack", stack.string(), "--platform", "linux_amd64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(fs::exists(provider_view(deps.root(), "random", "3.6.0", "linux_amd64")));   // the lock's pin
  EXPECT_TRUE(fs::exists(provider_view(deps.root(), "tls", "4.0.6", "linux_amd64")));      // the local module's
  EXPECT_TRUE(fs::exists(provider_view(deps.root(), "aws", "6.2.0", "linux_amd64")));      // the module network's
  EXPECT_FALSE(fs::exists(provider_view(deps.root(), "random", "3.7.2", "linux_amd64")));
  EXPECT_FALSE(upstream.requests("^/git/").empty()) << "module 2.0.1 comes from git";
  auto store = cache::Store::open(deps.root(), cache::Store::Access::read_only);
  auto tree = store.find_module_tree(kHost + "/nstance-dev/nstance/aws", "2.0.1");
  ASSERT_TRUE(tree);
  bool has_shard_script = false;
  for (const auto& file : tree->files) {
    if (file.path == "modules/shard/scripts/bootstrap.sh") has_shard_script = file.mode == 0755;
    EXPECT_FALSE(file.path.starts_with(".git")) << file.path;
  }
  EXPECT_TRUE(has_shard_script);
}

// A root's lock pins only what that root (with its modules) asks for, as the engines read it:
// another root's provider is resolved on its own, whatever the order of --stack.
TEST(DepsTf, LockOfOneRootDoesNotPinAnotherRootsProvider) {
  FixtureUpstream upstream;
  DepsRun deps(upstream);
  auto wants_random = deps.dir() / "wants-random";
  write_file(wants_random / "main.tf",
             "terraform {\n  required_providers {\n    random = { source = \"hashicorp/random\", version = \"~> 3.6\" }\n  }\n}\n");
  auto locks_random = deps.dir() / "locks-random";
  write_file(locks_random / "main.tf",
             "terraform {\n  required_providers {\n    tls = { source = \"hashicorp/tls\", version = \">= 4.0\" }\n  }\n}\n");
  write_file(locks_random / ".terraform.lock.hcl",
             "provider \"registry.opentofu.org/hashicorp/random\" {\n  version     = \"3.6.0\"\n  constraints = \"~> 3.6\"\n}\n");
  auto result = deps.podplane({"deps", "tf", "--platform", "linux_amd64", "--stack", wants_random.string(), "--stack",
                               locks_random.string()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("provider registry.opentofu.org/hashicorp/random 3.7.2"), std::string::npos) << result.out;
  EXPECT_FALSE(fs::exists(provider_view(deps.root(), "random", "3.6.0", "linux_amd64")));
}

TEST(DepsTf, StackWithDirectGitAndArchiveSources) {
  FixtureUpstream upstream;
  DepsRun deps(upstream);
  auto stack = deps.dir() / "direct";
  write_file(stack / "main.tf", "module \"shard\" {\n  source = \"git::" + upstream.base_url() +
                                    "/git/terraform-aws-nstance.git//modules/shard?ref=v2.0.1\"\n}\n"
                                    "module \"account\" {\n  source = \"" + upstream.base_url() +
                                    "/archives/terraform-aws-nstance-2.1.0-topdir.tar.gz//*/modules/account\"\n}\n");
  auto result = deps.podplane({"deps", "tf", "--stack", stack.string(), "--platform", "linux_amd64", "--write-lock"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  // shard asks for aws, random, null, tls and cloudinit; account for aws: the root's own lock
  // has them, and the store's (Podplane's stack's) is not written by a --stack run.
  for (const char* type : {"aws", "random", "null", "tls", "cloudinit"}) {
    EXPECT_NE(read_file(stack / ".terraform.lock.hcl").find("hashicorp/" + std::string(type)), std::string::npos) << type;
  }
  EXPECT_FALSE(fs::exists(deps.root() / "tf" / ".terraform.lock.hcl"));
  auto store = cache::Store::open(deps.root(), cache::Store::Access::read_only);
  auto trees = store.module_trees();
  ASSERT_EQ(trees.size(), 2u);
  auto host = upstream.base_url().substr(std::string("https://").size());
  EXPECT_TRUE(store.find_module_tree(host + "/git/terraform-aws-nstance", "v2.0.1"));
  auto archive = store.find_module_tree(host + "/archives/terraform-aws-nstance-2.1.0-topdir", "unversioned");
  ASSERT_TRUE(archive);
  EXPECT_EQ(archive->h1, gocheck_hashdir(deps.root() / "tf" / "modules" / host / "archives" /
                                         "terraform-aws-nstance-2.1.0-topdir" / "unversioned"));
}

// A git module source with a login (git::https://user:password@host/…): the private host
// gets it, and no process podplane starts ever has the password in its argv, which every
// local user can read (/proc/<pid>/cmdline, ps). strace records every exec of the run.
TEST(DepsTf, AGitLoginReachesGitThroughNoArgv) {
  if (!have_program("strace")) GTEST_SKIP() << "strace is not installed (scripts/setup installs it)";
  const std::string password = "s3cret-pass-9471";
  ServeOptions serve;
  serve.git_login = "fixture-user:" + password;
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  const std::string host = upstream.base_url().substr(std::string("https://").size());
  auto write_stack = [&](const std::string& name, const std::string& login) {
    write_file(deps.dir() / name / "main.tf", "module \"shard\" {\n  source = \"git::https://" + login + host +
                                                  "/git/terraform-aws-nstance.git//modules/shard?ref=v2.0.1\"\n}\n");
    return (deps.dir() / name).string();
  };

  // Without the login the host refuses: the login below is what lets the clone through.
  auto refused = deps.podplane({"deps", "tf", "--stack", write_stack("anonymous", ""), "--platform", "linux_amd64"});
  ASSERT_EQ(refused.exit_code, 1) << refused.out << refused.err;

  ProcessOptions options;
  options.env = deps.env();
  options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
  const fs::path trace = deps.dir() / "execve.log";
  auto result = run({"strace", "-f", "-qq", "-e", "trace=execve", "-s", "100000", "-o", trace.string(),
                     podplane_binary().string(), "deps", "tf", "--stack",
                     write_stack("private", "fixture-user:" + password + "@"), "--platform", "linux_amd64"},
                    traceable(options));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  const std::string execs = read_file(trace);
  EXPECT_NE(execs.find("\"clone\""), std::string::npos) << "git was not run:\n" << execs;
  EXPECT_EQ(execs.find(password), std::string::npos) << "the password is in an argv:\n" << execs;
  EXPECT_EQ(result.out.find(password) + result.err.find(password), 2 * std::string::npos);
  auto store = cache::Store::open(deps.root(), cache::Store::Access::read_only);
  EXPECT_TRUE(store.find_module_tree(host + "/git/terraform-aws-nstance", "v2.0.1"));
  for (const auto& tree : store.module_trees()) EXPECT_EQ(tree.upstream_url.find(password), std::string::npos);
}

// Module packages from outside are read by the rules a bundle is read with: every hostile
// archive, tar.gz or zip, fails the run with an error naming the archive and the entry, and
// what the store held before is held unchanged (index and views), with nothing written
// outside it.
TEST(DepsTf, HostileModuleArchivesAreRefusedAndTheStoreKeepsWhatItHad) {
  FixtureOptions fixture;
  fixture.sharing = FixtureOptions::Sharing::private_copy;
  FixtureUpstream upstream(fixture);
  DepsRun deps(upstream);
  auto good = deps.dir() / "good";
  write_file(good / "main.tf", "module \"account\" {\n  source = \"" + upstream.base_url() +
                                   "/archives/terraform-aws-nstance-2.1.0-topdir.tar.gz//*/modules/account\"\n}\n");
  auto filled = deps.podplane({"deps", "tf", "--stack", good.string(), "--platform", "linux_amd64"});
  ASSERT_EQ(filled.exit_code, 0) << filled.out << filled.err;
  ASSERT_NE(index_snapshot(deps.root()), "");

  struct Hostile {
    std::string file;
    std::string script;
    std::string why;
  };
  const std::vector<Hostile> archives = {
      {"dotdot.tar.gz", "add('main.tf')\nadd('../escaped')", "'..' component"},
      {"absolute.tar.gz", "add('main.tf')\nadd('" + (deps.dir() / "escaped").string() + "')", "absolute path"},
      {"link-out.tar.gz", "add('main.tf')\nadd('l', kind=tarfile.SYMTYPE, link='../../escaped')", "escapes the package"},
      {"hardlink-out.tar.gz", "add('main.tf')\nadd('h', kind=tarfile.LNKTYPE, link='../escaped')", "'..' component"},
      {"device.tar.gz", "add('main.tf')\nadd('null', kind=tarfile.CHRTYPE)", "special file"},
      {"oversize.tar.gz", "add('main.tf')\ni=tarfile.TarInfo('big.tf'); i.size=2<<30\nt.fileobj.write(i.tobuf())",
       "expands beyond 1 GiB"},
      {"dotdot.zip", "z.writestr('main.tf', '')\nz.writestr('../escaped', 'x')", "'..' component"},
      {"absolute.zip", "z.writestr('main.tf', '')\nz.writestr('/escaped', 'x')", "absolute path"},
      {"link-out.zip",
       "z.writestr('main.tf', '')\n"
       "i=zipfile.ZipInfo('l'); i.create_system=3; i.external_attr=0o120777<<16\nz.writestr(i, '../../escaped')",
       "escapes the package"},
      {"oversize.zip",
       "z.writestr('main.tf', '')\nz.writestr('big.tf', 'hello')\nz.close()\n"
       "import struct\nb=bytearray(open(path,'rb').read())\n"
       "l=b.find(b'PK\\x03\\x04', 1); struct.pack_into('<I', b, l+22, 2<<30)\n"
       "c=b.rfind(b'PK\\x01\\x02'); struct.pack_into('<I', b, c+24, 2<<30)\n"
       "open(path,'wb').write(bytes(b))\nz=zipfile.ZipFile(io.BytesIO(), 'w')",
       "expands beyond 1 GiB"},
  };
  for (const auto& hostile : archives) {
    SCOPED_TRACE(hostile.file);
    make_archive(upstream.www() / "hostile" / hostile.file, hostile.script);
    auto stack = deps.dir() / "stacks" / hostile.file;
    write_file(stack / "main.tf", "module \"m\" {\n  source = \"" + upstream.url("/hostile/" + hostile.file) + "\"\n}\n");
    expect_failure_leaves_store_unchanged(deps, {"deps", "tf", "--stack", stack.string(), "--platform", "linux_amd64"},
                                          {upstream.url("/hostile/" + hostile.file), hostile.why});
    EXPECT_FALSE(fs::exists(deps.dir() / "escaped"));
    EXPECT_FALSE(fs::exists(deps.root() / "escaped"));
  }
}

TEST(DepsTf, TerraformEngineUsesItsOwnRegistryHost) {
  FixtureUpstream upstream;
  DepsRun deps(upstream);
  auto result = deps.podplane({"deps", "tf", "--engine", "terraform", "--platform", "linux_amd64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(fs::exists(provider_view(deps.root(), "aws", "6.2.0", "linux_amd64", "hashicorp", "registry.terraform.io")));
  auto lock = read_file(deps.root() / "tf" / ".terraform.lock.hcl");
  EXPECT_NE(lock.find("\"terraform init\""), std::string::npos) << lock;
  EXPECT_NE(lock.find("provider \"registry.terraform.io/hashicorp/aws\""), std::string::npos) << lock;
}

TEST(DepsTf, NetworkMirrorIsTheProviderUpstreamWhenConfigured) {
  FixtureUpstream upstream;
  CliConfigOptions config;
  config.providers = CliConfigOptions::ProviderSource::network_mirror;
  DepsRun deps(upstream, config);
  auto result = deps.podplane({"deps", "tf", "--platform", "linux_amd64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(upstream.requests("^/v1/providers/").size(), 0u) << "the registry was asked despite the mirror";
  EXPECT_EQ(upstream.requests("^/mirror/.*\\.zip$").size(), 6u);
  auto store = cache::Store::open(deps.root(), cache::Store::Access::read_only);
  auto aws = store.find_artifact(cache::ArtifactKind::provider_package, kHost + "/hashicorp/aws", "6.2.0", "linux_amd64",
                                 "terraform-provider-aws_6.2.0_linux_amd64.zip");
  ASSERT_TRUE(aws);
  EXPECT_EQ(aws->trust, cache::Trust::checksum);
}

TEST(DepsTf, CredentialsGoOnlyToRegistryJsonAndNeverToDisk) {
  FixtureUpstream upstream;
  CliConfigOptions config;
  config.extra_lines = {"credentials \"registry.opentofu.org\" {", "  token = \"s3cr3t-t0ken-value\"", "}"};
  DepsRun deps(upstream, config);
  auto result = deps.podplane({"deps", "tf", "--platform", "linux_amd64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(result.err.find("s3cr3t"), std::string::npos);
  auto grep = run({"grep", "-rl", "s3cr3t-t0ken-value", deps.root().string()});
  EXPECT_EQ(grep.exit_code, 1) << "token written to: " << grep.out;
}

// ---- transfer faults ---------------------------------------------------------------------------

TEST(DepsTf, TransferCutOffHalfWayIsResumed) {
  ServeOptions serve;
  serve.cut_after = {"8192:\\.zip$"};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto result = deps.podplane({"deps", "tf", "--platform", "linux_amd64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::size_t cut = 0, resumed = 0;
  for (const auto& entry : upstream.access_log()) {
    if (!entry.path.ends_with(".zip")) continue;
    if (entry.fault == "cut") ++cut;
    if (entry.range && entry.range->starts_with("bytes=8192-")) ++resumed;
  }
  EXPECT_EQ(cut, 6u);
  EXPECT_EQ(resumed, 6u);
  EXPECT_EQ(file_digest_hex(provider_view(deps.root(), "aws", "6.2.0", "linux_amd64")),
            package_entry(upstream, "aws", "6.2.0", "linux_amd64")["sha256"]);
}

TEST(DepsTf, ServiceUnavailableThenSuccess) {
  ServeOptions serve;
  serve.fail_first = {"2:\\.zip$:503", "1:/versions$:503"};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto result = deps.podplane({"deps", "tf", "--platform", "linux_amd64"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(upstream.requests("\\.zip$", 503).size(), 12u);
  EXPECT_EQ(upstream.requests("\\.zip$", 200).size(), 6u);
}

// ---- hostile upstreams: every retry loop ends ---------------------------------------------------

// Budgets small enough for a test (docs/download.md "Retry budgets"). The run is wrapped in
// `timeout -s KILL`, so a run that would never end on its own fails (exit -9 or 137) instead
// of hanging the suite.
const std::map<std::string, std::string> kTestBudget = {
    {"PODPLANE_HTTP_RETRIES", "2"}, {"PODPLANE_HTTP_BACKOFF", "10ms"}, {"PODPLANE_HTTP_LOW_SPEED_TIME", "1s"}};

struct BoundedRun {
  ProcessResult result;
  double seconds = 0;
};

BoundedRun podplane_bounded(const DepsRun& deps, const std::vector<std::string>& args,
                            const std::map<std::string, std::string>& budget = kTestBudget) {
  ProcessOptions options;
  options.env = deps.env();
  for (const auto& [name, value] : budget) options.env[name] = value;
  options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
  std::vector<std::string> argv{"timeout", "-s", "KILL", "120", podplane_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto start = std::chrono::steady_clock::now();
  BoundedRun run_result{run(argv, options), 0};
  run_result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run_result;
}

const std::string kAwsZip = "/releases/aws/6.2.0/terraform-provider-aws_6.2.0_linux_amd64.zip";
const std::string kAwsZipRegex = "aws_6\\.2\\.0_linux_amd64\\.zip$";

void expect_error_names(const ProcessResult& result, const std::vector<std::string>& parts) {
  for (const auto& part : parts) {
    EXPECT_NE(result.err.find(part), std::string::npos) << "missing \"" << part << "\" in:\n" << result.err;
  }
}

TEST(DepsTf, LyingLengthThatIgnoresRangeEndsWithinTheBudget) {
  ServeOptions serve;
  serve.lie_length = {"1000000000:100:" + kAwsZipRegex};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto run = podplane_bounded(deps, {"deps", "tf", "--platform", "linux_amd64"});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  expect_error_names(run.result, {upstream.url(kAwsZip), "answered a Range request with the whole file"});
  // One free resume after the first cut, then 1 + PODPLANE_HTTP_RETRIES attempts from zero.
  EXPECT_EQ(upstream.requests(kAwsZipRegex).size(), 4u);
  EXPECT_EQ(index_snapshot(deps.root()), "");
}

TEST(DepsTf, OneBytePerSecondDripEnds) {
  ServeOptions serve;
  serve.drip = {"1:" + kAwsZipRegex};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto run = podplane_bounded(deps, {"deps", "tf", "--platform", "linux_amd64"});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  expect_error_names(run.result, {upstream.url(kAwsZip), "too slow"});
  EXPECT_EQ(upstream.requests(kAwsZipRegex).size(), 3u);
  EXPECT_LT(run.seconds, 60.0);
  EXPECT_EQ(index_snapshot(deps.root()), "");
}

TEST(DepsTf, TransferDeadlineEndsATransferThatNeverFinishes) {
  // 2 KiB a second passes the low-speed limit, but the 16 KiB zip would take 8 s.
  ServeOptions serve;
  serve.drip = {"2048:" + kAwsZipRegex};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto run = podplane_bounded(deps, {"deps", "tf", "--platform", "linux_amd64"},
                              {{"PODPLANE_HTTP_RETRIES", "2"}, {"PODPLANE_HTTP_BACKOFF", "10ms"},
                               {"PODPLANE_HTTP_DEADLINE", "2s"}});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  expect_error_names(run.result, {upstream.url(kAwsZip), "deadline"});
  EXPECT_EQ(upstream.requests(kAwsZipRegex).size(), 1u);
  EXPECT_EQ(index_snapshot(deps.root()), "");
}

TEST(DepsTf, ServiceUnavailableForeverEndsWithinTheBudget) {
  ServeOptions serve;
  serve.fail_first = {"1000000:/hashicorp/aws/versions$:503"};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto run = podplane_bounded(deps, {"deps", "tf", "--platform", "linux_amd64"});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  expect_error_names(run.result, {upstream.url("/v1/providers/hashicorp/aws/versions"), "HTTP 503", "3 attempts"});
  EXPECT_EQ(upstream.requests("/hashicorp/aws/versions$").size(), 3u);
}

TEST(DepsTf, ModuleArchiveDripEnds) {
  ServeOptions serve;
  serve.drip = {"1:^/archives/"};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto run = podplane_bounded(deps, {"deps", "tf", "--platform", "linux_amd64"});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  expect_error_names(run.result, {upstream.url("/archives/terraform-aws-nstance-2.1.0.tar.gz"), "too slow"});
  EXPECT_EQ(upstream.requests("^/archives/").size(), 3u);
  EXPECT_EQ(index_snapshot(deps.root()), "");
}

TEST(DepsTf, GitModuleDripEnds) {
  ASSERT_TRUE(have_program("git"));
  ServeOptions serve;
  serve.drip = {"1:^/git/"};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto stack = deps.dir() / "stack";
  write_file(stack / "main.tf", "module \"nstance\" {\n  source = \"git::" + upstream.base_url() +
                                    "/git/terraform-aws-nstance.git?ref=v2.0.1\"\n}\n");
  auto run = podplane_bounded(deps, {"deps", "tf", "--platform", "linux_amd64", "--stack", stack.string()});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  expect_error_names(run.result, {"git", upstream.base_url() + "/git/terraform-aws-nstance.git", "too slow"});
  EXPECT_GE(upstream.requests("^/git/").size(), 1u);
  EXPECT_LT(run.seconds, 60.0);
  EXPECT_EQ(index_snapshot(deps.root()), "");
}

TEST(DepsTf, GitModuleIsStoppedAtTheDeadline) {
  ASSERT_TRUE(have_program("git"));
  // Fast enough for the low-speed limit, too slow to finish in the deadline.
  ServeOptions serve;
  serve.drip = {"4096:^/git/"};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto stack = deps.dir() / "stack";
  write_file(stack / "main.tf", "module \"nstance\" {\n  source = \"git::" + upstream.base_url() +
                                    "/git/terraform-aws-nstance.git?ref=v2.0.1\"\n}\n");
  auto run = podplane_bounded(deps, {"deps", "tf", "--platform", "linux_amd64", "--stack", stack.string()},
                              {{"PODPLANE_HTTP_DEADLINE", "2s"}});
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  expect_error_names(run.result, {"git did not finish", "deadline of 2 s"});
  EXPECT_LT(run.seconds, 60.0);
  EXPECT_EQ(index_snapshot(deps.root()), "");
}

// ---- trust checks ------------------------------------------------------------------------------

// The registry's download answers and the release documents are small and go three times
// --jobs at once: with --jobs 2, the server holds the first 6 of each kind until all 6 are in
// flight (2 at a time, each would be held 20 s and logged "hold-timeout"), and never sees more
// than 6 at once.
TEST(DepsTf, DownloadAnswersAndSignedDocumentsGoThreeTimesJobsAtOnce) {
  ServeOptions serve;
  serve.hold_until = {"6:^/v1/providers/.*/download/", "6:_SHA256SUMS(\\.sig)?$"};
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);
  auto result = deps.podplane({"deps", "tf", "--jobs", "2", "--platform", "linux_amd64", "--platform", "linux_arm64"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  std::vector<AccessLogEntry> answers, documents;
  for (const auto& entry : upstream.access_log()) {
    EXPECT_NE(entry.fault, "hold-timeout") << entry.path << " waited for company in vain";
    if (entry.path.find("/download/") != std::string::npos && entry.path.starts_with("/v1/providers/")) answers.push_back(entry);
    if (entry.path.ends_with("_SHA256SUMS") || entry.path.ends_with("_SHA256SUMS.sig")) documents.push_back(entry);
  }
  EXPECT_EQ(answers.size(), 12u);  // 6 providers x 2 platforms
  EXPECT_EQ(documents.size(), 12u);
  EXPECT_EQ(max_concurrency(answers), 6u);
  EXPECT_EQ(max_concurrency(documents), 6u);
}

TEST(DepsTf, CorruptedZipFailsTheZipCheckAndIndexesNothing) {
  FixtureOptions fixture;
  fixture.corrupt_zip = {"terraform-provider-aws_6.2.0_linux_amd64.zip"};
  FixtureUpstream upstream(fixture);
  DepsRun deps(upstream);
  expect_failure_leaves_store_unchanged(deps, {"deps", "tf", "--platform", "linux_amd64"},
                                        {"terraform-provider-aws_6.2.0_linux_amd64.zip", "expected", "got"});
  EXPECT_FALSE(fs::exists(deps.root() / "tf" / ".terraform.lock.hcl"));
}

TEST(DepsTf, SignatureByTheWrongKeyIsRefused) {
  FixtureOptions fixture;
  fixture.wrong_key = {"aws"};
  FixtureUpstream upstream(fixture);
  DepsRun deps(upstream);
  expect_failure_leaves_store_unchanged(deps, {"deps", "tf", "--platform", "linux_amd64"},
                                        {"terraform-provider-aws_6.2.0_SHA256SUMS", "unknown issuer"});
  EXPECT_TRUE(zip_requests(upstream).empty()) << "packages fetched before the signature check";
}

// As a user meets it: the refusal names the keys the registry lists (expected) and the key the
// signature says made it (got), and nothing of librnp's own log reaches stderr.
TEST(DepsTf, SignatureByTheWrongKeyNamesTheListedAndTheSigningKey) {
  FixtureOptions fixture;
  fixture.wrong_key = {"aws"};
  FixtureUpstream upstream(fixture);
  DepsRun deps(upstream);
  json aws;
  for (const auto& provider : upstream.fixture()["providers"])
    if (provider["type"] == "aws") aws = provider;
  ASSERT_FALSE(aws.is_null());
  const std::string listed = aws["key_fingerprint"], signer = aws["signed_by"];
  ASSERT_NE(listed, signer);
  const std::string signer_key_id = upstream.fixture()["keys"]["wrong"]["key_id"];

  auto result = deps.podplane({"deps", "tf", "--platform", "linux_amd64"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find("terraform-provider-aws_6.2.0_SHA256SUMS: authentication signature from unknown issuer"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("expected: a signature by the registry's signing keys for registry.opentofu.org/hashicorp/aws "
                            "6.2.0: " + listed),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("got:      a signature by " + signer + " (key id " + signer_key_id + ")"), std::string::npos)
      << result.err;
  EXPECT_EQ(librnp_log_lines(result.err), std::vector<std::string>{}) << result.err;
}

TEST(DepsTf, ShasumsMismatchIsRefusedWithExpectedAndGot) {
  FixtureOptions fixture;
  fixture.shasums_mismatch = {"terraform-provider-null_3.2.4_linux_amd64.zip"};
  FixtureUpstream upstream(fixture);
  DepsRun deps(upstream);
  auto genuine = package_entry(upstream, "null", "3.2.4", "linux_amd64")["sha256"].get<std::string>();
  expect_failure_leaves_store_unchanged(
      deps, {"deps", "tf", "--platform", "linux_amd64"},
      {"SHA256SUMS check failed for terraform-provider-null_3.2.4_linux_amd64.zip", "expected: sha256:",
       "got:      sha256:" + genuine});
}

TEST(DepsTf, PlatformTheRegistryLacksFailsAndKeepsTheStore) {
  FixtureUpstream upstream;
  DepsRun deps(upstream);
  ASSERT_EQ(deps.podplane({"deps", "tf", "--platform", "linux_amd64"}).exit_code, 0);
  // cloudinit has no darwin_arm64 package in the fixture registry.
  expect_failure_leaves_store_unchanged(deps, {"deps", "tf", "--platform", "darwin_arm64"},
                                        {"cloudinit", "darwin_arm64"});
  EXPECT_EQ(read_file(deps.root() / "tf" / "platforms"), "linux_amd64\n");
}

TEST(DepsTf, UpstreamWhoseCertificateDoesNotVerifyIsRefused) {
  // The system's CA bundle is a real trust store that does not hold the fixture's CA.
  const fs::path system_cas = "/etc/ssl/certs/ca-certificates.crt";
  if (!fs::exists(system_cas)) GTEST_SKIP() << "no system CA bundle at " << system_cas;
  FixtureUpstream upstream;
  DepsRun deps(upstream);
  ProcessOptions options;
  options.env = deps.env();
  options.env["SSL_CERT_FILE"] = system_cas.string();
  options.unset_env = {"TF_TOKEN_registry_opentofu_org", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
  auto result = run_podplane({"deps", "tf", "--platform", "linux_amd64"}, options);
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  expect_error_names(result, {upstream.base_url(), "certificate"});
  EXPECT_EQ(index_snapshot(deps.root()), "");
  EXPECT_TRUE(upstream.access_log().empty()) << "a request got through an unverified TLS handshake";
}

TEST(DepsTf, NewUpstreamVersionsArePickedUpAndWhatIsStoredStays) {
  FixtureOptions fixture;
  fixture.sharing = FixtureOptions::Sharing::private_copy;
  FixtureUpstream upstream(fixture);
  DepsRun deps(upstream);
  ASSERT_EQ(deps.podplane({"deps", "tf", "--platform", "linux_amd64"}).exit_code, 0);
  const auto old_aws = package_entry(upstream, "aws", "6.2.0", "linux_amd64")["sha256"].get<std::string>();

  upstream.rebuild({"--add-version", "aws=6.3.0", "--add-version", "module=2.2.0"});
  const auto new_aws = package_entry(upstream, "aws", "6.3.0", "linux_amd64")["sha256"].get<std::string>();

  auto rerun = deps.podplane({"deps", "tf", "--platform", "linux_amd64"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.out << rerun.err;
  EXPECT_EQ(file_digest_hex(provider_view(deps.root(), "aws", "6.3.0", "linux_amd64")), new_aws);
  EXPECT_EQ(read_file(deps.root() / "tf" / "modules" / "nstance" / "current-version"), "2.2.0\n");
  auto store = cache::Store::open(deps.root(), cache::Store::Access::read_only);
  EXPECT_TRUE(store.has_object(old_aws)) << "the 6.2.0 package left the store";
  EXPECT_TRUE(store.find_artifact(cache::ArtifactKind::provider_package, kHost + "/hashicorp/aws", "6.2.0", "linux_amd64",
                                  "terraform-provider-aws_6.2.0_linux_amd64.zip"));
  EXPECT_TRUE(store.find_module_tree(kHost + "/nstance-dev/nstance/aws", "2.1.0"));
  EXPECT_TRUE(store.find_module_tree(kHost + "/nstance-dev/nstance/aws", "2.2.0"));
}

TEST(DepsTf, BadPlatformIsAUsageError) {
  FixtureUpstream upstream;
  DepsRun deps(upstream);
  auto result = deps.podplane({"deps", "tf", "--platform", "linux/amd64"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("Try 'podplane deps tf --help'"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(deps.root() / "store")) << "a usage error must not create the store";
  EXPECT_NE(result.err.find("linux/amd64"), std::string::npos) << result.err;
}

// ---- crash safety ------------------------------------------------------------------------------

TEST(DepsTf, SigkillInTheMiddleThenACleanRerun) {
  ServeOptions serve;
  serve.delay_ms = 150;  // slow enough to be killed between package transfers
  FixtureUpstream upstream({}, serve);
  DepsRun deps(upstream);

  ProcessOptions options;
  options.env = deps.env();
  const pid_t pid =
      start_podplane({"deps", "tf", "--platform", "linux_amd64", "--platform", "linux_arm64", "--jobs", "2"}, options);
  // Kill as soon as the first package bytes flow (bounded wait: 60 s).
  bool seen = false;
  for (int i = 0; i < 600 && !seen; ++i) {
    seen = !zip_requests(upstream).empty();
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(seen) << "the run never reached the package downloads";
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";
  EXPECT_FALSE(fs::exists(deps.root() / "tf" / ".terraform.lock.hcl"));
  // No handler runs on SIGKILL: the killed run's scratch dir stays until the next run.
  auto killed_runs_scratch = [&] {
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(deps.tmp()))
      if (entry.path().filename().string().starts_with("podplane-tf-" + std::to_string(pid) + "-"))
        left.push_back(entry.path().filename().string());
    return left;
  };
  EXPECT_EQ(killed_runs_scratch().size(), 1u);

  upstream.restart({});
  deps.use(upstream);
  auto rerun = deps.podplane({"deps", "tf", "--platform", "linux_amd64", "--platform", "linux_arm64"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.out << rerun.err;
  auto lock = lockfile::read_lock_file(deps.root() / "tf" / ".terraform.lock.hcl");
  EXPECT_EQ(lock.providers.size(), 6u);
  auto verify = deps.podplane({"deps", "verify"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  // The rerun removed what the killed run left.
  EXPECT_TRUE(killed_runs_scratch().empty());
}

}  // namespace
}  // namespace podplane::test

namespace podplane::test {
namespace {

// `deps tf -f CONFIG` fetches the default stack of the config's provider kind.
TEST(DepsTf, ClusterConfigPicksTheStackOfItsProviderKind) {
  FixtureUpstream upstream;
  DepsRun deps(upstream);
  for (const char* kind : {"aws", "google"}) {
    auto init = run_podplane({"cluster", "init", "--provider", kind, "--id", std::string(kind) + "-cluster", "-f",
                              (deps.dir().path() / (std::string(kind) + ".jsonc")).string()});
    ASSERT_EQ(init.exit_code, 0) << init.out << init.err;
  }

  // The google stack: hashicorp/google and the Nstance google package, nothing of aws.
  auto google = deps.podplane({"deps", "tf", "--platform", "linux_amd64", "-f", (deps.dir().path() / "google.jsonc").string()});
  ASSERT_EQ(google.exit_code, 0) << google.out << google.err;
  EXPECT_NE(google.out.find("provider registry.opentofu.org/hashicorp/google 6.1.0"), std::string::npos) << google.out;
  EXPECT_NE(google.out.find("module registry.opentofu.org/nstance-dev/nstance/google"), std::string::npos) << google.out;
  EXPECT_EQ(google.out.find("hashicorp/aws"), std::string::npos) << google.out;

  auto aws = deps.podplane({"deps", "tf", "--platform", "linux_amd64", "-f", (deps.dir().path() / "aws.jsonc").string()});
  ASSERT_EQ(aws.exit_code, 0) << aws.out << aws.err;
  EXPECT_NE(aws.out.find("module registry.opentofu.org/nstance-dev/nstance/aws"), std::string::npos) << aws.out;

  auto both = deps.podplane({"deps", "tf", "-f", (deps.dir().path() / "aws.jsonc").string(), "--stack", deps.dir().path().string()});
  EXPECT_EQ(both.exit_code, 2) << "-f and --stack exclude each other\n" << both.err;
}

}  // namespace
}  // namespace podplane::test
