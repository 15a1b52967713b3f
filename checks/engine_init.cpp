#include "checks/engine_init.hpp"

#include <fstream>
#include <regex>

#include "base/error.hpp"
#include "base/input_limits.hpp"
#include "base/scratch_dir.hpp"
#include "base/url.hpp"
#include "cache/layout.hpp"
#include "generator/engine.hpp"
#include "lockfile/provider_names.hpp"
#include "lockfile/tf_config.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;

namespace {

// Where every connection the child makes goes unless it is to the mirror: a proxy that is not
// there (port 9, discard, is closed on loopback), so a fetch from an origin fails at once, as
// on the site, even on a machine that has the internet. Go (the engines) and libcurl (git)
// both read these variables; both bypass the proxy for the hosts of NO_PROXY.
const char* const kNowhereProxy = "http://127.0.0.1:9";

std::vector<std::string> no_origin_but(const std::string& mirror_host) {
  const std::string bypass = mirror_host + ",127.0.0.1,localhost";
  return {"HTTPS_PROXY=" + std::string(kNowhereProxy), "https_proxy=" + std::string(kNowhereProxy),
          "HTTP_PROXY=" + std::string(kNowhereProxy),  "http_proxy=" + std::string(kNowhereProxy),
          "ALL_PROXY=" + std::string(kNowhereProxy),   "NO_PROXY=" + bypass,
          "no_proxy=" + bypass};
}

// Local module sources ("./…", "../…") are kept as written: the copy keeps the layout they
// climb through. Only the directories `init` reads are copied, and in them only what it reads
// and what podplane generated: a root's terraform.tfvars, .env and the like may hold secrets,
// and are never opened.
void copy_configuration(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(from, error)) {
    if (!entry.is_regular_file()) continue;  // .terraform/ and the like stay behind
    const std::string file = entry.path().filename().string();
    const bool configuration = file.ends_with(".tf") || file.ends_with(".tf.json");
    if (!configuration && file != ".terraform.lock.hcl" && !file.starts_with("podplane.cluster.")) continue;
    auto text = read_file_if_present_within_limits(entry.path(), "stack file");
    if (!text) continue;
    std::ofstream(to / file, std::ios::binary) << *text;
  }
}

// The root and the local modules it calls, copied below `tree` at their places relative to
// `boundary`. Returns the copy of the root. A root whose local calls cannot be read is copied
// alone: the engine then reports what it cannot find.
fs::path copy_root(const fs::path& root, const fs::path& boundary, const fs::path& tree) {
  const fs::path top = fs::canonical(boundary);
  auto place = [&](const fs::path& dir) {
    const fs::path relative = fs::canonical(dir).lexically_relative(top);
    const fs::path copy = relative.empty() || *relative.begin() == ".." ? tree / "root" : tree / relative;
    copy_configuration(dir, copy);
    return copy;
  };
  const fs::path root_copy = place(root);
  try {
    for (const auto& dir : lockfile::read_module_requirements(root, top).local_module_dirs) place(dir);
  } catch (const Error&) {
  }
  return root_copy;
}

std::string tail_of(const std::string& output) {
  return output.size() > 600 ? "…" + output.substr(output.size() - 600) : output;
}

}  // namespace

EngineSetup through_store_tfrc(const cache::Store& store) {
  const fs::path tfrc = fs::absolute(cache::layout::tfrc_file(store.root()));
  auto text = read_file_if_present_within_limits(tfrc, "the store's tfrc");
  EngineSetup setup;
  setup.cli_config = text.value_or("");
  setup.env = no_origin_but("127.0.0.1");
  setup.through = "the store's tfrc";
  return setup;
}

