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
// roots, an image list, TLS files, cosign keys and the signatures their images carry, the site
// registry a push goes to) and the steps a document describes in prose, not in a code block,
// are the scenario's `prepare` and `glue`; `prepare` may also say what must hold once a command
// has run (the signature stored, the pushed image in the registry).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "cache/store.hpp"
#include "net/oci_reference.hpp"
#include "tests/mirror/registry_fixture.hpp"
#include "tests/support/sigstore_fixture.hpp"
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
const std::vector<NotRunHere> kNotRunHere{};

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

// What a scenario's `prepare` is given, and what it may add: servers of the site the document
// talks to, the names the document gives them, and what must hold once a command has run.
struct DocSetup {
  fs::path work;                // the shared working directory
  std::string registry;         // host:port of the fixture upstream (and of its OCI registry)
  FixtureUpstream& upstream;
  fs::path online_root;         // the online host's deps root
  fs::path scratch;             // beside `work`: what the reader never sees (servers' files)
  // A host the document names (a site's registry) and the loopback host:port standing in for
  // it, replaced in every command as the mirror's name is.
  std::vector<std::pair<std::string, std::string>> hosts = {};
  std::vector<fs::path> online_cas = {};                     // CAs the online side trusts besides the fixture's
  std::map<std::string, std::string> online_env = {};        // added to the online side's environment
  std::vector<std::shared_ptr<void>> servers = {};           // kept running until the document is done
  std::map<std::string, std::function<void()>> checks = {};  // key_of(command) → what must hold after it
};

