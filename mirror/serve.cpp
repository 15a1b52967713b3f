#include "mirror/serve.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/clock.hpp"
#include "base/error.hpp"
#include "cache/layout.hpp"
#include "cache/row_rules.hpp"
#include "net/oci_reference.hpp"
#include "mirror/catalogue.hpp"
#include "mirror/plain_request.hpp"
#include "mirror/serve_metrics.hpp"
#include "mirror/serve_objects.hpp"
#include "mirror/serve_ranges.hpp"
#include "mirror/service_notify.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;

namespace {

// The raw request path (before '?'): encoded separators and NULs are refused before
// decoding, so a name can never smuggle a '/' past the exact-match lookup.
bool hostile_target(const std::string& target) {
  std::string path = target.substr(0, target.find('?'));
  if (path.size() > 2048 || path.empty() || path.front() != '/') return true;
  for (std::size_t i = 0; i + 2 < path.size(); ++i) {
    if (path[i] != '%') continue;
    const std::string code = ascii_lower(path.substr(i + 1, 2));
    if (code == "2f" || code == "5c" || code == "00") return true;
  }
  return false;
}

// Keeps the access log readable: no control characters from a request reach the terminal.
std::string printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text.substr(0, 512)) out += (c < 0x20 || c == 0x7f || c == '"') ? '?' : static_cast<char>(c);
  return out;
}

// A JSON string of request text, by the same rule as printable(): control characters (and
// bytes past ASCII, which a request line may not hold and which would not be UTF-8) become
// '?'; a quote or backslash is escaped, so the value is exactly what the client sent.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (unsigned char c : text.substr(0, 512)) {
    if (c < 0x20 || c >= 0x7f) out += '?';
    else if (c == '"' || c == '\\') (out += '\\') += static_cast<char>(c);
    else out += static_cast<char>(c);
  }
  out += '"';
}

// cpp-httplib's request processing (request line, headers, routing, HEAD, keep-alive headers,
// writing the answer) over the connections ConnectionServer hands it.
class HttpAnswers final : public httplib::Server {
 public:
  HttpAnswers() { set_serving(true); }
  ~HttpAnswers() override { set_serving(false); }
  HttpAnswers(const HttpAnswers&) = delete;
  HttpAnswers& operator=(const HttpAnswers&) = delete;

  bool answer(httplib::Stream& stream, bool last, bool& client_closes) {
    // The handlers answer Range themselves (RFC 9110, serve_ranges.hpp); httplib's own range
    // handling sizes suffix ranges of streamed bodies wrongly, so it must never apply.
    return process_request(stream, last, client_closes, [](httplib::Request& request) { request.ranges.clear(); });
  }
  // httplib stops writing a streamed body once its listening socket is gone. The listening
  // socket is ConnectionServer's, so this value only says whether we still serve.
  void set_serving(bool serving) { svr_sock_ = serving ? 0 : INVALID_SOCKET; }
};

// Whether handle() answered the request this worker thread is processing (rather than
// cpp-httplib refusing it before routing).
thread_local bool answered_by_handler = false;

// The client address of the request this thread answers. cpp-httplib sets the request's
// remote_addr only once the request line and headers parsed, so a request it refuses before
// (a bad line, headers too long) would be logged without it.
thread_local std::string answering_peer;

// Set while this thread makes an answer at once (Impl::answer_at_once): the access-log line
// goes there instead of the log, and handle() sets `needs_worker` for an answer it cannot make
// from memory alone.
thread_local PreparedAnswer* preparing = nullptr;
thread_local bool needs_worker = false;

// Set when a request was answered without its body being read (a method the mirror does not
// serve): the connection closes after the answer, so those bytes are never taken for a request.
thread_local bool close_after_answer = false;

// When the request this thread is answering had its head complete: the start of its duration
// (for a worker, before the request waited for one).
thread_local std::chrono::steady_clock::time_point request_started{};

// The largest document answered at once from the event loop; a bigger one goes to a worker so
// that the loop never copies much for one request.
constexpr std::size_t kMostAtOnce = 256 * 1024;

// An object asked for whole while its check is still hashing streams beside the check when it
// is at least this large (a smaller one waits: its hashing takes under a millisecond), and holds
// back its last kHeldBack bytes until the check has passed: without them no answer is complete.
constexpr std::uint64_t kSmallestStreamedBesideCheck = 1024 * 1024;
constexpr std::uint64_t kHeldBack = 64 * 1024;

// Writes `length` bytes of the object file `fd` from `offset` to `sink`; false when the client
// went away or the file ended early.
bool write_file_slice(int fd, std::uint64_t offset, std::uint64_t length, httplib::DataSink& sink) {
  static thread_local std::vector<char> buffer(1 << 18);
  while (length > 0) {
    auto want = static_cast<std::size_t>(std::min<std::uint64_t>(length, buffer.size()));
    ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    if (!sink.write(buffer.data(), static_cast<size_t>(got))) return false;
    offset += static_cast<std::uint64_t>(got);
    length -= static_cast<std::uint64_t>(got);
  }
  return true;
}

