// What roots need, read from fixture roots on disk (no network): providers and constraints
// across local and remote modules, lock pins, the module-call depth limit, Podplane's stack,
// and merging roots for one shared lock. Then resolution from given upstream offers.
#include <gtest/gtest.h>

#include "base/error.hpp"
#include "fetch/tf_requirements.hpp"
#include "fetch/tf_resolution.hpp"
#include "tests/support/test_support.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;
using lockfile::Version;
using test::TempDir;
using test::write_file;

const std::string kHost = "registry.opentofu.org";

std::string provider_block(const std::string& entries) {
  return "terraform {\n  required_providers {\n" + entries + "  }\n}\n";
}

// Remote module packages from fixture directories: "<source text>" → package root.
class FixturePackages : public ModulePackages {
 public:
  std::map<std::string, fs::path> roots;
  std::vector<std::string> calls;  // "<source text> <constraints>", in call order

  Called call(const RemoteModuleCall& call) override {
    calls.push_back(call.source.text + " " + call.constraints);
    auto text = call.source.text.substr(0, call.source.text.find("//"));
    auto root = roots.at(text);
    return {{call.source.kind == ModuleSource::Kind::registry ? call.source.registry.str() : text, "1.0.0"},
            call.source.subdir.empty() ? root : root / call.source.subdir, root};
  }
};