struct Scenario {
  std::string doc;
  std::function<void(DocSetup& setup)> prepare;
  std::vector<Glue> glue;
  // The loop around the document's commands that use "$root" ("for root in …"), run as written.
  std::string root_loop;
  // The fixture's tree: a scenario that adds files to what the upstream serves gets its own.
  FixtureOptions fixture = {};
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

// The fixture image docs/images.md lists, as its upstream names it.
const std::string kFixtureImage = "podplane-fixture/pause";

ProcessResult must_run(const std::vector<std::string>& argv, const fs::path& cwd = {}) {
  ProcessOptions options;
  if (!cwd.empty()) options.cwd = cwd;
  auto r = run(argv, options);
  if (r.exit_code != 0) throw std::runtime_error(argv[0] + " failed (exit " + std::to_string(r.exit_code) + "): " + r.err + r.out);
  return r;
}

// The reader's cosign key pairs (`cosign.pub`, `team.pub`, as `cosign generate-key-pair` names
// them: ECDSA P-256), and the fixture image signed with the team's key as cosign lays a
// signature out (tests/tools/images/cosign_sign.py, as tests/mirror/signed_images_test.cpp
// signs). The fixture's registry is static files (www/v2/), so the signature manifest and its
// blobs are written there as build_fixture.py writes the image's own: each file with its OCI
// headers, the manifest by digest and at its `.sig` tag.
void sign_fixture_image(DocSetup& setup) {
  for (const std::string name : {"cosign", "team"}) {
    must_run({"openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", name + ".pem"}, setup.work);
    must_run({"openssl", "ec", "-in", name + ".pem", "-pubout", "-out", name + ".pub"}, setup.work);
  }
  const fs::path layout = setup.scratch / "signature-layout";
  auto signed_by = must_run({"python3", (source_dir() / "tests/tools/images/cosign_sign.py").string(), layout.string(), "--key",
                             (setup.work / "team.pem").string(), "--digest", setup.upstream.fixture()["image"]["index"],
                             "--reference", setup.registry + "/" + kFixtureImage});
  const auto signature = nlohmann::json::parse(signed_by.out);
  const fs::path repository = setup.upstream.www() / "v2" / kFixtureImage;
  for (const auto& blob : fs::directory_iterator(layout / "blobs" / "sha256")) {
    const std::string digest = "sha256:" + blob.path().filename().string();
    const bool manifest = digest == signature["manifest"];
    const std::string headers = std::string("Content-Type: ") +
                                (manifest ? "application/vnd.oci.image.manifest.v1+json" : "application/octet-stream") +
                                "\nDocker-Content-Digest: " + digest + "\n";
    std::vector<fs::path> names{repository / (manifest ? "manifests" : "blobs") / digest};
    if (manifest) names.push_back(repository / "manifests" / signature["tag"].get<std::string>());
    for (const auto& name : names) {
      write_file(name, read_file(blob.path()));
      write_file(name.string() + ".headers", headers);
    }
  }
  setup.checks["podplane deps images -f images.txt --arch amd64,arm64 --cosign-key cosign.pub --cosign-key team.pub"] =
      [registry = setup.registry, root = setup.online_root, signature,
       index = setup.upstream.fixture()["image"]["index"].get<std::string>()] {
        auto store = cache::Store::open(root, cache::Store::Access::read_only);
        const std::string address = registry + "/" + kFixtureImage;
        auto indexes = store.artifacts({.kind = cache::ArtifactKind::image_index, .address = address});
        ASSERT_EQ(indexes.size(), 1u);
        EXPECT_EQ(indexes[0].filename, index);
        EXPECT_TRUE(store.has_object(indexes[0].digest));
        // The image's other attachments are its referrers (the keyless signature below).
        auto attachments = store.artifacts({.kind = cache::ArtifactKind::image_attachment,
                                            .address = address,
                                            .version = signature["tag"].get<std::string>()});
        ASSERT_EQ(attachments.size(), 1u) << "the image's signature was not stored";
        EXPECT_EQ("sha256:" + attachments[0].digest, signature["manifest"].get<std::string>());
        EXPECT_TRUE(store.has_object(attachments[0].digest));
        EXPECT_EQ(store.provenance_of(attachments[0].id).size(), 1u) << "no key is recorded as having verified it";
      };
}

// The keyless identity the document names signs the fixture image too: a sigstore bundle
// referrer made by the test's own Fulcio, Rekor and CT log (tests/support/sigstore_fixture.hpp),
// whose trusted root is the reader's `trusted_root.json`. The referrer is written into the
// static registry as the image's are: the bundle blob, the manifest by digest, and the
// referrers index of the image.
void sign_fixture_image_keyless(DocSetup& setup) {
  const std::string identity = "krel-trust@k8s-releng-prod.iam.gserviceaccount.com";
  const std::string issuer = "https://accounts.google.com";
  const std::string index = setup.upstream.fixture()["image"]["index"];
  const std::string address = setup.registry + "/" + kFixtureImage;
  SigstoreFixture sigstore;
  write_file(setup.work / "trusted_root.json", sigstore.trusted_root_json());
  const std::string bundle =
      sigstore.dsse_bundle(SigstoreFixture::image_statement(index, address), {.identity = identity, .issuer = issuer});
  const fs::path repository = setup.upstream.www() / "v2" / kFixtureImage;
  const auto put = [&](const std::string& name, const std::string& bytes, const std::string& type) {
    write_file(repository / name, bytes);
    write_file((repository / name).string() + ".headers",
               "Content-Type: " + type + "\nDocker-Content-Digest: sha256:" + sha256_hex(bytes) + "\n");
    return "sha256:" + sha256_hex(bytes);
  };
  const std::string bundle_type = "application/vnd.dev.sigstore.bundle.v0.3+json";
  const std::string manifest_type = "application/vnd.oci.image.manifest.v1+json";
  const auto blob = [&](const std::string& bytes, const std::string& type) {
    return nlohmann::json{{"mediaType", type},
                          {"digest", put("blobs/sha256:" + sha256_hex(bytes), bytes, "application/octet-stream")},
                          {"size", bytes.size()}};
  };
  nlohmann::json manifest = {{"schemaVersion", 2},
                             {"mediaType", manifest_type},
                             {"artifactType", bundle_type},
                             {"config", blob("{}", "application/vnd.oci.empty.v1+json")},
                             {"layers", nlohmann::json::array({blob(bundle, bundle_type)})},
                             {"subject", {{"mediaType", "application/vnd.oci.image.index.v1+json"}, {"digest", index}, {"size", 1}}}};
  const std::string bytes = manifest.dump();
  const std::string digest = put("manifests/sha256:" + sha256_hex(bytes), bytes, manifest_type);
  nlohmann::json listed = {{"mediaType", manifest_type}, {"digest", digest}, {"size", bytes.size()}, {"artifactType", bundle_type}};
  nlohmann::json referrers = {{"schemaVersion", 2},
                              {"mediaType", "application/vnd.oci.image.index.v1+json"},
                              {"manifests", nlohmann::json::array({listed})}};
  (void)put("referrers/" + index, referrers.dump(), "application/vnd.oci.image.index.v1+json");
  setup.checks["podplane deps images -f images.txt --arch amd64,arm64 --certificate-identity " + identity +
               " --certificate-oidc-issuer " + issuer + " --trusted-root trusted_root.json"] =
      [root = setup.online_root, address, digest, fingerprint = "keyless:" + identity + " " + issuer] {
        auto store = cache::Store::open(root, cache::Store::Access::read_only);
        auto attachments = store.artifacts({.kind = cache::ArtifactKind::image_attachment, .address = address});
        const auto found =
            std::find_if(attachments.begin(), attachments.end(), [&](const auto& row) { return row.filename == digest; });
        ASSERT_NE(found, attachments.end()) << "the sigstore bundle referrer was not stored";
        auto provenance = store.provenance_of(found->id);
        ASSERT_EQ(provenance.size(), 1u);
        EXPECT_EQ(provenance[0].key_fingerprint, fingerprint);
        EXPECT_TRUE(store.has_object(provenance[0].keys_digest)) << "the trusted root is stored with the signature";
      };
}

// The site's registry the push goes to (Harbor in the document): Debian's docker-registry with
// an htpasswd login for the robot account, behind the fixture's HTTPS front (a registry that
// is reached over https, as the document's is), in the name harbor.site.example.
void start_site_registry(DocSetup& setup) {
  const serve_test::RegistryLogin robot{"robot$site", "harbor-token-" + std::to_string(::getpid())};
  auto registry = std::make_shared<serve_test::DockerRegistry>(setup.scratch / "site-registry", robot);
  ServeOptions front_options;
  front_options.registry_to = registry->base();
  auto front = std::make_shared<FixtureUpstream>(FixtureOptions{}, front_options);
  setup.hosts.emplace_back("harbor.site.example", "127.0.0.1:" + std::to_string(front->port()));
  setup.online_cas.push_back(front->ca_file());
  setup.online_env["HARBOR_TOKEN"] = robot.password;
  setup.servers.push_back(registry);
  setup.servers.push_back(front);
  // The push landed: the registry itself answers the image, and its signature, under the
  // mirror name below the prefix, with the digests of the upstream.
  setup.checks["podplane mirror push oci://harbor.site.example/podplane --creds-file push.creds"] =
      [registry, robot, image = setup.registry + "/" + kFixtureImage,
       index = setup.upstream.fixture()["image"]["index"].get<std::string>()] {
        const std::string pushed = "docker://" + registry->host() + "/podplane/" + net::mirror_repository(image);
        auto inspected = run({"skopeo", "inspect", "--raw", "--tls-verify=false", "--creds", robot.pair(), pushed + ":3.10.2"});
        ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
        EXPECT_EQ("sha256:" + sha256_hex(inspected.out), index);
        const std::string tag = "sha256-" + index.substr(7) + ".sig";
        auto signature = run({"skopeo", "inspect", "--raw", "--tls-verify=false", "--creds", robot.pair(), pushed + ":" + tag});
        EXPECT_EQ(signature.exit_code, 0) << "the signature was not pushed: " << signature.err;
      };
}

FixtureOptions own_fixture_tree() {
  FixtureOptions options;
  options.sharing = FixtureOptions::Sharing::private_copy;
  return options;
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> all;
  all.push_back({"docs/guide.md", [](DocSetup& setup) { write_tls(setup.work); }, {}, ""});
  all.push_back({"docs/cluster.md", [](DocSetup&) {}, kFilledAirgapStore, ""});
  all.push_back({"docs/ci.md",
                 [](DocSetup& setup) {
                   write_tls(setup.work);
                   write_root(setup.work / "terraform", "random", "~> 3.7");
                   write_root(setup.work / "clusters" / "home" / "bootstrap", "null", ">= 3.0");
                   write_root(setup.work / "clusters" / "home" / "talos", "tls", ">= 4.0");
                   // "Git sources": the directory the reader sets DIR to for the export
                   setup.online_env["DIR"] = (setup.scratch / "git-export").string();
                 },
                 {// the site's inventory, carried out once (step 2's prose), and the online key
                  {"podplane bundle create random-3.8.bundle", Side::airgap, "podplane bundle inventory -o inventory.json"},
                  {"podplane bundle create random-3.8.bundle", Side::online, "podplane bundle keygen online"},
                  // step 3: the site imports the delta before anything checks against it
                  {"podplane stack check", Side::airgap, "podplane bundle import random-3.8.bundle --trust online.pub"}},
                 "for root in terraform clusters/home/bootstrap clusters/home/talos"});
  all.push_back({"docs/images.md",
                 [](DocSetup& setup) {
                   write_tls(setup.work);
                   write_file(setup.work / "images.txt", setup.registry + "/podplane-fixture/pause:3.10.2\n");
                   sign_fixture_image(setup);
                   sign_fixture_image_keyless(setup);
                   start_site_registry(setup);
                 },
                 {{"podplane bundle create deps.bundle", Side::online, "podplane bundle keygen site"},
                  // the document's own line before the push, with the token the site gave
                  {"podplane mirror push", Side::online,
                   "printf '%s:%s\\n' \"robot\\$site\" \"$HARBOR_TOKEN\" > push.creds && chmod 600 push.creds"}},
                 "",
                 own_fixture_tree()});
  return all;
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
  explicit DocRun(const Scenario& scenario) : scenario_(scenario), work_(dir_ / "work"), upstream_(scenario.fixture) {
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
    setup_ = std::make_unique<DocSetup>(DocSetup{.work = work_, .registry = registry, .upstream = upstream_,
                                                 .online_root = dir_ / "online-root", .scratch = dir_.path()});
    scenario_.prepare(*setup_);
    for (const auto& [name, value] : setup_->online_env) online_.env[name] = value;
    if (!setup_->online_cas.empty()) {
      std::string bundle = read_file(upstream_.ca_file());
      for (const auto& ca : setup_->online_cas) bundle += read_file(ca);
      write_file(dir_ / "online-cas.pem", bundle);
      online_.env["SSL_CERT_FILE"] = (dir_ / "online-cas.pem").string();
    }
  }

  // The command with each host the document names for a site's server replaced by its stand-in.
  std::string on_loopback(std::string command) const {
    for (const auto& [name, stand_in] : setup_->hosts)
      for (auto at = command.find(name); at != std::string::npos; at = command.find(name, at + stand_in.size()))
        command.replace(at, name.size(), stand_in);
    return command;
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
      auto r = run_on(side_of(command.text), script_of(scenario_.root_loop, on_loopback(command.text)));
      ASSERT_EQ(r.exit_code, 0) << scenario_.doc << ":" << command.line << " failed as written: " << command.text << "\n"
                                << show(r) << "\nserve.err:\n"
                                << (fs::exists(work_ / "serve.err") ? read_file(work_ / "serve.err") : "");
      std::cout << "[  RAN     ] " << scenario_.doc << ":" << command.line << " " << key << "\n";
      if (auto check = setup_->checks.find(key); check != setup_->checks.end()) {
        SCOPED_TRACE(scenario_.doc + ":" + std::to_string(command.line) + " " + key);
        check->second();
        if (::testing::Test::HasFatalFailure()) return;
        setup_->checks.erase(check);
      }
    }
    for (const auto& [key, check] : setup_->checks) ADD_FAILURE() << scenario_.doc << " no longer has the command checked here: " << key;
  }

 private:
  const Scenario& scenario_;
  TempDir dir_;
  fs::path work_;
  FixtureUpstream upstream_;
  ProcessOptions online_;
  ProcessOptions airgap_;
  std::unique_ptr<DocSetup> setup_;  // after upstream_: its servers stop before the upstream
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
