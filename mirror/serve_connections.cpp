#include "mirror/serve_connections.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <httplib.h>

#include "base/error.hpp"
#include "base/openssl.hpp"
#include "base/unique_fd.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// ---------------------------------------------------------------------------------------------
// OpenSSL handles.

using openssl::Bio;
using openssl::SslContext;
using openssl::SslSession;
using PrivateKey = openssl::Key;

void require_readable(const fs::path& file, const std::string& what) {
  std::error_code ec;
  auto status = fs::status(file, ec);
  if (ec || !fs::exists(status)) throw Error("cannot read the TLS " + what + " " + file.string() + ": no such file");
  if (!fs::is_regular_file(status)) throw Error("the TLS " + what + " " + file.string() + " is not a regular file");
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error("cannot read the TLS " + what + " " + file.string() + ": " + std::strerror(errno));
}

// What a PEM file holds, from its BEGIN lines: to say what is wrong with a file that fails.
enum class PemHolds { nothing, certificate, private_key, encrypted_key, other };

PemHolds pem_holds(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.find("-----BEGIN ") == std::string::npos) return PemHolds::nothing;
  if (head.find("-----BEGIN CERTIFICATE") != std::string::npos) return PemHolds::certificate;
  if (head.find("ENCRYPTED") != std::string::npos) return PemHolds::encrypted_key;
  if (head.find("PRIVATE KEY-----") != std::string::npos) return PemHolds::private_key;
  return PemHolds::other;
}

std::string key_type(const EVP_PKEY* key) {
  const char* name = key != nullptr ? EVP_PKEY_get0_type_name(key) : nullptr;
  return name != nullptr ? name : "unknown";
}

// A server context from a PEM chain and key, or an Error saying which file is wrong and how.
SslContext make_tls_context(const TlsFiles& files) {
  require_readable(files.cert, "certificate");
  require_readable(files.key, "key");
  ERR_clear_error();
  SslContext context(SSL_CTX_new(TLS_server_method()));
  if (!context) throw Error("cannot create a TLS context: " + openssl::last_error());
  SSL_CTX_set_min_proto_version(context.get(), TLS1_2_VERSION);
  // Renegotiation is a cheap way to make a server spend CPU; nothing here needs it.
  SSL_CTX_set_options(context.get(), SSL_OP_NO_RENEGOTIATION);
  // Partial writes: SSL_write returns as each record goes out, so that the bytes counted as
  // sent (the access log, /metrics) are what left when a client goes away half way. Without
  // it, a 1 MiB SSL_write counted nothing until all of it was out, and a client that closed
  // after half a MiB was logged as sent 0 bytes.
  SSL_CTX_set_mode(context.get(),
                   SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE);
  if (SSL_CTX_use_certificate_chain_file(context.get(), files.cert.c_str()) != 1) {
    std::string reason = openssl::last_error();
    auto holds = pem_holds(files.cert);
    throw Error("the TLS certificate " + files.cert.string() + " holds no usable PEM certificate: " +
                (holds == PemHolds::nothing                                                 ? "it holds no PEM block"
                 : holds == PemHolds::private_key || holds == PemHolds::encrypted_key ? "it holds a private key, not a certificate"
                 : holds == PemHolds::certificate ? "the certificate is damaged or cut short (" + reason + ")"
                                                  : reason));
  }
  X509* certificate = SSL_CTX_get0_certificate(context.get());  // owned by the context
  // The key is read here rather than by SSL_CTX_use_PrivateKey_file: a file that is not a key
  // and a key of another certificate are different mistakes with different fixes. A null
  // passphrase callback makes an encrypted key fail instead of prompting on the terminal.
  Bio bio(BIO_new_file(files.key.c_str(), "r"));
  if (!bio) throw Error("cannot read the TLS key " + files.key.string() + " (" + openssl::last_error() + ")");
  PrivateKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, [](char*, int, int, void*) { return 0; }, nullptr));
  if (!key) {
    std::string reason = openssl::last_error();
    auto holds = pem_holds(files.key);
    throw Error("the TLS key " + files.key.string() + " holds no usable PEM private key: " +
                (holds == PemHolds::nothing         ? "it holds no PEM block"
                 : holds == PemHolds::certificate   ? "it holds a certificate, not a private key"
                 : holds == PemHolds::encrypted_key ? "it is encrypted: remove its passphrase (openssl pkey -in KEY -out PLAIN)"
                                                    : reason));
  }
  // A key of another type goes into another slot without complaint: check_private_key catches it.
  if (SSL_CTX_use_PrivateKey(context.get(), key.get()) != 1 || SSL_CTX_check_private_key(context.get()) != 1) {
    ERR_clear_error();
    std::string certificate_type = key_type(certificate != nullptr ? X509_get0_pubkey(certificate) : nullptr);
    throw Error("the TLS key " + files.key.string() + " does not match the certificate " + files.cert.string() + ": " +
                (certificate_type == key_type(key.get())
                     ? "it is the key of another certificate"
                     : "the certificate has an " + certificate_type + " key, this is an " + key_type(key.get()) + " key"));
  }
  return context;
}

// ---------------------------------------------------------------------------------------------
// One client connection. Its event loop owns it while it waits for a request head and while
// it writes an answer made at once; a worker owns it while answering; ownership moves under
// Impl::mutex, so only one thread touches it.

