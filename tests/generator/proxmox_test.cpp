// The Proxmox VE stack: its golden files, and its node-init script run for real.
// The script runs against `podplane mirror serve` on 127.0.0.1 with the real curl, sha256sum,
// sha512sum and coreutils; only the Proxmox commands (qm, pvesh) and systemctl, which this
// machine lacks, are replaced by shims on PATH that record their arguments (and keep the VM
// list a real qm would, so a second run sees the template the first one made).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <sstream>

#include "tests/generator/cluster_env.hpp"
#include "tests/support/background.hpp"
#include "tests/support/golden.hpp"

namespace podplane::test {
namespace {

StoreFixtureOptions proxmox_store() {
  StoreFixtureOptions options;
  options.nstance_server = true;
  return options;
}

TEST(GoldenStack, Proxmox) {
  ClusterEnv env("proxmox", proxmox_store());
  auto result = env.cluster({"create", "--no-apply"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  EXPECT_NE(result.out.find("on every Proxmox VE node"), std::string::npos) << result.out;
  auto files = env.snapshot();
  files.erase("podplane.cluster.jsonc");
  EXPECT_FALSE(files.count(".terraform.lock.hcl"));
  expect_golden_dir(fs::path("generator") / "proxmox" / "expected", files);
  // The node script is a program: executable (0755 less the umask), the other files are not.
  const mode_t umask_now = ::umask(0);
  ::umask(umask_now);
  struct stat script {}, shard {};
  ASSERT_EQ(::stat((env.stack / "podplane.cluster.proxmox.node-init.sh").c_str(), &script), 0);
  ASSERT_EQ(::stat((env.stack / "podplane.cluster.proxmox.shard.hall-a.jsonc").c_str(), &shard), 0);
  EXPECT_EQ(script.st_mode & 07777, 0755 & ~umask_now);
  EXPECT_EQ(shard.st_mode & 07777, 0644 & ~umask_now);
  auto check = env.cluster({"check"});
  EXPECT_EQ(check.exit_code, 0) << show(check);
  EXPECT_NE(check.out.find("vmconfig_knc_debian-13_amd64 (6 artifacts)  ok"), std::string::npos) << check.out;  // with nstance-server
  // A second create changes nothing.
  auto again = env.cluster({"create", "--no-apply"});
  ASSERT_EQ(again.exit_code, 0) << show(again);
  EXPECT_NE(again.out.find("No changes"), std::string::npos) << again.out;
  // A script that lost its exec bit is given it back, though its bytes are right.
  fs::permissions(env.stack / "podplane.cluster.proxmox.node-init.sh", fs::perms(0644));
  auto repaired = env.cluster({"create", "--no-apply"});
  ASSERT_EQ(repaired.exit_code, 0) << show(repaired);
  ASSERT_EQ(::stat((env.stack / "podplane.cluster.proxmox.node-init.sh").c_str(), &script), 0);
  EXPECT_EQ(script.st_mode & 07777, 0755 & ~umask_now);
}

// The line of `text` holding `needle`, or "" (check tables pad their columns to the widest item).
std::string line_with(const std::string& text, const std::string& needle) {
  auto at = text.find(needle);
  if (at == std::string::npos) return "";
  auto start = text.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, text.find('\n', at) - start);
}

// `cluster check` of a Proxmox stack replays each node's downloads (the script's paths and
// digests against what the store publishes), so an image gone from the store fails it.
TEST(ProxmoxStack, CheckFailsWhenTheImageLeavesTheStore) {
  ClusterEnv env("proxmox", proxmox_store());
  ASSERT_EQ(env.cluster({"create", "--no-apply"}).exit_code, 0);
  auto check = env.cluster({"check"});
  ASSERT_EQ(check.exit_code, 0) << show(check);
  EXPECT_NE(line_with(check.out, "Proxmox amd64 node fetches").find(" ok: the image and nstance-server"), std::string::npos)
      << check.out;

  std::string object;
  for (const auto& row : env.fixture->store().artifacts({cache::ArtifactKind::vmconfig_artifact, "os-image", {}, "linux_amd64"}))
    object = env.fixture->store().object_path(row.digest).string();
  ASSERT_FALSE(object.empty());
  fs::permissions(fs::path(object).parent_path(), fs::perms::owner_all, fs::perm_options::add);
  ASSERT_TRUE(fs::remove(object));
  auto gone = env.cluster({"check"});
  EXPECT_NE(gone.exit_code, 0) << show(gone);
  EXPECT_NE(gone.out.find("MISSING 1 of 6: os-image 20260512-2476"), std::string::npos) << gone.out;
  EXPECT_NE(line_with(gone.out, "Proxmox amd64 node fetches").find(" WRONG 1 of 2"), std::string::npos) << gone.out;
  EXPECT_NE(gone.out.find("arch/amd64/vmconfig/artifacts/os-image/20260512-2476/"), std::string::npos) << gone.out;
}

TEST(ProxmoxStack, RefusedWhenTheStoreLacksNstanceServer) {
  ClusterEnv env("proxmox");  // manifests without nstance-server
  auto result = env.cluster({"create", "--no-apply"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("lists no nstance-server"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("--providers proxmox"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(env.stack / "podplane.cluster.proxmox.node-init.sh"));
}

TEST(ProxmoxStack, InitWritesAConfigThatCreates) {
  ClusterEnv env("proxmox", proxmox_store());
  fs::remove(env.config());
  auto init = env.cluster({"init", "--provider", "proxmox", "--id", "edge-site"});
  ASSERT_EQ(init.exit_code, 0) << show(init);
  EXPECT_NE(read_file(env.config()).find("\"kind\": \"proxmox\""), std::string::npos);
  auto create = env.cluster({"create", "--no-apply"});
  ASSERT_EQ(create.exit_code, 0) << show(create);
  EXPECT_TRUE(fs::exists(env.stack / "podplane.cluster.proxmox.shard.site-a-1.jsonc"));
}

// With proxmox.manage_api_token the stack has an OpenTofu root using bpg/proxmox from the store,
// with its lock built from the store as for the other stacks, and `cluster check` covers it.
TEST(ProxmoxStack, ManagedApiTokenRootUsesBpgProxmoxFromTheStore) {
  StoreFixtureOptions options = proxmox_store();
  options.providers.push_back({"bpg/proxmox", "0.66.0"});
  ClusterEnv env("proxmox", options);
  std::string config = read_file(env.config());
  config.replace(config.find("\"vip\""), 5, "\"manage_api_token\": true, \"vip\"");
  write_file(env.config(), config);
  auto result = env.cluster({"create", "--no-apply"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  std::string root = read_file(env.stack / "podplane.cluster.proxmox.tf");
  expect_golden("generator/proxmox/podplane.cluster.proxmox.tf", root);
  std::string lock = read_file(env.stack / ".terraform.lock.hcl");
  EXPECT_NE(lock.find("provider \"registry.opentofu.org/bpg/proxmox\" {\n  version     = \"0.66.0\""), std::string::npos)
      << lock;
  EXPECT_EQ(lock.find("hashicorp/"), std::string::npos) << lock;
  EXPECT_NE(result.out.find("tofu init -lockfile=readonly"), std::string::npos) << result.out;
  auto check = env.cluster({"check"});
  EXPECT_EQ(check.exit_code, 0) << show(check);
  EXPECT_NE(check.out.find("registry.opentofu.org/bpg/proxmox"), std::string::npos) << check.out;
  // The real engine agrees with the formatting.
  if (run({"sh", "-c", "command -v terraform"}).exit_code == 0) {
    auto fmt = run({"terraform", "fmt", "-check", "-diff", (env.stack / "podplane.cluster.proxmox.tf").string()});
    EXPECT_EQ(fmt.exit_code, 0) << fmt.out << fmt.err;
  }
}

TEST(ProxmoxStack, ManagedApiTokenWithoutBpgProxmoxInTheStoreIsRefused) {
  ClusterEnv env("proxmox", proxmox_store());
  std::string config = read_file(env.config());
  config.replace(config.find("\"vip\""), 5, "\"manage_api_token\": true, \"vip\"");
  write_file(env.config(), config);
  auto result = env.cluster({"create", "--no-apply"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("no version of registry.opentofu.org/bpg/proxmox"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(env.stack / "podplane.cluster.proxmox.node-init.sh"));
}

// qm keeps one file per VM in $SHIM_STATE (name, description, template flag); every call of
// qm, pvesh and systemctl is appended to $SHIM_LOG.
constexpr const char* qm_shim = R"SH(#!/bin/bash
set -euo pipefail
echo "qm $*" >>"${SHIM_LOG}"
state="${SHIM_STATE}"
case "$1" in
  list)
    printf '      VMID NAME                 STATUS     MEM(MB)    BOOTDISK(GB) PID\n'
    for f in "${state}"/vm-*; do
      [[ -e "$f" ]] || continue
      printf '      %s %s stopped 2048 0.00 0\n' "${f##*/vm-}" "$(sed -n 's/^name: //p' "$f")"
    done ;;
  config) cat "${state}/vm-$2" ;;
  create)
    vmid="$2"; shift 2; name=""; description=""
    while [[ $# -gt 0 ]]; do
      case "$1" in --name) name="$2"; shift 2 ;; --description) description="$2"; shift 2 ;; *) shift ;; esac
    done
    printf 'name: %s\ndescription: %s\n' "${name}" "${description}" >"${state}/vm-${vmid}" ;;
  template) echo "template: 1" >>"${state}/vm-$2" ;;
  destroy) rm -f "${state}/vm-$2" ;;
  importdisk|set) ;;
  *) echo "qm shim: unexpected $1" >&2; exit 2 ;;
esac
)SH";

// VMID 9100 belongs to a VM on another node: the template must take the next free one.
constexpr const char* pvesh_shim = R"SH(#!/bin/bash
set -euo pipefail
echo "pvesh $*" >>"${SHIM_LOG}"
printf '[{"vmid":9100,"node":"pve2"}'
for f in "${SHIM_STATE}"/vm-*; do
  if [[ -e "$f" ]]; then printf ',{"vmid":%s,"node":"pve1"}' "${f##*/vm-}"; fi
done
printf ']\n'
)SH";

