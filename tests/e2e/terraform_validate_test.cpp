// The real engine as the judge of a generated stack's plan-time inputs: `terraform validate`
// starts every provider of the stack and checks each block against the provider's schema, so
// it needs providers that run. The Podplane provider (and random, null, tls, cloudinit, which
// the Nstance modules require) is the fixture plugin of tests/tools/tfplugin, carrying the
// published provider's schema, inside the store's zips for this machine's platform; hashicorp/aws
// (hashicorp/google for the Google stack) is the real plugin the machine image ships under
// /opt/tf-plugins (a development override: its version is not the fixture registry's).
// Everything runs offline, under `unshare -n`.
#include <gtest/gtest.h>

#include <sys/utsname.h>

#include <map>

#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

// Where the machine image unpacks real provider plugins (registry.terraform.io layout).
const fs::path kRealPlugins = "/opt/tf-plugins/registry.terraform.io/hashicorp";

// The directory of a real linux_amd64 plugin of hashicorp/<type>, any version, or empty.
fs::path real_plugin_dir(const std::string& type) {
  std::error_code error;
  for (const auto& version : fs::directory_iterator(kRealPlugins / type, error)) {
    if (fs::is_directory(version.path() / "linux_amd64")) return version.path() / "linux_amd64";
  }
  return {};
}

ProcessResult checked(const ProcessResult& result, const std::string& what) {
  EXPECT_EQ(result.exit_code, 0) << what << "\n" << show(result);
  return result;
}

// The store's CLI config (its filesystem mirror) with the cloud's real plugin overriding the
// registry's package: `dev_overrides` must sit inside the provider_installation block.
fs::path cli_config_with_real_plugin(const fs::path& store_tfrc, const std::string& cloud, const fs::path& plugin_dir,
                                     const fs::path& out) {
  std::string text = read_file(store_tfrc);
  const std::string block = "provider_installation {";
  const auto at = text.find(block);
  if (at == std::string::npos) throw std::runtime_error(store_tfrc.string() + " has no provider_installation block:\n" + text);
  text.insert(at + block.size(),
              "\n  dev_overrides {\n    \"hashicorp/" + cloud + "\" = \"" + plugin_dir.string() + "\"\n  }\n");
  write_file(out, text);
  return out;
}

class StackValidate : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_program("terraform")) GTEST_SKIP() << "no terraform on PATH: the machine image provides it, Debian does not";
    struct utsname host {};
    uname(&host);
    if (std::string(host.machine) != "x86_64") GTEST_SKIP() << "the fixture plugin is put in linux_amd64 zips; this host is " << host.machine;
    isolate_ = run({"unshare", "-n", "true"}).exit_code == 0;
    if (!isolate_) std::cout << "[ NOTE ] unshare -n refused here; terraform runs with every proxy at a closed port\n";
  }

  // Fills a store from the fixture registry (runnable plugin in the linux_amd64 zips) and
  // generates a stack of `cloud` with the seed pointing at the stored snapshot.
  fs::path create_stack(FixtureUpstream& upstream, const std::string& cloud) {
    cloud_ = cloud;
    ProcessOptions online;
    online.env = upstream.env(root_, upstream.write_cli_config(dir_ / "cli.tfrc"));
    online.unset_env = {"http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY"};
    const fs::path stack = dir_ / cloud;
    fs::create_directories(stack);
    ProcessOptions in_stack = online;
    in_stack.cwd = stack;
    checked(run_podplane({"cluster", "init", "--provider", cloud, "--id", "validate-" + cloud}, in_stack), "cluster init");
    // A seed of the fixture's seeds.json, without a path: create points the stack at the stored one.
    std::string config = read_file(stack / "podplane.cluster.jsonc");
    const auto at = config.find("\"cluster\": {");
    if (at == std::string::npos) throw std::runtime_error("no \"cluster\" object in the initial config:\n" + config);
    const std::string version = upstream.fixture()["seeds"]["version"];
    config.insert(at + 12, "\n    \"seed\": { \"name\": \"recommended\", \"version\": \"" + version + "\" },");
    write_file(stack / "podplane.cluster.jsonc", config);
    checked(run_podplane({"--quiet", "deps", "tf", "--engine", "terraform", "--platform", "linux_amd64"}, in_stack), "deps tf");
    checked(run_podplane({"--quiet", "deps", "download", "--arch", "amd64,arm64", "--providers", "all"}, online),
            "deps download");
    checked(run_podplane({"cluster", "create", "--no-apply"}, in_stack), "cluster create");
    return stack;
  }

  ProcessResult terraform(const std::vector<std::string>& args, const fs::path& cwd,
                          const std::map<std::string, std::string>& extra_env = {}) const {
    std::vector<std::string> argv{"terraform"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (isolate_) argv.insert(argv.begin(), {"unshare", "-n"});
    ProcessOptions offline;
    offline.cwd = cwd;
    offline.env = {{"TF_CLI_CONFIG_FILE", tfrc_.string()},
                   {"HOME", dir_.path().string()},  // no ~/.terraform.d plugins or credentials of the host
                   {"CHECKPOINT_DISABLE", "1"},
                   {"TMPDIR", (dir_ / "tmp").string()},  // the plugins' sockets, removed with the test
                   {"http_proxy", "http://127.0.0.1:9"},
                   {"https_proxy", "http://127.0.0.1:9"},
                   {"HTTPS_PROXY", "http://127.0.0.1:9"}};
    offline.unset_env = {"TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR", "SSL_CERT_FILE", "TF_LOG"};
    for (const auto& [name, value] : extra_env) offline.env[name] = value;
    return run(argv, offline);
  }

  // init from the store, offline, then validate.
  ProcessResult init_and_validate(const fs::path& stack, const fs::path& cloud_plugin) {
    fs::create_directories(dir_ / "tmp");
    tfrc_ = cli_config_with_real_plugin(root_ / "tf" / "podplane.tfrc", cloud_, cloud_plugin, dir_ / "validate.tfrc");
    auto init = terraform({"init", "-lockfile=readonly", "-backend=false", "-input=false", "-no-color"}, stack);
    EXPECT_EQ(init.exit_code, 0) << show(init);
    EXPECT_NE(init.out.find("Terraform has been successfully initialized"), std::string::npos) << show(init);
    return terraform({"validate", "-no-color"}, stack);
  }

  bool isolate_ = false;
  std::string cloud_;
  TempDir dir_;
  fs::path root_ = dir_ / "deps";
  fs::path tfrc_;
};

