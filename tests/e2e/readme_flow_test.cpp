// README.md's "The flow", run exactly as written: the test reads the ```sh block of that
// section from README.md and runs each command with `podplane` being the binary under test.
// The online part runs in one deps root against the fixture upstream; what a courier carries
// (the bundle, the public key, the user's roots) goes to a second, empty root; the air-gap part
// runs under `unshare -n` (a network namespace with only a loopback), `mirror serve` included,
// and the engine, where installed, then inits the generated stack offline. A README change that
// breaks the flow fails here.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

struct ReadmeFlow {
  std::vector<std::string> online;  // the commands under "# online host"
  std::vector<std::string> airgap;  // the commands under "# air gap …"
};

// The commands of the ```sh block under "## The flow": every line that is not a comment, in
// the part its heading comment opens. Each is kept whole, its trailing comment included.
ReadmeFlow readme_flow() {
  std::istringstream readme(read_file(source_dir() / "README.md"));
  ReadmeFlow flow;
  std::vector<std::string>* part = nullptr;
  enum class Where { before, section, block } where = Where::before;
  for (std::string line; std::getline(readme, line);) {
    if (where == Where::before) {
      if (line == "## The flow") where = Where::section;
      continue;
    }
    if (where == Where::section) {
      if (line.starts_with("## ")) break;
      if (line == "```sh") where = Where::block;
      continue;
    }
    if (line == "```") break;
    if (line.starts_with("# online")) part = &flow.online;
    else if (line.starts_with("# air gap")) part = &flow.airgap;
    else if (!line.empty() && !line.starts_with("#") && part != nullptr) part->push_back(line);
  }
  return flow;
}

// A bash script that runs `commands` in order and stops at the first that fails, tracing each.
// `mirror serve` runs in the background until its readiness line, then the catalogue is read
// through the site CA as a browser on the site would, and the server is stopped.
std::string script_of(const std::vector<std::string>& commands) {
  std::string script = "set -euo pipefail\nset -x\n";
  for (const auto& command : commands) {
    if (!command.starts_with("podplane mirror serve ")) {
      script += command + "\n";
      continue;
    }
    script += "rm -f serve.fifo && mkfifo serve.fifo\n";
    script += command + " >serve.fifo 2>serve.err &\n";
    script += "serve_pid=$!\nexec 3<serve.fifo\nread -r -t 30 -u 3 served_at\necho \"serving at $served_at\"\n";
    script += "curl -fsS --resolve mirror.site.internal:8443:127.0.0.1 --cacert site-ca.crt "
              "https://mirror.site.internal:8443/ -o catalogue.html\n";
    script += "curl -fsS --resolve mirror.site.internal:8443:127.0.0.1 --cacert site-ca.crt "
              "https://mirror.site.internal:8443/catalogue.json -o catalogue.json\n";
    script += "kill \"$serve_pid\"\nwait \"$serve_pid\" || true\n";
  }
  return script;
}

