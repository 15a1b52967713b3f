#pragma once
// Debian's containerd for a test (a private socket, root and state under the test's temp dir,
// native snapshotter, no CRI, no task runtime, nothing written outside that dir), driven by its
// `ctr`, and the hosts.toml the catalogue page prints for a registry: what
// tests/mirror/containerd_test.cpp, tests/mirror/fleet_test.cpp and
// tests/mirror/balancer_retry_test.cpp pull images with.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/mirror/serve_fixture.hpp"
#include "tests/support/catalogue_page.hpp"

namespace podplane::serve_test {

// The text a person copies from a page (tests/support/catalogue_page.hpp).
inline std::string text_of(std::string html) { return podplane::test::copied_text(std::move(html)); }

// The hosts.toml the catalogue page gives for `registry`: the code block after the paragraph
// naming /etc/containerd/certs.d/<registry>/hosts.toml, or "" when the page names none.
inline std::string hosts_toml_for(const std::string& page, const std::string& registry) {
  const std::string path = "/etc/containerd/certs.d/" + registry + "/hosts.toml</code>";
  auto named = page.find(path);
  if (named == std::string::npos) return "";
  auto start = page.find("<pre><code>", named);
  auto end = page.find("</code></pre>", start);
  if (start == std::string::npos || end == std::string::npos) return "";
  start += std::string("<pre><code>").size();
  return text_of(page.substr(start, end - start));
}

// The hosts.toml a node's operator copies for `registry` from the catalogue of the mirror at
// `mirror_url` (read through a balancer, it names the balancer's address), with its `ca` set to
// `ca_file` instead of the path the page suggests. Throws, saying why, when the page cannot be
// read or gives no such snippet.
inline std::string catalogue_hosts_toml(const std::string& mirror_url, const fs::path& ca_file, const std::string& registry) {
  HttpRequest request;
  request.ca_file = ca_file;
  auto page = CurlSession().fetch(mirror_url + "/", request);
  if (page.status != 200)
    throw std::runtime_error("the catalogue at " + mirror_url + "/ answered " + std::to_string(page.status) + " " + page.error);
  std::string hosts_toml = hosts_toml_for(page.body, registry);
  const std::string ca_line = std::string("ca = \"") + podplane::test::kCatalogueCaFile + "\"";
  const auto at = hosts_toml.find(ca_line);
  if (at == std::string::npos)
    throw std::runtime_error("the catalogue gives no hosts.toml naming the CA for " + registry + ":\n" + text_of(page.body));
  return hosts_toml.replace(at, ca_line.size(), "ca = \"" + ca_file.string() + "\"");
}

// Why containerd cannot run a test's pulls here, or "" when it can: its binaries are missing
// (Debian's containerd package has both; scripts/setup installs it), or this is not root.
inline std::string containerd_unavailable() {
  for (const char* program : {"containerd", "ctr"})
    if (!podplane::test::have_program(program))
      return std::string(program) + " is not installed (Debian's containerd package has both; scripts/setup installs it)";
  if (::geteuid() != 0)
    return "containerd runs as root only (it mounts and chowns snapshots); this test runs as uid " + std::to_string(::geteuid());
  return "";
}

// Debian's containerd for one test: its own config, root, state and socket under `dir`.
// Content is not shared between namespaces ("isolated"): a pull into a namespace of its own
// downloads every blob itself, so that each is a whole pull however many came before it.
// ctr() may be called from several threads at once.
class Containerd {
 public:
  explicit Containerd(const fs::path& dir) : dir_(dir), socket_(dir / "c.sock") {
    fs::create_directories(dir);
    // Only what a pull needs: content, metadata, images, leases, the native snapshotter and its
    // differ. The CRI, the task runtimes (which want cgroups) and the opt plugin (which writes
    // /opt/containerd) stay off.
    write_file(dir / "config.toml",
               "version = 2\nroot = \"" + (dir / "root").string() + "\"\nstate = \"" + (dir / "state").string() +
                   "\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\", \"io.containerd.internal.v1.opt\", "
                   "\"io.containerd.snapshotter.v1.overlayfs\", \"io.containerd.snapshotter.v1.btrfs\", "
                   "\"io.containerd.snapshotter.v1.zfs\", \"io.containerd.snapshotter.v1.devmapper\", "
                   "\"io.containerd.snapshotter.v1.aufs\", \"io.containerd.runtime.v1.linux\", \"io.containerd.runtime.v2.task\", "
                   "\"io.containerd.monitor.v1.cgroups\", \"io.containerd.internal.v1.restart\", "
                   "\"io.containerd.service.v1.tasks-service\", \"io.containerd.grpc.v1.tasks\", "
                   "\"io.containerd.tracing.processor.v1.otlp\", \"io.containerd.internal.v1.tracing\"]\n"
                   "[grpc]\n  address = \"" + socket_.string() + "\"\n[ttrpc]\n  address = \"" + socket_.string() +
                   ".ttrpc\"\n[plugins.\"io.containerd.metadata.v1.bolt\"]\n  content_sharing_policy = \"isolated\"\n");
    process_ = std::make_unique<Background>(std::vector<std::string>{"containerd", "--config", (dir / "config.toml").string()},
                                            std::map<std::string, std::string>{}, dir / "containerd.log");
    // Readiness probe, bounded: the daemon answers on its socket.
    for (int attempt = 0; attempt < 300 && !ready_; ++attempt) {
      ready_ = fs::exists(socket_) && ctr({"version"}).exit_code == 0;
      if (!ready_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~Containerd() { process_->stop(); }
  Containerd(const Containerd&) = delete;
  Containerd& operator=(const Containerd&) = delete;

  bool ready() const { return ready_; }
  std::string log() const { return podplane::test::read_file(dir_ / "containerd.log"); }

  // ctr on this daemon. Its proxies are a closed loopback port: loopback (the mirror) is reached
  // directly, anything else fails at once instead of leaving the machine.
  podplane::test::ProcessResult ctr(std::vector<std::string> args) const {
    args.insert(args.begin(), {"ctr", "--address", socket_.string()});
    podplane::test::ProcessOptions options;
    const std::string nowhere = "http://127.0.0.1:" + std::to_string(closed_port_);
    for (const char* name : {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"}) options.env[name] = nowhere;
    options.env["NO_PROXY"] = options.env["no_proxy"] = "127.0.0.1,localhost";
    return podplane::test::run(args, options);
  }

 private:
  fs::path dir_;
  fs::path socket_;
  int closed_port_ = free_port();
  std::unique_ptr<Background> process_;
  bool ready_ = false;
};

// The DIGEST column of `ctr image ls` for `reference`, or "".
inline std::string listed_digest(const podplane::test::ProcessResult& listed, const std::string& reference) {
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string ref, type, digest;
    if (fields >> ref >> type >> digest && ref == reference) return digest;
  }
  return "";
}

// `ctr content ls -q`: the digests of the blobs the namespace holds (containerd checks each
// blob's digest and size before it commits it).
inline std::set<std::string> listed_content(const podplane::test::ProcessResult& listed) {
  std::set<std::string> content;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("sha256:", 0) == 0) content.insert(line);
  return content;
}

}  // namespace podplane::serve_test