// Prepared heads: cpp-httplib's status line and headers for a plain request (plain_request.hpp)
// of one document, kept per site the first time cpp-httplib answers it, so that the event loop
// answers the next plain requests of that document without cpp-httplib: the same head, then
// the document. One head per shape of answer (GET or HEAD, keep-alive or close); the whole
// memo is dropped when the site is reloaded (at the next head kept from the new site: until
// then it holds the old site), or when it holds kMostPreparedDocuments.
class PreparedHeads {
 public:
  struct Found {
    std::string head;
    int status = 0;
  };
  static std::size_t shape(const PlainRequest& request, bool close) { return (request.head ? 2u : 0u) + (close ? 1u : 0u); }

  std::optional<Found> find(const MirrorSite* site, const SiteResource* resource, std::size_t shape) {
    std::lock_guard lock(mutex_);
    if (site != site_.get()) return std::nullopt;
    auto at = heads_.find(resource);
    if (at == heads_.end() || at->second.heads[shape].empty()) return std::nullopt;
    return Found{at->second.heads[shape], at->second.status};
  }
  void keep(const std::shared_ptr<const MirrorSite>& site, const SiteResource* resource, std::size_t shape,
            std::string head, int status) {
    std::lock_guard lock(mutex_);
    if (site != site_ || heads_.size() >= kMostPreparedDocuments) {
      heads_.clear();
      site_ = site;
    }
    auto& kept = heads_[resource];
    kept.heads[shape] = std::move(head);
    kept.status = status;
  }

 private:
  static constexpr std::size_t kMostPreparedDocuments = 4096;
  struct Heads {
    std::array<std::string, 4> heads;
    int status = 0;
  };
  std::mutex mutex_;
  std::shared_ptr<const MirrorSite> site_;  // holds the resources the keys point at
  std::unordered_map<const SiteResource*, Heads> heads_;
};

// The fields of an access-log line, from cpp-httplib's request or from a plain request.
struct LoggedRequest {
  std::string_view remote_addr;
  std::string_view method;
  std::string_view target;
  std::string_view version;
  int status = 0;
};

// One request head in memory, its answer kept in memory: cpp-httplib's exact answer (the one a
// worker would write to the socket) without touching the socket. A request that wants more
// than its head (a body, `Expect: 100-continue`) is marked, and goes to a worker instead.
class MemoryStream final : public httplib::Stream {
 public:
  MemoryStream(const RequestHead& head, PreparedAnswer& answer) : head_(head), answer_(answer) {}

  bool wants_more() const { return wants_more_; }

  bool is_readable() const override { return at_ < head_.bytes.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* data, size_t size) override {
    if (at_ >= head_.bytes.size()) {
      wants_more_ = true;
      return -1;
    }
    std::size_t n = std::min(size, head_.bytes.size() - at_);
    std::memcpy(data, head_.bytes.data() + at_, n);
    at_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* data, size_t size) override {
    // cpp-httplib writes the status line and headers in one piece, then the body.
    if (answer_.bytes.empty()) {
      if (size > 10 && std::memcmp(data, "HTTP/1.1 1", 10) == 0) wants_more_ = true;  // an interim answer
      answer_.head_size = size;
    }
    answer_.bytes.append(data, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = head_.peer_address;
    port = head_.peer_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = head_.local_address;
    port = head_.local_port;
  }
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  const RequestHead& head_;
  PreparedAnswer& answer_;
  std::size_t at_ = 0;
  bool wants_more_ = false;
};

using SliceWriter = std::function<bool(std::uint64_t offset, std::uint64_t length, httplib::DataSink& sink)>;

}  // namespace

struct MirrorServer::Impl final : RequestHandler {
  fs::path deps_root;
  ServeOptions options;
  std::ostream& log;
  std::mutex log_mutex;
  std::mutex site_mutex;
  std::shared_ptr<const MirrorSite> site;
  // The index watch: one read-only handle whose generation is read before each load, so a
  // commit during a load is seen by the next poll. load_mutex makes loads one at a time.
  std::mutex load_mutex;
  std::optional<cache::Store> watch_store;
  std::int64_t loaded_generation = 0;
  std::mutex watch_mutex;
  std::condition_variable watch_wake;
  bool watching = false;
  std::thread watcher;
  HttpAnswers http;
  CheckedObjects objects;
  ListenAddress address;
  std::string bound_url;  // set by bind(); the catalogue's fallback mirror URL
  std::unique_ptr<ConnectionServer> connections;
  ServeMetrics metrics;
  PreparedHeads prepared_heads;

  Impl(const fs::path& root, ServeOptions serve_options, std::ostream& log_stream)
      : deps_root(root), options(std::move(serve_options)), log(log_stream) {}

  void write_log(const std::string& line) {
    std::lock_guard lock(log_mutex);
    log << line << "\n";
    log.flush();
  }

  std::shared_ptr<const MirrorSite> current() {
    std::lock_guard lock(site_mutex);
    return site;
  }

