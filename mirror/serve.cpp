#include "mirror/serve.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "cache/layout.hpp"
#include "lockfile/error.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;

namespace {

struct ListenAddress {
  std::string host;
  int port = 0;
};

ListenAddress parse_listen(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw UsageError("--listen wants HOST:PORT, e.g. 0.0.0.0:8443 or [::1]:8443; got '" + text + "'");
  ListenAddress address;
  address.host = text.substr(0, colon);
  if (address.host.size() >= 2 && address.host.front() == '[' && address.host.back() == ']')
    address.host = address.host.substr(1, address.host.size() - 2);
  auto port_text = text.substr(colon + 1);
  if (!std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      port_text.size() > 5 || std::stoi(port_text) > 65535)
    throw UsageError("--listen port must be 0..65535; got '" + port_text + "'");
  address.port = std::stoi(port_text);
  return address;
}

// The raw request path (before '?'): encoded separators and NULs are refused before
// decoding, so a name can never smuggle a '/' past the exact-match lookup.
bool hostile_target(const std::string& target) {
  std::string path = target.substr(0, target.find('?'));
  if (path.size() > 2048 || path.empty() || path.front() != '/') return true;
  for (std::size_t i = 0; i + 2 < path.size(); ++i) {
    if (path[i] != '%') continue;
    std::string code = path.substr(i + 1, 2);
    std::transform(code.begin(), code.end(), code.begin(), [](unsigned char c) { return std::tolower(c); });
    if (code == "2f" || code == "5c" || code == "00") return true;
  }
  return false;
}

std::string utc_now() {
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

// Keeps the access log readable: no control characters from a request reach the terminal.
std::string printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text.substr(0, 512)) out += (c < 0x20 || c == 0x7f || c == '"') ? '?' : static_cast<char>(c);
  return out;
}

struct FileHandle {
  int fd = -1;
  explicit FileHandle(int descriptor) : fd(descriptor) {}
  ~FileHandle() {
    if (fd >= 0) ::close(fd);
  }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
};

}  // namespace

struct MirrorServer::Impl {
  fs::path deps_root;
  ServeOptions options;
  std::ostream& log;
  std::mutex log_mutex;
  std::mutex site_mutex;
  std::shared_ptr<const MirrorSite> site;
  std::unique_ptr<httplib::Server> server;
  ListenAddress address;

  Impl(const fs::path& root, ServeOptions serve_options, std::ostream& log_stream)
      : deps_root(root), options(std::move(serve_options)), log(log_stream) {}

  std::shared_ptr<const MirrorSite> current() {
    std::lock_guard lock(site_mutex);
    return site;
  }

  void load() {
    auto store = cache::Store::open(deps_root, cache::Store::Access::read_only);
    auto fresh = std::make_shared<const MirrorSite>(MirrorSite::build(store, options.site));
    {
      std::lock_guard lock(log_mutex);
      for (const auto& reason : fresh->skipped()) log << "podplane: mirror serve: skipped " << reason << "\n";
      log << "podplane: mirror serve: " << fresh->resources().size() << " paths from " << deps_root.string() << "\n";
      log.flush();
    }
    std::lock_guard lock(site_mutex);
    site = std::move(fresh);
  }