constexpr const char* systemctl_shim = R"SH(#!/bin/bash
echo "systemctl $*" >>"${SHIM_LOG}"
)SH";

class ProxmoxNodeInit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (run({"sh", "-c", "command -v curl && command -v sha512sum"}).exit_code != 0)
      GTEST_SKIP() << "curl or sha512sum is not installed";
    env_ = std::make_unique<ClusterEnv>("proxmox", proxmox_store());
    serve_ = std::make_unique<Background>(
        std::vector<std::string>{podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0", "--plain-http"},
        std::map<std::string, std::string>{{"PODPLANE_DEPS_CACHE_DIR", env_->deps().string()}}, env_->dir / "serve.err");
    base_ = serve_->first_line();
    ASSERT_FALSE(base_.empty()) << read_file(env_->dir / "serve.err");
    while (!base_.empty() && (base_.back() == '/' || base_.back() == '\r')) base_.pop_back();
    // The stack names the mirror the test serves, as a site's config names its own.
    std::string config = read_file(env_->config());
    const std::string from = "http://mirror.factory.internal:8080/";
    config.replace(config.find(from), from.size(), base_);
    write_file(env_->config(), config);
    auto create = env_->cluster({"create", "--no-apply"});
    ASSERT_EQ(create.exit_code, 0) << show(create);
    script_ = env_->stack / "podplane.cluster.proxmox.node-init.sh";

    shims_ = env_->dir / "shims";
    fs::create_directories(shims_);
    fs::create_directories(env_->dir / "qm-state");
    for (auto [name, body] : {std::pair{"qm", qm_shim}, {"pvesh", pvesh_shim}, {"systemctl", systemctl_shim}}) {
      write_file(shims_ / name, body);
      fs::permissions(shims_ / name, fs::perms::owner_all);
    }
  }

  ProcessResult node_init(std::vector<std::string> args) {
    std::vector<std::string> argv{"bash", script_.string(), "--shard", "hall-a",
                                  "--work-dir", (env_->dir / "node" / "work").string(),
                                  "--install-dir", (env_->dir / "node" / "bin").string(),
                                  "--unit-dir", (env_->dir / "node" / "units").string(),
                                  "--config-dir", (env_->dir / "node" / "etc").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessOptions options;
    options.env = {{"PATH", shims_.string() + ":/usr/local/bin:/usr/bin:/bin"},
                   {"SHIM_LOG", (env_->dir / "shim.log").string()},
                   {"SHIM_STATE", (env_->dir / "qm-state").string()},
                   {"http_proxy", ""}, {"HTTP_PROXY", ""}, {"no_proxy", "127.0.0.1"}};
    return run(argv, options);
  }

  std::string shim_log() const {
    auto path = env_->dir / "shim.log";
    return fs::exists(path) ? read_file(path) : "";
  }
  void clear_log() const { fs::remove(env_->dir / "shim.log"); }

  // The bytes the store holds for a vmconfig artifact of amd64.
  std::string stored(const std::string& name) {
    for (const auto& row : env_->fixture->store().artifacts({cache::ArtifactKind::vmconfig_artifact, name, {}, "linux_amd64"}))
      return env_->fixture->store().read_object(row.digest);
    return "";
  }

  std::unique_ptr<ClusterEnv> env_;
  std::unique_ptr<Background> serve_;
  std::string base_;
  fs::path script_, shims_;
};