struct Connection {
  enum class Phase { handshake, head, idle, writing };

  UniqueFd fd;
  SslSession ssl;  // null for plain HTTP
  std::string peer_address, local_address;
  int peer_port = 0, local_port = 0;

  std::string input;         // bytes read and not yet taken by the request handler
  std::size_t consumed = 0;  // … of which the handler took these
  std::size_t scanned = 0;   // input[0, scanned) holds no end of head
  std::size_t head_end = 0;  // set by head_complete(): where the first complete head ends
  Phase phase = Phase::head;
  Clock::time_point deadline;
  std::size_t loop = 0;      // the event loop that holds it between requests
  bool want_write = false;   // TLS needs the socket writable to go on (or a write is blocked)
  std::uint32_t watched = 0; // the epoll events registered for it
  std::size_t answered = 0;

  // While its event loop writes an answer made at once (Phase::writing):
  std::optional<PreparedAnswer> out;
  std::size_t out_sent = 0;

  // While a worker answers:
  Clock::time_point read_deadline;
  bool head_written = false;
  std::uint64_t body_bytes = 0;
  Clock::time_point head_complete_at{};  // of the request being answered: its wait for a worker counts
  bool broken = false;
  bool keep = false;  // set by the worker: wait for the next request

  std::size_t pending() const { return input.size() - consumed; }
  bool head_complete() {
    std::size_t from = std::max(consumed, scanned >= 3 ? scanned - 3 : std::size_t{0});
    auto end = input.find("\r\n\r\n", from);
    scanned = input.size();
    if (end == std::string::npos) return false;
    head_end = end + 4;
    return true;
  }
};

thread_local Connection* current_connection = nullptr;

// How long a worker waits for the next request of a keep-alive connection before handing it
// back to its event loop, and how many requests in a row it answers before it does anyway
// (so that other connections get their turn). Handing back costs two thread switches per
// request; keeping the connection costs a worker for the grace time.
constexpr auto kKeepAliveGrace = std::chrono::milliseconds(20);
constexpr std::size_t kMostInARow = 100;

// Event loops: one per core, at most this many (past that, workers and the kernel need the cores).
constexpr std::size_t kMostLoops = 4;

// Waits until `fd` is ready for `events` or `deadline` passes; true when ready (an error or
// hangup counts as ready: the next call reports it).
bool wait_for(int fd, short events, Clock::time_point deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 60'000)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return true;
  }
}

// What cpp-httplib reads a request from and writes its answer to: first the head bytes the
// event loop read, then the socket (non-blocking, waited on with poll and deadlines).
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(Connection& connection, const ConnectionLimits& limits) : c_(connection), limits_(limits) {}

  bool is_readable() const override {
    return c_.pending() > 0 || (c_.ssl && SSL_pending(c_.ssl.get()) > 0) || wait_for(c_.fd.get(), POLLIN, c_.read_deadline);
  }
  bool is_writable() const override { return !c_.broken; }

  ssize_t read(char* data, size_t size) override {
    if (c_.pending() > 0) {
      std::size_t n = std::min(size, c_.pending());
      std::memcpy(data, c_.input.data() + c_.consumed, n);
      c_.consumed += n;
      return static_cast<ssize_t>(n);
    }
    while (!c_.broken) {
      short wait = POLLIN;
      if (c_.ssl) {
        ERR_clear_error();
        int n = SSL_read(c_.ssl.get(), data, static_cast<int>(std::min<size_t>(size, 1 << 20)));
        if (n > 0) return n;
        int error = SSL_get_error(c_.ssl.get(), n);
        if (error == SSL_ERROR_ZERO_RETURN) return 0;
        if (error == SSL_ERROR_WANT_WRITE) wait = POLLOUT;
        else if (error != SSL_ERROR_WANT_READ) break;
      } else {
        ssize_t n = ::recv(c_.fd.get(), data, size, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) break;
      }
      // A request body gets no longer than a request head would.
      if (!wait_for(c_.fd.get(), wait, c_.read_deadline)) break;
    }
    c_.broken = true;
    return -1;
  }

  ssize_t write(const char* data, size_t size) override {
    // The first write of an answer is its status line and headers (cpp-httplib writes them in
    // one piece), unless it is an interim "HTTP/1.1 1xx"; the rest is body, which is counted.
    bool head = !c_.head_written;
    if (head && !(size > 10 && std::memcmp(data, "HTTP/1.1 1", 10) == 0)) c_.head_written = true;
    std::size_t done = 0;
    auto stall_deadline = Clock::now() + limits_.io_timeout;
    while (done < size && !c_.broken) {
      short wait = POLLOUT;
      std::size_t wrote = 0;
      if (c_.ssl) {
        ERR_clear_error();
        int n = SSL_write(c_.ssl.get(), data + done, static_cast<int>(std::min<size_t>(size - done, 1 << 20)));
        if (n > 0) {
          wrote = static_cast<std::size_t>(n);
        } else {
          int error = SSL_get_error(c_.ssl.get(), n);
          if (error == SSL_ERROR_WANT_READ) wait = POLLIN;
          else if (error != SSL_ERROR_WANT_WRITE) break;
        }
      } else {
        ssize_t n = ::send(c_.fd.get(), data + done, size - done, MSG_NOSIGNAL);
        if (n > 0) wrote = static_cast<std::size_t>(n);
        else if (n < 0 && errno == EINTR) continue;
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;
      }
      if (wrote > 0) {
        done += wrote;
        if (!head) c_.body_bytes += wrote;
        stall_deadline = Clock::now() + limits_.io_timeout;
        continue;
      }
      if (!wait_for(c_.fd.get(), wait, stall_deadline)) break;  // the client stopped reading
    }
    if (done < size) {
      c_.broken = true;
      return -1;
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.peer_address;
    port = c_.peer_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.local_address;
    port = c_.local_port;
  }
  socket_t socket() const override { return c_.fd.get(); }

 private:
  Connection& c_;
  const ConnectionLimits& limits_;
};

