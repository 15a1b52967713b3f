#pragma once
// HAProxy (Debian's /usr/sbin/haproxy) in front of `mirror serve` replicas on loopback, started
// from docs/haproxy/podplane-mirror.cfg itself with only the site values replaced (the bind and
// its certificate, the replicas' CA, the servers, the runtime API's socket and the generation
// map, all in the test's directory), checks every 200 ms instead of 2 s so that a change shows
// within a test's time, and the log on stderr. Shared by mirror.FleetTest and
// mirror.BalancerRetryTest, so that both run the file operators copy.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {

// Waits (bounded, polling every 50 ms) until `condition` holds; false when `timeout` passes first.
template <typename Condition>
bool wait_for(Condition condition, std::chrono::seconds timeout = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

inline void replace_once(std::string& text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("not in the config: " + from);
  text.replace(at, from.size(), to);
}

// One command on HAProxy's runtime API (the config's stats socket); its answer.
inline std::string haproxy_command(const fs::path& socket_path, const std::string& command) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket_path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return "";
  }
  std::string line = command + "\n";
  (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
  std::string answer;
  char buffer[4096];
  while (true) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;  // a test's client processes end around us (SIGCHLD)
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return answer;
}

// What a test's balancer is made of.
struct BalancerSite {
  fs::path dir;                           // its config, log, runtime API socket and generation map
  fs::path bind_pem;                      // the frontend's certificate and key, in one PEM
  fs::path ca_file;                       // the CA the replicas' certificates are checked against
  std::vector<int> replica_ports;         // replica1, replica2, … on 127.0.0.1
  std::vector<std::string> global_lines;  // more lines for `global`, for a test's own needs
};

// One HAProxy process; stopped when destroyed. Not thread-safe to start; the queries may be
// called from any thread (each opens its own runtime API connection).
class Balancer {
 public:
  // Renders the config, checks it (`haproxy -c`), starts HAProxy and waits (bounded) until it
  // accepts and every replica is in. Fails the test (fatally) when any of that fails.
  void start(const BalancerSite& site) {
    site_ = site;
    port_ = free_port();
    std::string config = podplane::test::read_file(podplane::test::source_dir() / "docs" / "haproxy" / "podplane-mirror.cfg");
    replace_once(config, "bind :8443 ssl crt /etc/haproxy/podplane-mirror.pem",
                 "bind 127.0.0.1:" + std::to_string(port_) + " ssl crt " + site.bind_pem.string());
    replace_once(config, "/run/haproxy/podplane-admin.sock", admin_socket().string());
    replace_once(config, "/etc/haproxy/podplane-generation.map", generation_map().string());
    replace_once(config, "ca-file /etc/podplane/site-ca.crt", "ca-file " + site.ca_file.string());
    replace_once(config, "check inter 2s fall 2 rise 2", "check inter 200ms fall 1 rise 1");
    // Its log beside its warnings, in the file a failure prints (stdout is the readiness pipe).
    std::string global = "log stderr format raw local0";
    for (const auto& line : site.global_lines) global += "\n  " + line;
    replace_once(config, "log stdout format raw local0", global);
    std::string servers;
    for (std::size_t i = 0; i < site.replica_ports.size(); ++i)
      servers += "  server replica" + std::to_string(i + 1) + " 127.0.0.1:" + std::to_string(site.replica_ports[i]) + "\n";
    replace_once(config, "  server replica1 10.0.0.11:8443\n  server replica2 10.0.0.12:8443\n", servers);
    write_file(config_file(), config);
    write_file(generation_map(), "");  // no generation named yet: every replica is in
    auto checked = podplane::test::run({"/usr/sbin/haproxy", "-c", "-f", config_file().string()});
    ASSERT_EQ(checked.exit_code, 0) << show(checked);
    process_ = std::make_unique<Background>(std::vector<std::string>{"/usr/sbin/haproxy", "-db", "-f", config_file().string()},
                                            std::map<std::string, std::string>{}, log_file());
    ASSERT_TRUE(wait_for_port(port_)) << log();
    ASSERT_TRUE(wait_for([&] { return servers_up() == static_cast<int>(site.replica_ports.size()); }))
        << command("show servers state");
  }

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  fs::path config_file() const { return site_.dir / "haproxy.cfg"; }
  fs::path admin_socket() const { return site_.dir / "haproxy-admin.sock"; }
  fs::path generation_map() const { return site_.dir / "podplane-generation.map"; }
  fs::path log_file() const { return site_.dir / "haproxy.err"; }
  std::string log() const { return podplane::test::read_file(log_file()); }
  std::string command(const std::string& line) const { return haproxy_command(admin_socket(), line); }

  // How many replicas HAProxy sends requests to now (`show servers state`: srv_op_state 2).
  int servers_up() const {
    int up = 0;
    for (const auto& f : server_states())
      if (f[3].rfind("replica", 0) == 0 && f[5] == "2") ++up;
    return up;
  }
  bool server_up(int i) const {
    for (const auto& f : server_states())
      if (f[3] == "replica" + std::to_string(i + 1)) return f[5] == "2";
    return false;
  }

  // Replica i's line of `show stat` (CSV fields), or none.
  std::vector<std::string> stat_of(int i) const {
    std::istringstream lines(command("show stat"));
    for (std::string line; std::getline(lines, line);) {
      std::vector<std::string> f;
      std::istringstream fields(line);
      for (std::string field; std::getline(fields, field, ',');) f.push_back(field);
      if (f.size() > 9 && f[0] == "podplane_replicas" && f[1] == "replica" + std::to_string(i + 1)) return f;
    }
    return {};
  }
  // Requests replica i is answering now, as HAProxy counts them (`show stat`: scur).
  int sessions_at(int i) const {
    auto f = stat_of(i);
    return f.empty() ? 0 : std::atoi(f[4].c_str());
  }
  // Requests HAProxy sent again, to another replica, after replica i failed them: a connection
  // refused or an answer its `retry-on` names (`show stat`: wretr).
  int retried_away_from(int i) const {
    auto f = stat_of(i);
    return f.empty() ? 0 : std::atoi(f[15].c_str());
  }

 private:
  // The server lines of `show servers state podplane_replicas`, split into fields.
  std::vector<std::vector<std::string>> server_states() const {
    std::vector<std::vector<std::string>> states;
    std::istringstream lines(command("show servers state podplane_replicas"));
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
      if (f.size() > 5) states.push_back(std::move(f));
    }
    return states;
  }

  BalancerSite site_;
  int port_ = 0;
  std::unique_ptr<Background> process_;
};

}  // namespace podplane::serve_test
