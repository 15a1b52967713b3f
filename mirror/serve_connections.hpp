#pragma once
// The connections of `mirror serve`. Event loops (one per core) accept, refuse a client
// address that is over its connection cap, perform the TLS handshake and read each request
// head, all with deadlines. Small answers made in memory (RequestHandler::answer_at_once) are
// written by the loop itself, non-blocking and with the write deadline; a fixed pool of
// workers answers the other complete requests (files, streams). A client that sends
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
#include <string_view>
#include <vector>

#include "mirror/serve_metrics.hpp"

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

// One complete request head as the event loop read it, for RequestHandler::answer_at_once.
struct RequestHead {
  std::string_view bytes;  // request line and headers, up to and with the blank line
  const std::string& peer_address;
  int peer_port = 0;
  const std::string& local_address;
  int local_port = 0;
  bool last = false;  // the connection is closed after this answer
};

// A whole answer made in memory, written by the event loop without a worker.
struct PreparedAnswer {
  std::string bytes;          // status line, headers and body, as they go on the wire
  std::size_t head_size = 0;  // of which the status line and headers (not counted in the log)
  std::string log_line;       // the access-log line up to its byte count (appended after a space once sent)
  std::string log_line_end;   // what follows the byte count (the JSON access log's closing brace)
  bool close = false;         // the connection is closed after it
  RequestSample sample;       // for the handler's counters (RequestHandler::sent_at_once)
};

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Answers one request read from `stream`, whose head is complete. `last`: the connection is
  // closed after this answer. Sets `client_closes` when the client asked for that. False when
  // the connection must be closed now. Called on a worker, several at a time.
  virtual bool answer(httplib::Stream& stream, bool last, bool& client_closes) = 0;
  // The whole answer to `head` when it is small and made from memory alone (no file, no
  // request body), else nothing and the request goes to answer() on a worker. Called on the
  // event loops (several at a time, and beside the workers), so it must not block.
  virtual std::optional<PreparedAnswer> answer_at_once(const RequestHead& head) {
    (void)head;
    return std::nullopt;
  }
  // An answer of answer_at_once() went out, whole or (the client went away) `body_bytes` of
  // its body. Called on the event loop that wrote it: must not block.
  virtual void sent_at_once(const PreparedAnswer& answer, std::uint64_t body_bytes) {
    (void)answer;
    (void)body_bytes;
  }
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
  // Connections open and accepted, TLS handshakes, …: read by /metrics, from any thread.
  [[nodiscard]] const ConnectionCounters& counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// When the head of the request this worker thread is answering was complete (before it waited
// for a worker): where the request's duration starts. Now, outside a worker.
[[nodiscard]] std::chrono::steady_clock::time_point request_head_completed_at();

// The answer body bytes written so far on the connection this worker thread is answering
// (what really left, not what was meant to): the access log's count. 0 outside a worker.
[[nodiscard]] std::uint64_t body_bytes_sent();

}  // namespace podplane::mirror
