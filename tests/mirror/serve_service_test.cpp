// `mirror serve` as a service: systemd's readiness and reload notifications on $NOTIFY_SOCKET,
// the /metrics exposition (checked by Prometheus's own promtool), the JSON access log, and the
// shipped unit file (checked by systemd-analyze verify).
#include <gtest/gtest.h>

#include <sys/un.h>

#include <regex>
#include <sstream>

#include "lockfile/hash.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using nlohmann::json;
using podplane::test::ProcessOptions;
using podplane::test::TempDir;

bool on_path(const std::string& program) {
  return run({"sh", "-c", "command -v " + program + " >/dev/null"}).exit_code == 0;
}

// The service manager's end of $NOTIFY_SOCKET: a unix datagram socket bound to a path or, for
// a name starting with '@', in the abstract namespace.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& name) : name_(name), fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, name.data(), name.size());
    if (name.front() == '@') address.sun_path[0] = '\0';
    auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (name.front() == '@' ? 0 : 1));
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0)
      throw std::runtime_error("cannot bind the notify socket " + name + ": " + std::strerror(errno));
  }
  ~NotifySocket() {
    ::close(fd_);
    if (name_.front() == '/') ::unlink(name_.c_str());
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& name() const { return name_; }

  // The next datagram, or "" when none comes within `timeout`.
  std::string receive(std::chrono::seconds timeout = std::chrono::seconds(60)) const {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count() * 1000)) <= 0) return "";
    char buffer[4096];
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  }

 private:
  std::string name_;
  int fd_;
};

