#pragma once
// `podplane mirror serve`: a read-only HTTP(S) server of one store, answering every path of
// the MirrorSite built from the index and 404 for anything else. It opens the store
// Access::read_only and never writes. Connections, deadlines and caps are ConnectionServer's
// (serve_connections.hpp); requests are parsed and answers written by cpp-httplib; Range
// requests follow RFC 9110 (serve_ranges.hpp); every store object is checked against its
// digest before its first byte goes out (serve_objects.hpp). One access-log line per request
// goes to the log stream. bind(), run() and stop() are for one owner; stop() and reload()
// may be called from any thread while run() serves.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "mirror/serve_connections.hpp"
#include "mirror/serve_site.hpp"

namespace podplane::mirror {

enum class Transport { https, plain_http };

// The access log's line format (docs/mirror.md "Access log"): the combined-log-like text
// line, or one JSON object per line with the same fields.
enum class AccessLogFormat { text, json };

struct ServeOptions {
  std::string listen = "127.0.0.1:8443";  // HOST:PORT or [V6]:PORT; port 0 picks a free one
  Transport transport = Transport::https;
  std::optional<std::filesystem::path> tls_cert;  // PEM chain; required for https
  std::optional<std::filesystem::path> tls_key;   // PEM private key; required for https
  ConnectionLimits limits;                         // workers, per-client cap, deadlines
  SiteOptions site;
  // How often run() checks the index for a new generation (a fill or an import) and rebuilds
  // the site when there is one; zero: only reload() (SIGHUP) rebuilds it.
  std::chrono::milliseconds index_poll{1000};
  AccessLogFormat access_log = AccessLogFormat::text;
};

class MirrorServer {
 public:
  // Opens the store read-only and builds the site. Error when the store or the TLS files
  // cannot be used; UsageError for a bad listen address or missing TLS options.
  MirrorServer(const std::filesystem::path& deps_root, ServeOptions options, std::ostream& log);
  ~MirrorServer();
  MirrorServer(const MirrorServer&) = delete;
  MirrorServer& operator=(const MirrorServer&) = delete;

  // Binds and listens; returns the base URL ("https://127.0.0.1:8443/"). Clients may
  // connect from here on (they wait in the backlog until run()). Error when the port is in use.
  [[nodiscard]] std::string bind();
  void run();     // serves until stop()
  void stop();
  // Rebuilds the site from one snapshot of the index and swaps it in whole; requests in
  // flight keep the one they started with. run() also calls it when the index changes.
  void reload();
  std::size_t skipped_rows() const;
  std::size_t served_paths() const;  // of the site served now

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs a server until SIGINT or SIGTERM; it reloads the site by itself when the index changes,
// and on SIGHUP. `on_ready` gets the URL once the socket listens (the CLI prints it on
// stdout). Under a service manager ($NOTIFY_SOCKET, service_notify.hpp) it also says READY=1
// then, RELOADING=1 and READY=1 around each SIGHUP reload, and STOPPING=1.
void serve_until_signalled(const std::filesystem::path& deps_root, const ServeOptions& options,
                           const std::function<void(const std::string& url)>& on_ready);

}  // namespace podplane::mirror
