// Answers made at once on the event loop (RequestHandler::answer_at_once), against a
// ConnectionServer in this process with a handler whose answers are known: a big answer read
// slowly, never read, or dropped half way; pipelined requests mixing answers made at once and
// answers from a worker; over HTTP and HTTPS, with curl(1), openssl s_client and raw sockets as
// the clients. The mirror-level test runs the real `podplane mirror serve`.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <sstream>
#include <thread>
#include <httplib.h>
#include <openssl/ssl.h>

#include "mirror/serve_connections.hpp"
#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::TempDir;
using Clock = std::chrono::steady_clock;

// The access-log lines the server wrote, waited for with a deadline.
class LogLines {
 public:
  void add(const std::string& line) {
    std::lock_guard lock(mutex_);
    lines_.push_back(line);
    changed_.notify_all();
  }
  // The first line that starts with `prefix`, or "" when none comes within `timeout`.
  std::string wait_for(const std::string& prefix, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock lock(mutex_);
    std::string found;
    changed_.wait_for(lock, timeout, [&] {
      for (const auto& line : lines_)
        if (line.rfind(prefix, 0) == 0) {
          found = line;
          return true;
        }
      return false;
    });
    return found;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> lines_;
};

// A connection from `source` to `port` whose receive buffer stays small: a client that does not
// read blocks the server's writes soon.
int connect_not_reading(const std::string& source, int port) { return connect_from(source, port, 4096); }

// A TLS client that sends one request and then reads only what it is asked to (not verifying
// the server: what is tested is the server's side).
class StuckTlsClient {
 public:
  StuckTlsClient(int port, const std::string& request)
      : context_(SSL_CTX_new(TLS_client_method())), fd_(connect_not_reading("127.0.0.1", port)) {
    if (context_ == nullptr || fd_ < 0) return;
    ssl_ = SSL_new(context_);
    SSL_set_fd(ssl_, fd_);
    sent_ = SSL_connect(ssl_) == 1 && SSL_write(ssl_, request.data(), static_cast<int>(request.size())) > 0;
  }
  ~StuckTlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    if (context_ != nullptr) SSL_CTX_free(context_);
  }
  StuckTlsClient(const StuckTlsClient&) = delete;
  StuckTlsClient& operator=(const StuckTlsClient&) = delete;
  bool sent() const { return sent_; }
  // Reads (and drops) up to `bytes` of the answer; the count read, short when the server stops.
  std::size_t read(std::size_t bytes) {
    char buffer[16384];
    std::size_t got = 0;
    while (got < bytes) {
      int n = SSL_read(ssl_, buffer, static_cast<int>(std::min(sizeof buffer, bytes - got)));
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    return got;
  }

 private:
  SSL_CTX* context_ = nullptr;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  bool sent_ = false;
};

std::string path_of(std::string_view head) {
  auto start = head.find(' ') + 1;
  return std::string(head.substr(start, head.find(' ', start) - start));
}

// /worker is answered by a worker; every other path at once: /big with kBigSize bytes, others
// with "at once PATH\n". A worker answers "worker PATH\n" (it also answers the requests that
// follow on the connection it holds). Log lines, of answers made at once only: "GET PATH" then
// the body byte count.
class KnownAnswers final : public mirror::RequestHandler {
 public:
  // More than loopback's socket buffers hold, so that a client that does not read stops it.
  static constexpr std::size_t kBigSize = 16 * 1024 * 1024;
  KnownAnswers() : big(random_bytes(kBigSize, 7)) {}

  bool answer(httplib::Stream& stream, bool last, bool& client_closes) override {
    std::string head;
    char byte = 0;
    while (head.find("\r\n\r\n") == std::string::npos) {
      if (stream.read(&byte, 1) != 1) return false;
      head += byte;
    }
    client_closes = head.find("Connection: close") != std::string::npos;
    std::string body = "worker " + path_of(head) + "\n";
    std::string out = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    (void)last;
    return stream.write(out.data(), out.size()) == static_cast<ssize_t>(out.size());
  }