// The assignments of one notification ("READY=1\nSTATUS=…").
std::map<std::string, std::string> assignments(const std::string& datagram) {
  std::map<std::string, std::string> out;
  std::istringstream lines(datagram);
  for (std::string line; std::getline(lines, line);) {
    auto equals = line.find('=');
    if (equals != std::string::npos) out[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return out;
}

class ServeNotifyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ServeNotifyTest, ReadyOnceThePortAnswersAndReloadingThenReadyAroundSighup) {
  TempDir temp;
  const fs::path deps = temp / "deps";
  (void)fill_store(deps, temp / "work");
  std::string name = GetParam() == "abstract" ? "@podplane-notify-" + std::to_string(::getpid()) + "-" + temp.path().filename().string()
                                              : (temp / "notify.sock").string();
  NotifySocket manager(name);

  // No index watch: only SIGHUP may bring the new release in.
  podplane::test::Background serve({podplane::test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0",
                                    "--plain-http", "--watch-interval", "0"},
                                   {{"PODPLANE_DEPS_CACHE_DIR", deps.string()}, {"NOTIFY_SOCKET", manager.name()}},
                                   temp / "serve.err");
  auto ready = assignments(manager.receive());
  ASSERT_EQ(ready["READY"], "1") << podplane::test::read_file(temp / "serve.err");
  EXPECT_NE(ready["STATUS"].find("serving "), std::string::npos) << ready["STATUS"];
  // READY=1 came after the URL was printed and the socket listened: the port answers at once.
  std::string url = serve.first_line();
  ASSERT_FALSE(url.empty());
  CurlSession http;
  auto health = http.fetch(url + "healthz");
  EXPECT_EQ(health.status, 200) << health.error;
  EXPECT_NE(ready["STATUS"].find(url), std::string::npos) << ready["STATUS"];

  const std::string added = url + "v1/mirror/registry.opentofu.org/hashicorp/null/3.9.0.json";
  add_null_release(deps, temp / "work", "3.9.0", {"linux_amd64"});
  EXPECT_EQ(http.fetch(added).status, 404) << "no watch: the new release waits for SIGHUP";
  ::kill(serve.pid(), SIGHUP);
  auto reloading = assignments(manager.receive());
  EXPECT_EQ(reloading["RELOADING"], "1");
  EXPECT_FALSE(reloading["MONOTONIC_USEC"].empty()) << "systemd >= 253 matches a reload by it";
  auto reloaded = assignments(manager.receive());
  ASSERT_EQ(reloaded["READY"], "1");
  // READY=1 follows the rebuild: the new content is served from now on, without a retry.
  auto answer = http.fetch(added);
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(json::parse(answer.body)["archives"].size(), 1u);

  EXPECT_EQ(serve.stop(), 0);
  EXPECT_EQ(assignments(manager.receive())["STOPPING"], "1");
}

INSTANTIATE_TEST_SUITE_P(Socket, ServeNotifyTest, ::testing::Values("abstract", "path"));

TEST(ServeNotify, WithoutNotifySocketNothingChanges) {
  TempDir temp;
  const fs::path deps = temp / "deps";
  (void)fill_store(deps, temp / "work");
  podplane::test::Background serve({podplane::test::podplane_binary().string(), "mirror", "serve", "--listen", "127.0.0.1:0",
                                    "--plain-http"},
                                   {{"PODPLANE_DEPS_CACHE_DIR", deps.string()}, {"NOTIFY_SOCKET", ""}}, temp / "serve.err");
  ASSERT_FALSE(serve.first_line().empty());
  EXPECT_EQ(serve.stop(), 0);
  EXPECT_EQ(podplane::test::read_file(temp / "serve.err").find("notify"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// /metrics

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    contents_ = fill_store(deps_, temp_ / "work");
    test::write_test_tls(temp_.path());
    request_.ca_file = temp_ / "cert.pem";
    server_ = std::make_unique<MirrorServe>(deps_,
                                            std::vector<std::string>{"--listen", "127.0.0.1:0", "--tls-cert", (temp_ / "cert.pem").string(),
                                                                     "--tls-key", (temp_ / "key.pem").string()},
                                            temp_ / "serve.err");
    ASSERT_TRUE(server_->started()) << server_->log();
  }

  std::string scrape() {
    auto answer = http_.fetch(server_->url() + "/metrics", request_);
    EXPECT_EQ(answer.status, 200) << answer.error;
    EXPECT_EQ(answer.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    return answer.body;
  }

  // Counters move once an answer went out, which may be just after the client has it: scrapes
  // until `series` reaches `at_least` (bounded), and returns the last exposition.
  std::string scrape_until(const std::string& series, double at_least) {
    std::string exposition;
    for (int i = 0; i < 500; ++i) {
      exposition = scrape();
      if (sample_value(exposition, series) >= at_least) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return exposition;
  }

  TempDir temp_;
  fs::path deps_ = temp_ / "deps";
  StoreContents contents_;
  HttpRequest request_;
  CurlSession http_;
  std::unique_ptr<MirrorServe> server_;
};

TEST_F(MetricsTest, PromtoolAcceptsTheExposition) {
  if (!on_path("promtool")) GTEST_SKIP() << "promtool is not installed (Debian package prometheus, scripts/setup)";
  (void)http_.fetch(server_->url() + "/healthz", request_);
  std::string exposition = scrape_until("podplane_mirror_requests_total{route=\"health\",code=\"200\"}", 1);
  podplane::test::write_file(temp_ / "metrics.txt", exposition);
  ProcessOptions input;
  input.stdin_data = exposition;
  auto checked = run({"promtool", "check", "metrics"}, input);
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err << exposition;
  EXPECT_EQ(checked.out + checked.err, "") << "lint findings";
}

TEST_F(MetricsTest, CountersMoveWithRequestsAndStoreFiguresAreDepsDus) {
  const std::string index = "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json";
  const std::string zip = "/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip";
  const std::string ok = "{route=\"network_mirror\",code=\"200\"}";
  std::string before = scrape();
  double requests_before = std::max(0.0, sample_value(before, "podplane_mirror_requests_total" + ok));
  double bytes_before = sample_value(before, "podplane_mirror_response_body_bytes_total{route=\"network_mirror\"}");
  double handshakes_before = sample_value(before, "podplane_mirror_tls_handshakes_total{result=\"ok\"}");
  EXPECT_GE(handshakes_before, 1);
  EXPECT_GE(sample_value(before, "podplane_mirror_open_connections"), 1) << "the scrape's own connection";

  auto listing = http_.fetch(server_->url() + index, request_);  // a document, answered by the event loop
  auto package = http_.fetch(server_->url() + zip, request_);    // a store object, answered by a worker
  ASSERT_EQ(listing.status, 200);
  ASSERT_EQ(package.status, 200);
  EXPECT_EQ(http_.fetch(server_->url() + "/no/such/path", request_).status, 404);
  // Engine and podplane releases are a route of their own, not "other".
  EXPECT_EQ(http_.fetch(server_->url() + "/tools/terraform/9.9.9/terraform_9.9.9_linux_amd64.zip", request_).status, 404);
  {
    CurlSession other;  // a second connection: a second handshake
    EXPECT_EQ(other.fetch(server_->url() + "/healthz", request_).status, 200);
  }

  auto after = scrape_until("podplane_mirror_requests_total{route=\"other\",code=\"404\"}", 1);
  after = scrape_until("podplane_mirror_requests_total{route=\"tools\",code=\"404\"}", 1);
  EXPECT_EQ(sample_value(after, "podplane_mirror_requests_total{route=\"other\",code=\"404\"}"), 1) << after;
  after = scrape_until("podplane_mirror_requests_total" + ok, requests_before + 2);
  EXPECT_EQ(sample_value(after, "podplane_mirror_requests_total" + ok), requests_before + 2) << after;
  EXPECT_EQ(sample_value(after, "podplane_mirror_response_body_bytes_total{route=\"network_mirror\"}"),
            bytes_before + static_cast<double>(listing.body.size() + package.body.size()));
  EXPECT_GE(sample_value(after, "podplane_mirror_request_duration_seconds_count{route=\"network_mirror\"}"), 2);
  EXPECT_EQ(sample_value(after, "podplane_mirror_request_duration_seconds_bucket{route=\"network_mirror\",le=\"+Inf\"}"),
            sample_value(after, "podplane_mirror_request_duration_seconds_count{route=\"network_mirror\"}"));
  EXPECT_GT(sample_value(after, "podplane_mirror_request_duration_seconds_sum{route=\"network_mirror\"}"), 0);
  EXPECT_GE(sample_value(after, "podplane_mirror_tls_handshakes_total{result=\"ok\"}"), handshakes_before + 1);
  EXPECT_GE(sample_value(after, "podplane_mirror_connections_accepted_total"), 2);

  // The store's figures are deps du's.
  auto du = podplane::test::run_podplane({"deps", "du", "--json"}, podplane::test::with_deps_root(deps_));
  ASSERT_EQ(du.exit_code, 0) << du.err;
  auto usage = json::parse(du.out);
  EXPECT_EQ(sample_value(after, "podplane_mirror_store_objects"), usage["objects"].get<double>());
  EXPECT_EQ(sample_value(after, "podplane_mirror_store_object_bytes"), usage["object_bytes"].get<double>());
  for (const auto& [kind, totals] : usage["by_family"].items()) {
    EXPECT_EQ(sample_value(after, "podplane_mirror_store_bytes{kind=\"" + kind + "\"}"), totals["bytes"].get<double>()) << kind;
    EXPECT_EQ(sample_value(after, "podplane_mirror_store_items{kind=\"" + kind + "\"}"), totals["items"].get<double>()) << kind;
  }
  EXPECT_EQ(sample_value(after, "podplane_mirror_bundle_imports{result=\"ok\"}"), 0);

  // A reload counts, and brings the new store's figures.
  EXPECT_EQ(sample_value(after, "podplane_mirror_reloads_total"), 0);
  add_null_release(deps_, temp_ / "work", "3.9.0", {"linux_amd64"});
  ::kill(server_->pid(), SIGHUP);
  auto reloaded = scrape_until("podplane_mirror_reloads_total", 1);
  EXPECT_EQ(sample_value(reloaded, "podplane_mirror_reloads_total"), 1) << server_->log();
  EXPECT_EQ(sample_value(reloaded, "podplane_mirror_reload_failures_total"), 0);
  EXPECT_GT(sample_value(reloaded, "podplane_mirror_store_objects"), usage["objects"].get<double>());
}

// ---------------------------------------------------------------------------------------------
// --access-log json

struct LoggedRequest {
  std::string remote_addr, time, method, target, protocol;
  int status = 0;
  std::uint64_t body_bytes = 0;
  bool operator==(const LoggedRequest&) const = default;
};

std::vector<LoggedRequest> text_lines(const std::string& log) {
  static const std::regex line(R"re(^(\S+) - - \[(\S+)\] "(\S+) (\S+) (\S+)" (\d+) (\d+)$)re");
  std::vector<LoggedRequest> out;
  std::istringstream lines(log);
  for (std::string text; std::getline(lines, text);) {
    std::smatch m;
    if (!std::regex_match(text, m, line)) continue;
    out.push_back({m[1], m[2], m[3], m[4], m[5], std::stoi(m[6]), std::stoull(m[7])});
  }
  return out;
}

std::vector<LoggedRequest> json_lines(const std::string& log, std::vector<std::string>& unparsed) {
  std::vector<LoggedRequest> out;
  std::istringstream lines(log);
  for (std::string text; std::getline(lines, text);) {
    if (text.rfind("podplane: ", 0) == 0) continue;  // the server's own messages stay text
    auto object = json::parse(text, nullptr, false);
    if (object.is_discarded() || !object.is_object() || object.size() != 7) {
      unparsed.push_back(text);
      continue;
    }
    out.push_back({object["remote_addr"], object["time"], object["method"], object["target"], object["protocol"],
                   object["status"], object["body_bytes"]});
  }
  return out;
}

// One request written on a raw connection (a target curl would not send as it is), answer read
// until the server closes.
void raw_request(int port, const std::string& request) {
  int fd = connect_from("127.0.0.1", port);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  EXPECT_TRUE(wait_peer_closed(fd, std::chrono::seconds(30)));
  ::close(fd);
}

TEST(ServeAccessLog, JsonLinesHoldTheFieldsOfTheTextLines) {
  TempDir temp;
  const fs::path deps = temp / "deps";
  (void)fill_store(deps, temp / "work");
  const std::vector<std::string> paths{
      "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json",  // made at once by the event loop
      "/v1/mirror/registry.opentofu.org/hashicorp/null/terraform-provider-null_3.2.4_linux_amd64.zip",  // a worker's
      "/no/such/path?q=1",
      "/catalogue/",
  };
  std::map<std::string, std::vector<LoggedRequest>> logged;
  std::vector<std::string> unparsed;
  for (std::string format : {"text", "json"}) {
    std::vector<LoggedRequest> requests;
    {
      MirrorServe server(deps, {"--listen", "127.0.0.1:0", "--plain-http", "--access-log", format}, temp / (format + ".err"));
      ASSERT_TRUE(server.started()) << server.log();
      CurlSession http;
      for (const auto& path : paths) (void)http.fetch(server.url() + path);
      HttpRequest head;
      head.method = "HEAD";
      (void)http.fetch(server.url() + paths[0], head);
      raw_request(port_of(server.url()), "GET /odd\"quote\\back\x01slash HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      // Refused by cpp-httplib (400) before it read the client's address: a version it does not speak.
      raw_request(port_of(server.url()), "GET /refused HTTP/9.9\r\nHost: x\r\nConnection: close\r\n\r\n");
      EXPECT_EQ(server.stop(), 0);
    }
    std::string log = podplane::test::read_file(temp / (format + ".err"));
    logged[format] = format == "text" ? text_lines(log) : json_lines(log, unparsed);
  }
  EXPECT_TRUE(unparsed.empty()) << unparsed.front();
  // By request: a worker's line may be written just after the next request's.
  std::map<std::string, std::map<std::string, LoggedRequest>> by_request;
  for (auto& [format, requests] : logged)
    for (auto& request : requests) by_request[format][request.method + " " + request.target] = request;
  auto& text = by_request["text"];
  auto& json_log = by_request["json"];
  ASSERT_EQ(logged["text"].size(), paths.size() + 3);
  // Every line names its client, the refused request's too.
  for (auto& [format, requests] : logged)
    for (auto& request : requests) EXPECT_EQ(request.remote_addr, "127.0.0.1") << format << " " << request.method << " " << request.target;
  ASSERT_EQ(logged["json"].size(), logged["text"].size());
  ASSERT_EQ(text.size(), logged["text"].size());
  const std::regex timestamp(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
  // A quote, backslash and control character: the control character is '?' in both formats;
  // the text line also writes the quote as '?', the JSON line escapes it.
  ASSERT_EQ(json_log.count("GET /odd\"quote\\back?slash"), 1u);
  EXPECT_EQ(text.count("GET /odd?quote\\back?slash"), 1u);
  auto odd = json_log.extract("GET /odd\"quote\\back?slash");
  odd.key() = "GET /odd?quote\\back?slash";
  odd.mapped().target = "/odd?quote\\back?slash";
  json_log.insert(std::move(odd));
  for (auto& [request, line] : text) {
    ASSERT_EQ(json_log.count(request), 1u) << request;
    auto& in_json = json_log[request];
    EXPECT_TRUE(std::regex_match(in_json.time, timestamp)) << in_json.time;
    EXPECT_TRUE(std::regex_match(line.time, timestamp)) << line.time;
    in_json.time = line.time;  // two runs: only the clock differs
    EXPECT_EQ(in_json, line) << request;
  }
  EXPECT_EQ(text["GET " + paths[0]].status, 200);
  EXPECT_EQ(text["GET " + paths[1]].body_bytes, fs::file_size(temp / "work" / "terraform-provider-null_3.2.4_linux_amd64.zip"));
  EXPECT_EQ(text["GET " + paths[2]].status, 404);
  EXPECT_EQ(text["HEAD " + paths[0]].body_bytes, 0u);
  EXPECT_GT(text["GET " + paths[0]].body_bytes, 0u);
}

// ---------------------------------------------------------------------------------------------
// packaging/systemd/podplane-mirror.service

TEST(ServeUnit, SystemdAnalyzeVerifiesTheShippedUnit) {
  if (!on_path("systemd-analyze")) GTEST_SKIP() << "systemd-analyze is not installed (Debian package systemd)";
  TempDir temp;
  std::string unit = podplane::test::read_file(podplane::test::source_dir() / "packaging/systemd/podplane-mirror.service");
  // What docs/operations.md promises of the unit.
  for (const char* setting : {"\nType=notify\n", "\nExecReload=kill -HUP $MAINPID\n", "\nDynamicUser=yes\n",
                              "\nProtectSystem=strict\n", "\nNoNewPrivileges=yes\n",
                              "\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\n", "\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n",
                              "\nRestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n"})
    EXPECT_NE(unit.find(setting), std::string::npos) << setting;
  // verify wants ExecStart's binary to exist: the copy runs the one just built.
  const std::string installed = "ExecStart=/usr/bin/podplane ";
  auto at = unit.find(installed);
  ASSERT_NE(at, std::string::npos);
  unit.replace(at, installed.size(), "ExecStart=" + podplane::test::podplane_binary().string() + " ");
  podplane::test::write_file(temp / "podplane-mirror.service", unit);
  auto verified = run({"systemd-analyze", "verify", (temp / "podplane-mirror.service").string()});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  // Unknown or misspelt settings are only warnings: none may mention the unit.
  EXPECT_EQ((verified.out + verified.err).find("podplane-mirror.service"), std::string::npos) << verified.out << verified.err;
}

}  // namespace
}  // namespace podplane::serve_test