  void load() {
    std::lock_guard loading(load_mutex);
    std::shared_ptr<const MirrorSite> fresh;
    try {
      if (!watch_store) watch_store.emplace(cache::Store::open(deps_root, cache::Store::Access::read_only));
      loaded_generation = watch_store->index_generation();
      auto store = cache::Store::open(deps_root, cache::Store::Access::read_only);
      store.read_snapshot([&] { fresh = std::make_shared<const MirrorSite>(MirrorSite::build(store, options.site)); });
    } catch (...) {
      metrics.reload_failed();
      throw;
    }
    for (const auto& reason : fresh->skipped()) write_log("podplane: mirror serve: skipped " + reason);
    write_log("podplane: mirror serve: " + std::to_string(fresh->resources().size()) + " paths from " + deps_root.string());
    SiteFigures figures;
    figures.paths = fresh->resources().size();
    figures.skipped_rows = fresh->skipped().size();
    figures.loaded_at = static_cast<std::int64_t>(std::time(nullptr));
    figures.generation = fresh->generation();
    if (auto imported = parse_utc_timestamp(fresh->last_import())) figures.last_import = static_cast<std::int64_t>(*imported);
    if (fresh->catalogue()) add_store_figures(*fresh->catalogue(), figures);
    {
      std::lock_guard lock(site_mutex);
      site = std::move(fresh);
    }
    metrics.reloaded(figures);
  }

  // Reloads when the index has a new generation (a fill or an import committed), checking
  // every options.index_poll until stop_watching(). A failed reload is logged and retried.
  void watch() {
    std::unique_lock lock(watch_mutex);
    while (watching) {
      watch_wake.wait_for(lock, options.index_poll, [this] { return !watching; });
      if (!watching) break;
      lock.unlock();
      try {
        bool changed = false;
        {
          std::lock_guard loading(load_mutex);
          changed = watch_store && watch_store->index_generation() != loaded_generation;
        }
        if (changed) load();
      } catch (const std::exception& error) {
        write_log(std::string("podplane: mirror serve: reload failed, still serving the previous view: ") + error.what());
      }
      lock.lock();
    }
  }

  void start_watching() {
    if (options.index_poll.count() <= 0 || watcher.joinable()) return;
    watching = true;
    watcher = std::thread([this] { watch(); });
  }

  void stop_watching() {
    {
      std::lock_guard lock(watch_mutex);
      watching = false;
    }
    watch_wake.notify_all();
    if (watcher.joinable() && watcher.get_id() != std::this_thread::get_id()) watcher.join();
  }

  bool answer(httplib::Stream& stream, bool last, bool& client_closes) override {
    int peer_port = 0;
    stream.get_remote_ip_and_port(answering_peer, peer_port);
    request_started = request_head_completed_at();
    answered_by_handler = false;
    close_after_answer = false;
    bool ok = http.answer(stream, last, client_closes);
    if (close_after_answer) client_closes = true;
    return ok;
  }

  // A plain request (plain_request.hpp) of a document whose head is prepared: that head and the
  // document. Anything else: answer_with_httplib(), whose answer to a plain request of a
  // document prepares the head for the next ones.
  std::optional<PreparedAnswer> answer_at_once(const RequestHead& head) override {
    answering_peer = head.peer_address;
    auto plain = parse_plain_request(head.bytes);
    if (!plain) return answer_with_httplib(head);
    const bool close = plain->close || head.last;
    auto snapshot = current();
    const SiteResource* resource = plain_document(*snapshot, plain->target);
    if (resource == nullptr) return answer_with_httplib(head);
    const auto shape = PreparedHeads::shape(*plain, close);
    if (auto found = prepared_heads.find(snapshot.get(), resource, shape)) {
      return answer_prepared(head, *plain, *resource, std::move(found->head), found->status, close);
    }
    auto answer = answer_with_httplib(head);
    // Kept only when cpp-httplib answered from the same site (no reload in between) as we
    // expected: a plain answer made at once, closing as the shape says.
    if (answer && answer->close == close && current() == snapshot) {
      prepared_heads.keep(snapshot, resource, shape, answer->bytes.substr(0, answer->head_size), answer->sample.status);
    }
    return answer;
  }

  // What the site serves at `path`; `/v2` is the registry API's base, `/v2/`.
  static const SiteResource* site_resource(const MirrorSite& site, std::string_view path) {
    return site.find(path == "/v2" ? site_paths::registry_api : path);
  }

  // The document (or module download) a plain request of `target` is answered with from a
  // prepared head, as handle() would find it; nullptr for anything else (an object, a catalogue
  // page, /metrics, a path the site does not have).
  static const SiteResource* plain_document(const MirrorSite& site, std::string_view target) {
    if (target == site_paths::metrics) return nullptr;
    const SiteResource* resource = site_resource(site, target);
    if (resource == nullptr || !made_at_once(*resource)) return nullptr;
    return resource;
  }

  PreparedAnswer answer_prepared(const RequestHead& head, const PlainRequest& plain, const SiteResource& resource,
                                 std::string prepared_head, int status, bool close) {
    PreparedAnswer answer;
    answer.head_size = prepared_head.size();
    answer.bytes = std::move(prepared_head);
    if (!plain.head && resource.kind == ResourceKind::document) answer.bytes += resource.body;
    const LoggedRequest logged{head.peer_address, plain.head ? "HEAD" : "GET", plain.target, "HTTP/1.1", status};
    access_log_line(logged, answer.log_line, answer.log_line_end);
    answer.sample = RequestSample{route_of(plain.target), status, std::chrono::steady_clock::now()};
    answer.close = close;
    return answer;
  }

