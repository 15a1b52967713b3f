// mirror serve under slow and greedy clients, with real sockets on loopback: clients that send
// their request one byte at a time, open and send nothing, or never read their answer must not
// starve /healthz; one client address is capped; a request head has a deadline.
// The assertions are "answers at all before a generous deadline", never a tight latency, so
// that they hold on a loaded two-core machine.
#include <gtest/gtest.h>

#include <atomic>

#include "tests/mirror/serve_fixture.hpp"

namespace podplane::serve_test {
namespace {

using podplane::test::read_file;
using podplane::test::TempDir;
using Clock = std::chrono::steady_clock;

// Sockets closed when the test ends.
struct Sockets {
  std::vector<int> fds;
  ~Sockets() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

// Sends one more byte of a request head that never ends to each socket, every `tick`, until
// stopped (bounded by `max_ticks`).
class Dribbler {
 public:
  Dribbler(const std::vector<int>& fds, std::string head, std::chrono::milliseconds tick, int max_ticks)
      : thread_([this, fds, head = std::move(head), tick, max_ticks] {
          for (int t = 0; t < max_ticks && !stop_; ++t) {
            for (int fd : fds) {
              char byte = head[static_cast<std::size_t>(t) % head.size()];
              (void)::send(fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
            }
            std::this_thread::sleep_for(tick);  // pacing the slow client, not waiting for a result
          }
        }) {}
  ~Dribbler() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class SlowClientsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    contents_ = fill_store(temp_ / "deps", temp_ / "work", 1024, 16 * 1024 * 1024);
    test::write_test_tls(temp_.path());
  }
  std::vector<std::string> https() const {
    return {"--listen", "127.0.0.1:0", "--tls-cert", (temp_ / "cert.pem").string(), "--tls-key", (temp_ / "key.pem").string()};
  }
  HttpRequest tls() const {
    HttpRequest request;
    request.ca_file = temp_ / "cert.pem";
    return request;
  }
  // /healthz from 127.0.0.1 answers status "ok" (libcurl gives up after 60 s).
  void expect_healthy(const std::string& base, const HttpRequest& request, const std::string& when) {
    CurlSession http;
    auto answer = http.fetch(base + "/healthz", request);
    EXPECT_EQ(answer.status, 200) << when << ": " << answer.error;
    EXPECT_NE(answer.body.find("\"status\": \"ok\""), std::string::npos) << when << ": " << answer.body;
  }

  void run_slow_clients(const std::string& base, const HttpRequest& request, bool https);

  TempDir temp_;
  StoreContents contents_;
};

// The request head a byte-at-a-time client sends: never complete, so a server that waits for
// it waits as long as the client keeps sending.
const std::string kEndlessHead = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

void SlowClientsTest::run_slow_clients(const std::string& base, const HttpRequest& request, bool https) {
  const std::string& artifact_path = contents_.artifact_path;
  const std::string& artifact_bytes = contents_.artifact_bytes;
  int port = port_of(base);
  Sockets dribblers, silent, readers;
  // 64 clients from 127.0.0.2 send their head (or, over TLS, their handshake) one byte at a time.
  for (int i = 0; i < 64; ++i) dribblers.fds.push_back(connect_from("127.0.0.2", port));
  // 16 from 127.0.0.3 connect and send nothing.
  for (int i = 0; i < 16; ++i) silent.fds.push_back(connect_from("127.0.0.3", port));
  for (int fd : dribblers.fds) ASSERT_GE(fd, 0);
  for (int fd : silent.fds) ASSERT_GE(fd, 0);
  auto connected = Clock::now();
  // A TLS record header announcing a 16 KiB handshake record that never completes.
  std::string tls_head = std::string("\x16\x03\x01\x40\x00", 5) + std::string(64, '\x01');
  Dribbler dribble(dribblers.fds, https ? tls_head : kEndlessHead, std::chrono::milliseconds(100), 3000);

  if (!https) {
    // 64 clients from 127.0.0.4 ask for a 16 MiB file and never read it: each holds a worker
    // that cannot finish writing.
    for (int i = 0; i < 64; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      int small = 4096;
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
      sockaddr_in local{};
      local.sin_family = AF_INET;
      ::inet_pton(AF_INET, "127.0.0.4", &local.sin_addr);
      sockaddr_in remote{};
      remote.sin_family = AF_INET;
      remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      remote.sin_port = htons(static_cast<uint16_t>(port));
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local), 0);
      ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote), 0);
      std::string get = "GET " + artifact_path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
      ASSERT_EQ(::send(fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
      readers.fds.push_back(fd);
    }
  }