EngineSetup through_mirror(const EngineMirror& mirror, const OriginHosts& hosts) {
  EngineSetup setup;
  std::set<std::string> registries = hosts.registries;
  registries.insert({"registry.opentofu.org", "registry.terraform.io"});
  for (const auto& host : registries)
    setup.cli_config += "host \"" + host + "\" {\n  services = {\n    \"providers.v1\" = \"" + mirror.url +
                        "/v1/providers/" + host + "/\"\n    \"modules.v1\"   = \"" + mirror.url + "/v1/modules/" + host +
                        "/\"\n  }\n}\n";
  const auto mirror_parts = split_url(mirror.url);
  setup.env = no_origin_but(mirror_parts ? mirror_parts->host : "");  // NO_PROXY matches the host alone
  // The CA that trusts the mirror: its own, else this process's SSL_CERT_FILE, made absolute
  // (the engine runs in a scratch copy of the root, not where podplane was started). git does
  // not read SSL_CERT_FILE: it gets the same file as http.sslCAInfo.
  std::optional<fs::path> ca = mirror.ca_file;
  if (const char* value = std::getenv("SSL_CERT_FILE"); !ca && value != nullptr && *value != '\0') ca = fs::absolute(value);
  if (ca) setup.env.push_back("SSL_CERT_FILE=" + ca->string());
  if (const char* value = std::getenv("SSL_CERT_DIR"); !mirror.ca_file && value != nullptr && *value != '\0')
    setup.env.push_back("SSL_CERT_DIR=" + fs::absolute(value).string());
  // git reads its configuration from these variables too (git 2.31+): no file of the user's is
  // read (GIT_CONFIG_NOSYSTEM, and HOME is the scratch dir), none is written.
  std::vector<std::pair<std::string, std::string>> git_config;
  for (const auto& host : hosts.git) git_config.emplace_back("url." + mirror.url + "/git/" + host + "/.insteadOf", "https://" + host + "/");
  if (ca) git_config.emplace_back("http.sslCAInfo", ca->string());
  setup.env.push_back("GIT_CONFIG_NOSYSTEM=1");
  setup.env.push_back("GIT_TERMINAL_PROMPT=0");
  setup.env.push_back("GIT_CONFIG_COUNT=" + std::to_string(git_config.size()));
  for (std::size_t i = 0; i < git_config.size(); ++i) {
    setup.env.push_back("GIT_CONFIG_KEY_" + std::to_string(i) + "=" + git_config[i].first);
    setup.env.push_back("GIT_CONFIG_VALUE_" + std::to_string(i) + "=" + git_config[i].second);
  }
  setup.through = mirror.url;
  return setup;
}

void check_engine_init(const std::function<EngineSetup()>& make_setup, const fs::path& root_dir, const fs::path& boundary,
                       lockfile::Engine engine, EngineInit mode, const EngineRemedies& remedies, CheckReporter& out) {
  const std::string& recheck = remedies.recheck;
  const std::string name(lockfile::engine_name(engine));
  const std::string item = name + " init -lockfile=readonly (offline)";
  if (mode == EngineInit::skip) {
    out.not_run("-", item, "--without-engine: the rows above are podplane's own reading", "");
    return;
  }
  std::optional<fs::path> binary;
  try {
    binary = generator::find_engine(engine);
  } catch (const Error&) {
  }
  if (!binary) {
    out.not_run("-", item, name + " is not on PATH, so only podplane's own reading above speaks for this root",
                "accept podplane's own reading alone: `" + recheck + " --without-engine`, or put " + name +
                    " on PATH and rerun `" + recheck + "`");
    return;
  }
  const EngineSetup setup = make_setup();
  ScratchDir scratch("podplane-check-");
  const fs::path copy = copy_root(root_dir, boundary, scratch.path() / "tree");
  const fs::path cli_config = scratch.path() / "engine.tfrc";
  std::ofstream(cli_config, std::ios::binary) << setup.cli_config;
  std::vector<std::string> env = {"TF_CLI_CONFIG_FILE=" + cli_config.string(), "HOME=" + scratch.path().string(),
                                  "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "PATH=/usr/bin:/bin",
                                  "TMPDIR=" + scratch.path().string()};
  env.insert(env.end(), setup.env.begin(), setup.env.end());
  auto run = generator::run_engine_captured(*binary, {"init", "-backend=false", "-lockfile=readonly", "-input=false", "-no-color"},
                                            copy, env);
  std::string lock_after;
  if (auto text = read_file_if_present_within_limits(copy / ".terraform.lock.hcl", "stack file")) lock_after = *text;
  auto lock_before = read_file_if_present_within_limits(root_dir / ".terraform.lock.hcl", "stack file").value_or("");
  if (run.exit_code != 0) {
    out.fail("-", item,
             "FAILED (exit " + std::to_string(run.exit_code) + ", " + binary->string() + ", through " + setup.through +
                 "):\n" + tail_of(run.output),
             "`" + name + " init` refuses it offline: fix what it reports above, then rerun `" + recheck + "`");
    return;
  }
  if (lock_after != lock_before) {
    out.fail("-", item, "CHANGED: " + name + " init rewrote the lock: it is not the lock " + name + " writes",
             remedies.rewrite_lock + ", then rerun `" + recheck + "`");
    return;
  }
  out.ok("-", item, "ok (" + binary->string() + ", through " + setup.through + " alone)");
}

}  // namespace podplane::checks