std::vector<std::string> canonical_constraints(const ProviderWant& want) {
  std::vector<std::string> texts;
  for (const auto& constraint : want.constraints) texts.push_back(constraint.canonical());
  return texts;
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(TfRequirements, RootWithLocalAndRemoteModulesAndItsLock) {
  TempDir dir;
  auto root = dir / "root";
  write_file(root / "main.tf", provider_block("    aws = { source = \"hashicorp/aws\", version = \">= 6.0\" }\n"
                                              "    random = { version = \"~> 3.6\" }\n"
                                              "    terraform = { source = \"terraform.io/builtin/terraform\" }\n") +
                                   "module \"local\" {\n  source = \"./modules/local\"\n}\n"
                                   "module \"net\" {\n  source  = \"acme/net/aws//modules/vpc\"\n  version = \"~> 1.0\"\n}\n");
  write_file(root / "modules/local/versions.tf", provider_block("    aws = { source = \"hashicorp/aws\", version = \"< 7.0\" }\n"));
  write_file(root / ".terraform.lock.hcl",
             "provider \"registry.opentofu.org/hashicorp/random\" {\n  version = \"3.6.0\"\n}\n"
             "provider \"registry.opentofu.org/hashicorp/null\" {\n  version = \"3.2.4\"\n}\n");
  auto package = dir / "net-package";
  write_file(package / "modules/vpc/main.tf", provider_block("    tls = { source = \"hashicorp/tls\", version = \">= 4.0\" }\n"));

  FixturePackages packages;
  packages.roots["acme/net/aws"] = package;
  auto wanted = read_root(root, kHost, packages);

  EXPECT_EQ(wanted.name, root.string());
  std::vector<std::string> addresses;
  for (const auto& [address, want] : wanted.providers) addresses.push_back(address);
  // The built-in provider needs nothing; the lock's null entry nobody asks for is dropped.
  EXPECT_EQ(addresses, (std::vector<std::string>{kHost + "/hashicorp/aws", kHost + "/hashicorp/random", kHost + "/hashicorp/tls"}));
  const auto& aws = wanted.providers.at(kHost + "/hashicorp/aws");
  EXPECT_EQ(canonical_constraints(aws), (std::vector<std::string>{">= 6.0.0", "< 7.0.0"}));
  EXPECT_FALSE(aws.pinned);
  EXPECT_EQ(aws.declared_in, (root / "main.tf").string());
  const auto& random = wanted.providers.at(kHost + "/hashicorp/random");
  ASSERT_TRUE(random.pinned);
  EXPECT_EQ(random.pinned->str(), "3.6.0");
  EXPECT_EQ(random.pinned_by, (root / ".terraform.lock.hcl").string());
  EXPECT_EQ(packages.calls, std::vector<std::string>{"acme/net/aws//modules/vpc ~> 1.0"});
  EXPECT_FALSE(wanted.stack_module);
}

TEST(TfRequirements, RemoteModuleCallsNestAtMostEightDeep) {
  TempDir dir;
  FixturePackages packages;
  // m0 calls m1 calls m2 … each a remote package.
  for (int i = 0; i <= 9; ++i) {
    auto name = "acme/m" + std::to_string(i) + "/x";
    packages.roots[name] = dir / ("m" + std::to_string(i));
    write_file(dir / ("m" + std::to_string(i)) / "main.tf",
               "module \"next\" {\n  source  = \"acme/m" + std::to_string(i + 1) + "/x\"\n  version = \"1.0.0\"\n}\n");
  }
  write_file(dir / "root/main.tf", "module \"first\" {\n  source  = \"acme/m0/x\"\n  version = \"1.0.0\"\n}\n");
  auto message = error_of([&] { (void)read_root(dir / "root", kHost, packages); });
  EXPECT_NE(message.find("remote module calls nest deeper than 8"), std::string::npos) << message;
  EXPECT_NE(message.find("module \"next\""), std::string::npos) << message;
  EXPECT_EQ(packages.calls.size(), 8u);
}

TEST(TfRequirements, BadInputNamesTheFile) {
  TempDir dir;
  FixturePackages packages;
  write_file(dir / "root/main.tf", provider_block("    aws = { source = \"hashicorp/aws\", version = \">= banana\" }\n"));
  auto message = error_of([&] { (void)read_root(dir / "root", kHost, packages); });
  EXPECT_NE(message.find((dir / "root/main.tf").string() + ": provider registry.opentofu.org/hashicorp/aws"),
            std::string::npos)
      << message;
  EXPECT_THROW((void)read_root(dir / "absent", kHost, packages), UsageError);
}

TEST(TfRequirements, PodplaneStackReadsItsModulePackage) {
  TempDir dir;
  auto package = dir / "nstance";
  for (const char* name : cache::kStackSubmodules) {
    write_file(package / "modules" / name / "versions.tf",
               provider_block("    " + std::string(name) + " = { source = \"test/" + name + "\", version = \">= 1.0\" }\n"));
  }
  FixturePackages packages;
  packages.roots["nstance-dev/nstance/google"] = package;
  auto stack = cache::podplane_stack(cache::ProviderKind::google);
  auto wanted = read_podplane_stack(stack, kHost, packages);

  EXPECT_EQ(packages.calls, std::vector<std::string>{"nstance-dev/nstance/google ~> 2.0"});
  ASSERT_TRUE(wanted.stack_module);
  EXPECT_EQ(wanted.stack_module->address, kHost + "/nstance-dev/nstance/google");
  for (const auto& provider : stack.providers) {
    auto address = lockfile::ProviderAddress::parse(provider.source, kHost).str();
    ASSERT_TRUE(wanted.providers.count(address)) << address;
    EXPECT_EQ(wanted.providers.at(address).declared_in, "podplane default stack");
  }
  for (const char* name : cache::kStackSubmodules) EXPECT_TRUE(wanted.providers.count(kHost + "/test/" + name)) << name;

  fs::remove_all(package / "modules" / "shard");
  auto message = error_of([&] { (void)read_podplane_stack(stack, kHost, packages); });
  EXPECT_NE(message.find("lacks modules/shard"), std::string::npos) << message;
}

// Two roots that lock one provider at different versions are normal: each keeps its own pin.
TEST(TfResolution, RootsThatLockOneProviderAtDifferentVersionsResolveEachOnItsOwn) {
  RootRequirements a, b, c;
  auto random = lockfile::ProviderAddress::parse("hashicorp/random", kHost);
  a.want(random, "~> 3.6", "a/main.tf");
  b.want(random, ">= 3.0", "b/main.tf");
  b.providers.at(random.str()).pinned = Version::parse("3.6.0");
  c.want(random, "", "c/main.tf");
  c.providers.at(random.str()).pinned = Version::parse("3.7.2");
  const std::map<std::string, std::vector<Version>> offered = {
      {random.str(), {Version::parse("3.6.0"), Version::parse("3.7.2")}}};
  auto selections = resolve_roots({a, b, c}, offered);
  ASSERT_EQ(selections.size(), 3u);
  EXPECT_EQ(selections[0].at(0).version, "3.7.2");
  EXPECT_EQ(selections[1].at(0).version, "3.6.0");
  EXPECT_EQ(selections[2].at(0).version, "3.7.2");
  EXPECT_EQ(selections[1].at(0).constraints, ">= 3.0.0");
}

// ---- resolution from given offers -----------------------------------------------------------

TEST(TfResolution, PinNewestAndTheirErrors) {
  ProviderWant want;
  want.address = lockfile::ProviderAddress::parse("hashicorp/random", kHost);
  want.constraints = {lockfile::Constraints::parse("~> 3.6")};
  want.declared_in = "main.tf";
  const std::vector<Version> offered = {Version::parse("3.5.0"), Version::parse("3.6.0"), Version::parse("3.7.2"),
                                        Version::parse("4.0.0")};
  EXPECT_EQ(choose_provider_version(want, offered).str(), "3.7.2");
  want.pinned = Version::parse("3.6.0");
  EXPECT_EQ(choose_provider_version(want, offered).str(), "3.6.0");
  want.pinned = Version::parse("3.5.0");
  EXPECT_NE(error_of([&] { (void)choose_provider_version(want, offered); }).find("does not meet the constraints \"~> 3.6\""),
            std::string::npos);
  want.pinned = Version::parse("3.6.1");
  EXPECT_NE(error_of([&] { (void)choose_provider_version(want, offered); }).find("is not offered upstream"), std::string::npos);
  want.pinned.reset();
  want.constraints.push_back(lockfile::Constraints::parse(">= 5.0"));
  auto message = error_of([&] { (void)choose_provider_version(want, offered); });
  EXPECT_NE(message.find("no version of " + want.address.str()), std::string::npos) << message;
  EXPECT_NE(message.find("(asked for by main.tf)"), std::string::npos) << message;
}

TEST(TfResolution, OnlyVersionsOfASupportedProtocolAreInstallable) {
  std::vector<ProviderVersion> listed = {{Version::parse("1.0.0"), {"4.0"}, {}},
                                         {Version::parse("2.0.0"), {"5.0"}, {}},
                                         {Version::parse("3.0.0"), {}, {}},
                                         {Version::parse("4.0.0"), {"7.0"}, {}}};
  auto versions = installable_versions(listed);
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].str(), "2.0.0");
  EXPECT_EQ(versions[1].str(), "3.0.0");
}