  // The same request processing as answer(), into memory; nothing when handle() needs a file
  // or a stream (or too much memory), or the request wants more than its head.
  std::optional<PreparedAnswer> answer_with_httplib(const RequestHead& head) {
    PreparedAnswer prepared;
    MemoryStream stream(head, prepared);
    request_started = std::chrono::steady_clock::now();
    answered_by_handler = false;
    needs_worker = false;
    close_after_answer = false;
    preparing = &prepared;
    bool client_closes = false;
    bool ok = false;
    try {
      ok = http.answer(stream, head.last, client_closes);
    } catch (...) {
      needs_worker = true;  // a worker answers it, and logs what went wrong
    }
    preparing = nullptr;
    if (needs_worker || stream.wants_more() || prepared.bytes.empty()) return std::nullopt;
    prepared.close = !ok || client_closes || head.last || close_after_answer;
    return prepared;
  }

  void sent_at_once(const PreparedAnswer& answer, std::uint64_t body_bytes) override {
    metrics.record(answer.sample, body_bytes, std::chrono::steady_clock::now());
  }

  // A git smart-HTTP request (mirror/git_repositories.hpp): git http-backend answers it, on a
  // worker (it runs a program).
  void answer_git(const httplib::Request& req, httplib::Response& res) {
    if (preparing != nullptr) {
      needs_worker = true;
      return;
    }
    const auto question = req.target.find('?');
    GitRequest request{req.method,
                       req.path.substr(site_paths::git.size()),
                       question == std::string::npos ? "" : req.target.substr(question + 1),
                       req.get_header_value("Content-Type"),
                       "",
                       req.get_header_value("Git-Protocol"),
                       req.remote_addr,
                       req.body};
    // cpp-httplib inflates a gzip request body itself; one it left as it came is passed on.
    if (ascii_iequals(req.get_header_value("Content-Encoding"), "gzip") && request.body.rfind("\x1f\x8b", 0) == 0)
      request.content_encoding = "gzip";
    try {
      auto answer = current()->git()->answer(request);
      res.status = answer.status;
      std::string content_type = "application/octet-stream";
      for (auto& [name, value] : answer.headers) {
        if (ascii_iequals(name, "Content-Type")) content_type = value;
        else res.set_header(name, value);
      }
      res.set_content(std::move(answer.body), content_type);
    } catch (const Error& error) {
      write_log("podplane: mirror serve: " + error.message());
      res.status = 500;
      res.set_content("the git repository cannot be served: " + error.message() + "\n", "text/plain");
    }
  }

  // The Prometheus exposition (serve_metrics.hpp), made per scrape from the counters.
  void answer_metrics(httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(metrics.render(connections->counters(), objects.counters()), "text/plain; version=0.0.4; charset=utf-8");
  }

  // Whether the answer for `resource` is made from memory alone and small: what the event loop
  // may answer at once (catalogue pages are rendered per request, so they go to a worker).
  static bool made_at_once(const SiteResource& resource) {
    return (resource.kind == ResourceKind::document && resource.body.size() <= kMostAtOnce) ||
           resource.kind == ResourceKind::module_download;
  }

  // /healthz?generation=G of a replica that holds another generation: 503, so that a load
  // balancer checking for the fleet's generation takes this replica out until it has it
  // (docs/operations.md "Replicas"). The body says which generation it holds.
  void other_generation(const httplib::Request& req, httplib::Response& res, const MirrorSite& served) {
    auto document = nlohmann::json::parse(health_document(served));
    document["status"] = "other_generation";
    document["expected"] = req.get_param_value("generation").substr(0, 128);
    res.status = 503;
    res.set_header("Cache-Control", "no-store");
    res.set_content(document.dump(2) + "\n", "application/json");
  }

  void not_found(httplib::Response& res) {
    res.status = 404;
    // Said on GET and HEAD alike (cpp-httplib adds "bytes" to a HEAD answer that names none).
    res.set_header("Accept-Ranges", "none");
    res.set_content("not found\n", "text/plain");
  }

  // Anything but GET and HEAD, answered before its body is read (cpp-httplib would wait for a
  // body without a length until the client gave up): 405, and the connection closes.
  void method_not_allowed(const httplib::Request& req, httplib::Response& res) {
    answered_by_handler = true;
    close_after_answer = true;
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_header("Accept-Ranges", "none");
    if (req.path == "/v2" || req.path.rfind(site_paths::registry_api, 0) == 0) {
      res.set_header("Docker-Distribution-API-Version", "registry/2.0");
      res.set_content(nlohmann::json{{"errors", {{{"code", "UNSUPPORTED"}, {"message", "this mirror is read-only: GET and HEAD only"}}}}}.dump() + "\n",
                      "application/json");
      return;
    }
    res.set_content("method not allowed: this mirror is read-only (GET and HEAD only)\n", "text/plain");
  }

  // An object that is missing or does not match its digest: a 500 that says so, never its bytes.
  void refuse(const httplib::Request& req, httplib::Response& res, const std::string& digest, const OpenedObject& opened) {
    res.status = 500;
    res.set_header("Accept-Ranges", "none");
    res.set_content("object " + digest + (opened.state == ObjectState::missing ? " is missing from" : " is damaged in") +
                        " this mirror's store; its operator must run " + kRepairCommand + "\n",
                    "text/plain");
    if (opened.first_verdict) write_log("podplane: mirror serve: not serving " + printable(req.path) + ": " + opened.problem);
  }