// "1.2.3.4" or "::1" (an IPv4-mapped IPv6 peer is written as IPv4, so that it shares the cap
// of the same client reaching an IPv4 socket).
std::pair<std::string, int> numeric_address(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    return {text, ntohs(v4.sin_port)};
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {
      ::inet_ntop(AF_INET, &v6.sin6_addr.s6_addr[12], text, sizeof text);
    } else {
      ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    }
    return {text, ntohs(v6.sin6_port)};
  }
  return {"?", 0};
}

bool is_host_name_or_address(const std::string& host) {
  return std::all_of(host.begin(), host.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':' || c == '%';
  });
}

// A log line at most every `interval`, counting what happened in between.
class Throttled {
 public:
  explicit Throttled(std::chrono::seconds interval) : interval_(interval) {}
  // Counts one event; returns the count to report when a line is due (else 0).
  std::size_t note() {
    ++count_;
    auto now = Clock::now();
    if (now < next_) return 0;
    next_ = now + interval_;
    return std::exchange(count_, 0);
  }

 private:
  std::chrono::seconds interval_;
  Clock::time_point next_{};
  std::size_t count_ = 0;
};

}  // namespace

ListenAddress parse_listen_address(const std::string& text) {
  auto usage = [&text](const std::string& what) { return UsageError("--listen " + what + "; got '" + text + "'"); };
  ListenAddress result;
  result.text = text;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos) throw usage("has an unclosed '[' (an IPv6 address is written [::1]:8443)");
    if (close + 1 >= text.size() || text[close + 1] != ':') throw usage("wants [IPV6]:PORT, e.g. [::1]:8443");
    result.host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    auto colon = text.find(':');
    if (colon == std::string::npos) throw usage("wants HOST:PORT, e.g. 0.0.0.0:8443 or [::1]:8443");
    if (text.find(':', colon + 1) != std::string::npos)
      throw usage("wants HOST:PORT with one ':' (an IPv6 address goes in brackets, e.g. [::1]:8443)");
    result.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (result.host.empty()) throw usage("needs a host: 0.0.0.0 for every IPv4 address, [::] for every address");
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(port_text) > 65535)
    throw usage("port must be a number from 0 to 65535 (0 picks a free port)");
  result.port = std::stoi(port_text);
  if (!is_host_name_or_address(result.host)) throw usage("host must be an IP address or a host name");

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int status = ::getaddrinfo(result.host.c_str(), port_text.c_str(), &hints, &found);
  if (status != 0 || found == nullptr)
    throw usage("host '" + result.host + "' does not resolve (" + ::gai_strerror(status) + ")");
  for (const addrinfo* at = found; at != nullptr; at = at->ai_next) {
    ListenAddress::Resolved one;
    std::memcpy(&one.address, at->ai_addr, std::min<std::size_t>(at->ai_addrlen, sizeof one.address));
    one.length = at->ai_addrlen;
    result.resolved.push_back(one);
  }
  ::freeaddrinfo(found);
  return result;
}

// ---------------------------------------------------------------------------------------------

struct ConnectionServer::Impl {
  struct EventLoop;

  ConnectionLimits limits;
  SslContext tls;
  RequestHandler& handler;
  LogLine log;
  UniqueFd listener;
  std::size_t max_connections = 0;
  std::atomic<bool> stopping{false};
  ConnectionCounters counters;
  // One event loop per core (at most kMostLoops): the first also accepts and deals the new
  // connections out in turn; each keeps its connections between requests.
  std::vector<std::unique_ptr<EventLoop>> loops;
  std::size_t next_loop = 0;  // the first loop's only

  // Shared by the loops, under `counts_mutex`: taken per connection, never per request.
  std::mutex counts_mutex;
  std::map<std::string, std::size_t> open_by_client;
  std::size_t open = 0;
  Throttled refused_log{std::chrono::seconds(10)}, timeout_log{std::chrono::seconds(10)};

  // Shared with the workers, under `mutex`.
  std::mutex mutex;
  std::condition_variable ready_changed;
  std::deque<std::unique_ptr<Connection>> ready;          // complete heads waiting for a worker
  std::map<std::string, std::size_t> busy_by_client;      // workers answering each address
  std::set<int> answering;                                // fds being answered (cut off at stop)
  bool workers_stop = false;
  std::vector<std::thread> workers;

  Impl(const ConnectionLimits& connection_limits, RequestHandler& request_handler, LogLine log_line)
      : limits(connection_limits), handler(request_handler), log(std::move(log_line)) {}

  std::size_t worker_share() const { return std::max<std::size_t>(1, limits.workers / 2); }

  // --- the event loops ----------------------------------------------------------------------