TEST(TfResolution, RootSelectionAndItsPackageJobs) {
  RootRequirements root;
  root.want(lockfile::ProviderAddress::parse("hashicorp/aws", kHost), ">= 6.0", "main.tf");
  root.want(lockfile::ProviderAddress::parse("hashicorp/aws", kHost), "< 6.2", "mod.tf");
  root.want(lockfile::ProviderAddress::parse("hashicorp/null", kHost), "", "main.tf");
  std::map<std::string, std::vector<Version>> offered = {
      {kHost + "/hashicorp/aws", {Version::parse("6.0.0"), Version::parse("6.1.3"), Version::parse("6.2.0")}},
      {kHost + "/hashicorp/null", {Version::parse("3.2.4")}}};
  auto selection = resolve_root(root, offered);
  ASSERT_EQ(selection.size(), 2u);
  EXPECT_EQ(selection[0].address, kHost + "/hashicorp/aws");
  EXPECT_EQ(selection[0].version, "6.1.3");
  EXPECT_EQ(selection[0].constraints, ">= 6.0.0, < 6.2.0");
  EXPECT_EQ(selection[1].version, "3.2.4");

  // Two roots selecting the same version plan its packages once.
  auto both = selection;
  both.insert(both.end(), selection.begin(), selection.end());
  auto plan = plan_package_jobs(both, {"linux_amd64", "darwin_arm64"}, kHost, [](const PackageJob& job) {
    return job.address.type == "null" && job.platform.str() == "linux_amd64";
  });
  EXPECT_EQ(plan.present, 1u);
  std::vector<std::string> names;
  for (const auto& job : plan.jobs) {
    EXPECT_EQ(job.stage, PackageJob::Stage::planned);
    names.push_back(job.filename);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"terraform-provider-aws_6.1.3_linux_amd64.zip",
                                             "terraform-provider-aws_6.1.3_darwin_arm64.zip",
                                             "terraform-provider-null_3.2.4_darwin_arm64.zip"}));
}