  // The answer for a representation of `size` bytes: 200, or 206/416 for a Range request
  // (RFC 9110 §14). `etag` (quoted, strong) may be empty; If-Range needs it to match.
  void answer_bytes(const httplib::Request& req, httplib::Response& res, std::uint64_t size, const std::string& type,
                    const std::string& etag, SliceWriter write_slice) {
    res.set_header("Accept-Ranges", "bytes");
    if (!etag.empty()) res.set_header("ETag", etag);
    RangePlan plan;
    bool if_range_holds = !req.has_header("If-Range") || (!etag.empty() && req.get_header_value("If-Range") == etag);
    if (req.has_header("Range") && if_range_holds) plan = plan_ranges(req.get_header_value("Range"), size);
    BodyLayout layout;
    std::string body_type = type;
    switch (plan.outcome) {
      case RangeOutcome::whole:
        res.status = 200;
        layout = BodyLayout::slice(0, size);
        break;
      case RangeOutcome::unsatisfiable:
        res.status = 416;
        res.set_header("Content-Range", unsatisfied_range(size));
        return;
      case RangeOutcome::partial:
        res.status = 206;
        if (plan.ranges.size() == 1) {
          res.set_header("Content-Range", content_range(plan.ranges[0], size));
          layout = BodyLayout::slice(plan.ranges[0].first, plan.ranges[0].length());
        } else {
          auto boundary = random_boundary();
          layout = BodyLayout::multipart(plan.ranges, size, type, boundary);
          body_type = "multipart/byteranges; boundary=" + boundary;
        }
        break;
    }
    if (layout.size() == 0) {
      // No provider for an empty body: httplib would then send no Content-Length at all.
      res.set_content("", body_type);
      return;
    }
    auto shared = std::make_shared<const BodyLayout>(std::move(layout));
    res.set_content_provider(static_cast<size_t>(shared->size()), body_type,
                             [this, shared, write_slice](size_t offset, size_t length, httplib::DataSink& sink) {
                               // No exception may leave a content provider into httplib's
                               // writer: a failure ends this response short and is logged.
                               try {
                                 return shared->produce(
                                     offset, length,
                                     [&sink](std::string_view text) { return sink.write(text.data(), text.size()); },
                                     [&](std::uint64_t at, std::uint64_t count) { return write_slice(at, count, sink); });
                               } catch (const std::exception& error) {
                                 write_log(std::string("podplane: mirror serve: ") + error.what());
                                 return false;
                               } catch (...) {
                                 write_log("podplane: mirror serve: a response body failed");
                                 return false;
                               }
                             });
  }

  // The URL the catalogue's snippets name: --public-url, else the Host the client used (when
  // it is a plain host[:port]: a hostile header falls back), else the address we listen on.
  std::string mirror_url_for(const httplib::Request& req) const {
    if (!options.site.public_url.empty()) return options.site.public_url;
    auto scheme = options.transport == Transport::https ? "https" : "http";
    if (auto url = mirror_url_from_host(scheme, req.get_header_value("Host")); !url.empty()) return url;
    std::string url = bound_url;
    while (!url.empty() && url.back() == '/') url.pop_back();
    return url;
  }

  // The referrers of a digest this mirror has none of, in a repository it serves: an empty
  // index, as OCI 1.1 asks of a registry with the referrers API (a 404 would tell clients to
  // fall back to the tag schema). nullptr for any other path.
  static const SiteResource* no_referrers(const MirrorSite& site, const std::string& path) {
    static const SiteResource empty = [] {
      SiteResource resource;
      resource.kind = ResourceKind::document;
      resource.registry_api = true;
      resource.referrers_index = true;
      resource.content_type = net::image_media::oci_index;
      resource.body = nlohmann::json{{"schemaVersion", 2}, {"mediaType", net::image_media::oci_index}, {"manifests", nlohmann::json::array()}}.dump();
      return resource;
    }();
    auto at = path.rfind("/referrers/");
    if (at == std::string::npos || cache::image_digest_problem(path.substr(at + 11))) return nullptr;
    return site.find(path.substr(0, at) + "/tags/list") != nullptr ? &empty : nullptr;
  }

  // A referrers index filtered by ?artifactType= (OCI 1.1): only the descriptors of that type,
  // and the header that says a filter was applied.
  void answer_referrers(const httplib::Request& req, httplib::Response& res, const SiteResource& resource) {
    auto wanted = req.get_param_value("artifactType");
    auto index = nlohmann::json::parse(resource.body);
    auto kept = nlohmann::json::array();
    for (const auto& descriptor : index["manifests"])
      if (descriptor.value("artifactType", "") == wanted) kept.push_back(descriptor);
    index["manifests"] = std::move(kept);
    auto body = std::make_shared<const std::string>(index.dump());
    res.set_header("OCI-Filters-Applied", "artifactType");
    answer_bytes(req, res, body->size(), resource.content_type, "",
                 [body](std::uint64_t offset, std::uint64_t length, httplib::DataSink& sink) {
                   return sink.write(body->data() + offset, static_cast<size_t>(length));
                 });
  }