  struct EventLoop {
    Impl& server;
    std::size_t index;
    UniqueFd events, wake;
    // Shared state, by the names the loop's code uses.
    const ConnectionLimits& limits;
    RequestHandler& handler;
    const LogLine& log;
    std::atomic<bool>& stopping;
    std::mutex& mutex;
    std::condition_variable& ready_changed;
    std::deque<std::unique_ptr<Connection>>& ready;

    // This loop's thread only.
    std::map<int, std::unique_ptr<Connection>> waiting;  // by fd: registered with epoll and a timer
    std::set<std::pair<Clock::time_point, int>> timers;
    bool accepting = false;  // the first loop's only
    Clock::time_point accept_retry{};
    std::string log_batch;  // access-log lines of answers made here, written once per wake-up
    std::thread thread;

    // Under server.mutex: connections back from the workers, and new ones dealt to this loop.
    std::vector<std::unique_ptr<Connection>> returned, dealt;

    EventLoop(Impl& owner, std::size_t loop_index)
        : server(owner),
          index(loop_index),
          events(::epoll_create1(EPOLL_CLOEXEC)),
          wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
          limits(owner.limits),
          handler(owner.handler),
          log(owner.log),
          stopping(owner.stopping),
          mutex(owner.mutex),
          ready_changed(owner.ready_changed),
          ready(owner.ready) {
      if (!events || !wake) throw Error(std::string("mirror serve: cannot set up event polling: ") + std::strerror(errno));
      watch(wake.get(), EPOLLIN, EPOLL_CTL_ADD);
    }

    void wake_up() {
      std::uint64_t one = 1;
      (void)!::write(wake.get(), &one, sizeof one);
    }

    // The access-log lines batched since the last call, in one write.
    void flush_log() {
      if (log_batch.empty()) return;
      log_batch.pop_back();  // the last '\n': the log adds one per call
      log(log_batch);
      log_batch.clear();
    }

    // Serves until the server stops.
    void serve() {
      std::vector<epoll_event> ready_events(256);
      while (!stopping) {
        int n = ::epoll_wait(events.get(), ready_events.data(), static_cast<int>(ready_events.size()), next_timeout_ms());
        if (n < 0 && errno != EINTR) {
          log(std::string("podplane: mirror serve: event polling failed: ") + std::strerror(errno));
          server.stopping = true;
          for (auto& loop : server.loops) loop->wake_up();
          break;
        }
        for (int i = 0; i < n; ++i) {
          int fd = ready_events[static_cast<std::size_t>(i)].data.fd;
          if (index == 0 && server.listener && fd == server.listener.get()) {
            accept_all();
          } else if (fd == wake.get()) {
            std::uint64_t count = 0;
            (void)!::read(fd, &count, sizeof count);
            take_returned();
          } else {
            advance(fd);
          }
        }
        expire();
        flush_log();
      }
    }


    void watch(int fd, std::uint32_t interest, int op) {
      epoll_event event{};
      event.events = interest;
      event.data.fd = fd;
      ::epoll_ctl(events.get(), op, fd, &event);
    }

    // What the loop waits for on `c`: to read its next request (and see it hang up), or
    // to go on with a TLS handshake or an answer once the socket lets it. An answer being
    // written does not watch for a hang-up: the write sees it, and a half-closed client would
    // otherwise wake the loop over and over.
    static std::uint32_t interest(const Connection& c) {
      if (c.phase == Connection::Phase::writing) return c.want_write ? EPOLLOUT : EPOLLIN;
      return (c.want_write ? EPOLLOUT : EPOLLIN) | EPOLLRDHUP;
    }
    void rewatch(Connection& c) {
      if (auto wanted = interest(c); wanted != c.watched) {
        watch(c.fd.get(), wanted, EPOLL_CTL_MOD);
        c.watched = wanted;
      }
    }

    void hold(std::unique_ptr<Connection> c) {
      int fd = c->fd.get();
      c->loop = index;
      c->watched = interest(*c);
      watch(fd, c->watched, EPOLL_CTL_ADD);
      timers.insert({c->deadline, fd});
      waiting[fd] = std::move(c);
    }

    std::unique_ptr<Connection> release(int fd) {
      auto it = waiting.find(fd);
      auto c = std::move(it->second);
      waiting.erase(it);
      timers.erase({c->deadline, fd});
      ::epoll_ctl(events.get(), EPOLL_CTL_DEL, fd, nullptr);
      return c;
    }

    void set_deadline(Connection& c, Clock::time_point deadline) {
      timers.erase({c.deadline, c.fd.get()});
      c.deadline = deadline;
      timers.insert({deadline, c.fd.get()});
    }

    void close_connection(std::unique_ptr<Connection> c) {
      if (c->out) log_answer(*c);  // cut off half way: logged with what was sent
      if (c->ssl && c->phase != Connection::Phase::handshake) {
        ERR_clear_error();
        (void)SSL_shutdown(c->ssl.get());  // best effort close_notify; the socket does not wait for it
      }
      bool room = false;
      {
        std::lock_guard lock(server.counts_mutex);
        auto it = server.open_by_client.find(c->peer_address);
        if (it != server.open_by_client.end() && --it->second == 0) server.open_by_client.erase(it);
        --server.open;
        room = server.open < server.max_connections;
      }
      server.counters.open.fetch_sub(1, std::memory_order_relaxed);
      c.reset();
      // The first loop resumes at once; when another loop made room, the first one's retry does.
      if (index == 0 && !accepting && room && !stopping) resume_accepting();
    }