TEST_F(ProxmoxNodeInit, FirstRunChecksDownloadsMakesTheTemplateAndInstallsTheServer) {
  auto result = node_init({});
  ASSERT_EQ(result.exit_code, 0) << show(result) << shim_log();
  fs::path work = env_->dir / "node" / "work";
  // From the mirror's amd64 base (docs/mirror.md), never the plain path two arches may share.
  EXPECT_NE(result.out.find("downloading " + base_ + "/arch/amd64/vmconfig/artifacts/os-image/20260512-2476/"),
            std::string::npos) << result.out;
  EXPECT_NE(result.out.find("downloading " + base_ + "/arch/amd64/vmconfig/artifacts/nstance-server/"),
            std::string::npos) << result.out;
  EXPECT_EQ(result.out.find(base_ + "/vmconfig/"), std::string::npos) << result.out;
  EXPECT_EQ(read_file(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2"), stored("os-image"));
  EXPECT_EQ(read_file(env_->dir / "node" / "bin" / "nstance-server"), stored("nstance-server"));
  std::string log = shim_log();
  // 9100 is taken on another node: the template gets 9101, named and marked with its digest.
  EXPECT_NE(log.find("qm create 9101 --name podplane-factory-floor-debian-13-amd64 --description podplane image sha256:"),
            std::string::npos) << log;
  EXPECT_NE(log.find("net0 virtio,bridge=vmbr1,tag=42"), std::string::npos) << log;
  EXPECT_NE(log.find("qm importdisk 9101 " + (work / "debian-13-genericcloud-amd64-20260512-2476.qcow2").string() +
                     " ceph-vm"), std::string::npos) << log;
  EXPECT_NE(log.find("qm set 9101 --scsi0 ceph-vm:vm-9101-disk-0"), std::string::npos) << log;
  EXPECT_NE(log.find("qm template 9101"), std::string::npos) << log;
  EXPECT_NE(log.find("systemctl enable nstance-server.service"), std::string::npos) << log;
  std::string unit = read_file(env_->dir / "node" / "units" / "nstance-server.service");
  EXPECT_NE(unit.find("--bucket nstance-factory --shard hall-a"), std::string::npos) << unit;
}

// Client failover without a balancer (docs/operations.md "Client failover"): a config naming
// a primary that is down (nothing listens on 127.0.0.1:9) and a fallback, as `cluster init
// --deps-mirror-url A --deps-mirror-url B` writes it. The generated script lists both, the
// primary first; run with the primary down it fetches from the fallback, and a download cut
// short before (the partial file left in the work dir) is resumed with a Range request.
TEST_F(ProxmoxNodeInit, FirstMirrorDownTheNextServesAndAPartialDownloadResumes) {
  const std::string down = "http://127.0.0.1:9";
  auto init = env_->cluster({"init", "--provider", "proxmox", "--id", "edge-site", "-f", (env_->dir / "init.jsonc").string(),
                             "--deps-mirror-url", down, "--deps-mirror-url", base_ + "/"});
  ASSERT_EQ(init.exit_code, 0) << show(init);
  std::string written = read_file(env_->dir / "init.jsonc");
  EXPECT_NE(written.find("\"deps_mirror_url\": \"" + down + "\""), std::string::npos) << written;
  EXPECT_NE(written.find("\"deps_mirror_fallback_urls\": [\"" + base_ + "/\"]"), std::string::npos) << written;

  std::string config = read_file(env_->config());
  const std::string primary = "\"deps_mirror_url\": \"" + base_ + "\"";
  ASSERT_NE(config.find(primary), std::string::npos) << config;
  config.replace(config.find(primary), primary.size(),
                 "\"deps_mirror_url\": \"" + down + "\", \"deps_mirror_fallback_urls\": [\"" + base_ + "/\"]");
  write_file(env_->config(), config);
  auto create = env_->cluster({"create", "--no-apply"});
  ASSERT_EQ(create.exit_code, 0) << show(create);
  std::string script = read_file(script_);
  EXPECT_NE(script.find("MIRROR_URLS=('" + down + "' '" + base_ + "')"), std::string::npos) << script.substr(0, 2000);

  // Half of the image arrived before the connection was cut.
  fs::path work = env_->dir / "node" / "work";
  const std::string image = stored("os-image");
  ASSERT_GT(image.size(), 10u);
  write_file(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2.part", image.substr(0, image.size() / 2));

  auto result = node_init({});
  ASSERT_EQ(result.exit_code, 0) << show(result) << shim_log();
  EXPECT_NE(result.out.find("download from " + down + " failed"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("downloading " + base_ + "/arch/amd64/vmconfig/artifacts/os-image/"), std::string::npos) << result.out;
  EXPECT_EQ(read_file(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2"), image);
  EXPECT_EQ(read_file(env_->dir / "node" / "bin" / "nstance-server"), stored("nstance-server"));
  const std::string served = read_file(env_->dir / "serve.err");
  EXPECT_NE(served.find("/os-image/20260512-2476/debian-13-genericcloud-amd64-20260512-2476.qcow2 HTTP/1.1\" 206 " +
                        std::to_string(image.size() - image.size() / 2)),
            std::string::npos)
      << served;
}

// Every mirror down: the script says so after its rounds and stops before any qm call.
TEST_F(ProxmoxNodeInit, EveryMirrorDownFailsBeforeAnyQmCall) {
  auto result = node_init({"--mirror-url", "http://127.0.0.1:9", "--mirror-url", "http://127.0.0.1:9/"});
  EXPECT_NE(result.exit_code, 0) << show(result);
  EXPECT_NE(result.err.find("cannot download arch/amd64/vmconfig/artifacts/os-image/"), std::string::npos) << result.err;
  EXPECT_EQ(shim_log().find("qm "), std::string::npos) << shim_log();
}

TEST_F(ProxmoxNodeInit, SecondRunChangesNothing) {
  ASSERT_EQ(node_init({}).exit_code, 0) << shim_log();
  clear_log();
  auto again = node_init({});
  ASSERT_EQ(again.exit_code, 0) << show(again);
  std::string log = shim_log();
  for (const char* change : {"qm create", "qm importdisk", "qm set", "qm template", "qm destroy", "systemctl"})
    EXPECT_EQ(log.find(change), std::string::npos) << change << "\n" << log;
  EXPECT_NE(again.out.find("kept"), std::string::npos) << again.out;
}

TEST_F(ProxmoxNodeInit, DryRunChangesNothing) {
  auto result = node_init({"--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  EXPECT_NE(result.out.find("(dry-run) would create template"), std::string::npos) << result.out;
  std::string log = shim_log();
  for (const char* change : {"qm create", "qm importdisk", "qm set", "qm template", "qm destroy", "systemctl"})
    EXPECT_EQ(log.find(change), std::string::npos) << change << "\n" << log;
  EXPECT_FALSE(fs::exists(env_->dir / "node"));
}

// How many times the script's log says it asked a mirror for a file whose path ends in `tail`.
std::size_t attempts_at(const std::string& log, const std::string& tail) {
  std::size_t count = 0;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("[podplane node-init] downloading ", 0) == 0 && line.size() >= tail.size() &&
        line.compare(line.size() - tail.size(), tail.size(), tail) == 0)
      ++count;
  return count;
}

// A mirror that serves a different image (here a directory copy, through curl's file://) is
// refused before any qm call, and the bad download is not kept. The image was downloaded whole
// (no partial file before): its first wrong answer stops the script, with no other attempt.
TEST_F(ProxmoxNodeInit, TamperedImageIsRefusedBeforeAnyQmCall) {
  fs::path mirror = env_->dir / "tampered";
  write_file(mirror / "arch/amd64/vmconfig/artifacts/os-image/20260512-2476/debian-13-genericcloud-amd64-20260512-2476.qcow2",
             stored("os-image") + "tampered");
  write_file(mirror / "arch/amd64/vmconfig/artifacts/nstance-server/1.2.3/nstance-server_1.2.3_linux_amd64",
             stored("nstance-server"));
  auto result = node_init({"--mirror-url", "file://" + mirror.string()});
  EXPECT_NE(result.exit_code, 0) << show(result);
  EXPECT_NE(result.err.find("does not have the expected sha256:"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("refusing to use it"), std::string::npos) << result.err;
  EXPECT_EQ(attempts_at(result.out, "/debian-13-genericcloud-amd64-20260512-2476.qcow2"), 1u) << result.out;
  EXPECT_EQ(result.out.find("downloading it whole again"), std::string::npos) << result.out;
  EXPECT_EQ(shim_log().find("qm "), std::string::npos) << shim_log();
  EXPECT_FALSE(fs::exists(env_->dir / "node" / "work" / "debian-13-genericcloud-amd64-20260512-2476.qcow2"));
  EXPECT_FALSE(fs::exists(env_->dir / "node" / "work" / "debian-13-genericcloud-amd64-20260512-2476.qcow2.part"));
  EXPECT_FALSE(fs::exists(env_->dir / "node" / "bin" / "nstance-server"));
}

// A partial file whose bytes are wrong (what a replica with a damaged copy sends before it cuts
// its answer short, docs/operations.md "HAProxy in front"): resumed from a good mirror it fails
// its digest, so the script downloads it whole again, and the run goes on.
TEST_F(ProxmoxNodeInit, APartialFileWithWrongBytesIsDownloadedWholeAgain) {
  fs::path work = env_->dir / "node" / "work";
  const std::string image = stored("os-image");
  ASSERT_GT(image.size(), 10u);
  std::string damaged = image.substr(0, image.size() / 2);
  damaged[damaged.size() / 2] = static_cast<char>(~damaged[damaged.size() / 2]);
  write_file(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2.part", damaged);

  auto result = node_init({});
  ASSERT_EQ(result.exit_code, 0) << show(result) << shim_log();
  EXPECT_NE(result.out.find("resumed download of debian-13-genericcloud-amd64-20260512-2476.qcow2 failed its sha256 check; "
                            "downloading it whole again"),
            std::string::npos)
      << result.out;
  EXPECT_EQ(attempts_at(result.out, "/debian-13-genericcloud-amd64-20260512-2476.qcow2"), 2u) << result.out;
  EXPECT_EQ(read_file(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2"), image);
  EXPECT_FALSE(fs::exists(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2.part"));
  // The mirror sent the rest (206), then the whole file (200).
  const std::string served = read_file(env_->dir / "serve.err");
  const std::string request = "/os-image/20260512-2476/debian-13-genericcloud-amd64-20260512-2476.qcow2 HTTP/1.1\" ";
  const auto rest = served.find(request + "206 " + std::to_string(image.size() - damaged.size()));
  const auto whole = served.find(request + "200 " + std::to_string(image.size()));
  EXPECT_NE(rest, std::string::npos) << served;
  EXPECT_NE(whole, std::string::npos) << served;
  EXPECT_LT(rest, whole) << served;
  EXPECT_NE(shim_log().find("qm template 9101"), std::string::npos) << shim_log();
}

// A mirror that serves wrong bytes is refused even when the first wrong file was a resumed
// one: the whole download that follows fails its digest too, and that stops the script.
TEST_F(ProxmoxNodeInit, TamperedImageIsRefusedAfterItsResumedDownloadIsTriedWhole) {
  fs::path mirror = env_->dir / "tampered";
  const std::string image = stored("os-image");
  write_file(mirror / "arch/amd64/vmconfig/artifacts/os-image/20260512-2476/debian-13-genericcloud-amd64-20260512-2476.qcow2",
             image + "tampered");
  fs::path work = env_->dir / "node" / "work";
  write_file(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2.part", image.substr(0, image.size() / 2));

  auto result = node_init({"--mirror-url", "file://" + mirror.string()});
  EXPECT_NE(result.exit_code, 0) << show(result);
  EXPECT_NE(result.out.find("downloading it whole again"), std::string::npos) << result.out;
  EXPECT_EQ(attempts_at(result.out, "/debian-13-genericcloud-amd64-20260512-2476.qcow2"), 2u) << result.out;
  EXPECT_NE(result.err.find("does not have the expected sha256:"), std::string::npos) << result.err;
  EXPECT_EQ(shim_log().find("qm "), std::string::npos) << shim_log();
  EXPECT_FALSE(fs::exists(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2"));
  EXPECT_FALSE(fs::exists(work / "debian-13-genericcloud-amd64-20260512-2476.qcow2.part"));
}

// An image changed in the stack (a new vmconfig release): the old template is replaced.
TEST_F(ProxmoxNodeInit, TemplateOfAnotherImageIsReplaced) {
  ASSERT_EQ(node_init({}).exit_code, 0) << shim_log();
  fs::path vm = env_->dir / "qm-state" / "vm-9101";
  std::string state = read_file(vm);
  state.replace(state.find("sha256:"), 8, "sha256:0");
  write_file(vm, state);
  clear_log();
  auto result = node_init({});
  ASSERT_EQ(result.exit_code, 0) << show(result);
  std::string log = shim_log();
  EXPECT_NE(log.find("qm destroy 9101 --purge"), std::string::npos) << log;
  EXPECT_NE(log.find("qm create 9101"), std::string::npos) << log;
}

TEST_F(ProxmoxNodeInit, HelpAndUnknownShard) {
  auto help = node_init({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--dry-run"), std::string::npos) << help.out;
  auto bad = node_init({"--shard", "hall-z"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("unknown shard \"hall-z\""), std::string::npos) << bad.err;
  EXPECT_EQ(shim_log(), "");
}

TEST_F(ProxmoxNodeInit, ShellcheckIsClean) {
  if (run({"sh", "-c", "command -v shellcheck"}).exit_code != 0) GTEST_SKIP() << "shellcheck is not installed";
  auto result = run({"shellcheck", "--severity=style", script_.string()});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
}

}  // namespace
}  // namespace podplane::test