  // A path of the OCI distribution API that the store does not have: the registry error body
  // clients show (MANIFEST_UNKNOWN, BLOB_UNKNOWN, NAME_UNKNOWN), saying how to get it.
  void registry_not_found(const httplib::Request& req, httplib::Response& res) {
    const std::string& path = req.path;
    std::string code = "NAME_UNKNOWN";
    std::string message = "repository name not known to this mirror";
    if (path.find("/manifests/") != std::string::npos) {
      code = "MANIFEST_UNKNOWN";
      message = "manifest unknown: " + path.substr(path.rfind('/') + 1) +
                " is not in this mirror's store (only images and platforms downloaded in advance are served; fetch it online "
                "with podplane deps download --arch … or podplane deps images, then carry it over)";
    } else if (path.find("/blobs/") != std::string::npos) {
      code = "BLOB_UNKNOWN";
      message = "blob unknown to this mirror: " + path.substr(path.rfind('/') + 1);
    }
    res.status = 404;
    res.set_header("Accept-Ranges", "none");
    res.set_content(nlohmann::json{{"errors", {{{"code", code}, {"message", message}}}}}.dump() + "\n", "application/json");
  }

  // A store object: its bytes once its check has passed, or, for a large object asked for whole
  // whose check is still hashing, its bytes beside the check with the last ones held back for it
  // (serve_objects.hpp). Only a whole answer can be held back: a range could be complete
  // without its last bytes, and HEAD has no body.
  void answer_object(const httplib::Request& req, httplib::Response& res, const SiteResource& resource) {
    const auto size = static_cast<std::uint64_t>(resource.size);
    const bool may_stream_beside = req.method == "GET" && !req.has_header("Range") && size >= kSmallestStreamedBesideCheck;
    auto opened = std::make_shared<OpenedObject>(may_stream_beside ? objects.open(resource.object, resource.digest, resource.size)
                                                                   : objects.open_checked(resource.object, resource.digest, resource.size));
    const bool beside_check = opened->state == ObjectState::checking;
    if (opened->state == ObjectState::corrupt || opened->state == ObjectState::missing)
      return refuse(req, res, resource.digest, *opened);
    SliceWriter write_slice = [opened](std::uint64_t offset, std::uint64_t length, httplib::DataSink& sink) {
      return write_file_slice(opened->fd.get(), offset, length, sink);
    };
    if (beside_check) write_slice = held_back_for_check(opened, size, printable(req.method + " " + req.path));
    answer_bytes(req, res, size, resource.content_type, "\"" + resource.digest + "\"", std::move(write_slice));
  }

  // Writes the slices of an object of `size` bytes whose check is still hashing: the last
  // kHeldBack bytes only once it has passed. When it fails, the answer (`request`, for the log)
  // is cut short there: the client gets fewer bytes than Content-Length says, never all of them.
  SliceWriter held_back_for_check(std::shared_ptr<OpenedObject> opened, std::uint64_t size, std::string request) {
    const std::uint64_t held_from = size - kHeldBack;
    return [this, opened, size, held_from, request](std::uint64_t offset, std::uint64_t length, httplib::DataSink& sink) {
      const std::uint64_t end = offset + length, free_end = std::min(end, held_from);
      if (offset < free_end) {
        if (!write_file_slice(opened->fd.get(), offset, free_end - offset, sink)) return false;
        offset = free_end;
      }
      if (offset >= end) return true;
      if (opened->state == ObjectState::checking) {
        CheckedObjects::await(*opened);
        metrics.held_back_for_check(opened->state == ObjectState::good);
      }
      if (opened->state != ObjectState::good) {
        // One line per answer cut (only the first downloads that streamed beside the check are);
        // the later requests are refused with a 500, and do not log the problem again.
        write_log("podplane: mirror serve: cut " + request + " short after " + std::to_string(body_bytes_sent()) + " of " +
                  std::to_string(size) + " bytes: " + opened->problem);
        return false;
      }
      return write_file_slice(opened->fd.get(), offset, end - offset, sink);
    };
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    answered_by_handler = true;
    bool registry = req.path == "/v2" || req.path.rfind(site_paths::registry_api, 0) == 0;
    if (registry) res.set_header("Docker-Distribution-API-Version", "registry/2.0");
    if (hostile_target(req.target)) return registry ? registry_not_found(req, res) : not_found(res);
    if (req.path == site_paths::metrics) return answer_metrics(res);
    if (req.path.rfind(site_paths::git, 0) == 0) return answer_git(req, res);
    auto snapshot = current();
    const SiteResource* resource = site_resource(*snapshot, req.path);
    if (resource == nullptr && registry) resource = no_referrers(*snapshot, req.path);
    if (resource == nullptr) return registry ? registry_not_found(req, res) : not_found(res);
    if (req.path == site_paths::healthz && !req.get_param_value("generation").empty() &&
        req.get_param_value("generation") != snapshot->generation())
      return other_generation(req, res, *snapshot);
    if (preparing != nullptr && !made_at_once(*resource)) {
      needs_worker = true;
      return;
    }
    if (!resource->oci_digest.empty()) res.set_header("Docker-Content-Digest", resource->oci_digest);
    switch (resource->kind) {
      case ResourceKind::document:
        if (resource->referrers_index && req.has_param("artifactType")) return answer_referrers(req, res, *resource);
        answer_bytes(req, res, resource->body.size(), resource->content_type, "",
                     [snapshot, resource](std::uint64_t offset, std::uint64_t length, httplib::DataSink& sink) {
                       return sink.write(resource->body.data() + offset, static_cast<size_t>(length));
                     });
        return;
      case ResourceKind::catalogue_page: {
        CataloguePage page{resource->catalogue_section, req.path, mirror_url_for(req), req.get_param_value("q")};
        auto html = std::make_shared<const std::string>(render_catalogue_html(*resource->catalogue, page));
        res.set_header("Cache-Control", "no-cache");
        res.set_header("Content-Security-Policy", catalogue_content_security_policy());
        answer_bytes(req, res, html->size(), resource->content_type, "",
                     [html](std::uint64_t offset, std::uint64_t length, httplib::DataSink& sink) {
                       return sink.write(html->data() + offset, static_cast<size_t>(length));
                     });
        return;
      }
      case ResourceKind::module_download:
        // 204 + X-Terraform-Get works for Terraform and OpenTofu alike (docs/protocols.md §6.1).
        res.status = 204;
        res.set_header("X-Terraform-Get", resource->location);
        return;
      case ResourceKind::object:
        return answer_object(req, res, *resource);
      case ResourceKind::module_package: {
        // Every file of the package is checked before the first byte of the archive goes out.
        for (const auto& entry : resource->module->entries) {
          if (entry.object.empty()) continue;
          auto opened = objects.open_checked(entry.object, entry.digest, entry.size);
          if (opened.state != ObjectState::good) return refuse(req, res, entry.digest, opened);
        }
        res.status = 200;
        auto package = resource->module;
        res.set_chunked_content_provider(resource->content_type, [package, this](size_t, httplib::DataSink& sink) {
          try {
            write_module_tar_gz(*package, [&sink](const char* data, std::size_t size) {
              if (!sink.write(data, size)) throw Error("client went away");
            });
            sink.done();
            return true;
          } catch (const std::exception& error) {
            write_log(std::string("podplane: mirror serve: ") + error.what());
            return false;
          } catch (...) {
            write_log("podplane: mirror serve: a module package failed");
            return false;
          }
        });
        return;
      }
    }
    not_found(res);
  }