FixtureOptions with_runnable_plugin() {
  FixtureOptions options;
  options.runnable_plugin = std::string("linux_amd64=") + PODPLANE_TFPLUGIN_BINARY;
  return options;
}

// A stack copied beside the original (its module sources are relative) with `edit` applied
// to its main file; the copy keeps the original's .terraform, so it needs no init.
fs::path edited_copy(const fs::path& stack, const std::string& name, const std::string& from, const std::string& to) {
  const fs::path copy = stack.parent_path() / name;
  fs::copy(stack, copy, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::string main = read_file(copy / "podplane.cluster.main.tf");
  const auto at = main.find(from);
  if (at == std::string::npos) throw std::runtime_error("no \"" + from + "\" in the generated main file:\n" + main);
  main.replace(at, from.size(), to);
  write_file(copy / "podplane.cluster.main.tf", main);
  return copy;
}

TEST_F(StackValidate, AnAwsStackWithAStoredSeedValidatesOffline) {
  const fs::path aws = real_plugin_dir("aws");
  if (aws.empty()) GTEST_SKIP() << "no real hashicorp/aws plugin under " << kRealPlugins << " (the machine image ships one)";
  FixtureUpstream upstream(with_runnable_plugin());
  const fs::path stack = create_stack(upstream, "aws");
  const std::string main = read_file(stack / "podplane.cluster.main.tf");
  ASSERT_NE(main.find("resource \"podplane_netsy_seed_s3\""), std::string::npos) << main;
  ASSERT_NE(main.find("seed_path"), std::string::npos) << "the seed resource does not read the stored snapshot:\n" << main;
  ASSERT_NE(main.find("data \"podplane_userdata\""), std::string::npos) << main;

  auto validate = init_and_validate(stack, aws);
  ASSERT_EQ(validate.exit_code, 0) << show(validate);
  EXPECT_NE(validate.out.find("Success! The configuration is valid"), std::string::npos) << show(validate);

  // The engine spoke protocol 6 to the plugins and let them exit when asked (the controller's
  // Shutdown), instead of killing them.
  auto logged = terraform({"validate", "-no-color"}, stack, {{"TF_LOG", "debug"}});
  ASSERT_EQ(logged.exit_code, 0) << show(logged);
  EXPECT_NE(logged.err.find("using plugin: version=6"), std::string::npos) << logged.err;
  EXPECT_EQ(logged.err.find("plugin failed to exit gracefully"), std::string::npos) << logged.err;

  // The plugin's schema is what validate judged by: an argument the provider lacks, or one
  // renamed away, fails with terraform's own error.
  const fs::path renamed = edited_copy(stack, "renamed", "seed_path ", "seed_file ");
  auto bad = terraform({"validate", "-no-color"}, renamed);
  EXPECT_NE(bad.exit_code, 0) << show(bad);
  EXPECT_NE(bad.err.find("Unsupported argument"), std::string::npos) << show(bad);
  EXPECT_NE(bad.err.find("\"seed_file\" is not expected here"), std::string::npos) << show(bad);

  const fs::path unknown = edited_copy(stack, "unknown", "resource \"podplane_netsy_seed_s3\" \"bootstrap\" {",
                                       "resource \"podplane_netsy_seed_s3\" \"bootstrap\" {\n  seed_url = \"https://example.invalid\"");
  bad = terraform({"validate", "-no-color"}, unknown);
  EXPECT_NE(bad.exit_code, 0) << show(bad);
  EXPECT_NE(bad.err.find("\"seed_url\" is not expected here"), std::string::npos) << show(bad);

  // The real aws plugin judges the aws blocks too.
  const fs::path wrong_aws = edited_copy(stack, "wrong-aws", "provider \"aws\" {", "provider \"aws\" {\n  regoin = \"x\"");
  bad = terraform({"validate", "-no-color"}, wrong_aws);
  EXPECT_NE(bad.exit_code, 0) << show(bad);
  EXPECT_NE(bad.err.find("\"regoin\" is not expected here"), std::string::npos) << show(bad);
}

// The Google stack's cloud provider must run too: validate starts every provider of the stack.
TEST_F(StackValidate, AGoogleStackWithAStoredSeedValidatesOffline) {
  const fs::path google = real_plugin_dir("google");
  if (google.empty()) {
    GTEST_SKIP() << "no real hashicorp/google plugin under " << kRealPlugins
                 << " (this machine image ships only hashicorp/aws), and validate starts every provider of the stack";
  }
  FixtureUpstream upstream(with_runnable_plugin());
  const fs::path stack = create_stack(upstream, "google");
  const std::string main = read_file(stack / "podplane.cluster.main.tf");
  ASSERT_NE(main.find("resource \"podplane_netsy_seed_gcs\""), std::string::npos) << main;
  ASSERT_NE(main.find("seed_path"), std::string::npos) << main;
  auto validate = init_and_validate(stack, google);
  ASSERT_EQ(validate.exit_code, 0) << show(validate);
  const fs::path renamed = edited_copy(stack, "renamed", "seed_path ", "seed_file ");
  auto bad = terraform({"validate", "-no-color"}, renamed);
  EXPECT_NE(bad.exit_code, 0) << show(bad);
  EXPECT_NE(bad.err.find("\"seed_file\" is not expected here"), std::string::npos) << show(bad);
}

// The fixture plugin refuses what real plugins refuse: a start by anything but an engine, an
// engine that offers no protocol it speaks, and a name it cannot play.
TEST(FixturePlugin, RefusesToStartOutsideAnEngineOrForAProviderItDoesNotPlay) {
  TempDir dir;
  const fs::path podplane = dir / "terraform-provider-podplane_v1.3.0";
  const fs::path google = dir / "terraform-provider-google_v6.1.0";
  fs::copy_file(PODPLANE_TFPLUGIN_BINARY, podplane);
  fs::copy_file(PODPLANE_TFPLUGIN_BINARY, google);
  ProcessOptions options;
  options.unset_env = {"TF_PLUGIN_MAGIC_COOKIE", "PLUGIN_PROTOCOL_VERSIONS", "PLUGIN_CLIENT_CERT"};
  auto direct = run({podplane.string()}, options);
  EXPECT_EQ(direct.exit_code, 1);
  EXPECT_NE(direct.err.find("This binary is a plugin"), std::string::npos) << direct.err;

  options.env = {{"TF_PLUGIN_MAGIC_COOKIE", "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"},
                 {"PLUGIN_PROTOCOL_VERSIONS", "4,5"}};
  auto old_engine = run({podplane.string()}, options);
  EXPECT_EQ(old_engine.exit_code, 1);
  EXPECT_NE(old_engine.err.find("offers plugin protocols 4,5; this plugin speaks only 6"), std::string::npos)
      << old_engine.err;

  options.env["PLUGIN_PROTOCOL_VERSIONS"] = "5,6";
  auto unknown = run({google.string()}, options);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("does not play provider type \"google\""), std::string::npos) << unknown.err;
  EXPECT_TRUE(unknown.out.empty()) << "no handshake line for a provider it cannot play: " << unknown.out;
}

}  // namespace
}  // namespace podplane::test
