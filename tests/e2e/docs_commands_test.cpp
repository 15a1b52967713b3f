// Every `podplane …` command in the shell code blocks of the user documents runs here, as
// written, against the fixture upstream (as README.md's flow does in readme_flow_test.cpp), or
// is named in kNotRunHere with the reason it cannot run on this machine. A command added to a
// document without either fails `EveryCommandIsRunOrListed`, so the documents cannot drift
// from the tool unnoticed.
//
// Each document is one scenario, run in one working directory in document order. Two stores
// stand for the two sides of the flow: commands of the online host use a store filled from the
// fixture upstream; what the air gap runs (import, inventory, cluster, stack check, mirror
// serve) uses a second store under `unshare -n`, with only a loopback. Files the courier carries
// (bundles, keys, inventories) stay in the shared working directory. What a reader brings (their
// roots, an image list, TLS files) and the steps a document describes in prose, not in a code
// block, are the scenario's `prepare` and `glue`.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <sstream>

#include "tests/support/test_support.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

struct DocCommand {
  std::string doc;   // "docs/guide.md"
  int line = 0;      // where the command starts, 1-based
  std::string text;  // as written: prompt stripped, continuations joined, trailing comment kept
};

// The command without its trailing `# comment` and with single spaces: how kNotRunHere and
// glue name a command.
std::string key_of(const std::string& text) {
  std::string key;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (word.starts_with("#")) break;
    key += (key.empty() ? "" : " ") + word;
  }
  return key;
}

std::string trim_left(const std::string& line) {
  const auto start = line.find_first_not_of(" \t");
  return start == std::string::npos ? "" : line.substr(start);
}

// The `podplane …` lines of the fenced blocks of `doc` that hold shell: ```sh, ```bash,
// ```shell, ```console and bare ``` fences (a bare block shows a session: `$ ` lines and their
// output, which never starts with "podplane "). Fences may be indented (inside a list item).
std::vector<DocCommand> doc_commands(const std::string& doc) {
  static const std::set<std::string> kShell{"", "sh", "bash", "shell", "console"};
  std::istringstream text(read_file(source_dir() / doc));
  std::vector<DocCommand> commands;
  bool in_block = false, shell = false;
  std::string joined;
  int start = 0, number = 0;
  for (std::string line; std::getline(text, line);) {
    ++number;
    std::string trimmed = trim_left(line);
    if (trimmed.starts_with("```")) {
      in_block = !in_block;
      shell = in_block && kShell.contains(trimmed.substr(3));
      joined.clear();
      continue;
    }
    if (!in_block || !shell) continue;
    if (trimmed.starts_with("$ ")) trimmed = trimmed.substr(2);
    if (joined.empty()) start = number;
    joined += (joined.empty() ? "" : " ") + trimmed;
    if (joined.ends_with("\\")) {
      joined.pop_back();
      continue;
    }
    if (joined.starts_with("podplane ")) commands.push_back({doc, start, joined});
    joined.clear();
  }
  return commands;
}

// Commands that cannot run on this machine, and why. Keep it short: a command that can run
// belongs in a scenario below.
struct NotRunHere {
  std::string doc;
  std::string command;  // key_of the command
  std::string reason;
};
const std::vector<NotRunHere> kNotRunHere{
    {"docs/images.md",
     "podplane deps images -f images.txt --arch amd64,arm64 --cosign-key cosign.pub --cosign-key team.pub",
     "needs images signed with cosign keys: the fixture registry's images carry no signatures"},
    {"docs/images.md", "podplane mirror push oci://harbor.site.example/podplane --creds-file push.creds",
     "needs a site registry that accepts pushes (Harbor); the fixture's registry is read-only"},
};

bool listed(const DocCommand& command) {
  for (const auto& entry : kNotRunHere)
    if (entry.doc == command.doc && entry.command == key_of(command.text)) return true;
  return false;
}

enum class Side { online, airgap };