  // cpp-httplib answers 416 on its own, before routing, when it cannot parse a Range header.
  // Such a request gets what handle() answers instead, which follows RFC 9110: a unit other
  // than bytes is ignored, an invalid bytes range is 416 with the size.
  httplib::Server::HandlerResponse after_refused_range(const httplib::Request& req, httplib::Response& res) {
    if (res.status != 416 || answered_by_handler) return httplib::Server::HandlerResponse::Unhandled;
    handle(req, res);
    if (req.ranges.empty()) return httplib::Server::HandlerResponse::Handled;
    // httplib kept the part of the header it parsed and would apply it to a body: send none.
    res.body.clear();
    res.content_provider_ = nullptr;
    res.content_length_ = 0;
    res.is_chunked_content_provider_ = false;
    if (res.status < 300) res.status = 416;
    return httplib::Server::HandlerResponse::Unhandled;
  }

  // The count of body bytes sent ends the line: an answer made at once gets it from the event
  // loop once its bytes have gone out. `end` is what follows the count.
  void access_log_line(const LoggedRequest& req, std::string& line, std::string& end) const {
    if (options.access_log == AccessLogFormat::text) {
      line.reserve(80 + req.target.size());
      line += req.remote_addr;
      line += " - - [";
      line += utc_timestamp_now();
      line += "] \"";
      line += printable(req.method);
      line += ' ';
      line += printable(req.target);
      line += ' ';
      line += printable(req.version);
      line += "\" ";
      line += std::to_string(req.status);
      return;
    }
    // The same fields, one JSON object per line; ", " and ": " throughout, so that the count
    // the event loop appends after a space reads like the rest.
    line.reserve(160 + req.target.size());
    line += "{\"remote_addr\": ";
    append_json_string(line, req.remote_addr);
    line += ", \"time\": \"";
    line += utc_timestamp_now();
    line += "\", \"method\": ";
    append_json_string(line, req.method);
    line += ", \"target\": ";
    append_json_string(line, req.target);
    line += ", \"protocol\": ";
    append_json_string(line, req.version);
    line += ", \"status\": ";
    line += std::to_string(req.status);
    line += ", \"body_bytes\":";
    end = "}";
  }
  void access_log_line(const httplib::Request& req, const httplib::Response& res, std::string& line, std::string& end) const {
    const std::string_view remote = req.remote_addr.empty() ? std::string_view(answering_peer) : req.remote_addr;
    access_log_line(LoggedRequest{remote, req.method, req.target, req.version, res.status}, line, end);
  }

  void access_log(const httplib::Request& req, const httplib::Response& res) {
    RequestSample sample{route_of(req.path), res.status, request_started};
    if (preparing != nullptr) {
      access_log_line(req, res, preparing->log_line, preparing->log_line_end);
      preparing->sample = sample;
      return;
    }
    std::uint64_t sent = body_bytes_sent();
    metrics.record(sample, sent, std::chrono::steady_clock::now());
    std::string line, end;
    access_log_line(req, res, line, end);
    line += ' ';
    line += std::to_string(sent);
    line += end;
    write_log(line);
  }
};