const std::vector<std::string> kProxyVariables{"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                               "all_proxy", "no_proxy", "NO_PROXY"};

TEST(ReadmeFlow, RunsAsWrittenOnlineThenInTheAirGap) {
  if (run({"unshare", "-n", "true"}).exit_code != 0)
    GTEST_SKIP() << "`unshare -n` is refused here: the air-gap part must run with no network";
  const ReadmeFlow flow = readme_flow();
  ASSERT_GE(flow.online.size(), 4u) << "README.md has no online part in \"## The flow\"";
  ASSERT_GE(flow.airgap.size(), 4u) << "README.md has no air-gap part in \"## The flow\"";

  TempDir dir;
  const fs::path online_dir = dir / "online";
  const fs::path airgap_dir = dir / "airgap";
  fs::create_directories(dir / "bin");
  fs::create_symlink(podplane_binary(), dir / "bin" / "podplane");
  const std::string path = (dir / "bin").string() + ":" + std::getenv("PATH");

  // What the user brings: two roots of their own and a list of application images.
  FixtureUpstream upstream;
  const std::string registry = upstream.base_url().substr(upstream.base_url().find("://") + 3);
  write_file(online_dir / "infra" / "prod" / "main.tf",
             "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \"~> 6.0\" }\n  }\n}\n");
  write_file(online_dir / "infra" / "dns" / "main.tf",
             "terraform {\n  required_providers {\n    random = { source = \"hashicorp/random\", version = \">= 3.6\" }\n  }\n}\n");
  write_file(online_dir / "images.txt", registry + "/podplane-fixture/pause:3.10.2\n");

  // ---- online host: one deps root, the fixture upstream ----------------------------------
  ProcessOptions online;
  online.env = upstream.env(dir / "online-root", upstream.write_cli_config(dir / "upstream.tfrc"));
  online.env["PATH"] = path;
  online.env["HOME"] = dir.path().string();
  online.unset_env = kProxyVariables;
  online.cwd = online_dir;
  auto online_run = run({"bash", "-c", script_of(flow.online)}, online);
  ASSERT_EQ(online_run.exit_code, 0) << "the README's online part failed as written\n" << show(online_run);
  // `deps download` without --providers and with no cluster config here takes every provider's
  // items, so the AWS cluster made in the air gap finds its nstance-agent (the fixture's aws-only item).
  EXPECT_NE(online_run.out.find("Providers: all"), std::string::npos) << online_run.out;
  EXPECT_TRUE(fs::exists(online_dir / "infra" / "prod" / ".terraform.lock.hcl"));
  EXPECT_TRUE(fs::exists(online_dir / "deps.bundle"));

  // ---- the courier: the bundle, the public key, the user's roots (as git would) -----------
  fs::create_directories(airgap_dir);
  for (const auto& entry : fs::directory_iterator(online_dir))
    if (entry.path().filename().string().starts_with("deps.bundle"))
      fs::copy_file(entry.path(), airgap_dir / entry.path().filename());
  fs::copy_file(online_dir / "site.pub", airgap_dir / "site.pub");
  fs::copy(online_dir / "infra", airgap_dir / "infra", fs::copy_options::recursive);

  // ---- air gap: a second, empty root, no network but a loopback ----------------------------
  ProcessOptions airgap;
  airgap.env = {{"PODPLANE_DEPS_CACHE_DIR", (dir / "airgap-root").string()},
                {"PATH", path},
                {"HOME", dir.path().string()},
                {"CHECKPOINT_DISABLE", "1"}};
  airgap.unset_env = kProxyVariables;
  airgap.unset_env.insert(airgap.unset_env.end(),
                          {"PODPLANE_DEPS_URL", "TF_CLI_CONFIG_FILE", "SSL_CERT_FILE", "TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR"});
  airgap.cwd = airgap_dir;
  auto airgap_run = run({"unshare", "-n", "bash", "-c", "ip link set lo up && exec bash -c \"$0\"", script_of(flow.airgap)},
                        airgap);
  ASSERT_EQ(airgap_run.exit_code, 0) << "the README's air-gap part failed as written\n" << show(airgap_run)
                                     << "\nserve.err:\n" << (fs::exists(airgap_dir / "serve.err") ? read_file(airgap_dir / "serve.err") : "");
  EXPECT_NE(airgap_run.out.find("All checks passed"), std::string::npos) << airgap_run.out;
  EXPECT_TRUE(fs::exists(airgap_dir / "inventory.json"));
  EXPECT_TRUE(fs::exists(airgap_dir / ".terraform.lock.hcl"));
  EXPECT_NE(read_file(airgap_dir / "catalogue.json").find("\"nstance-agent\""), std::string::npos)
      << "the served catalogue lacks the AWS item\n" << read_file(airgap_dir / "catalogue.json");

  // ---- the engine, where installed, inits the generated stack offline from the store -------
  if (!have_program("terraform")) {
    std::cout << "[  NOTE    ] no terraform on PATH: the generated stack's offline init is not run\n";
    return;
  }
  ProcessOptions engine = airgap;
  engine.env["TF_CLI_CONFIG_FILE"] = (dir / "airgap-root" / "tf" / "podplane.tfrc").string();
  auto init = run({"unshare", "-n", "terraform", "init", "-lockfile=readonly", "-backend=false", "-input=false", "-no-color"},
                  engine);
  ASSERT_EQ(init.exit_code, 0) << show(init);
  EXPECT_NE(init.out.find("Terraform has been successfully initialized"), std::string::npos) << init.out;
}

}  // namespace
}  // namespace podplane::test
