#pragma once
// The fixture upstream for tests: a registry, module registry, git server, network mirror,
// vmconfig host and OCI registry (read side) on one HTTPS loopback port (tests/tools/upstream/{build_fixture,serve}.py).
// A FixtureUpstream builds the tree (cached per test binary for equal FixtureOptions), starts
// serve.py, waits for its readiness line, and kills it when destroyed. Not thread-safe.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

namespace podplane::test {

// What build_fixture.py makes (see its --help and docs/download.md).
struct FixtureOptions {
  std::vector<std::string> corrupt_zip;       // zip file names whose bytes change after SHA256SUMS
  std::vector<std::string> wrong_key;         // providers ("aws", "hashicorp/aws") signed by an unlisted key
  std::vector<std::string> shasums_mismatch;  // zip file names with a wrong (signed) SHA256SUMS line
  std::vector<std::string> add_provider;      // "bpg/proxmox=0.66.0,0.70.0": a provider of any namespace
  std::vector<std::string> add_version;       // "aws=6.3.0", "module=2.2.0", "vmconfig=1.0.0"
  std::optional<std::uint64_t> zip_size;      // bytes per provider zip (default 16 KiB)
  std::optional<int> os_image_mib;            // the os images padded to this many MiB (--os-image-mib)
  // "linux_amd64=PATH": that platform's zips of the providers the fixture plugin plays
  // (podplane, random, null, tls, cloudinit) carry the real plugin at PATH (tests/tools/tfplugin)
  std::optional<std::string> runnable_plugin;
  // "kernel-digest", "missing-partition", "missing-path", "not-ext4", "corrupt-qcow2": the os
  // image or its os.boot entries wrong in that way, the image's own digest right.
  std::string boot_fault;
  // shared: built once per test binary and reused by every FixtureUpstream with equal options;
  // private_copy: built into this upstream's own dir, so rebuild() may change it.
  enum class Sharing { shared, private_copy };
  Sharing sharing = Sharing::shared;
};

// How serve.py runs (fault injection is per server, so a shared tree can have any faults here).
struct ServeOptions {
  enum class Scheme { https, http };
  Scheme scheme = Scheme::https;
  int delay_ms = 0;
  std::vector<std::string> fail_first;    // "N:REGEX:STATUS[:RETRY_AFTER]", first N hits of each matching path
  std::vector<std::string> cut_after;     // "BYTES:REGEX", first full transfer of each matching path cut
  std::vector<std::string> ignore_range;  // "REGEX": answer Range requests with 200 and the whole file
  std::vector<std::string> drip;          // "BYTES_PER_SEC:REGEX": every GET sends its body that slowly
  std::vector<std::string> lie_length;    // "CLAIMED:SENT:REGEX": every GET claims CLAIMED bytes, sends SENT, closes
  std::vector<std::string> stream;        // "BYTES:REGEX": every GET sends BYTES bytes with no Content-Length, then closes
  // "N:REGEX": matching requests are not answered until N of them are in flight at once (so
  // parallel transfers overlap in the access log however slow the machine); after 20 s of
  // waiting they are answered anyway and logged with fault "hold-timeout".
  std::vector<std::string> hold_until;
  std::string proxy_to;                   // "http://HOST:PORT": forward every unfaulted request there
  std::string location_to;                // "SCHEME://HOST:PORT": forwarded answers' Location moved there
  std::string registry_to;                // "http://HOST:PORT": forward /v2/ there (a docker-registry), serve the rest
  bool registry_token = false;            // /v2/ wants a Bearer token from /token (401 + WWW-Authenticate otherwise)
  std::string api_token;                  // /v1/providers/ and /v1/modules/ want `Authorization: Bearer <api_token>`
  std::string token_login;                // "user:password": /token issues tokens only for this Basic login
  std::string git_login;                  // "user:password": /git/ answers only this Basic login
};

struct AccessLogEntry {
  std::string method;
  std::string path;                  // without the query
  int status = 0;
  std::uint64_t bytes = 0;           // body bytes sent
  std::optional<std::string> range;  // the request's Range header
  std::string fault;                 // "", "fail-first", "cut", "ignore-range", "drip", "lie-length", "stream", "hold-timeout", "proxy"
  bool authorization = false;        // the request carried an Authorization header
  double start = 0;                  // server's monotonic clock, seconds: request arrived
  double end = 0;                    // … answer sent
};

// The most requests that were being answered at the same moment.
std::size_t max_concurrency(const std::vector<AccessLogEntry>& entries);

// Options of the CLI config written for podplane (and tofu) to reach the fixture.
struct CliConfigOptions {
  enum class ProviderSource { registry, network_mirror };
  ProviderSource providers = ProviderSource::registry;  // network_mirror: a provider_installation block
  std::vector<std::string> extra_lines;                 // appended verbatim (credentials blocks, …)
};

class FixtureUpstream {
 public:
  explicit FixtureUpstream(FixtureOptions fixture = {}, ServeOptions serve = {});
  ~FixtureUpstream();
  FixtureUpstream(const FixtureUpstream&) = delete;
  FixtureUpstream& operator=(const FixtureUpstream&) = delete;

  const std::string& base_url() const { return base_url_; }  // https://127.0.0.1:PORT, no trailing slash
  std::string url(const std::string& path) const { return base_url_ + path; }  // path starts with '/'
  int port() const { return port_; }
  const fs::path& root() const { return root_; }       // OUT_DIR of build_fixture.py
  fs::path www() const { return root_ / "www"; }        // what is served
  fs::path ca_file() const { return root_ / "tls" / "ca.pem"; }
  const nlohmann::json& fixture() const { return fixture_; }  // parsed fixture.json
  const fs::path& log_file() const { return log_file_; }

  // The access log so far, one entry per answered request, in order.
  std::vector<AccessLogEntry> access_log() const;
  // Entries whose path matches `path_regex` (std::regex_search), optionally with this status.
  std::vector<AccessLogEntry> requests(const std::string& path_regex, std::optional<int> status = std::nullopt) const;

  // Runs build_fixture.py again on this upstream's tree with extra arguments, e.g.
  // {"--add-version", "aws=6.3.0"}; the server keeps running and serves the new files.
  // Only for FixtureOptions::Sharing::private_copy (throws otherwise).
  void rebuild(const std::vector<std::string>& build_args);

  // Stops and starts the server (same port not guaranteed) with other options.
  void restart(ServeOptions serve);

  // Writes a CLI config whose host blocks send registry.opentofu.org and registry.terraform.io
  // (providers.v1, modules.v1) to this server; returns `file`.
  fs::path write_cli_config(const fs::path& file, const CliConfigOptions& options = {}) const;
  // The environment for a podplane process using this upstream: TF_CLI_CONFIG_FILE,
  // SSL_CERT_FILE (the CA), PODPLANE_DEPS_URL (base_url), PODPLANE_DEPS_CACHE_DIR.
  std::map<std::string, std::string> env(const fs::path& deps_root, const fs::path& cli_config) const;

  // Paths of the helper scripts in the source tree.
  static fs::path build_script();
  static fs::path serve_script();

 private:
  void start(const ServeOptions& serve);
  void stop();

  std::shared_ptr<TempDir> tree_dir_;  // shared (cached) or own tree
  std::unique_ptr<TempDir> run_dir_;   // access log and server stderr
  fs::path root_;
  fs::path log_file_;
  std::string base_url_;
  int port_ = 0;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  nlohmann::json fixture_;
};

// Runs build_fixture.py OUT_DIR with arguments; throws with its output when it fails.
void build_fixture(const fs::path& out_dir, const std::vector<std::string>& args);

}  // namespace podplane::test