  for (int round = 0; round < 3; ++round) expect_healthy(base, request, "round " + std::to_string(round));
  // A real download from another client still completes, byte for byte.
  CurlSession http;
  auto download = http.fetch(base + artifact_path, request);
  EXPECT_EQ(download.status, 200) << download.error;
  EXPECT_TRUE(download.body == artifact_bytes) << "the download is complete and exact";

  // All of that happened while the slow clients held their connections (the server's head
  // deadline is 60 s; on a machine so loaded that we got here later, this check says nothing).
  if (Clock::now() - connected < std::chrono::seconds(45)) {
    std::size_t open = 0;
    for (int fd : dribblers.fds) open += peer_closed(fd) ? 0 : 1;
    for (int fd : silent.fds) open += peer_closed(fd) ? 0 : 1;
    EXPECT_EQ(open, dribblers.fds.size() + silent.fds.size()) << "the slow clients were still connected";
  }
}

TEST_F(SlowClientsTest, SlowClientsDoNotStarveHealthzOverPlainHttp) {
  MirrorServe server(temp_ / "deps", {"--listen", "127.0.0.1:0", "--plain-http"}, temp_ / "serve.err");
  ASSERT_TRUE(server.started()) << server.log();
  run_slow_clients(server.url(), HttpRequest{}, false);
  EXPECT_EQ(server.stop(), 0);
}

TEST_F(SlowClientsTest, SlowClientsDoNotStarveHealthzOverHttps) {
  MirrorServe server(temp_ / "deps", https(), temp_ / "serve.err");
  ASSERT_TRUE(server.started()) << server.log();
  run_slow_clients(server.url(), tls(), true);
  EXPECT_EQ(server.stop(), 0);
}

TEST_F(SlowClientsTest, OneClientAddressIsCappedAndTheRestAreServed) {
  MirrorServe server(temp_ / "deps", {"--listen", "127.0.0.1:0", "--plain-http", "--max-connections-per-client", "4"},
                     temp_ / "serve.err");
  ASSERT_TRUE(server.started()) << server.log();
  int port = port_of(server.url());
  Sockets held;
  for (int i = 0; i < 4; ++i) held.fds.push_back(connect_from("127.0.0.2", port));
  for (int fd : held.fds) ASSERT_GE(fd, 0);
  // The fifth connection from the same address is refused: closed without an answer.
  Sockets over;
  over.fds.push_back(connect_from("127.0.0.2", port));
  ASSERT_GE(over.fds[0], 0);
  std::string get = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  (void)::send(over.fds[0], get.data(), get.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(wait_peer_closed(over.fds[0], std::chrono::seconds(30))) << "a connection over the cap is refused";
  // Another address is served meanwhile.
  expect_healthy(server.url(), HttpRequest{}, "with 127.0.0.2 at its cap");
  for (int fd : held.fds) EXPECT_FALSE(peer_closed(fd)) << "the four under the cap stay open";
  // Once one of the four goes away, the address may connect again.
  ::close(held.fds[0]);
  held.fds[0] = -1;
  bool served = false;
  for (int attempt = 0; attempt < 300 && !served; ++attempt) {  // the server notices the close asynchronously
    int fd = connect_from("127.0.0.2", port);
    if (fd < 0) break;
    (void)::send(fd, get.data(), get.size(), MSG_NOSIGNAL);
    std::string answer;
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < deadline && answer.find("\"status\": \"ok\"") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buffer[1024];
      ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      answer.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    served = answer.find("\"status\": \"ok\"") != std::string::npos;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(served) << "127.0.0.2 is served again below its cap";
  server.stop();
  EXPECT_NE(server.log().find("over the per-client cap of 4"), std::string::npos) << server.log();
}

TEST_F(SlowClientsTest, ARequestHeadHasADeadline) {
  MirrorServe server(temp_ / "deps", {"--listen", "127.0.0.1:0", "--plain-http", "--header-timeout", "1"},
                     temp_ / "serve.err");
  ASSERT_TRUE(server.started()) << server.log();
  int port = port_of(server.url());
  Sockets slow;
  slow.fds.push_back(connect_from("127.0.0.2", port));  // dribbles
  slow.fds.push_back(connect_from("127.0.0.3", port));  // silent
  for (int fd : slow.fds) ASSERT_GE(fd, 0);
  auto start = Clock::now();
  Dribbler dribble({slow.fds[0]}, kEndlessHead, std::chrono::milliseconds(50), 2000);
  for (int fd : slow.fds) EXPECT_TRUE(wait_peer_closed(fd, std::chrono::seconds(60))) << "closed at the head deadline";
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(900)) << "not before the deadline";
  expect_healthy(server.url(), HttpRequest{}, "after the deadline");
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace podplane::serve_test