  std::optional<mirror::PreparedAnswer> answer_at_once(const mirror::RequestHead& head) override {
    std::string path = path_of(head.bytes);
    if (path == "/worker") return std::nullopt;
    std::string body = path == "/big" ? big : "at once " + path + "\n";
    mirror::PreparedAnswer answer;
    answer.bytes = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    answer.head_size = answer.bytes.size();
    answer.bytes += body;
    answer.log_line = "GET " + path;
    answer.close = head.bytes.find("Connection: close") != std::string::npos;
    return answer;
  }

  const std::string big;
};

enum class Scheme { http, https };

// A ConnectionServer with KnownAnswers, run on a thread of this test.
class AtOnceTest : public ::testing::TestWithParam<Scheme> {
 protected:
  void start(mirror::ConnectionLimits limits = {}) {
    std::optional<mirror::TlsFiles> tls;
    if (GetParam() == Scheme::https) {
      test::write_test_tls(temp_.path());
      tls = mirror::TlsFiles{temp_ / "cert.pem", temp_ / "key.pem"};
    }
    server_ = std::make_unique<mirror::ConnectionServer>(limits, tls, answers_, [this](const std::string& line) { log_.add(line); });
    port_ = server_->listen(mirror::parse_listen_address("127.0.0.1:0"));
    runner_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (runner_.joinable()) runner_.join();
  }
  std::string base() const {
    return std::string(GetParam() == Scheme::https ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
  }
  HttpRequest request() const {
    HttpRequest r;
    if (GetParam() == Scheme::https) r.ca_file = temp_ / "cert.pem";
    return r;
  }
  // curl(1) with `args` and the test CA, for `path`.
  std::vector<std::string> curl(const std::vector<std::string>& args, const std::string& path) const {
    std::vector<std::string> argv{"curl", "-sS"};
    if (GetParam() == Scheme::https) argv.insert(argv.end(), {"--cacert", (temp_ / "cert.pem").string()});
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(base() + path);
    return argv;
  }

  TempDir temp_;
  KnownAnswers answers_;
  LogLines log_;
  std::unique_ptr<mirror::ConnectionServer> server_;
  std::thread runner_;
  int port_ = 0;
};

// The body byte count at the end of a log line.
std::uint64_t logged_bytes(const std::string& line) { return std::stoull(line.substr(line.rfind(' ') + 1)); }

TEST_P(AtOnceTest, ASlowReaderGetsTheWholeAnswerWhileOthersAreAnswered) {
  start();
  // curl reads the 16 MiB answer at 4 MiB/s: the server's writes come short and go on as the
  // client reads. Meanwhile other requests, on the same event loop, are answered.
  std::optional<podplane::test::ProcessResult> slow;
  std::thread reader([&] {
    slow = podplane::test::run(curl({"--limit-rate", "4M", "-o", (temp_ / "big").string(), "-w", "%{size_download}"}, "/big"));
  });
  CurlSession http;
  for (int i = 0; i < 20; ++i) {
    auto answer = http.fetch(base() + "/small" + std::to_string(i), request());
    EXPECT_EQ(answer.status, 200) << answer.error;
    EXPECT_EQ(answer.body, "at once /small" + std::to_string(i) + "\n");
  }
  reader.join();
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->exit_code, 0) << slow->err;
  EXPECT_EQ(podplane::test::read_file(temp_ / "big"), answers_.big);
  auto line = log_.wait_for("GET /big");
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(logged_bytes(line), KnownAnswers::kBigSize);
}

TEST_P(AtOnceTest, AClientThatGoesAwayHalfWayIsLoggedWithWhatItWasSent) {
  start();
  // The client reads half a MiB of the 16 MiB through a 4 KiB receive buffer, then closes. The
  // small buffer matters: where the kernel lets a receive buffer grow to 32 MiB (tcp_rmem), a
  // client such as curl that merely reads slowly can be sent the whole answer before it quits.
  constexpr std::size_t kRead = 512 * 1024;
  std::string get = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
  std::size_t read = 0;
  if (GetParam() == Scheme::https) {
    StuckTlsClient client(port_, get);
    ASSERT_TRUE(client.sent());
    read = client.read(kRead);
  } else {
    int fd = connect_not_reading("127.0.0.1", port_);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
    char buffer[16384];
    while (read < kRead) {
      ssize_t n = ::recv(fd, buffer, std::min(sizeof buffer, kRead - read), 0);
      if (n <= 0) break;
      read += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  ASSERT_EQ(read, kRead);
  auto line = log_.wait_for("GET /big");
  ASSERT_FALSE(line.empty());
  // At least what the client read (less the head), and short of the whole answer.
  EXPECT_GE(logged_bytes(line), kRead - 1024);
  EXPECT_LT(logged_bytes(line), KnownAnswers::kBigSize);
  CurlSession http;
  EXPECT_EQ(http.fetch(base() + "/after", request()).body, "at once /after\n");
}

TEST_P(AtOnceTest, PipelinedRequestsAreAnsweredInOrderByTheLoopAndTheWorkers) {
  start();
  std::string requests;
  for (const char* path : {"/one", "/worker", "/two", "/three", "/worker", "/four"})
    requests += std::string("GET ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  requests += "GET /last HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  std::string received;
  if (GetParam() == Scheme::https) {
    // All requests in one write; s_client reads until the server closes (after /last).
    podplane::test::ProcessOptions options;
    options.stdin_data = requests;
    auto run = podplane::test::run({"openssl", "s_client", "-quiet", "-connect", "127.0.0.1:" + std::to_string(port_),
                                    "-CAfile", (temp_ / "cert.pem").string()},
                                   options);
    received = run.out;
  } else {
    int fd = connect_from("127.0.0.1", port_);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, requests.data(), requests.size(), MSG_NOSIGNAL), static_cast<ssize_t>(requests.size()));
    char buffer[4096];
    while (true) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 60'000) <= 0) break;
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      received.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
  }
  std::vector<std::string> bodies;
  for (std::size_t at = received.find("\r\n\r\n"); at != std::string::npos; at = received.find("\r\n\r\n", at)) {
    at += 4;
    auto end = received.find("HTTP/1.1 ", at);
    bodies.push_back(received.substr(at, end == std::string::npos ? std::string::npos : end - at));
  }
  // Each answer once, in the order asked; the first made at once, /worker by a worker.
  std::vector<std::string> paths;
  for (const auto& body : bodies) paths.push_back(body.substr(body.rfind(' ') + 1));
  EXPECT_EQ(paths, (std::vector<std::string>{"/one\n", "/worker\n", "/two\n", "/three\n", "/worker\n", "/four\n", "/last\n"}))
      << received;
  ASSERT_EQ(bodies.size(), 7u);
  EXPECT_EQ(bodies[0], "at once /one\n");
  EXPECT_EQ(bodies[1], "worker /worker\n");
  EXPECT_EQ(bodies[4], "worker /worker\n");
  EXPECT_FALSE(log_.wait_for("GET /one").empty());
}

TEST_P(AtOnceTest, AClientThatNeverReadsIsClosedAtTheIoDeadlineAndHoldsNothing) {
  mirror::ConnectionLimits limits;
  limits.workers = 1;
  limits.io_timeout = std::chrono::seconds(2);
  start(limits);
  // A client that asks for 16 MiB and never reads: its answer cannot go out whole.
  std::string get = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
  int fd = -1;
  std::unique_ptr<StuckTlsClient> tls_client;
  if (GetParam() == Scheme::https) {
    tls_client = std::make_unique<StuckTlsClient>(port_, get);
    ASSERT_TRUE(tls_client->sent());
  } else {
    fd = connect_not_reading("127.0.0.1", port_);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  }
  // The event loop and the one worker still answer others while that answer is stuck.
  CurlSession http;
  EXPECT_EQ(http.fetch(base() + "/meanwhile", request()).body, "at once /meanwhile\n");
  EXPECT_EQ(http.fetch(base() + "/worker", request()).body, "worker /worker\n");
  // The stuck answer is dropped once no byte has moved for the io deadline, and logged with
  // what went out.
  auto line = log_.wait_for("GET /big");
  ASSERT_FALSE(line.empty()) << "the stuck answer was never closed";
  EXPECT_LT(logged_bytes(line), KnownAnswers::kBigSize);
  if (fd >= 0) ::close(fd);
}

INSTANTIATE_TEST_SUITE_P(Schemes, AtOnceTest, ::testing::Values(Scheme::http, Scheme::https),
                         [](const ::testing::TestParamInfo<Scheme>& tested) { return tested.param == Scheme::http ? "http" : "https"; });

// What one connection from `source` to `port` receives for `requests` (sent at once,
// pipelined) until the server closes it (the last request must ask for that) or `deadline`.
std::string transcript_of(int port, const std::string& requests, const std::string& source = "127.0.0.1",
                          std::chrono::seconds deadline = std::chrono::seconds(30)) {
  int fd = connect_from(source, port);
  if (fd < 0) return "(no connection)";
  std::string received;
  if (::send(fd, requests.data(), requests.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(requests.size())) {
    const auto until = Clock::now() + deadline;
    char buffer[65536];
    while (Clock::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      received.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return received;
}

// The real server: JSON documents keep being answered while both workers are held by clients
// (from two addresses: one address gets at most half of the workers) that never read a 16 MiB
// file. Before, a document waited for a worker.
TEST(MirrorAtOnceTest, DocumentsAreAnsweredWhileEveryWorkerIsHeld) {
  TempDir temp;
  auto contents = fill_store(temp / "deps", temp / "work", 1024, 16 * 1024 * 1024);
  MirrorServe server(temp / "deps", {"--listen", "127.0.0.1:0", "--plain-http", "--threads", "2"}, temp / "serve.log");
  ASSERT_TRUE(server.started()) << server.log();
  int port = port_of(server.url());
  // Warm the object's check so that the stuck client holds the worker while writing.
  CurlSession http;
  ASSERT_EQ(http.fetch(server.url() + contents.artifact_path).status, 200);

  std::vector<int> stuck;
  for (const char* source : {"127.0.0.2", "127.0.0.4"}) {
    int fd = connect_not_reading(source, port);
    ASSERT_GE(fd, 0);
    stuck.push_back(fd);
    std::string get = "GET " + contents.artifact_path + " HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
    // Its answer has begun: a worker is writing it (and waits up to 30 s for the reader).
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 60'000), 1);
  }

  const std::string json = "/v1/mirror/registry.opentofu.org/hashicorp/null/3.2.4.json";
  // Within half the worker's 30 s write deadline.
  const auto received = transcript_of(port, "GET " + json + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "127.0.0.3",
                                      std::chrono::seconds(15));
  for (int held : stuck) ::close(held);
  ASSERT_EQ(received.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << "no answer while the worker was held: " << received;
  auto body = received.substr(received.find("\r\n\r\n") + 4);
  EXPECT_EQ(body, http.fetch(server.url() + json).body);
  EXPECT_NE(received.find("Connection: close\r\n"), std::string::npos);

  // HEAD, made at once too: the same length, no body, and 0 bytes in the log.
  HttpRequest head;
  head.method = "HEAD";
  auto headed = http.fetch(server.url() + json, head);
  EXPECT_EQ(headed.status, 200);
  EXPECT_EQ(headed.header("content-length"), std::to_string(body.size()));
  EXPECT_TRUE(headed.body.empty());
  EXPECT_EQ(server.stop(), 0);
  EXPECT_NE(server.log().find("\"HEAD " + json + " HTTP/1.1\" 200 0\n"), std::string::npos) << server.log();
  EXPECT_NE(server.log().find("\"GET " + json + " HTTP/1.1\" 200 " + std::to_string(body.size()) + "\n"), std::string::npos);
}

// A plain request (a GET or HEAD of a document with the headers of a usual client) is answered
// from a head prepared from cpp-httplib's first answer to it (mirror/plain_request.hpp): the
// same bytes, keep-alive or not, as cpp-httplib's answer to the same request with a header it
// ignores too (which keeps that request off the prepared path), and the same access-log lines.
TEST(MirrorAtOnceTest, PlainRequestsGetTheBytesCppHttplibWouldSend) {
  TempDir temp;
  auto contents = fill_store(temp / "deps", temp / "work");
  MirrorServe server(temp / "deps", {"--listen", "127.0.0.1:0", "--plain-http", "--watch-interval", "0"}, temp / "serve.log");
  ASSERT_TRUE(server.started()) << server.log();
  const int port = port_of(server.url());
  const std::vector<std::string> paths{
      "/v1/mirror/registry.opentofu.org/hashicorp/null/3.2.4.json",   // a document
      "/v1/mirror/registry.opentofu.org/hashicorp/null/index.json",
      "/v1/modules/registry.opentofu.org/nstance-dev/nstance/aws/2.0.1/download",  // a 204
      "/v2/",                                                         // a registry document
      "/v2",
      "/.well-known/terraform.json",
  };
  for (const auto& path : paths) {
    for (const std::string method : {"GET", "HEAD"}) {
      const std::string usual = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: t\r\nAccept-Encoding: gzip\r\n";
      const std::string unusual = usual + "X-Request-Id: 7\r\n";
      auto pipelined = [](const std::string& first) { return first + "\r\n" + first + "Connection: close\r\n\r\n"; };
      // The first plain exchange leaves the heads prepared; the second is answered from them.
      const auto first = transcript_of(port, pipelined(usual));
      const auto prepared = transcript_of(port, pipelined(usual));
      const auto by_httplib = transcript_of(port, pipelined(unusual));
      ASSERT_EQ(by_httplib.find("HTTP/1.1 "), 0u) << method << " " << path << ":\n" << by_httplib;
      EXPECT_NE(by_httplib.find("\r\nConnection: close\r\n"), std::string::npos) << by_httplib;
      EXPECT_NE(by_httplib.find("\r\nKeep-Alive: "), std::string::npos) << by_httplib;
      EXPECT_EQ(first, by_httplib) << method << " " << path;
      EXPECT_EQ(prepared, by_httplib) << method << " " << path;
    }
  }
  // The site reloaded: heads are prepared again from the new site (a new document length).
  add_null_release(temp / "deps", temp / "work", "3.2.5", {"linux_amd64"});
  ASSERT_EQ(::kill(server.pid(), SIGHUP), 0);
  const std::string added = "GET /v1/mirror/registry.opentofu.org/hashicorp/null/3.2.5.json HTTP/1.1\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < 200 && transcript_of(port, added).find("HTTP/1.1 200 ") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string index = "GET /v1/mirror/registry.opentofu.org/hashicorp/null/index.json HTTP/1.1\r\nConnection: close\r\n";
  const auto reloaded = transcript_of(port, index + "\r\n");
  EXPECT_NE(reloaded.find("3.2.5"), std::string::npos) << reloaded;
  EXPECT_EQ(transcript_of(port, index + "\r\n"), reloaded);
  EXPECT_EQ(transcript_of(port, index + "X-A: 1\r\n\r\n"), reloaded);

  EXPECT_EQ(server.stop(), 0);
  // One access-log line per request before the reload, the same for each way of answering
  // (but the time).
  std::istringstream log(server.log());
  std::map<std::string, std::size_t> lines;
  std::size_t loads = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.find("podplane: mirror serve: ") == 0 && line.find(" paths from ") != std::string::npos && ++loads == 2) break;
    auto open = line.find(" - - ["), close = line.find("] \"");
    if (open == std::string::npos || close == std::string::npos) continue;
    ++lines[line.substr(0, open) + line.substr(close)];
  }
  for (const auto& path : paths) {
    for (const std::string method : {"GET", "HEAD"}) {
      std::size_t of_this = 0;
      for (const auto& [line, count] : lines)
        if (line.find("\"" + method + " " + path + " HTTP/1.1\"") != std::string::npos) of_this += count;
      EXPECT_EQ(of_this, 6u) << method << " " << path << " in\n" << server.log();
      bool one_line = false;
      for (const auto& [line, count] : lines)
        one_line = one_line || (count == 6 && line.find("\"" + method + " " + path + " HTTP/1.1\"") != std::string::npos);
      EXPECT_TRUE(one_line) << method << " " << path << ": the six lines differ in\n" << server.log();
    }
  }
}

}  // namespace
}  // namespace podplane::serve_test
