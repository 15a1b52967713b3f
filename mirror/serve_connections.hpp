#pragma once
// The connections of `mirror serve`. One event thread accepts, refuses a client address that
// is over its connection cap, performs the TLS handshake and reads each request head, all
// with deadlines; a fixed pool of workers answers complete requests only. A client that sends
// slowly, or nothing, therefore holds a socket for at most the head deadline but never a
// worker, and one client address is answered by at most half of the workers at a time (its
// other requests wait their turn). The answers come from a RequestHandler (cpp-httplib's
// request processing, serve.cpp). docs/mirror.md "Connections" describes what a client sees.
// listen() and run() are for one owner thread; stop() may be called from any thread.
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace httplib {
class Stream;
}

namespace podplane::mirror {

struct ConnectionLimits {
  std::size_t workers = 64;                // requests answered at the same time
  std::size_t per_client = 64;             // open connections per client address; more are refused
  std::chrono::seconds head_timeout{60};   // TLS handshake and request head, from connect or first byte
  std::chrono::seconds idle_timeout{5};    // keep-alive: how long to wait for the next request
  std::chrono::seconds io_timeout{30};     // a worker's read or write that makes no progress
  std::size_t max_head_bytes = 64 * 1024;  // request line and headers
  std::size_t keep_alive_requests = 1000;  // answers per connection
};

struct TlsFiles {
  std::filesystem::path cert;  // PEM chain
  std::filesystem::path key;   // PEM private key, unencrypted
};

// A --listen address, resolved.
struct ListenAddress {
  struct Resolved {
    sockaddr_storage address{};
    socklen_t length = 0;
  };
  std::string text;                // as given, for messages
  std::string host;                // without IPv6 brackets
  int port = 0;                    // 0: any free port
  std::vector<Resolved> resolved;  // in the resolver's order; the first that binds is used
};

// HOST:PORT or [IPV6]:PORT. UsageError naming `text` when it is not such an address or its
// host does not resolve.
[[nodiscard]] ListenAddress parse_listen_address(const std::string& text);

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Answers one request read from `stream`, whose head is complete. `last`: the connection is
  // closed after this answer. Sets `client_closes` when the client asked for that. False when
  // the connection must be closed now.
  virtual bool answer(httplib::Stream& stream, bool last, bool& client_closes) = 0;
};

class ConnectionServer {
 public:
  using LogLine = std::function<void(const std::string& line)>;
  // Error when the TLS files do not make a usable certificate and matching key.
  ConnectionServer(const ConnectionLimits& limits, const std::optional<TlsFiles>& tls, RequestHandler& handler,
                   LogLine log);
  ~ConnectionServer();
  ConnectionServer(const ConnectionServer&) = delete;
  ConnectionServer& operator=(const ConnectionServer&) = delete;

  // Binds and listens; returns the port. Error when the address is in use or not local.
  [[nodiscard]] int listen(const ListenAddress& address);
  // Serves until stop(). Answers still being written at stop() are cut off.
  void run();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The answer body bytes written so far on the connection this worker thread is answering
// (what really left, not what was meant to): the access log's count. 0 outside a worker.
[[nodiscard]] std::uint64_t body_bytes_sent();

}  // namespace podplane::mirror
