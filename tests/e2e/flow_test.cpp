// The main job end to end, through the real `podplane` binary, in the three places of
// docs/design.md §1: an online root A filled from the fixture upstream, a signed bundle (full, then a
// delta against the air gap's inventory) carried to root B with no network at all, a cluster
// stack generated and checked from B alone, and B served by `mirror serve` to a third root C
// whose `deps tf` ends with A's provider objects.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cache/store.hpp"
#include "tests/support/background.hpp"
#include "tests/support/test_support.hpp"
#include "tests/support/tls.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::e2e {
namespace {

namespace fs = std::filesystem;
using test::Background;
using test::ProcessOptions;
using test::ProcessResult;
using test::read_file;
using test::run;
using test::run_podplane;
using test::show;
using test::TempDir;
using test::write_file;

const std::vector<std::string> kProxyVariables{"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                               "all_proxy"};

// Whether this kernel lets us drop into a fresh network namespace (no interfaces but a down
// loopback). When it refuses, the reason is printed once and the offline steps run without it.
bool network_namespace_available() {
  static const bool available = [] {
    if (!test::have_program("unshare")) {
      std::cout << "[  NOTE    ] unshare (util-linux) is not installed; offline steps run with the network present\n";
      return false;
    }
    auto probe = run({"unshare", "-n", "true"});
    if (probe.exit_code != 0) {
      std::cout << "[  NOTE    ] the kernel refuses `unshare -n` (" << probe.err
                << "); offline steps run with the network present and every proxy variable pointed at a closed port\n";
      return false;
    }
    return true;
  }();
  return available;
}

// Runs podplane inside `unshare -n` (no network) when the kernel allows it. Proxy variables
// point at a closed port either way, so even without the namespace a connection cannot succeed.
ProcessResult run_offline(const std::vector<std::string>& args, ProcessOptions options) {
  for (const auto& name : kProxyVariables) options.env[name] = "http://127.0.0.1:9";
  options.unset_env.insert(options.unset_env.end(), {"TF_CLI_CONFIG_FILE", "SSL_CERT_FILE", "PODPLANE_DEPS_URL"});
  if (!network_namespace_available()) return run_podplane(args, options);
  std::vector<std::string> argv{"unshare", "-n", test::podplane_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

ProcessOptions at(const fs::path& root) {
  ProcessOptions options = podplane::test::with_deps_root(root);
  options.unset_env = kProxyVariables;
  return options;
}

// Every object digest of a deps root (empty when there is no store yet).
std::set<std::string> objects(const fs::path& root) {
  std::set<std::string> digests;
  const fs::path dir = root / "store" / "objects" / "sha256";
  if (!fs::exists(dir)) return digests;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file())
      digests.insert(entry.path().parent_path().filename().string() + entry.path().filename().string());
  return digests;
}

// What the index says about content, one sorted line per artifact and module tree; `providers_only`
// keeps the provider_* kinds and the modules (what `deps tf` fetches).
enum class Rows { all, providers_and_modules };
std::string content_rows(const fs::path& root, Rows which = Rows::all) {
  auto store = cache::Store::open(root, cache::Store::Access::read_only);
  std::vector<std::string> lines;
  for (const auto& a : store.artifacts()) {
    const std::string kind(cache::to_string(a.kind));
    if (which == Rows::providers_and_modules && kind.rfind("provider", 0) != 0) continue;
    lines.push_back(kind + " " + a.address + " " + a.version + " " + a.platform + " " + a.filename + " " + a.digest +
                    " " + a.h1 + " " + std::string(cache::to_string(a.trust)));
  }
  for (const auto& tree : store.module_trees()) lines.push_back("module " + tree.address + " " + tree.version + " " + tree.h1);
  std::sort(lines.begin(), lines.end());
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

std::size_t count_lines_with(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) ++n;
  return n;
}

// Lines of a table that start with `first_column` and contain `needle`.
std::size_t count_rows(const std::string& text, const std::string& first_column, const std::string& needle) {
  std::size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(first_column + " ", 0) == 0 && line.find(needle) != std::string::npos) ++n;
  return n;
}

// `deps verify` must be clean, also after a two-arch `deps download` whose amd64 and arm64
// kubelet share one view path (the view holds linux_amd64's; views.hpp).
void expect_verify_clean(const fs::path& root, const std::string& where) {
  auto verify = run_offline({"deps", "verify"}, at(root));
  ASSERT_EQ(verify.exit_code, 0) << where << "\n" << show(verify);
  EXPECT_NE(verify.out.find(": ok"), std::string::npos) << where << "\n" << show(verify);
}

TEST(Flow, OnlineTransferAirGapAndMirror) {
  const auto started = std::chrono::steady_clock::now();
  TempDir dir;
  const fs::path a = dir / "online-A";
  const fs::path b = dir / "airgap-B";
  const fs::path c = dir / "site-C";
  const std::vector<std::string> two_platforms{"--platform", "linux_amd64", "--platform", "linux_arm64"};

  // ---- 1. Online host: fill A from the fixture upstream -------------------------------------
  std::set<std::string> objects_a_first;
  {
    test::FixtureUpstream upstream;
    upstream.write_cli_config(dir / "upstream.tfrc");
    ProcessOptions online;
    online.env = upstream.env(a, dir / "upstream.tfrc");
    online.unset_env = kProxyVariables;
    // Neither tofu nor terraform on PATH: deps tf takes its documented default engine, tofu.
    online.env["PATH"] = "/usr/bin:/bin";
    const auto& providers = upstream.fixture()["providers"];
    ASSERT_FALSE(providers.empty());

    std::vector<std::string> tf{"deps", "tf"};
    tf.insert(tf.end(), two_platforms.begin(), two_platforms.end());
    auto fetched = run_podplane(tf, online);
    ASSERT_EQ(fetched.exit_code, 0) << show(fetched);
    EXPECT_NE(fetched.out.find("Platforms: linux_amd64, linux_arm64"), std::string::npos) << fetched.out;
    EXPECT_EQ(read_file(a / "tf" / "platforms"), "linux_amd64\nlinux_arm64\n");
    // Six providers of the Podplane stack, each for both platforms, in the index and in the views.
    const std::string rows = content_rows(a);
    EXPECT_EQ(count_lines_with(rows, "provider_package "), 12u) << rows;
    EXPECT_EQ(count_lines_with(rows, "signed_upstream"), count_lines_with(rows, "provider_")) << rows;
    EXPECT_EQ(count_lines_with(rows, "module registry.opentofu.org/nstance-dev/nstance/aws "), 1u) << rows;
    EXPECT_TRUE(fs::exists(a / "tf" / "providers" / "registry.opentofu.org" / "hashicorp" / "aws"));
    EXPECT_TRUE(fs::exists(a / "tf" / ".terraform.lock.hcl"));
    // The zips in A are byte for byte the ones the upstream published.
    std::map<std::string, std::string> published;  // filename → sha256
    for (const auto& provider : providers)
      for (const auto& version : provider["versions"])
        for (const auto& [platform, package] : version["packages"].items())
          published[package["filename"].get<std::string>()] = package["sha256"].get<std::string>();
    for (const auto& artifact : cache::Store::open(a, cache::Store::Access::read_only).artifacts()) {
      if (artifact.kind != cache::ArtifactKind::provider_package) continue;
      ASSERT_TRUE(published.count(artifact.filename)) << artifact.filename;
      EXPECT_EQ(artifact.digest, published[artifact.filename]) << artifact.filename;
    }

    // --providers all: every provider's vmconfig items (nstance-agent for aws), as without it.
    auto download = run_podplane({"deps", "download", "--arch", "amd64,arm64", "--providers", "all"}, online);
    ASSERT_EQ(download.exit_code, 0) << show(download);
    for (const char* name : {"vmconfig_knc_debian-13_amd64", "vmconfig_knc_debian-13_arm64",
                             "vmconfig_knd_debian-13_amd64", "vmconfig_knd_debian-13_arm64"})
      EXPECT_TRUE(fs::exists(a / "vmconfig" / "manifests" / (std::string(name) + ".json"))) << name;
    EXPECT_GE(count_lines_with(content_rows(a), "vmconfig_artifact "), 10u);

    auto listed = run_podplane({"deps", "ls", "--json"}, at(a));
    ASSERT_EQ(listed.exit_code, 0) << show(listed);
    {
      // One entry per artifact row plus one per module tree ("kind": "module").
      auto store = cache::Store::open(a, cache::Store::Access::read_only);
      auto entries = nlohmann::json::parse(listed.out);
      EXPECT_EQ(entries.size(), store.artifacts().size() + store.module_trees().size());
      EXPECT_EQ(std::count_if(entries.begin(), entries.end(), [](const auto& e) { return e["kind"] == "provider_package"; }), 12);
    }
    expect_verify_clean(a, "root A after deps tf + deps download");
    objects_a_first = objects(a);

    // ---- 2. Transfer: keys, the air gap's inventory, a signed bundle ----------------------------
    auto keygen = run_podplane({"bundle", "keygen", (dir / "site").string()});
    ASSERT_EQ(keygen.exit_code, 0) << show(keygen);
    EXPECT_EQ(fs::status(dir / "site.key").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);

    auto inventory = run_offline({"bundle", "inventory", "-o", (dir / "inventory-0.json").string()}, at(b));
    ASSERT_EQ(inventory.exit_code, 0) << show(inventory);
    auto inv = nlohmann::json::parse(read_file(dir / "inventory-0.json"));
    EXPECT_TRUE(inv["objects"].empty()) << inv.dump();

    auto create = run_podplane({"bundle", "create", (dir / "full.bundle").string(), "--since",
                                (dir / "inventory-0.json").string(), "--sign", (dir / "site.key").string()},
                               at(a));
    ASSERT_EQ(create.exit_code, 0) << show(create);
    EXPECT_NE(create.out.find(std::to_string(objects_a_first.size()) + " objects"), std::string::npos) << create.out;

    // ---- 3. Air gap: verify and import with no network ------------------------------------------
    auto verify = run_offline({"bundle", "verify", (dir / "full.bundle").string(), "--trust", (dir / "site.pub").string()},
                              at(dir / "unused-root"));
    ASSERT_EQ(verify.exit_code, 0) << show(verify);
    auto untrusted = run_offline({"bundle", "import", (dir / "full.bundle").string()}, at(b));
    EXPECT_EQ(untrusted.exit_code, 1) << "an import without --trust must refuse a signed bundle\n" << show(untrusted);
    EXPECT_TRUE(objects(b).empty()) << "a refused import left objects behind";
    auto import = run_offline({"bundle", "import", (dir / "full.bundle").string(), "--trust", (dir / "site.pub").string()}, at(b));
    ASSERT_EQ(import.exit_code, 0) << show(import);
    EXPECT_EQ(objects(b), objects_a_first);
    EXPECT_EQ(content_rows(b), content_rows(a));
    EXPECT_EQ(read_file(b / "tf" / ".terraform.lock.hcl"), read_file(a / "tf" / ".terraform.lock.hcl"));
    expect_verify_clean(b, "root B after the full import");

    // ---- A later online fetch adds a platform; a delta carries only what B lacks ----------------
    auto more = run_podplane({"deps", "tf", "--platform", "darwin_amd64"}, online);
    ASSERT_EQ(more.exit_code, 0) << show(more);
    EXPECT_NE(more.out.find("Fetched 6 provider packages"), std::string::npos) << more.out;
  }  // the upstream is gone: nothing below could reach it

  const std::set<std::string> objects_a = objects(a);
  std::set<std::string> new_objects;
  std::set_difference(objects_a.begin(), objects_a.end(), objects_a_first.begin(), objects_a_first.end(),
                      std::inserter(new_objects, new_objects.end()));
  ASSERT_EQ(new_objects.size(), 6u);
  auto inventory = run_offline({"bundle", "inventory", "-o", (dir / "inventory-1.json").string()}, at(b));
  ASSERT_EQ(inventory.exit_code, 0) << show(inventory);
  auto delta = run_podplane({"bundle", "create", (dir / "delta.bundle").string(), "--since",
                             (dir / "inventory-1.json").string(), "--sign", (dir / "site.key").string()},
                            at(a));
  ASSERT_EQ(delta.exit_code, 0) << show(delta);
  EXPECT_NE(delta.out.find("6 objects"), std::string::npos) << "the delta holds exactly the new packages\n" << delta.out;
  EXPECT_LT(fs::file_size(dir / "delta.bundle"), fs::file_size(dir / "full.bundle") / 2);
  auto delta_import = run_offline({"bundle", "import", (dir / "delta.bundle").string(), "--trust", (dir / "site.pub").string()}, at(b));
  ASSERT_EQ(delta_import.exit_code, 0) << show(delta_import);
  EXPECT_EQ(objects(b), objects_a);
  EXPECT_EQ(content_rows(b), content_rows(a));
  EXPECT_EQ(read_file(b / "tf" / "platforms"), "darwin_amd64\nlinux_amd64\nlinux_arm64\n");
  expect_verify_clean(b, "root B after the delta import");

  // ---- Air gap: generate and check the cluster stack from B alone -----------------------------
  const fs::path stack = dir / "stack";
  fs::create_directories(stack);
  ProcessOptions cluster = at(b);
  cluster.cwd = stack;
  cluster.unset_env.push_back("PODPLANE_TF_CMD");
  auto init = run_offline({"cluster", "init", "--provider", "aws", "--id", "e2e-cluster"}, cluster);
  ASSERT_EQ(init.exit_code, 0) << show(init);
  ASSERT_TRUE(fs::exists(stack / "podplane.cluster.jsonc"));
  // VMs in the air gap fetch their artifacts from the site's mirror, not the public host
  // (`cluster check` replays them against the store).
  {
    std::string config = read_file(stack / "podplane.cluster.jsonc");
    const std::string commented = "// \"deps_mirror_url\": \"http://mirror.internal:8080\",";
    ASSERT_NE(config.find(commented), std::string::npos) << config;
    config.replace(config.find(commented), commented.size(), "\"deps_mirror_url\": \"https://mirror.airgap.internal:8443\",");
    write_file(stack / "podplane.cluster.jsonc", config);
  }
  auto generated = run_offline({"cluster", "create", "--no-apply"}, cluster);
  ASSERT_EQ(generated.exit_code, 0) << show(generated);
  for (const char* name : {"podplane.cluster.main.tf", "podplane.cluster.inputs.infra.tf", ".terraform.lock.hcl",
                           "podplane.cluster.vmconfig_knc_debian-13_arm64.json", ".podplane.cluster.state.json"})
    EXPECT_TRUE(fs::exists(stack / name)) << name << "\n" << generated.out;
  const std::string lock = read_file(stack / ".terraform.lock.hcl");
  for (const auto& line : std::vector<std::string>{"provider \"registry.opentofu.org/hashicorp/aws\"",
                                                   "provider \"registry.opentofu.org/podplane/podplane\""})
    EXPECT_NE(lock.find(line), std::string::npos) << lock;
  // Every provider package B holds (three platforms by now) is pinned by its h1 in the lock.
  for (const auto& artifact : cache::Store::open(b, cache::Store::Access::read_only).artifacts()) {
    if (artifact.kind != cache::ArtifactKind::provider_package) continue;
    EXPECT_NE(lock.find(artifact.h1), std::string::npos) << artifact.filename;
  }
  const std::string main_tf = read_file(stack / "podplane.cluster.main.tf");
  EXPECT_NE(main_tf.find("../airgap-B/tf/modules/nstance/"), std::string::npos) << "module source from the store\n" << main_tf;

  // A tofu stack, and no tofu on this machine: podplane's own reading is the judge here
  // (--without-engine); tests/e2e/engine_fidelity_test.cpp has the engine judge a stack.
  std::vector<std::string> check_args{"cluster", "check", "--without-engine"};
  check_args.insert(check_args.end(), two_platforms.begin(), two_platforms.end());
  auto check = run_offline(check_args, cluster);
  ASSERT_EQ(check.exit_code, 0) << show(check);
  for (const char* platform : {"linux_amd64", "linux_arm64"})
    EXPECT_EQ(count_rows(check.out, platform, " provider "), 6u) << check.out;
  EXPECT_EQ(count_lines_with(check.out, "MISSING") + count_lines_with(check.out, "CORRUPT"), 0u) << check.out;
  EXPECT_GE(count_lines_with(check.out, " ok"), 16u) << check.out;  // 12 providers, the module, 2 manifests, the tfrc
  // Nothing failed, and the summary says the engine did not prove it rather than "All checks passed".
  EXPECT_EQ(check.out.find("All checks passed"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("No check failed, without the engine"), std::string::npos) << check.out;

  // ---- The air gap's site mirror: serve B over TLS, fill C from it -----------------------------
  test::write_test_tls(dir.path());
  std::map<std::string, std::string> serve_env{{"PODPLANE_DEPS_CACHE_DIR", b.string()}};
  Background serve({test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--tls-cert",
                    (dir / "cert.pem").string(), "--tls-key", (dir / "key.pem").string()},
                   serve_env, dir / "serve.err");
  const std::string base = serve.first_line();
  ASSERT_EQ(base.rfind("https://127.0.0.1:", 0), 0u) << base << "\n" << read_file(dir / "serve.err");
  ASSERT_EQ(base.back(), '/') << base;
  write_file(dir / "mirror.tfrc", podplane::test::mirror_serve_host_blocks(base));
  ProcessOptions from_mirror = at(c);
  from_mirror.env["TF_CLI_CONFIG_FILE"] = (dir / "mirror.tfrc").string();
  from_mirror.env["SSL_CERT_FILE"] = (dir / "cert.pem").string();
  from_mirror.unset_env.insert(from_mirror.unset_env.end(), {"PODPLANE_DEPS_URL", "TF_TOKEN_registry_opentofu_org"});
  from_mirror.env["PATH"] = "/usr/bin:/bin";  // the default engine, tofu, as A was filled
  auto third = run_podplane({"deps", "tf", "--platform", "darwin_amd64", "--platform", "linux_amd64", "--platform", "linux_arm64"},
                            from_mirror);
  ASSERT_EQ(third.exit_code, 0) << show(third) << "\nserver log:\n" << read_file(dir / "serve.err");
  EXPECT_EQ(content_rows(c, Rows::providers_and_modules), content_rows(a, Rows::providers_and_modules));
  std::set<std::string> provider_objects_a;
  for (const auto& artifact : cache::Store::open(a, cache::Store::Access::read_only).artifacts())
    if (std::string(cache::to_string(artifact.kind)).rfind("provider", 0) == 0) provider_objects_a.insert(artifact.digest);
  const auto objects_c = objects(c);
  for (const auto& digest : provider_objects_a) EXPECT_TRUE(objects_c.count(digest)) << "C lacks " << digest;
  EXPECT_EQ(read_file(c / "tf" / ".terraform.lock.hcl"), read_file(a / "tf" / ".terraform.lock.hcl"));

  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
  std::cout << "[  TIMING  ] whole flow: " << seconds << " s\n";
  EXPECT_LT(seconds, 90) << "the flow should stay well under the 2-minute budget of a test binary";
}


// Proxmox VE in the air gap (docs/cluster.md): `deps download --providers proxmox` fetches the
// image and nstance-server online, a signed bundle carries them, and init, create and check of a
// Proxmox stack run offline from the imported store alone.
TEST(Flow, ProxmoxStackFromABundleOffline) {
  TempDir dir;
  const fs::path a = dir / "online-A";
  const fs::path b = dir / "airgap-B";
  std::map<std::string, std::string> published;  // "<name> <arch>" → sha256 of the fixture's file
  {
    test::FixtureUpstream upstream;
    upstream.write_cli_config(dir / "upstream.tfrc");
    ProcessOptions online;
    online.env = upstream.env(a, dir / "upstream.tfrc");
    online.unset_env = kProxyVariables;
    auto download = run_podplane({"deps", "download", "--arch", "amd64,arm64", "--providers", "proxmox"}, online);
    ASSERT_EQ(download.exit_code, 0) << show(download);
    for (const auto& manifest : upstream.fixture()["vmconfig"]["manifests"])
      for (const auto& item : manifest["items"])
        published[item["name"].get<std::string>() + " " + manifest["arch"].get<std::string>()] = item["sha256"];
  }
  const std::string rows = content_rows(a);
  for (const char* arch : {"amd64", "arm64"}) {
    for (const char* name : {"os-image", "nstance-server"}) {
      std::string key = std::string(name) + " " + arch;
      ASSERT_TRUE(published.count(key)) << key << " is not in the fixture";
      EXPECT_EQ(count_rows(rows, "vmconfig_artifact", std::string(name) + " "), 2u) << rows;
      EXPECT_NE(rows.find(published[key]), std::string::npos) << key << "\n" << rows;
    }
  }
  EXPECT_EQ(rows.find("vmconfig_artifact nstance-agent "), std::string::npos) << "an aws-only item was fetched\n" << rows;

  ASSERT_EQ(run_podplane({"bundle", "keygen", (dir / "site").string()}).exit_code, 0);
  auto create = run_podplane({"bundle", "create", (dir / "proxmox.bundle").string(), "--sign", (dir / "site.key").string()}, at(a));
  ASSERT_EQ(create.exit_code, 0) << show(create);
  auto import = run_offline({"bundle", "import", (dir / "proxmox.bundle").string(), "--trust", (dir / "site.pub").string()}, at(b));
  ASSERT_EQ(import.exit_code, 0) << show(import);

  fs::create_directories(dir / "stack");
  ProcessOptions offline = at(b);
  offline.cwd = dir / "stack";
  offline.env["PODPLANE_DEPS_URL"] = "http://mirror.site.internal:8080";
  auto init = run_offline({"cluster", "init", "--provider", "proxmox", "--id", "edge-site"}, offline);
  ASSERT_EQ(init.exit_code, 0) << show(init);
  auto generated = run_offline({"cluster", "create", "--no-apply"}, offline);
  ASSERT_EQ(generated.exit_code, 0) << show(generated);
  auto check = run_offline({"cluster", "check"}, offline);
  ASSERT_EQ(check.exit_code, 0) << show(check);
  // The starter config's pools are amd64 (Proxmox VE nodes are x86-64): the script names the fixture's amd64 files by digest.
  std::string script = read_file(dir / "stack" / "podplane.cluster.proxmox.node-init.sh");
  EXPECT_NE(script.find("readonly SERVER_DIGEST='sha256:" + published["nstance-server amd64"] + "'"), std::string::npos);
  EXPECT_NE(script.find("MIRROR_URLS=('http://mirror.site.internal:8080')"), std::string::npos) << script.substr(0, 2000);
  // From the amd64 base of the mirror, and check replays exactly that.
  EXPECT_NE(script.find("readonly IMAGE_PATH='arch/amd64/vmconfig/artifacts/os-image/"), std::string::npos) << script;
  std::smatch row;
  EXPECT_TRUE(std::regex_search(check.out, row, std::regex("Proxmox amd64 node fetches +ok: "))) << check.out;
  // The kernel and initrd read out of each image online came through the bundle, and check
  // finds each in the store with the digest os.boot gives it.
  const std::string rows_b = content_rows(b);
  EXPECT_EQ(count_rows(rows_b, "vmconfig_boot_file", "os-image "), 4u) << rows_b;  // kernel and initrd per arch
  for (const char* part : {"kernel", "initrd"})
    EXPECT_TRUE(std::regex_search(check.out, row, std::regex(std::string("vmconfig_knc_debian-13_amd64 boot ") + part + " +ok: ")))
        << check.out;
  EXPECT_EQ(check.out.find("NOT CHECKED"), std::string::npos) << check.out;

  // Without the kernel's object, check fails and says how to get it back.
  auto store_b = cache::Store::open(b, cache::Store::Access::read_only);
  auto kernels = store_b.artifacts({.kind = cache::ArtifactKind::vmconfig_boot_file, .platform = "linux_amd64"});
  auto kernel = std::find_if(kernels.begin(), kernels.end(), [](const auto& boot) { return boot.filename.starts_with("vmlinuz-"); });
  ASSERT_NE(kernel, kernels.end()) << rows_b;
  fs::remove(store_b.object_path(kernel->digest));
  auto broken = run_offline({"cluster", "check"}, offline);
  EXPECT_EQ(broken.exit_code, 1) << show(broken);
  const std::string broken_text = broken.out + broken.err;
  EXPECT_TRUE(std::regex_search(broken_text, row,
                                std::regex("vmconfig_knc_debian-13_amd64 boot kernel +MISSING: the object of vmlinuz-")))
      << show(broken);
  EXPECT_NE(broken_text.find("podplane deps download --kind knc --arch amd64"), std::string::npos) << show(broken);
}

}  // namespace
}  // namespace podplane::e2e