MirrorServer::MirrorServer(const fs::path& deps_root, ServeOptions options, std::ostream& log)
    : impl_(std::make_unique<Impl>(deps_root, std::move(options), log)) {
  auto& impl = *impl_;
  auto& o = impl.options;
  impl.address = parse_listen_address(o.listen);
  std::optional<TlsFiles> tls;
  if (o.transport == Transport::https) {
    if (!o.tls_cert || !o.tls_key)
      throw UsageError("mirror serve needs --tls-cert FILE and --tls-key FILE (or --plain-http for plain HTTP)");
    tls = TlsFiles{*o.tls_cert, *o.tls_key};
  }
  impl.connections = std::make_unique<ConnectionServer>(o.limits, tls, impl,
                                                        [&impl](const std::string& line) { impl.write_log(line); });
  if (!fs::exists(cache::layout::index_db(deps_root)))
    throw Error("no store at " + deps_root.string() + " (fill it with podplane deps tf, or import a bundle)");
  impl.load();

  auto& http = impl.http;
  http.set_keep_alive_max_count(o.limits.keep_alive_requests);
  http.set_keep_alive_timeout(o.limits.idle_timeout.count());
  // Read-only: no request carries a body we keep. git's upload-pack requests (POST /git/…) carry
  // the refs a client wants and has: a few KiB for a module's repository.
  http.set_payload_max_length(1024 * 1024);
  // Every answer, errors included: a browser never guesses a type from the bytes (a stored
  // document that looks like HTML stays what its Content-Type says).
  http.set_default_headers({{"X-Content-Type-Options", "nosniff"}});
  Impl* self = impl_.get();
  http.Get(".*", [self](const httplib::Request& req, httplib::Response& res) { self->handle(req, res); });
  http.Post("/git/.*", [self](const httplib::Request& req, httplib::Response& res) { self->handle(req, res); });
  http.set_pre_routing_handler([self](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    if (req.method == "POST" && req.path.rfind(site_paths::git, 0) == 0) return httplib::Server::HandlerResponse::Unhandled;
    self->method_not_allowed(req, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [self](const httplib::Request& req, httplib::Response& res) { return self->after_refused_range(req, res); }));
  http.set_exception_handler([self](const httplib::Request&, httplib::Response& res, std::exception_ptr thrown) {
    res.status = 500;
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const std::exception& error) {
      self->write_log(std::string("podplane: mirror serve: ") + error.what());
    } catch (...) {
      self->write_log("podplane: mirror serve: unknown error");
    }
  });
  http.set_logger([self](const httplib::Request& req, const httplib::Response& res) { self->access_log(req, res); });
}

MirrorServer::~MirrorServer() { impl_->stop_watching(); }

std::string MirrorServer::bind() {
  int port = impl_->connections->listen(impl_->address);
  const auto& host = impl_->address.host;
  std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  impl_->bound_url = std::string(impl_->options.transport == Transport::https ? "https" : "http") + "://" + shown + ":" +
                     std::to_string(port) + "/";
  return impl_->bound_url;
}

void MirrorServer::run() {
  impl_->http.set_serving(true);
  impl_->start_watching();
  impl_->connections->run();
  impl_->stop_watching();
}

void MirrorServer::stop() {
  impl_->http.set_serving(false);
  impl_->connections->stop();
}

void MirrorServer::reload() { impl_->load(); }
std::size_t MirrorServer::skipped_rows() const { return impl_->current()->skipped().size(); }
std::size_t MirrorServer::served_paths() const { return impl_->current()->resources().size(); }

void serve_until_signalled(const fs::path& deps_root, const ServeOptions& options,
                           const std::function<void(const std::string& url)>& on_ready) {
  // Block the signals before any thread starts so that only the waiter below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ServiceNotifier manager;
  if (!manager.problem().empty()) std::cerr << "podplane: mirror serve: not notifying the service manager: " << manager.problem() << "\n";
  MirrorServer server(deps_root, options, std::cerr);
  std::string url = server.bind();
  auto serving = [&server, &url, &deps_root] {
    return "serving " + std::to_string(server.served_paths()) + " paths of " + deps_root.string() + " at " + url;
  };
  std::thread waiter([&server, &manager, &serving, signals] {
    while (true) {
      int received = 0;
      if (sigwait(&signals, &received) != 0) continue;
      if (received == SIGHUP) {
        // A reload forced now, whatever the index watch saw: also what `systemctl reload`
        // (ExecReload=kill -HUP) asks for. The manager waits for READY=1 after RELOADING=1.
        manager.reloading("reloading the site from the index");
        try {
          server.reload();
          manager.ready(serving());
        } catch (const std::exception& error) {
          std::cerr << "podplane: mirror serve: reload failed, still serving the previous view: " << error.what() << "\n";
          manager.ready("reload failed, still serving the previous site: " + std::string(error.what()));
        }
        continue;
      }
      manager.stopping();
      server.stop();
      return;
    }
  });
  on_ready(url);
  // The site is loaded and the port listens: a connection made from now on is answered.
  manager.ready(serving());
  try {
    server.run();
  } catch (...) {
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    throw;
  }
  // run() also returns when event polling fails; wake the waiter so that it exits (a no-op
  // when a signal already made it stop the server).
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
}

}  // namespace podplane::mirror