// The air gap's commands: what reads or serves the store that came in bundles.
Side side_of(const std::string& command) {
  static const std::vector<std::string> kAirgap{"podplane bundle import",    "podplane bundle verify",
                                                "podplane bundle inventory", "podplane cluster ",
                                                "podplane stack check",      "podplane mirror serve"};
  for (const auto& prefix : kAirgap)
    if (command.starts_with(prefix)) return Side::airgap;
  return Side::online;
}

// A step no code block shows (the document says it in prose, or it is the reader's own): run
// before the first command whose key starts with `before` ("" = before everything).
struct Glue {
  std::string before;
  Side side;
  std::string script;
};

struct Scenario {
  std::string doc;
  std::function<void(const fs::path& work, const std::string& registry)> prepare;
  std::vector<Glue> glue;
  // The loop around the document's commands that use "$root" ("for root in …"), run as written.
  std::string root_loop;
};

// A command that checks against the site's mirror (a URL in a setting, as `cluster init
// --deps-mirror-url`, is only written down and needs no server).
const std::string kMirrorName = "--mirror https://mirror.site.internal:8443";

// A site CA and a mirror certificate it signs, for the name the documents use and for the
// loopback the test serves on (docs/mirror.md#tls), written under each name the documents use.
void write_tls(const fs::path& work) {
  const std::string script =
      "set -e\n"
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj '/CN=Site CA' "
      "-keyout site-ca.key -out site-ca.crt 2>/dev/null\n"
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj '/CN=mirror.site.internal' "
      "-addext 'subjectAltName=DNS:mirror.site.internal,IP:127.0.0.1' -addext 'basicConstraints=critical,CA:FALSE' "
      "-addext 'extendedKeyUsage=serverAuth' -CA site-ca.crt -CAkey site-ca.key "
      "-keyout mirror-tls.key -out mirror-tls.crt 2>/dev/null\n"
      "cp mirror-tls.crt mirror.pem && cp mirror-tls.key mirror.key\n";
  ProcessOptions options;
  options.cwd = work;
  auto r = run({"bash", "-c", script}, options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// The store a document takes as given ("a filled store (deps tf / bundle import)"): the
// online host fills it from the upstream and the air gap imports it.
const std::vector<Glue> kFilledAirgapStore{
    {"", Side::online, "podplane --quiet deps tf --platform linux_amd64 --platform linux_arm64"},
    {"", Side::online, "podplane --quiet deps download --arch amd64,arm64"},
    {"", Side::online, "podplane bundle keygen given"},
    {"", Side::online, "podplane bundle create given.bundle --sign given.key"},
    {"", Side::airgap, "podplane bundle import given.bundle --trust given.pub"},
};

void write_root(const fs::path& dir, const std::string& provider, const std::string& constraint) {
  write_file(dir / "main.tf", "terraform {\n  required_providers {\n    " + provider + " = { source = \"hashicorp/" +
                                  provider + "\", version = \"" + constraint + "\" }\n  }\n}\n");
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> all;
  all.push_back({"docs/guide.md", [](const fs::path& work, const std::string&) { write_tls(work); }, {}, ""});
  all.push_back({"docs/cluster.md", [](const fs::path&, const std::string&) {}, kFilledAirgapStore, ""});
  all.push_back({"docs/ci.md",
                 [](const fs::path& work, const std::string&) {
                   write_tls(work);
                   write_root(work / "terraform", "random", "~> 3.7");
                   write_root(work / "clusters" / "home" / "bootstrap", "null", ">= 3.0");
                   write_root(work / "clusters" / "home" / "talos", "tls", ">= 4.0");
                 },
                 {// the site's inventory, carried out once (step 2's prose), and the online key
                  {"podplane bundle create random-3.8.bundle", Side::airgap, "podplane bundle inventory -o inventory.json"},
                  {"podplane bundle create random-3.8.bundle", Side::online, "podplane bundle keygen online"},
                  // step 3: the site imports the delta before anything checks against it
                  {"podplane stack check", Side::airgap, "podplane bundle import random-3.8.bundle --trust online.pub"}},
                 "for root in terraform clusters/home/bootstrap clusters/home/talos"});
  all.push_back({"docs/images.md",
                 [](const fs::path& work, const std::string& registry) {
                   write_tls(work);
                   write_file(work / "images.txt", registry + "/podplane-fixture/pause:3.10.2\n");
                 },
                 {{"podplane bundle create deps.bundle", Side::online, "podplane bundle keygen site"}},
                 ""});
  return all;
}

std::string show(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// `mirror serve` runs in the background until it prints its URL, then stops. A command that
// checks against the site's mirror gets a `mirror serve` of the air gap's store on the loopback, under
// that name's certificate, and the loopback's URL in its place.
std::string script_of(const std::string& root_loop, const std::string& command) {
  const auto looped = [&](const std::string& line) {
    return root_loop.empty() || line.find("\"$root\"") == std::string::npos ? line
                                                                          : root_loop + "; do " + key_of(line) + "; done";
  };
  std::string script = "set -euo pipefail\n";
  const auto serve = [](const std::string& serve_command) {
    return "rm -f serve.fifo && mkfifo serve.fifo\n" + serve_command +
           " >serve.fifo 2>serve.err &\n"
           "serve_pid=$!\n"
           "trap 'kill \"$serve_pid\" 2>/dev/null || true' EXIT\n"  // a failed step leaves no server behind
           "exec 3<serve.fifo\nread -r -t 30 -u 3 served_at\necho \"serving at $served_at\"\n";
  };
  const auto stop = std::string("kill \"$serve_pid\"\nwait \"$serve_pid\" || true\n");
  // (without its trailing comment, which would swallow the redirections)
  if (command.starts_with("podplane mirror serve ")) return script + serve(key_of(command)) + stop;
  if (std::string local = key_of(command); local.find(kMirrorName) != std::string::npos) {
    local.replace(local.find(kMirrorName), kMirrorName.size(), "--mirror https://127.0.0.1:8443");
    return script + serve("podplane mirror serve --listen 127.0.0.1:8443 --tls-cert mirror-tls.crt --tls-key mirror-tls.key") +
           looped("SSL_CERT_FILE=site-ca.crt " + local) + "\n" + stop;
  }
  return script + looped(command) + "\n";
}

const std::vector<std::string> kProxyVariables{"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                               "all_proxy", "no_proxy", "NO_PROXY"};

class DocRun {
 public:
  explicit DocRun(const Scenario& scenario) : scenario_(scenario), work_(dir_ / "work") {
    fs::create_directories(dir_ / "bin");
    fs::create_directories(work_);
    fs::create_symlink(podplane_binary(), dir_ / "bin" / "podplane");
    const std::string path = (dir_ / "bin").string() + ":" + std::getenv("PATH");
    online_.env = upstream_.env(dir_ / "online-root", upstream_.write_cli_config(dir_ / "upstream.tfrc"));
    online_.env["PATH"] = path;
    online_.env["HOME"] = dir_.path().string();
    online_.unset_env = kProxyVariables;
    online_.cwd = work_;
    airgap_.env = {{"PODPLANE_DEPS_CACHE_DIR", (dir_ / "airgap-root").string()},
                   {"PATH", path},
                   {"HOME", dir_.path().string()},
                   {"CHECKPOINT_DISABLE", "1"}};
    airgap_.unset_env = kProxyVariables;
    airgap_.unset_env.insert(airgap_.unset_env.end(), {"PODPLANE_DEPS_URL", "TF_CLI_CONFIG_FILE", "SSL_CERT_FILE",
                                                       "TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR"});
    airgap_.cwd = work_;
    const std::string registry = upstream_.base_url().substr(upstream_.base_url().find("://") + 3);
    scenario_.prepare(work_, registry);
  }

  ProcessResult run_on(Side side, const std::string& script) {
    if (side == Side::online) return run({"bash", "-c", script}, online_);
    return run({"unshare", "-n", "bash", "-c", "ip link set lo up && exec bash -c \"$0\"", script}, airgap_);
  }

  // Runs every command of the document not in kNotRunHere, in order, each after its glue.
  void run_all() {
    std::vector<Glue> glue = scenario_.glue;
    for (const auto& command : doc_commands(scenario_.doc)) {
      const std::string key = key_of(command.text);
      for (auto it = glue.begin(); it != glue.end();) {
        if (!key.starts_with(it->before)) {
          ++it;
          continue;
        }
        auto r = run_on(it->side, script_of("", it->script));
        ASSERT_EQ(r.exit_code, 0) << "the step before " << scenario_.doc << ":" << command.line << " failed: "
                                  << it->script << "\n" << show(r);
        it = glue.erase(it);
      }
      if (listed(command)) continue;
      auto r = run_on(side_of(command.text), script_of(scenario_.root_loop, command.text));
      ASSERT_EQ(r.exit_code, 0) << scenario_.doc << ":" << command.line << " failed as written: " << command.text << "\n"
                                << show(r) << "\nserve.err:\n"
                                << (fs::exists(work_ / "serve.err") ? read_file(work_ / "serve.err") : "");
      std::cout << "[  RAN     ] " << scenario_.doc << ":" << command.line << " " << key << "\n";
    }
  }

 private:
  const Scenario& scenario_;
  TempDir dir_;
  fs::path work_;
  FixtureUpstream upstream_;
  ProcessOptions online_;
  ProcessOptions airgap_;
};

// The documents whose commands run here, in the order a reader meets them.
const std::vector<std::string> kDocuments{"docs/guide.md", "docs/cluster.md", "docs/ci.md", "docs/images.md"};

const Scenario& scenario_for(const std::string& doc) {
  static const std::vector<Scenario> all = scenarios();
  for (const auto& scenario : all)
    if (scenario.doc == doc) return scenario;
  throw std::runtime_error("no scenario for " + doc);
}

void run_document(const std::string& doc) {
  if (run({"unshare", "-n", "true"}).exit_code != 0)
    GTEST_SKIP() << "`unshare -n` is refused here: the air-gap commands must run with no network";
  ASSERT_FALSE(doc_commands(doc).empty()) << doc << " has no podplane commands in its code blocks";
  DocRun(scenario_for(doc)).run_all();
}

TEST(DocsCommands, EveryCommandIsRunOrListed) {
  for (const auto& doc : kDocuments) {
    const auto commands = doc_commands(doc);
    std::size_t skipped = 0;
    for (const auto& command : commands) skipped += listed(command) ? 1 : 0;
    std::cout << "[  DOC     ] " << doc << ": " << commands.size() << " commands, "
              << commands.size() - skipped << " run, " << skipped << " listed as not runnable here\n";
  }
  // Every document has a scenario (which runs every command it does not list), and every
  // listed command still exists as written.
  for (const auto& doc : kDocuments) EXPECT_NO_THROW(scenario_for(doc)) << doc << " has no scenario here";
  for (const auto& entry : kNotRunHere) {
    bool found = false;
    for (const auto& command : doc_commands(entry.doc)) found = found || key_of(command.text) == entry.command;
    EXPECT_TRUE(found) << "kNotRunHere names a command " << entry.doc << " no longer has: " << entry.command;
  }
}

TEST(DocsCommands, GuideRunsAsWritten) { run_document("docs/guide.md"); }
TEST(DocsCommands, ClusterRunsAsWritten) { run_document("docs/cluster.md"); }
TEST(DocsCommands, CiRunsAsWritten) { run_document("docs/ci.md"); }
TEST(DocsCommands, ImagesRunsAsWritten) { run_document("docs/images.md"); }

}  // namespace
}  // namespace podplane::test