    void resume_accepting() {
      if (server.listener && !accepting) {
        watch(server.listener.get(), EPOLLIN, EPOLL_CTL_ADD);
        accepting = true;
      }
    }
    void pause_accepting() {
      if (accepting) {
        ::epoll_ctl(events.get(), EPOLL_CTL_DEL, server.listener.get(), nullptr);
        accepting = false;
      }
    }

    void accept_all() {
      while (accepting) {
        std::size_t open_now = 0;
        {
          std::lock_guard lock(server.counts_mutex);
          open_now = server.open;
        }
        if (open_now >= server.max_connections) {
          // Out of descriptors to spare: leave new clients in the listen backlog until one closes
          // (this loop's own closes resume at once, the other loops' at the next retry).
          pause_accepting();
          accept_retry = Clock::now() + std::chrono::milliseconds(200);
          log("podplane: mirror serve: " + std::to_string(open_now) + " connections open, the most this process can hold; "
              "new ones wait until one closes");
          return;
        }
        sockaddr_storage peer{};
        socklen_t length = sizeof peer;
        int fd = ::accept4(server.listener.get(), reinterpret_cast<sockaddr*>(&peer), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) return;
          // EMFILE, ENFILE, ENOBUFS, ENOMEM: try again shortly rather than spin on a readable listener.
          log(std::string("podplane: mirror serve: cannot accept a connection: ") + std::strerror(errno));
          pause_accepting();
          accept_retry = Clock::now() + std::chrono::milliseconds(200);
          return;
        }
        auto c = std::make_unique<Connection>();
        c->fd = UniqueFd(fd);
        std::tie(c->peer_address, c->peer_port) = numeric_address(peer);
        bool over_cap = false;
        std::size_t refused = 0;
        {
          std::lock_guard lock(server.counts_mutex);
          auto& count = server.open_by_client[c->peer_address];
          over_cap = count >= limits.per_client;
          if (over_cap) {
            if (count == 0) server.open_by_client.erase(c->peer_address);
            refused = server.refused_log.note();
          } else {
            ++count;
            ++server.open;
          }
        }
        if (over_cap) {
          server.counters.refused_per_client.fetch_add(1, std::memory_order_relaxed);
          if (refused > 0)
            log("podplane: mirror serve: refused " + std::to_string(refused) + " connection(s) from " + c->peer_address +
                " over the per-client cap of " + std::to_string(limits.per_client) +
                " open connections (--max-connections-per-client)");
          continue;  // closed without an answer
        }
        server.counters.accepted.fetch_add(1, std::memory_order_relaxed);
        server.counters.open.fetch_add(1, std::memory_order_relaxed);
        sockaddr_storage local{};
        length = sizeof local;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
        std::tie(c->local_address, c->local_port) = numeric_address(local);
        // Headers and small answers go out at once: without it, Nagle plus delayed ACKs add ~40 ms
        // to every keep-alive JSON answer (measured by bench/serve).
        int yes = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
        if (server.tls) {
          c->ssl.reset(SSL_new(server.tls.get()));
          if (!c->ssl || SSL_set_fd(c->ssl.get(), fd) != 1) {
            close_connection(std::move(c));
            continue;
          }
          SSL_set_accept_state(c->ssl.get());
          c->phase = Connection::Phase::handshake;
        }
        c->deadline = Clock::now() + limits.head_timeout;
        server.deal(std::move(c));
      }
    }

    void note_timeout(const Connection& c) {
      server.counters.head_timeouts.fetch_add(1, std::memory_order_relaxed);
      std::size_t closed = 0;
      {
        std::lock_guard lock(server.counts_mutex);
        closed = server.timeout_log.note();
      }
      if (closed > 0)
        log("podplane: mirror serve: closed " + std::to_string(closed) + " connection(s) that sent no complete request within " +
            std::to_string(limits.head_timeout.count()) + " s (--header-timeout), the last from " + c.peer_address);
    }