// Each requirement set resolves on its own: two roots pinning one provider at different
// versions get each their own pin, and the offers are asked for once per provider.
TEST(TfResolution, EachRootResolvesOnItsOwn) {
  const auto random = lockfile::ProviderAddress::parse("hashicorp/random", kHost);
  RootRequirements old_root;
  old_root.want(random, "~> 3.0", "old/main.tf");
  old_root.providers.at(random.str()).pinned = Version::parse("3.5.0");
  RootRequirements new_root;
  new_root.want(random, "~> 3.0", "new/main.tf");
  new_root.want(lockfile::ProviderAddress::parse("hashicorp/null", kHost), "", "new/main.tf");
  const std::vector<RootRequirements> roots{old_root, new_root};

  auto addresses = offered_addresses(roots);
  ASSERT_EQ(addresses.size(), 2u);
  EXPECT_EQ(addresses[0].str(), kHost + "/hashicorp/null");
  EXPECT_EQ(addresses[1].str(), random.str());

  std::map<std::string, std::vector<Version>> offered = {
      {random.str(), {Version::parse("3.5.0"), Version::parse("3.7.2")}},
      {kHost + "/hashicorp/null", {Version::parse("3.2.4")}}};
  auto selections = resolve_roots(roots, offered);
  ASSERT_EQ(selections.size(), 2u);
  ASSERT_EQ(selections[0].size(), 1u);
  EXPECT_EQ(selections[0][0].version, "3.5.0");
  ASSERT_EQ(selections[1].size(), 2u);
  EXPECT_EQ(selections[1][1].address, random.str());
  EXPECT_EQ(selections[1][1].version, "3.7.2");
}

TEST(TfResolution, ModulePackages) {
  RemoteModuleCall registry{ModuleSource::parse("acme/net/aws//modules/vpc", kHost), "~> 1.0", "main.tf: module \"net\"", "main.tf"};
  auto chosen = choose_module_version(registry, {Version::parse("1.0.0"), Version::parse("1.4.0"), Version::parse("2.0.0")});
  EXPECT_EQ(chosen.address, kHost + "/acme/net/aws");
  EXPECT_EQ(chosen.version, "1.4.0");
  auto none = error_of([&] { (void)choose_module_version(registry, {Version::parse("2.0.0")}); });
  EXPECT_NE(none.find("main.tf: module \"net\": no version of module " + kHost + "/acme/net/aws matches \"~> 1.0\""),
            std::string::npos)
      << none;

  RemoteModuleCall git{ModuleSource::parse("git::https://git.test/org/repo.git//sub?ref=release/v1", kHost), "",
                       "main.tf: module \"g\"", "main.tf"};
  auto package = direct_module_package(git);
  EXPECT_EQ(package.address, "git.test/org/repo");
  EXPECT_EQ(package.version, "release_v1");
  RemoteModuleCall archive{ModuleSource::parse("https://files.test/m.tar.gz", kHost), "", "main.tf: module \"a\"", "main.tf"};
  EXPECT_EQ(direct_module_package(archive).version, "unversioned");
  archive.constraints = "1.0.0";
  EXPECT_NE(error_of([&] { (void)direct_module_package(archive); }).find("a version constraint needs a registry module source"),
            std::string::npos);
}

}  // namespace
}  // namespace podplane::fetch