  void not_found(httplib::Response& res) {
    res.status = 404;
    res.set_content("not found\n", "text/plain");
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    if (hostile_target(req.target)) return not_found(res);
    auto snapshot = current();
    const SiteResource* resource = snapshot->find(req.path);
    if (resource == nullptr) return not_found(res);
    switch (resource->kind) {
      case ResourceKind::document:
        res.set_content(resource->body, resource->content_type);
        return;
      case ResourceKind::module_download:
        // 204 + X-Terraform-Get works for Terraform and OpenTofu alike (tf-protocols.md §6.1).
        res.status = 204;
        res.set_header("X-Terraform-Get", resource->location);
        return;
      case ResourceKind::object: {
        int fd = ::open(resource->object.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat info {};
        if (fd < 0 || ::fstat(fd, &info) != 0 || info.st_size < resource->size) {
          if (fd >= 0) ::close(fd);
          res.status = 500;
          res.set_content("object missing from the store: " + resource->digest + "\n", "text/plain");
          std::lock_guard lock(log_mutex);
          log << "podplane: mirror serve: object " << resource->digest << " missing or short at "
              << resource->object.string() << " (run podplane deps verify)\n";
          return;
        }
        auto file = std::make_shared<FileHandle>(fd);
        res.set_header("ETag", "\"" + resource->digest + "\"");
        res.set_content_provider(
            static_cast<size_t>(resource->size), resource->content_type,
            [file](size_t offset, size_t length, httplib::DataSink& sink) {
              static thread_local std::vector<char> buffer(1 << 18);
              while (length > 0) {
                auto want = std::min(length, buffer.size());
                ssize_t got = ::pread(file->fd, buffer.data(), want, static_cast<off_t>(offset));
                if (got < 0 && errno == EINTR) continue;
                if (got <= 0) return false;
                if (!sink.write(buffer.data(), static_cast<size_t>(got))) return false;
                offset += static_cast<size_t>(got);
                length -= static_cast<size_t>(got);
              }
              return true;
            });
        return;
      }
      case ResourceKind::module_package: {
        auto package = resource->module;
        res.set_chunked_content_provider(resource->content_type, [package, this](size_t, httplib::DataSink& sink) {
          try {
            write_module_tar_gz(*package, [&sink](const char* data, std::size_t size) {
              if (!sink.write(data, size)) throw Error("client went away");
            });
            sink.done();
            return true;
          } catch (const std::exception& error) {
            std::lock_guard lock(log_mutex);
            log << "podplane: mirror serve: " << error.what() << "\n";
            return false;
          }
        });
        return;
      }
    }
    not_found(res);
  }

  void access_log(const httplib::Request& req, const httplib::Response& res) {
    std::size_t bytes = res.body.size();
    if (res.content_length_ > 0) bytes = res.content_length_;
    std::string line = req.remote_addr + " - - [" + utc_now() + "] \"" + printable(req.method) + " " +
                       printable(req.target) + " " + printable(req.version) + "\" " + std::to_string(res.status) + " " +
                       std::to_string(bytes) + "\n";
    std::lock_guard lock(log_mutex);
    log << line;
    log.flush();
  }
};

MirrorServer::MirrorServer(const fs::path& deps_root, ServeOptions options, std::ostream& log)
    : impl_(std::make_unique<Impl>(deps_root, std::move(options), log)) {
  auto& o = impl_->options;
  impl_->address = parse_listen(o.listen);
  if (o.transport == Transport::https) {
    if (!o.tls_cert || !o.tls_key)
      throw UsageError("mirror serve needs --tls-cert FILE and --tls-key FILE (or --plain-http for plain HTTP)");
    for (const auto& file : {*o.tls_cert, *o.tls_key})
      if (!fs::is_regular_file(file)) throw Error("cannot read TLS file " + file.string());
    auto server = std::make_unique<httplib::SSLServer>(o.tls_cert->c_str(), o.tls_key->c_str());
    if (!server->is_valid())
      throw Error("cannot load the TLS certificate " + o.tls_cert->string() + " with the key " + o.tls_key->string());
    impl_->server = std::move(server);
  } else {
    impl_->server = std::make_unique<httplib::Server>();
  }
  if (!fs::exists(cache::layout::index_db(deps_root)))
    throw Error("no store at " + deps_root.string() + " (fill it with podplane deps tf, or import a bundle)");
  impl_->load();

  auto& server = *impl_->server;
  std::size_t threads = std::max<std::size_t>(o.threads, 2);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Small answers are written as headers then body: without TCP_NODELAY, Nagle plus delayed ACKs
  // add ~40 ms to every keep-alive JSON request (measured by bench/serve).
  server.set_tcp_nodelay(true);
  server.set_keep_alive_max_count(1000);
  server.set_keep_alive_timeout(5);
  server.set_read_timeout(30);
  server.set_write_timeout(60);
  server.set_payload_max_length(64 * 1024);  // read-only: no request carries a body we want
  Impl* impl = impl_.get();
  server.Get(".*", [impl](const httplib::Request& req, httplib::Response& res) { impl->handle(req, res); });
  server.set_logger([impl](const httplib::Request& req, const httplib::Response& res) { impl->access_log(req, res); });
}

MirrorServer::~MirrorServer() = default;

std::string MirrorServer::bind() {
  auto& a = impl_->address;
  int port = a.port;
  if (port == 0) {
    port = impl_->server->bind_to_any_port(a.host);
    if (port < 0) throw Error("cannot listen on " + a.host + ":0");
  } else if (!impl_->server->bind_to_port(a.host, port)) {
    throw Error("cannot listen on " + impl_->options.listen + ": " + std::strerror(errno));
  }
  std::string host = a.host.find(':') != std::string::npos ? "[" + a.host + "]" : a.host;
  return std::string(impl_->options.transport == Transport::https ? "https" : "http") + "://" + host + ":" +
         std::to_string(port) + "/";
}

void MirrorServer::run() { impl_->server->listen_after_bind(); }
void MirrorServer::stop() { impl_->server->stop(); }
void MirrorServer::reload() { impl_->load(); }
std::size_t MirrorServer::skipped_rows() const { return impl_->current()->skipped().size(); }

void serve_until_signalled(const fs::path& deps_root, const ServeOptions& options,
                           const std::function<void(const std::string& url)>& on_ready) {
  // Block the signals before any thread starts so that only the waiter below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  MirrorServer server(deps_root, options, std::cerr);
  std::string url = server.bind();
  std::thread waiter([&server, signals] {
    while (true) {
      int received = 0;
      if (sigwait(&signals, &received) != 0) continue;
      if (received == SIGHUP) {
        try {
          server.reload();
        } catch (const std::exception& error) {
          std::cerr << "podplane: mirror serve: reload failed, still serving the previous view: " << error.what() << "\n";
        }
        continue;
      }
      server.stop();
      return;
    }
  });
  on_ready(url);
  server.run();
  // run() also returns when the listener fails; wake the waiter so that it exits (a no-op
  // when a signal already made it stop the server).
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
}

}  // namespace podplane::mirror