    // Moves a held connection on: handshake, write what an answer made at once still has to send,
    // read what arrived, answer a complete head at once or hand it to a worker.
    void advance(int fd) {
      auto it = waiting.find(fd);
      if (it == waiting.end()) return;
      Connection& c = *it->second;
      c.want_write = false;
      if (c.phase == Connection::Phase::handshake) {
        ERR_clear_error();
        int done = SSL_do_handshake(c.ssl.get());
        if (done != 1) {
          int error = SSL_get_error(c.ssl.get(), done);
          if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
            server.counters.tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
            return close_connection(release(fd));
          }
          c.want_write = error == SSL_ERROR_WANT_WRITE;
          return rewatch(c);
        }
        server.counters.tls_handshakes.fetch_add(1, std::memory_order_relaxed);
        c.phase = Connection::Phase::head;
      }
      char buffer[16 * 1024];
      // A read shorter than the buffer (with nothing left inside TLS) emptied the socket: the
      // next read would only say EAGAIN, a syscall per request; epoll reports what comes next.
      bool drained = false;
      while (true) {
        if (c.phase == Connection::Phase::writing) {
          switch (write_out(c)) {
            case Written::blocked:
              return rewatch(c);  // the rest when the socket can take it; nothing more is read
            case Written::failed:
              return close_connection(release(fd));
            case Written::all:
              if (!next_request(c)) return close_connection(release(fd));
              continue;  // a pipelined request may be waiting in `input` already
          }
        }
        if (c.pending() > 0 && c.head_complete()) {
          if (answer_here(c)) continue;
          auto handed = release(fd);
          handed->head_complete_at = Clock::now();
          std::lock_guard lock(mutex);
          ready.push_back(std::move(handed));
          ready_changed.notify_one();
          return;
        }
        if (c.pending() >= limits.max_head_bytes) return close_connection(release(fd));
        if (drained) break;
        std::size_t got = 0;
        if (c.ssl) {
          ERR_clear_error();
          int n = SSL_read(c.ssl.get(), buffer, sizeof buffer);
          if (n > 0) {
            got = static_cast<std::size_t>(n);
          } else {
            int error = SSL_get_error(c.ssl.get(), n);
            if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) return close_connection(release(fd));
            c.want_write = error == SSL_ERROR_WANT_WRITE;
          }
        } else {
          ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
          if (n == 0) return close_connection(release(fd));
          if (n < 0 && errno == EINTR) continue;
          if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return close_connection(release(fd));
          if (n > 0) got = static_cast<std::size_t>(n);
        }
        if (got == 0) break;  // nothing more for now
        drained = got < sizeof buffer && !(c.ssl && SSL_has_pending(c.ssl.get()) == 1);
        c.input.append(buffer, got);
        if (c.phase == Connection::Phase::idle) {  // the next request begins: it gets a head deadline
          c.phase = Connection::Phase::head;
          set_deadline(c, Clock::now() + limits.head_timeout);
        }
      }
      rewatch(c);
    }

    // Asks the handler for the whole answer to the head at the front of `c.input`; when it has
    // one, `c` starts writing it (the head is taken) and the write gets the io deadline.
    bool answer_here(Connection& c) {
      RequestHead head{std::string_view(c.input).substr(c.consumed, c.head_end - c.consumed),
                       c.peer_address,
                       c.peer_port,
                       c.local_address,
                       c.local_port,
                       c.answered + 1 >= limits.keep_alive_requests || stopping};
      std::optional<PreparedAnswer> answer;
      try {
        answer = handler.answer_at_once(head);
      } catch (...) {
        return false;  // a worker answers it the usual way, errors and all
      }
      if (!answer) return false;
      if (head.last) answer->close = true;
      c.consumed = c.head_end;
      c.out = std::move(answer);
      c.out_sent = 0;
      c.phase = Connection::Phase::writing;
      set_deadline(c, Clock::now() + limits.io_timeout);
      return true;
    }

    enum class Written { all, blocked, failed };

    // Writes what is left of `c.out` without blocking. Progress moves the io deadline on.
    Written write_out(Connection& c) {
      const std::string& bytes = c.out->bytes;
      std::size_t before = c.out_sent;
      Written result = Written::all;
      while (c.out_sent < bytes.size()) {
        const char* data = bytes.data() + c.out_sent;
        std::size_t left = bytes.size() - c.out_sent;
        if (c.ssl) {
          ERR_clear_error();
          // A retry after WANT_* passes the same length: the buffer may move (the context
          // accepts a moving write buffer), the length may not change.
          int n = SSL_write(c.ssl.get(), data, static_cast<int>(std::min<std::size_t>(left, 1 << 20)));
          if (n > 0) {
            c.out_sent += static_cast<std::size_t>(n);
            continue;
          }
          int error = SSL_get_error(c.ssl.get(), n);
          if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) return Written::failed;
          c.want_write = error == SSL_ERROR_WANT_WRITE;
        } else {
          ssize_t n = ::send(c.fd.get(), data, left, MSG_NOSIGNAL);
          if (n > 0) {
            c.out_sent += static_cast<std::size_t>(n);
            continue;
          }
          if (n < 0 && errno == EINTR) continue;
          if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return Written::failed;
          c.want_write = true;
        }
        result = Written::blocked;
        break;
      }
      if (result == Written::blocked && c.out_sent > before) set_deadline(c, Clock::now() + limits.io_timeout);
      return result;
    }

    // The access-log line of the answer made at once on `c`, with the body bytes that really
    // left (the head is not counted, as for a worker's answer).
    void log_answer(Connection& c) {
      std::size_t body = c.out_sent > c.out->head_size ? c.out_sent - c.out->head_size : 0;
      log_batch += c.out->log_line;
      log_batch += ' ';
      log_batch += std::to_string(body);
      log_batch += c.out->log_line_end;
      log_batch += '\n';
      handler.sent_at_once(*c.out, body);
    }

    // After an answer made at once went out whole: logs it; false when the connection closes now,
    // else `c` waits for (or already holds) its next request, with the deadline that applies.
    bool next_request(Connection& c) {
      log_answer(c);
      bool close = c.out->close || stopping;
      c.out.reset();
      ++c.answered;
      if (close) return false;
      c.input.erase(0, c.consumed);
      c.consumed = 0;
      c.scanned = 0;
      c.phase = c.pending() > 0 ? Connection::Phase::head : Connection::Phase::idle;
      set_deadline(c, Clock::now() + (c.pending() > 0 ? limits.head_timeout : limits.idle_timeout));
      return true;
    }

    // New connections dealt to this loop: held. Connections back from the workers: closed, or
    // held for their next request.
    void take_returned() {
      std::vector<std::unique_ptr<Connection>> back, fresh;
      {
        std::lock_guard lock(mutex);
        back.swap(returned);
        fresh.swap(dealt);
      }
      for (auto& c : fresh) {
        if (stopping) close_connection(std::move(c));
        else hold(std::move(c));
      }
      for (auto& c : back) {
        if (!c->keep || stopping) {
          close_connection(std::move(c));
          continue;
        }
        c->input.erase(0, c->consumed);
        c->consumed = 0;
        c->scanned = 0;
        c->want_write = false;
        bool more = c->pending() > 0 || (c->ssl && SSL_pending(c->ssl.get()) > 0);
        c->phase = c->pending() > 0 ? Connection::Phase::head : Connection::Phase::idle;
        c->deadline = Clock::now() + (c->pending() > 0 ? limits.head_timeout : limits.idle_timeout);
        int fd = c->fd.get();
        hold(std::move(c));
        if (more) advance(fd);  // pipelined or TLS-buffered bytes: epoll would not report them
      }
    }

    void expire() {
      auto now = Clock::now();
      while (!timers.empty() && timers.begin()->first <= now) {
        auto c = release(timers.begin()->second);
        if (c->phase != Connection::Phase::idle && c->phase != Connection::Phase::writing) note_timeout(*c);
        close_connection(std::move(c));
      }
      if (!accepting && accept_retry != Clock::time_point{} && now >= accept_retry) {
        std::lock_guard lock(server.counts_mutex);
        if (server.open < server.max_connections) {
          accept_retry = {};
          resume_accepting();
        } else {
          accept_retry = now + std::chrono::milliseconds(200);
        }
      }
    }

    int next_timeout_ms() const {
      Clock::time_point next = Clock::time_point::max();
      if (!timers.empty()) next = timers.begin()->first;
      if (accept_retry != Clock::time_point{}) next = std::min(next, accept_retry);
      if (next == Clock::time_point::max()) return -1;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
      return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
    }
  };

  // Hands a new connection to the next loop in turn (called by the first loop, which accepts).
  void deal(std::unique_ptr<Connection> c) {
    EventLoop& to = *loops[next_loop];
    next_loop = (next_loop + 1) % loops.size();
    if (to.index == 0) return to.hold(std::move(c));
    {
      std::lock_guard lock(mutex);
      to.dealt.push_back(std::move(c));
    }
    to.wake_up();
  }

  // --- the workers --------------------------------------------------------------------------

  // The oldest ready connection whose client has not used up its share of the workers.
  std::deque<std::unique_ptr<Connection>>::iterator eligible() {
    return std::find_if(ready.begin(), ready.end(), [this](const std::unique_ptr<Connection>& c) {
      auto it = busy_by_client.find(c->peer_address);
      return it == busy_by_client.end() || it->second < worker_share();
    });
  }

  void work() {
    while (true) {
      std::unique_ptr<Connection> c;
      {
        std::unique_lock lock(mutex);
        ready_changed.wait(lock, [this] { return workers_stop || eligible() != ready.end(); });
        if (workers_stop) return;
        auto it = eligible();
        c = std::move(*it);
        ready.erase(it);
        ++busy_by_client[c->peer_address];
        answering.insert(c->fd.get());
      }
      answer_one(*c);
      // A keep-alive client usually sends its next request at once: answer it here while it
      // does, and give the connection back to its event loop once it pauses. A connection
      // holds a worker only while its requests keep arriving complete.
      for (std::size_t more = 0; more < kMostInARow && c->keep && !stopping && next_head_arrives(*c); ++more) answer_one(*c);
      {
        std::lock_guard lock(mutex);
        auto it = busy_by_client.find(c->peer_address);
        if (--it->second == 0) busy_by_client.erase(it);
        answering.erase(c->fd.get());
        EventLoop& home = *loops[c->loop];
        home.returned.push_back(std::move(c));
        home.wake_up();
      }
      ready_changed.notify_one();  // a request of that client may be eligible now
    }
  }

  static bool client_gone(Connection& c) {
    c.keep = false;
    return false;
  }

  // Reads what arrives on `c` within kKeepAliveGrace; true once a whole request head is there.
  bool next_head_arrives(Connection& c) {
    c.input.erase(0, c.consumed);
    c.consumed = 0;
    c.scanned = 0;
    auto grace = Clock::now() + kKeepAliveGrace;
    char buffer[16 * 1024];
    while (true) {
      if (c.pending() > 0 && c.head_complete()) {
        c.head_complete_at = Clock::now();
        return true;
      }
      if (c.pending() >= limits.max_head_bytes) return false;
      short wait = POLLIN;
      if (c.ssl) {
        ERR_clear_error();
        int n = SSL_read(c.ssl.get(), buffer, sizeof buffer);
        if (n > 0) {
          c.input.append(buffer, static_cast<std::size_t>(n));
          continue;
        }
        int error = SSL_get_error(c.ssl.get(), n);
        if (error == SSL_ERROR_WANT_WRITE) wait = POLLOUT;
        else if (error != SSL_ERROR_WANT_READ) return client_gone(c);
      } else {
        ssize_t n = ::recv(c.fd.get(), buffer, sizeof buffer, 0);
        if (n > 0) {
          c.input.append(buffer, static_cast<std::size_t>(n));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return client_gone(c);
      }
      if (!wait_for(c.fd.get(), wait, grace)) return false;  // a pause: back to the event loop
    }
  }

  void answer_one(Connection& c) {
    c.read_deadline = Clock::now() + limits.head_timeout;
    c.head_written = false;
    c.body_bytes = 0;
    bool last = c.answered + 1 >= limits.keep_alive_requests || stopping;
    bool client_closes = false;
    bool ok = false;
    ConnectionStream stream(c, limits);
    current_connection = &c;
    try {
      ok = handler.answer(stream, last, client_closes);
    } catch (const std::exception& error) {
      log(std::string("podplane: mirror serve: ") + error.what());
    } catch (...) {
      log("podplane: mirror serve: a request failed");
    }
    current_connection = nullptr;
    ++c.answered;
    c.keep = ok && !client_closes && !last && !c.broken;
  }
};

