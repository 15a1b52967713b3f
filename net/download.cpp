#include "net/download.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <random>

#include "base/ascii.hpp"
#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/hasher_thread.hpp"
#include "base/unique_fd.hpp"
#include "net/curl_handles.hpp"
#include "net/progress.hpp"
#include "net/transport.hpp"

namespace podplane::net {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Where the bytes of one item go. restart() throws away what was written (the server ignored
// a Range request); commit() checks the expected digest and publishes. Each byte is hashed once,
// as it streams: a mismatch names the item, and the store is never asked to publish bytes that
// are known to be wrong.
class Sink {
 public:
  virtual ~Sink() = default;
  void write(const char* data, std::size_t size) {
    write_bytes(data, size);
    size_ += size;
  }
  std::uint64_t size() const { return size_; }
  void restart() {
    restart_bytes();
    size_ = 0;
  }
  // Returns the sha256 hex digest; throws Error when it is not `expected`.
  virtual std::string commit(const DownloadItem& item) = 0;
  // After commit: the digest in the item's other algorithm ("" without one).
  virtual std::string other_digest() { return {}; }
  // After commit: the object left for the caller to publish (DownloadItem::Publish::by_caller).
  virtual std::shared_ptr<cache::ObjectWriter> unpublished() { return nullptr; }

 protected:
  virtual void write_bytes(const char* data, std::size_t size) = 0;
  virtual void restart_bytes() = 0;

 private:
  std::uint64_t size_ = 0;
};

// The store's own writer hashes what it is given and checks the expected digest before it
// publishes: no second hash here.
class StoreSink final : public Sink {
 public:
  StoreSink(cache::Store& store, const DownloadItem& item)
      : store_(store), label_(item.label + " from " + redact_url(item.url)), writer_(store.new_object(label_)) {}

  std::string commit(const DownloadItem& item) override {
    std::optional<std::string> expected;
    if (item.expected_sha256) expected = ascii_lower(*item.expected_sha256);
    if (item.publish == DownloadItem::Publish::by_caller) {
      std::string digest = writer_->check(expected);  // a mismatch removes the temp file
      unpublished_ = std::make_shared<cache::ObjectWriter>(std::move(*writer_));
      writer_.reset();
      return digest;
    }
    std::string digest = writer_->commit(expected);
    writer_.reset();
    return digest;
  }
  std::shared_ptr<cache::ObjectWriter> unpublished() override { return std::move(unpublished_); }

 private:
  void write_bytes(const char* data, std::size_t size) override { writer_->write(data, size); }
  void restart_bytes() override {
    writer_.reset();  // removes the temp file
    writer_.emplace(store_.new_object(label_));
  }

  cache::Store& store_;
  std::string label_;
  std::optional<cache::ObjectWriter> writer_;
  std::shared_ptr<cache::ObjectWriter> unpublished_;
};

class FileSink final : public Sink {
 public:
  FileSink(fs::path destination, std::optional<DigestAlgorithm> other_algorithm)
      : destination_(std::move(destination)), other_algorithm_(other_algorithm) {
    if (other_algorithm_) other_hash_.emplace(*other_algorithm_);
    if (!destination_.parent_path().empty()) fs::create_directories(destination_.parent_path());
    temp_ = destination_;
    temp_ += ".part-XXXXXX";
    std::string pattern = temp_.string();
    fd_ = UniqueFd(mkstemp(pattern.data()));
    if (!fd_) throw Error("cannot create a temp file next to " + destination_.string() + ": " + std::strerror(errno));
    temp_ = pattern;
  }
  ~FileSink() override { discard(); }

  std::string commit(const DownloadItem& item) override {
    const std::string got = hash_.finish_hex();
    if (item.expected_sha256 && ascii_lower(*item.expected_sha256) != got) {
      discard();
      throw Error(mismatch_message("hash mismatch for " + item.label + " from " + redact_url(item.url) +
                                       " (nothing was kept)",
                                   "sha256:" + ascii_lower(*item.expected_sha256), "sha256:" + got));
    }
    publish();
    if (other_hash_) other_digest_ = other_hash_->finish_hex();
    return got;
  }
  std::string other_digest() override { return other_digest_; }

 private:
  void write_bytes(const char* data, std::size_t size) override {
    hash_.update(data, size);
    if (other_hash_) other_hash_->update(data, size);
    write_all(fd_.get(), std::string_view(data, size), temp_);
  }
  void restart_bytes() override {
    hash_ = Hasher{};
    if (other_algorithm_) {
      other_hash_.reset();  // drops what it had queued
      other_hash_.emplace(*other_algorithm_);
    }
    if (::ftruncate(fd_.get(), 0) != 0 || ::lseek(fd_.get(), 0, SEEK_SET) != 0) {
      throw Error("cannot truncate " + temp_.string() + ": " + std::strerror(errno));
    }
  }
  // Renamed into place whole, but not synced: a destination is a scratch file that is read,
  // checked or unpacked and then removed, and what must outlive a crash goes into the store,
  // which syncs it. A sync here cost about a second per 256 MiB os image for nothing.
  void publish() {
    fd_.close_checked(temp_.string());
    std::error_code ec;
    fs::rename(temp_, destination_, ec);
    if (ec) throw Error("cannot rename " + temp_.string() + " to " + destination_.string() + ": " + ec.message());
    temp_.clear();
  }
  void discard() {
    fd_.reset();
    if (!temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
  }

  fs::path destination_;
  fs::path temp_;
  UniqueFd fd_;
  Hasher hash_;
  std::optional<DigestAlgorithm> other_algorithm_;
  std::optional<HasherThread> other_hash_;
  std::string other_digest_;
};

// How the body of the response being received is handled, decided when its headers end.
enum class BodyMode { pending, keep, discard, error_text };

struct Engine {
  const DownloadOptions& options;
  DownloadTotals& totals;
  ProgressDisplay progress;
};

struct Transfer {
  Engine* engine = nullptr;
  std::size_t index = 0;
  const DownloadItem* item = nullptr;
  std::string host;
  bool follow_up = false;  // added by another item's `then`: it starts before the first items
  std::unique_ptr<Sink> sink;
  transport::CurlEasy easy;
  transport::CurlSlist headers;
  char error_buffer[CURL_ERROR_SIZE] = {0};

  std::optional<transport::RetryBudget> budget;  // from the first attempt's start
  std::uint64_t start_offset = 0;   // sink size when this attempt started (its Range start)
  std::string range;                // the Range value of this attempt (libcurl keeps a pointer)
  Clock::time_point not_before{};

  // Per response (reset by each status line).
  long status = 0;
  BodyMode mode = BodyMode::pending;
  std::optional<std::uint64_t> content_length;
  std::string content_range;
  std::string retry_after;
  std::string error_text;
  std::string fatal;                // a local failure (disk, store) that stops this item
  bool bad_range = false;           // a 206 for other bytes than asked: start over
  bool restarted = false;           // a 200 to our Range request: the bytes start from zero again
  std::uint64_t announced = 0;      // bytes told to the progress display for this attempt
};

// "bytes START-END/TOTAL" → START.
std::optional<std::uint64_t> content_range_start(const std::string& value) {
  auto pos = value.find("bytes");
  if (pos == std::string::npos) return std::nullopt;
  pos = value.find_first_of("0123456789", pos);
  if (pos == std::string::npos) return std::nullopt;
  std::uint64_t start = 0;
  auto [end, ec] = std::from_chars(value.data() + pos, value.data() + value.size(), start);
  if (ec != std::errc() || end == value.data() + value.size() || *end != '-') return std::nullopt;
  return start;
}

// libcurl callbacks. No exception may cross into libcurl: each one catches, records the
// failure as the item's `fatal` and returns 0, which aborts the transfer.
struct Callbacks {
  static size_t header(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t n = size * count;
    return transport::without_exceptions(t->fatal, [&]() -> size_t {
      on_header_line(*t, std::string_view(data, n));
      return n;
    });
  }

  static void on_header_line(Transfer& t, std::string_view line) {
    if (line.rfind("HTTP/", 0) == 0) {
      t.status = 0;
      const auto space = line.find(' ');
      if (space != std::string_view::npos) {
        std::from_chars(line.data() + space + 1, line.data() + line.size(), t.status);
      }
      t.mode = BodyMode::pending;
      t.content_length.reset();
      t.content_range.clear();
      t.retry_after.clear();
      return;
    }
    std::string name, value;
    if (transport::parse_header_line(line, name, value)) {
      if (name == "content-length") {
        std::uint64_t length = 0;
        if (std::from_chars(value.data(), value.data() + value.size(), length).ec == std::errc()) t.content_length = length;
      } else if (name == "content-range") {
        t.content_range = value;
      } else if (name == "retry-after") {
        t.retry_after = value;
      }
      return;
    }
    if (line == "\r\n" || line == "\n") decide_body(t);
  }

  // Stops the transfer (a local failure, never retried) when the item would hold more than it
  // may: its declared size, else the ceiling for items of unknown size. `total` is what it
  // would hold; `announced` when the server's Content-Length says so before any byte came.
  static void check_size(const Transfer& t, std::uint64_t total, bool announced) {
    const auto& declared = t.item->expected_size;
    const std::uint64_t allowed = declared.value_or(t.engine->options.http.max_download_bytes);
    if (total <= allowed) return;
    const std::string got = announced ? std::to_string(total) + " bytes (its Content-Length)"
                                      : "at least " + std::to_string(total) + " bytes";
    if (declared)
      throw Error(mismatch_message("the server sends more than its declared size (stopped; nothing was kept)",
                                   std::to_string(allowed) + " bytes", got));
    throw Error(mismatch_message("the server sends more than " + std::to_string(allowed) +
                                     " bytes, the ceiling for a download of unknown size (PODPLANE_HTTP_MAX_DOWNLOAD; "
                                     "stopped, nothing was kept)",
                                 "at most " + std::to_string(allowed) + " bytes", got));
  }

  // At the end of a response's headers: keep its body, skip it (redirects), or keep a little
  // of it for the error message.
  static void decide_body(Transfer& t) {
    if (t.status >= 300 && t.status < 400) {
      t.mode = BodyMode::discard;
    } else if (t.status == 200) {
      // A full body: a fresh start, or the server ignored our Range and starts from zero.
      if (t.sink->size() > 0) {
        t.engine->progress.forget_bytes(0, t.sink->size());
        t.sink->restart();
        t.start_offset = 0;
        t.restarted = true;
      }
      if (t.content_length) check_size(t, *t.content_length, true);
      t.mode = BodyMode::keep;
    } else if (t.status == 206) {
      const auto start = content_range_start(t.content_range);
      if (!start || *start != t.sink->size()) {
        t.bad_range = true;
        t.mode = BodyMode::discard;
      } else {
        if (t.content_length) check_size(t, *start + *t.content_length, true);
        t.mode = BodyMode::keep;
      }
    } else {
      t.mode = BodyMode::error_text;
    }
  }

  static size_t body(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    return transport::without_exceptions(t->fatal, [&] { return on_body(*t, data, size * count); });
  }

  static size_t on_body(Transfer& t, const char* data, size_t n) {
    Engine* engine = t.engine;
    if (t.mode == BodyMode::pending) decide_body(t);
    if (t.bad_range) return 0;  // no use receiving bytes we cannot place
    switch (t.mode) {
      case BodyMode::keep:
        if (t.announced == 0 && t.content_length) {
          t.announced = *t.content_length;
          engine->progress.expect_bytes(t.announced);
        }
        check_size(t, t.sink->size() + n, false);  // before a byte beyond it reaches the disk
        t.sink->write(data, n);
        engine->totals.bytes += n;
        engine->progress.received(n);
        return n;
      case BodyMode::error_text:
        if (t.error_text.size() < 512) t.error_text.append(data, std::min<size_t>(n, 512 - t.error_text.size()));
        return n;
      default:
        return n;
    }
  }
};

using Attempt = transport::RetryBudget::Attempt;

// One item of a run and where its bytes go.
struct Job {
  DownloadItem item;
  std::optional<fs::path> destination;  // none: into the store
  DownloadRun::Then then;               // may be empty
};

class Runner final : public DownloadRun {
 public:
  // `store` may be null when every item goes to a file.
  Runner(Engine& engine, cache::Store* store) : engine_(engine), store_(store) {
    transport::check(curl_multi_setopt(multi_.get(), CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX), "cannot enable HTTP/2 multiplexing");
    transport::check(curl_multi_setopt(multi_.get(), CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(per_host())),
                     "cannot set the per-host connection limit");
    transport::check(curl_multi_setopt(multi_.get(), CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(jobs())),
                     "cannot set the connection limit");
  }

  void add(DownloadItem item, Then then) override { enqueue({std::move(item), std::nullopt, std::move(then)}); }
  void add(DownloadItem item, fs::path destination, Then then) override {
    enqueue({std::move(item), std::move(destination), std::move(then)});
  }
  void after(std::shared_future<void> ready, std::function<void()> then) override {
    if (then_error_) return;  // the run is ending
    afters_.push_back({std::move(ready), std::move(then)});
  }
  void wake() override {
    wakes_.fetch_add(1);
    (void)curl_multi_wakeup(multi_.get());
  }

  // The outcomes in the order the items were added. Rethrows what a `then` threw.
  std::vector<DownloadOutcome> run() {
    running_ = true;
    while (!waiting_.empty() || !active_.empty() || !ended_.empty() || !afters_.empty()) {
      start_eligible();
      int running = 0;
      transport::check(curl_multi_perform(multi_.get(), &running), "transfer loop failed");
      int left = 0;
      while (CURLMsg* message = curl_multi_info_read(multi_.get(), &left)) {
        if (message->msg == CURLMSG_DONE) finish(message->easy_handle, message->data.result);
      }
      report_ended();
      report_ready();
      look_again_soon_after_an_early_wake();
      engine_.progress.tick();
      if (!waiting_.empty() || !active_.empty() || !afters_.empty()) {
        transport::check(curl_multi_poll(multi_.get(), nullptr, 0, poll_timeout_ms(), nullptr), "waiting for transfers failed");
      }
    }
    engine_.progress.done();
    if (then_error_) std::rethrow_exception(then_error_);
    return {std::make_move_iterator(outcomes_.begin()), std::make_move_iterator(outcomes_.end())};
  }

 private:
  void enqueue(Job job) {
    if (then_error_) return;  // the run is ending
    jobs_.push_back(std::move(job));  // a deque: the items of running transfers stay where they are
    outcomes_.emplace_back();
    auto t = std::make_unique<Transfer>();
    t->engine = &engine_;
    t->index = jobs_.size() - 1;
    t->item = &jobs_.back().item;
    t->host = transport::host_key(t->item->url);
    t->follow_up = running_;
    waiting_.push_back(std::move(t));
    engine_.progress.add_items(1);
  }

  std::unique_ptr<Sink> make_sink(const Job& job) {
    if (job.destination) return std::make_unique<FileSink>(*job.destination, job.item.other_algorithm);
    if (store_ == nullptr) throw Error("internal: a download into the store without a store");
    return std::make_unique<StoreSink>(*store_, job.item);
  }

  // Calls the `then` of each `after` whose work is done (wake() ends the poll when one is).
  void report_ready() {
    for (auto it = afters_.begin(); it != afters_.end();) {
      if (it->ready.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        ++it;
        continue;
      }
      auto then = std::move(it->then);
      it = afters_.erase(it);
      if (then_error_) continue;
      call_then(then);  // may add items, or another `after`
      it = afters_.begin();  // `then` may have added to afters_
    }
  }

  // Hands each ended item's outcome to its `then`, which may add items (never end one). After
  // a `then` threw, no other is called and nothing new starts; running transfers finish.
  void report_ended() {
    std::vector<std::size_t> ended;
    ended.swap(ended_);
    for (std::size_t index : ended) {
      const auto& then = jobs_[index].then;
      if (!then || then_error_) continue;
      call_then([&] { then(outcomes_[index]); });
    }
  }

  // What a `then` throws ends the run: no other `then` is called and nothing new starts;
  // running transfers finish, and run() rethrows it.
  void call_then(const std::function<void()>& then) {
    try {
      then();
    } catch (...) {
      then_error_ = std::current_exception();
      waiting_.clear();
    }
  }

  int jobs() const { return std::max(1, engine_.options.jobs); }
  int per_host() const { return std::max(1, engine_.options.per_host); }
  int active_on(const std::string& host) const {
    auto it = host_active_.find(host);
    return it == host_active_.end() ? 0 : it->second;
  }

  // The thread of an after() wakes the run just before its future is ready, not after: once
  // it is, the run may end and go. So a wake can find its future not ready yet (the thread
  // between the two), and the run would sleep until the poll timeout, a second off a terminal.
  // After a wake that leaves an after() waiting, the run looks again every millisecond for
  // kEarlyWakeWindow; which after() the wake was for, it cannot tell.
  static constexpr std::chrono::milliseconds kEarlyWakeWindow{100};
  void look_again_soon_after_an_early_wake() {
    const std::uint64_t wakes = wakes_.load();
    if (afters_.empty()) look_again_until_ = {};
    else if (wakes != wakes_seen_) look_again_until_ = Clock::now() + kEarlyWakeWindow;
    wakes_seen_ = wakes;
  }

  int poll_timeout_ms() const {
    long timeout = engine_.progress.terminal() ? 100 : 1000;
    const auto now = Clock::now();
    if (now < look_again_until_) timeout = 1;
    for (const auto& t : waiting_) {
      if (t->not_before > now) {
        timeout = std::min<long>(timeout, std::chrono::duration_cast<std::chrono::milliseconds>(t->not_before - now).count() + 1);
      } else if (static_cast<int>(active_.size()) < jobs() && active_on(t->host) < per_host()) {
        timeout = 0;
      }
    }
    return static_cast<int>(std::max<long>(timeout, 0));
  }

  // Follow-ups first: each is the next step of a chain (a manifest's blobs) that the items
  // queued from the start do not wait on.
  enum class Pass { follow_ups, the_rest };
  void start_eligible() {
    start_eligible(Pass::follow_ups);
    start_eligible(Pass::the_rest);
  }

  void start_eligible(Pass pass) {
    const auto now = Clock::now();
    for (auto it = waiting_.begin(); it != waiting_.end() && static_cast<int>(active_.size()) < jobs();) {
      Transfer& t = **it;
      if (t.follow_up != (pass == Pass::follow_ups) || t.not_before > now || host_active_[t.host] >= per_host()) {
        ++it;
        continue;
      }
      std::unique_ptr<Transfer> owned = std::move(*it);
      it = waiting_.erase(it);
      if (start(*owned)) {
        CURL* handle = owned->easy.get();
        active_.emplace(handle, std::move(owned));
      }
    }
  }

  // Starts one attempt; false when the item failed before any request.
  bool start(Transfer& t) {
    try {
      if (!t.budget) t.budget.emplace(engine_.options.http);
      if (!t.sink) t.sink = make_sink(jobs_[t.index]);
      t.easy = transport::CurlEasy();
      CURL* easy = t.easy.get();
      transport::apply_common_options(easy, engine_.options.http);
      t.headers = transport::CurlSlist();
      for (const auto& header : t.item->headers) t.headers.append(header);
      t.status = 0;
      t.mode = BodyMode::pending;
      t.error_text.clear();
      t.fatal.clear();
      t.bad_range = false;
      t.restarted = false;
      t.announced = 0;
      t.error_buffer[0] = '\0';
      t.start_offset = t.sink->size();
      using transport::set;
      transport::set_url(easy, t.item->url);
      set(easy, CURLOPT_HTTPHEADER, t.headers.get());
      set(easy, CURLOPT_FOLLOWLOCATION, 1L);
      set(easy, CURLOPT_WRITEFUNCTION, Callbacks::body);
      set(easy, CURLOPT_WRITEDATA, &t);
      set(easy, CURLOPT_HEADERFUNCTION, Callbacks::header);
      set(easy, CURLOPT_HEADERDATA, &t);
      set(easy, CURLOPT_ERRORBUFFER, t.error_buffer);
      // The item's deadline covers this attempt too (a drip fast enough to pass the low-speed
      // limit still ends).
      set(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(t.budget->time_left().count()));
      // Parallel requests to an HTTP/2 server share its connection instead of opening more.
      set(easy, CURLOPT_PIPEWAIT, 1L);
      // CURLOPT_RANGE rather than RESUME_FROM: a server that ignores Range answers 200, and we
      // restart from zero (a failed attempt) instead of failing at once.
      t.range = std::to_string(t.start_offset) + "-";
      if (t.start_offset > 0) set(easy, CURLOPT_RANGE, t.range.c_str());
      transport::check(curl_multi_add_handle(multi_.get(), easy), "cannot start a transfer");
    } catch (const std::exception& e) {
      fail(t, "cannot fetch " + t.item->label + " from " + redact_url(t.item->url) + ": " + e.what());
      return false;
    }
    ++host_active_[t.host];
    return true;
  }

  void finish(CURL* handle, CURLcode code) {
    auto found = active_.find(handle);
    if (found == active_.end()) return;
    std::unique_ptr<Transfer> owned = std::move(found->second);
    active_.erase(found);
    transport::check(curl_multi_remove_handle(multi_.get(), handle), "cannot end a transfer");
    Transfer& t = *owned;
    --host_active_[t.host];
    const std::string url = redact_url(t.item->url);

    if (!t.fatal.empty()) return fail(t, "cannot fetch " + t.item->label + " from " + url + ": " + t.fatal);
    if (t.bad_range) {
      // A 206 for bytes we did not ask for: drop what we have and ask for the whole file.
      engine_.progress.forget_bytes(0, t.sink->size());
      t.sink->restart();
      return retry(std::move(owned), "the server answered a Range request with other bytes (Content-Range: " +
                                         t.content_range + ")", Attempt::failed, std::nullopt);
    }
    if (code == CURLE_OK && (t.status == 200 || t.status == 206)) {
      DownloadOutcome& outcome = outcomes_[t.index];
      try {
        outcome.size = t.sink->size();
        outcome.digest = t.sink->commit(*t.item);
        outcome.other_digest = t.sink->other_digest();
        outcome.unpublished = t.sink->unpublished();
        outcome.ok = true;
        ++engine_.totals.transfers;
      } catch (const std::exception& e) {
        outcome.ok = false;
        outcome.error = e.what();
      }
      t.sink.reset();
      engine_.progress.finished(t.item->label, outcome.ok, outcome.size);
      ended_.push_back(t.index);
      return;
    }
    if (code == CURLE_OK) {
      const std::string reason = "HTTP " + std::to_string(t.status);
      if (t.status == 416) {
        // What we hold no longer matches the file (it changed upstream): start over.
        engine_.progress.forget_bytes(0, t.sink->size());
        t.sink->restart();
        return retry(std::move(owned), reason, Attempt::failed, std::nullopt);
      }
      if (transport::is_transient_status(t.status)) {
        std::optional<std::chrono::milliseconds> retry_after;
        if (!t.retry_after.empty()) retry_after = transport::parse_retry_after(t.retry_after);
        return retry(std::move(owned), reason, Attempt::failed, retry_after);
      }
      std::string text = t.error_text.substr(0, t.error_text.find('\n'));
      return fail(t, "cannot fetch " + t.item->label + " from " + url + ": " + reason +
                         (text.empty() || text.size() > 200 ? "" : " (" + text + ")"));
    }
    std::string reason = transport::describe(code, t.error_buffer);
    if (transport::is_transient_error(code)) {
      // A cut-off transfer that brought new bytes resumes where it stopped, free up to
      // max_resumes. It is a failed attempt when the server started from zero again (it
      // ignores Range, so a resume can never finish) or when it stalled or ran out of time.
      Attempt attempt = Attempt::failed;
      if (t.restarted) {
        reason += "; the server answered a Range request with the whole file";
      } else if (code != CURLE_OPERATION_TIMEDOUT && t.sink && t.sink->size() > t.start_offset) {
        attempt = Attempt::resumed;
      }
      return retry(std::move(owned), reason, attempt, std::nullopt);
    }
    fail(t, "cannot fetch " + t.item->label + " from " + url + ": " + reason);
  }

  void retry(std::unique_ptr<Transfer> owned, const std::string& reason, Attempt attempt,
             std::optional<std::chrono::milliseconds> retry_after) {
    Transfer& t = *owned;
    const auto delay = t.budget->next(attempt, retry_after);
    if (!delay) {
      return fail(t, "cannot fetch " + t.item->label + " from " + redact_url(t.item->url) + ": " + reason +
                         " (" + t.budget->summary() + ")");
    }
    engine_.progress.retrying(t.item->label, reason, *delay);
    t.not_before = Clock::now() + *delay;
    waiting_.push_back(std::move(owned));
  }

  void fail(Transfer& t, const std::string& message) {
    DownloadOutcome& outcome = outcomes_[t.index];
    outcome.ok = false;
    outcome.error = message;
    t.sink.reset();  // removes its temp file
    engine_.progress.finished(t.item->label, false, 0);
    ended_.push_back(t.index);
  }

  Engine& engine_;
  cache::Store* store_;
  std::deque<Job> jobs_;
  std::deque<DownloadOutcome> outcomes_;  // same index as jobs_
  std::vector<std::size_t> ended_;        // items ended since report_ended last ran
  std::exception_ptr then_error_;
  bool running_ = false;  // run() has begun: what is added now is a follow-up
  // Before afters_ (destroyed after it), as multi_: an after()'s work may still wake() then.
  std::atomic<std::uint64_t> wakes_{0};  // wake() calls, from any thread
  std::uint64_t wakes_seen_ = 0;          // by look_again_soon_after_an_early_wake()
  Clock::time_point look_again_until_{};
  transport::CurlMulti multi_;
  struct After {
    std::shared_future<void> ready;
    std::function<void()> then;
  };
  // After multi_: destroyed first, so that the work of an after() still running when a run
  // ends early (its future's last reference, from std::async, waits for it) can still wake().
  std::vector<After> afters_;
  std::deque<std::unique_ptr<Transfer>> waiting_;
  std::map<CURL*, std::unique_ptr<Transfer>> active_;
  std::map<std::string, int> host_active_;
};

}  // namespace

struct Downloader::Impl {
  DownloadOptions options;
  DownloadTotals totals;
};

Downloader::Downloader(DownloadOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = std::move(options); }
Downloader::~Downloader() = default;

std::vector<DownloadOutcome> Downloader::fetch_into_store(cache::Store& store, const std::vector<DownloadItem>& items) {
  if (items.empty()) return {};
  Engine engine{impl_->options, impl_->totals, ProgressDisplay(impl_->options.progress, 0)};
  Runner runner(engine, &store);
  for (const auto& item : items) runner.add(item, nullptr);
  return runner.run();
}

std::vector<DownloadOutcome> Downloader::fetch_to_files(const std::vector<DownloadItem>& items,
                                                        const std::vector<std::filesystem::path>& destinations) {
  if (items.size() != destinations.size()) throw Error("internal: fetch_to_files needs one destination per item");
  if (items.empty()) return {};
  Engine engine{impl_->options, impl_->totals, ProgressDisplay(impl_->options.progress, 0)};
  Runner runner(engine, nullptr);
  for (std::size_t i = 0; i < items.size(); ++i) runner.add(items[i], destinations[i], nullptr);
  return runner.run();
}

void Downloader::run(cache::Store& store, const std::function<void(DownloadRun&)>& start) {
  Engine engine{impl_->options, impl_->totals, ProgressDisplay(impl_->options.progress, 0)};
  Runner runner(engine, &store);
  start(runner);
  (void)runner.run();
}

void Downloader::fetch_to_file(const DownloadItem& item, const std::filesystem::path& destination) {
  auto outcomes = fetch_to_files({item}, {destination});
  if (!outcomes.at(0).ok) throw Error(outcomes[0].error);
}

const DownloadTotals& Downloader::totals() const { return impl_->totals; }

}  // namespace podplane::net