ConnectionServer::ConnectionServer(const ConnectionLimits& limits, const std::optional<TlsFiles>& tls,
                                   RequestHandler& handler, LogLine log)
    : impl_(std::make_unique<Impl>(limits, handler, std::move(log))) {
  if (tls) impl_->tls = make_tls_context(*tls);
  std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t i = 0; i < std::min(cores, kMostLoops); ++i) impl_->loops.push_back(std::make_unique<Impl::EventLoop>(*impl_, i));
  // SSL_write writes with write(2), which raises SIGPIPE when the client has gone; a server
  // must see that as a failed write, not die of it.
  ::signal(SIGPIPE, SIG_IGN);
  // Every connection is a descriptor: take what the hard limit allows, keep some for the store.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &files);
    ::getrlimit(RLIMIT_NOFILE, &files);
  }
  std::size_t descriptors = files.rlim_cur == RLIM_INFINITY ? 1 << 20 : static_cast<std::size_t>(files.rlim_cur);
  impl_->max_connections = std::clamp<std::size_t>(descriptors > 256 ? descriptors - 128 : descriptors / 2, 16, 1 << 16);
}

ConnectionServer::~ConnectionServer() = default;

int ConnectionServer::listen(const ListenAddress& address) {
  int error = EADDRNOTAVAIL;
  for (const auto& candidate : address.resolved) {
    UniqueFd fd(::socket(candidate.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) {
      error = errno;
      continue;
    }
    // SO_REUSEADDR lets a restarted server bind over connections in TIME_WAIT. Never
    // SO_REUSEPORT: a second server on the same port must fail here, not share the port.
    int yes = 1;
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) != 0) {
      error = errno;
      continue;
    }
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&candidate.address), candidate.length) != 0 ||
        ::listen(fd.get(), SOMAXCONN) != 0) {
      error = errno;
      if (error == EADDRINUSE) break;  // the port is taken: another address of the name will not help
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    // The port we answer on (the one the kernel chose for port 0): without it nobody can reach us.
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &length) != 0)
      throw Error("cannot listen on " + address.text + ": cannot read the bound address: " + std::strerror(errno));
    impl_->listener = std::move(fd);
    return numeric_address(bound).second;
  }
  throw Error("cannot listen on " + address.text + ": " + std::strerror(error) +
              (error == EADDRINUSE ? " (another server listens there)" : ""));
}

void ConnectionServer::run() {
  auto& impl = *impl_;
  if (!impl.listener) throw Error("mirror serve: run() before listen()");
  auto& first = *impl.loops.front();
  first.resume_accepting();
  for (std::size_t i = 0; i < std::max<std::size_t>(impl.limits.workers, 1); ++i) impl.workers.emplace_back([&impl] { impl.work(); });
  for (std::size_t i = 1; i < impl.loops.size(); ++i) impl.loops[i]->thread = std::thread([loop = impl.loops[i].get()] { loop->serve(); });
  first.serve();

  // Stop: no new connections; answers in progress are cut off (their sockets shut down so that
  // a blocked write returns at once); every connection is closed.
  impl.stopping = true;
  for (auto& loop : impl.loops) loop->wake_up();
  for (auto& loop : impl.loops)
    if (loop->thread.joinable()) loop->thread.join();
  first.pause_accepting();
  impl.listener.reset();
  {
    std::lock_guard lock(impl.mutex);
    impl.workers_stop = true;
    for (int fd : impl.answering) ::shutdown(fd, SHUT_RDWR);
  }
  impl.ready_changed.notify_all();
  for (auto& worker : impl.workers) worker.join();
  impl.workers.clear();
  for (auto& loop : impl.loops) {
    loop->take_returned();
    while (!loop->waiting.empty()) loop->close_connection(loop->release(loop->waiting.begin()->first));
    loop->flush_log();
  }
  std::lock_guard lock(impl.mutex);
  impl.ready.clear();
}

void ConnectionServer::stop() {
  impl_->stopping = true;
  for (auto& loop : impl_->loops) loop->wake_up();
}

const ConnectionCounters& ConnectionServer::counters() const { return impl_->counters; }

Clock::time_point request_head_completed_at() {
  return current_connection != nullptr ? current_connection->head_complete_at : Clock::now();
}

std::uint64_t body_bytes_sent() { return current_connection != nullptr ? current_connection->body_bytes : 0; }

}  // namespace podplane::mirror
