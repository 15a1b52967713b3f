// The HTTP client and the download engine against the fixture server: parallel fetches,
// retries of 503 and 429 (Retry-After), Range resume of a cut-off transfer, digest checks,
// per-item errors, and the progress output.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "cache/store.hpp"
#include "net/download.hpp"
#include "net/http.hpp"
#include "net/progress.hpp"
#include "net/transport.hpp"
#include "tests/support/upstream.hpp"

namespace podplane::test {
namespace {

using net::DownloadItem;
using net::DownloadOptions;
using net::Downloader;

struct Package {
  std::string url_path;
  std::string filename;
  std::string sha256;
  std::uint64_t size = 0;
};

// Every provider zip of the fixture, in a stable order.
std::vector<Package> packages(const FixtureUpstream& up) {
  std::vector<Package> out;
  for (const auto& provider : up.fixture()["providers"]) {
    for (const auto& version : provider["versions"]) {
      for (const auto& [platform, pkg] : version["packages"].items()) {
        out.push_back({pkg["url"], pkg["filename"], pkg["sha256"], pkg["size"]});
      }
    }
  }
  return out;
}

Package package(const FixtureUpstream& up, const std::string& filename) {
  for (auto& p : packages(up)) {
    if (p.filename == filename) return p;
  }
  throw std::runtime_error("no package " + filename);
}

DownloadItem item_for(const FixtureUpstream& up, const Package& p, bool with_digest = true) {
  DownloadItem item;
  item.url = up.url(p.url_path);
  if (with_digest) item.expected_sha256 = p.sha256;
  item.label = p.filename;
  return item;
}

DownloadOptions quiet_options(const FixtureUpstream& up) {
  DownloadOptions options;
  options.progress = net::Progress::quiet;
  options.http.ca_file = up.ca_file();
  options.http.initial_backoff = std::chrono::milliseconds(20);
  return options;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(ResolveUrl, FollowsRfc3986) {
  const std::string json = "https://127.0.0.1:8443/v1/providers/podplane/podplane/1.2.0/download/linux/amd64";
  EXPECT_EQ(net::resolve_url(json, "/releases/x.zip"), "https://127.0.0.1:8443/releases/x.zip");
  EXPECT_EQ(net::resolve_url(json, "../../../../../../../releases/podplane/1.2.0/x.zip"),
            "https://127.0.0.1:8443/releases/podplane/1.2.0/x.zip");
  EXPECT_EQ(net::resolve_url(json, "x.zip"),
            "https://127.0.0.1:8443/v1/providers/podplane/podplane/1.2.0/download/linux/x.zip");
  EXPECT_EQ(net::resolve_url("https://a.test/mirror/h/ns/t/1.0.0.json", "t_1.0.0_linux_amd64.zip"),
            "https://a.test/mirror/h/ns/t/t_1.0.0_linux_amd64.zip");
  EXPECT_EQ(net::resolve_url(json, "https://other.test/a?b=c"), "https://other.test/a?b=c");
  EXPECT_EQ(net::resolve_url("https://a.test/v1/modules/x/y/z/1.0.0/download", "./pkg.tar.gz?archive=tar.gz"),
            "https://a.test/v1/modules/x/y/z/1.0.0/pkg.tar.gz?archive=tar.gz");
  EXPECT_THROW((void)net::resolve_url("not a url", "x"), Error);
}

TEST(HttpOptions, FromEnvironmentTakesEachOverrideAndRefusesNonsense) {
  const char* names[] = {"PODPLANE_HTTP_RETRIES", "PODPLANE_HTTP_RESUMES", "PODPLANE_HTTP_BACKOFF",
                         "PODPLANE_HTTP_MAX_WAIT", "PODPLANE_HTTP_DEADLINE", "PODPLANE_HTTP_CONNECT_TIMEOUT",
                         "PODPLANE_HTTP_LOW_SPEED_TIME", "PODPLANE_HTTP_LOW_SPEED_LIMIT", "PODPLANE_HTTP_MAX_DOWNLOAD"};
  for (const char* name : names) unsetenv(name);
  const auto defaults = net::HttpOptions::from_environment();
  EXPECT_EQ(defaults.max_retries, 4);
  EXPECT_EQ(defaults.deadline, std::chrono::hours(1));
  EXPECT_EQ(defaults.low_speed_limit, 1024);
  EXPECT_EQ(defaults.low_speed_timeout, std::chrono::seconds(30));
  EXPECT_EQ(defaults.max_download_bytes, std::uint64_t{4} << 30);
  {
    ScopedEnv retries("PODPLANE_HTTP_RETRIES", "2");
    ScopedEnv resumes("PODPLANE_HTTP_RESUMES", "0");
    ScopedEnv backoff("PODPLANE_HTTP_BACKOFF", "10ms");
    ScopedEnv wait("PODPLANE_HTTP_MAX_WAIT", "5s");
    ScopedEnv deadline("PODPLANE_HTTP_DEADLINE", "2m");
    ScopedEnv connect("PODPLANE_HTTP_CONNECT_TIMEOUT", "3");
    ScopedEnv low_time("PODPLANE_HTTP_LOW_SPEED_TIME", "1500ms");  // libcurl counts whole seconds: 2 s
    ScopedEnv low_limit("PODPLANE_HTTP_LOW_SPEED_LIMIT", "4096");
    ScopedEnv max_download("PODPLANE_HTTP_MAX_DOWNLOAD", "1048576");
    const auto options = net::HttpOptions::from_environment();
    EXPECT_EQ(options.max_retries, 2);
    EXPECT_EQ(options.max_resumes, 0);
    EXPECT_EQ(options.initial_backoff, std::chrono::milliseconds(10));
    EXPECT_EQ(options.max_retry_wait, std::chrono::seconds(5));
    EXPECT_EQ(options.deadline, std::chrono::minutes(2));
    EXPECT_EQ(options.connect_timeout, std::chrono::seconds(3));
    EXPECT_EQ(options.low_speed_timeout, std::chrono::seconds(2));
    EXPECT_EQ(options.low_speed_limit, 4096);
    EXPECT_EQ(options.max_download_bytes, 1048576u);
  }
  for (const auto& [name, value] : std::vector<std::pair<const char*, const char*>>{
           {"PODPLANE_HTTP_RETRIES", "-1"}, {"PODPLANE_HTTP_RETRIES", "many"}, {"PODPLANE_HTTP_DEADLINE", "5 parsecs"},
           {"PODPLANE_HTTP_DEADLINE", "0"}, {"PODPLANE_HTTP_BACKOFF", "99999999999h"},
           {"PODPLANE_HTTP_MAX_DOWNLOAD", "4G"}}) {
    ScopedEnv bad(name, value);
    try {
      (void)net::HttpOptions::from_environment();
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(RetryBudget, ResumesAreFreeUpToTheirCapThenFailuresEndIt) {
  using Attempt = net::transport::RetryBudget::Attempt;
  net::HttpOptions options;
  options.max_retries = 2;
  options.max_resumes = 3;
  options.initial_backoff = std::chrono::milliseconds(1);
  net::transport::RetryBudget budget(options);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(budget.next(Attempt::resumed), std::chrono::milliseconds(0)) << i;
  EXPECT_TRUE(budget.next(Attempt::resumed));  // the fourth resume is the first failure
  EXPECT_TRUE(budget.next(Attempt::failed));   // the second
  EXPECT_FALSE(budget.next(Attempt::failed));  // the third is one too many
  EXPECT_EQ(budget.attempts(), 6);
  EXPECT_NE(budget.summary().find("after 6 attempts"), std::string::npos) << budget.summary();
}

TEST(RetryBudget, NoAttemptStartsAfterTheDeadline) {
  using Attempt = net::transport::RetryBudget::Attempt;
  net::HttpOptions options;
  options.deadline = std::chrono::milliseconds(50);
  options.initial_backoff = std::chrono::milliseconds(200);  // the first backoff already ends past it
  net::transport::RetryBudget budget(options);
  EXPECT_LE(budget.time_left(), std::chrono::milliseconds(50));
  EXPECT_FALSE(budget.next(Attempt::failed));
  EXPECT_NE(budget.summary().find("deadline of 0.05 s"), std::string::npos) << budget.summary();
}

TEST(HttpClient, GetsDocumentsAndReturnsErrorsAsStatuses) {
  FixtureUpstream up;
  net::HttpOptions options;
  options.ca_file = up.ca_file();
  net::HttpClient http(options);
  auto discovery = http.get(up.url("/.well-known/terraform.json"), {"Accept: application/json"});
  EXPECT_EQ(discovery.status, 200);
  EXPECT_EQ(discovery.content_type(), "application/json");
  EXPECT_EQ(nlohmann::json::parse(discovery.body)["providers.v1"], "/v1/providers/");
  EXPECT_EQ(discovery.final_url, up.url("/.well-known/terraform.json"));

  auto module = http.get(up.url("/v1/modules/nstance-dev/nstance/aws/2.0.1/download"));
  EXPECT_EQ(module.status, 204);
  EXPECT_EQ(module.headers.at("x-terraform-get"), "git::" + up.base_url() + "/git/terraform-aws-nstance.git?ref=v2.0.1");

  auto missing = http.get(up.url("/v1/providers/hashicorp/nope/versions"));
  EXPECT_EQ(missing.status, 404);
}

TEST(HttpClient, RetriesA503AndHonoursSslCertFile) {
  ServeOptions serve;
  serve.fail_first = {"2:/versions$:503"};
  FixtureUpstream up({}, serve);
  {
    // No ca_file in the options: only SSL_CERT_FILE makes the fixture's certificate trusted.
    ScopedEnv cert("SSL_CERT_FILE", up.ca_file().string());
    net::HttpOptions options;
    options.initial_backoff = std::chrono::milliseconds(10);
    net::HttpClient http(options);
    auto versions = http.get(up.url("/v1/providers/hashicorp/aws/versions"));
    EXPECT_EQ(versions.status, 200);
    EXPECT_EQ(up.requests("/aws/versions$", 503).size(), 2u);
  }
  {
    ScopedEnv cert("SSL_CERT_FILE", "/dev/null");
    net::HttpClient http;
    try {
      (void)http.get(up.url("/.well-known/terraform.json"));
      FAIL() << "an untrusted certificate was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(up.base_url()), std::string::npos) << e.what();
    }
  }
}

TEST(HttpClient, GivesUpAfterMaxRetriesWithTheLastStatus) {
  ServeOptions serve;
  serve.fail_first = {"10:/versions$:502"};
  FixtureUpstream up({}, serve);
  net::HttpOptions options;
  options.ca_file = up.ca_file();
  options.max_retries = 2;
  options.initial_backoff = std::chrono::milliseconds(10);
  net::HttpClient http(options);
  auto response = http.get(up.url("/v1/providers/hashicorp/aws/versions"));
  EXPECT_EQ(response.status, 502);
  EXPECT_EQ(up.requests("/aws/versions$").size(), 3u);
}

TEST(Downloader, FetchesManyFilesInParallelIntoTheStore) {
  // The server holds the zip requests until 4 are in flight: overlap is then seen in its access
  // log however loaded the machine is, and a client that fetches one at a time is held 20 s and
  // logged with fault "hold-timeout" (and at most one transfer at a time).
  ServeOptions serve;
  serve.hold_until = {"4:\\.zip$"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto all = packages(up);
  ASSERT_GE(all.size(), 40u);
  std::vector<DownloadItem> items;
  for (const auto& p : all) items.push_back(item_for(up, p));
  auto options = quiet_options(up);
  options.jobs = 8;
  options.per_host = 8;
  Downloader downloader(options);
  auto outcomes = downloader.fetch_into_store(store, items);
  ASSERT_EQ(outcomes.size(), items.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(outcomes[i].ok) << outcomes[i].error;
    EXPECT_EQ(outcomes[i].digest, all[i].sha256) << all[i].filename;
    EXPECT_EQ(outcomes[i].size, all[i].size);
    EXPECT_TRUE(store.has_object(all[i].sha256)) << all[i].filename;
    total += all[i].size;
  }
  EXPECT_EQ(downloader.totals().bytes, total);
  EXPECT_EQ(downloader.totals().transfers, all.size());
  auto log = up.requests("\\.zip$");
  EXPECT_EQ(log.size(), all.size());  // one request per file: nothing fetched twice
  for (const auto& entry : log) EXPECT_NE(entry.fault, "hold-timeout") << entry.path << " waited for company in vain";
  const auto concurrency = max_concurrency(log);
  EXPECT_GE(concurrency, 4u) << "transfers did not overlap";
  EXPECT_LE(concurrency, 8u) << "more transfers at once than jobs";
}

// Downloader::run: a `then` adds items to the run it ended in (they start before the items
// queued at the start: with one job, the log shows the order), work on another thread joins it
// through after(), and an item goes into the store or to a file as it says.
TEST(Downloader, RunGrowsFromThensAndFromWorkOnAnotherThread) {
  FixtureUpstream up;
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto all = packages(up);
  ASSERT_GE(all.size(), 6u);
  auto options = quiet_options(up);
  options.jobs = 1;
  Downloader downloader(options);
  std::vector<std::string> ended;  // labels, in the order their thens ran
  std::string follow_up_digest;
  auto note = [&](const std::string& label) {
    return [&ended, label](const net::DownloadOutcome& outcome) {
      EXPECT_TRUE(outcome.ok) << outcome.error;
      ended.push_back(label);
    };
  };
  downloader.run(store, [&](net::DownloadRun& run) {
    run.add(item_for(up, all[0]), [&](const net::DownloadOutcome& outcome) {
      ASSERT_TRUE(outcome.ok) << outcome.error;
      EXPECT_EQ(outcome.digest, all[0].sha256);
      ended.push_back(all[0].filename);
      run.add(item_for(up, all[1]), [&](const net::DownloadOutcome& follow_up) {
        follow_up_digest = follow_up.digest;
        ended.push_back(all[1].filename);
      });
      run.add(item_for(up, all[2], false), tmp / "files" / all[2].filename, note(all[2].filename));
    });
    run.add(item_for(up, all[3]), note(all[3].filename));
    run.add(item_for(up, all[4]), note(all[4].filename));
    auto ready = std::async(std::launch::async, [&run] { run.wake(); }).share();
    run.after(ready, [&] { run.add(item_for(up, all[5]), note(all[5].filename)); });
  });
  ASSERT_EQ(ended.size(), 6u);
  EXPECT_EQ(ended[0], all[0].filename);
  auto position = [&](const Package& p) { return std::find(ended.begin(), ended.end(), p.filename) - ended.begin(); };
  // The first item's two follow-ups before the items queued at the start (the one after() adds
  // comes whenever its thread is done).
  for (std::size_t follow_up : {1, 2})
    for (std::size_t queued : {3, 4})
      EXPECT_LT(position(all[follow_up]), position(all[queued])) << all[follow_up].filename << " after " << all[queued].filename;
  EXPECT_EQ(follow_up_digest, all[1].sha256);
  for (std::size_t i : {0, 1, 3, 4, 5}) EXPECT_TRUE(store.has_object(all[i].sha256)) << all[i].filename;
  EXPECT_FALSE(store.has_object(all[2].sha256)) << "an item with a destination goes to its file";
  EXPECT_EQ(file_digest_hex(tmp / "files" / all[2].filename, DigestAlgorithm::sha256), all[2].sha256);
  auto zips = up.requests("\\.zip$");
  ASSERT_EQ(zips.size(), 6u);
  for (std::size_t i = 0; i < zips.size(); ++i)  // one job: the log has the order of the requests
    EXPECT_EQ(fs::path(zips[i].path).filename().string(), ended[i]) << i;
}

// The thread of an after() wakes the run just before its future is ready (once it is, the run
// may end and go). A wake that finds nothing ready yet must not leave the run asleep until its
// poll timeout, a second off a terminal. Here the gap is 20 ms instead of the microseconds of a
// std::async returning, so that the run surely looks in it.
TEST(Downloader, AWakeJustBeforeTheWorkIsReadyIsNotSleptThrough) {
  FixtureUpstream up;
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  Downloader downloader(quiet_options(up));
  using Clock = std::chrono::steady_clock;
  std::promise<void> done;
  std::shared_future<void> ready = done.get_future().share();
  std::future<void> worker;
  Clock::time_point ready_at, then_at;
  downloader.run(store, [&](net::DownloadRun& run) {
    worker = std::async(std::launch::async, [&] {
      run.wake();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ready_at = Clock::now();
      done.set_value();
    });
    run.after(ready, [&] { then_at = Clock::now(); });
  });
  worker.get();
  ASSERT_NE(then_at, Clock::time_point{}) << "the after's then never ran";
  EXPECT_LT(then_at - ready_at, std::chrono::milliseconds(500))
      << "the run slept " << std::chrono::duration_cast<std::chrono::milliseconds>(then_at - ready_at).count()
      << " ms after the work was ready";
}

TEST(Downloader, RunRethrowsWhatAThenThrew) {
  FixtureUpstream up;
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto all = packages(up);
  Downloader downloader(quiet_options(up));
  EXPECT_THROW(downloader.run(store,
                              [&](net::DownloadRun& run) {
                                run.add(item_for(up, all[0]), [](const net::DownloadOutcome&) { throw Error("stop here"); });
                              }),
               Error);
}

TEST(Downloader, PerHostCapLimitsConcurrentTransfers) {
  ServeOptions serve;
  serve.delay_ms = 100;
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  std::vector<DownloadItem> items;
  for (const auto& p : packages(up)) {
    if (items.size() < 12) items.push_back(item_for(up, p));
  }
  auto options = quiet_options(up);
  options.jobs = 8;
  options.per_host = 2;
  Downloader downloader(options);
  for (const auto& outcome : downloader.fetch_into_store(store, items)) EXPECT_TRUE(outcome.ok) << outcome.error;
  EXPECT_LE(max_concurrency(up.requests("\\.zip$")), 2u);
}

TEST(Downloader, Retries503ThenSucceeds) {
  ServeOptions serve;
  serve.fail_first = {"2:aws_6\\.2\\.0_.*\\.zip$:503"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  std::vector<DownloadItem> items;
  for (const char* platform : {"linux_amd64", "linux_arm64", "darwin_amd64"}) {
    items.push_back(item_for(up, package(up, std::string("terraform-provider-aws_6.2.0_") + platform + ".zip")));
  }
  Downloader downloader(quiet_options(up));
  auto outcomes = downloader.fetch_into_store(store, items);
  for (const auto& outcome : outcomes) EXPECT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(up.requests("aws_6\\.2\\.0_.*\\.zip$", 503).size(), 6u);
  EXPECT_EQ(up.requests("aws_6\\.2\\.0_.*\\.zip$", 200).size(), 3u);
}

TEST(Downloader, Honours429RetryAfter) {
  ServeOptions serve;
  serve.fail_first = {"1:null_3\\.2\\.4_linux_amd64\\.zip$:429:1"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto pkg = package(up, "terraform-provider-null_3.2.4_linux_amd64.zip");
  Downloader downloader(quiet_options(up));
  const auto start = std::chrono::steady_clock::now();
  auto outcomes = downloader.fetch_into_store(store, {item_for(up, pkg)});
  const double elapsed = seconds_since(start);
  ASSERT_TRUE(outcomes[0].ok) << outcomes[0].error;
  EXPECT_GE(elapsed, 0.95) << "Retry-After: 1 was not honoured";  // backoff alone would be ~20 ms
  auto log = up.requests("null_3\\.2\\.4_linux_amd64\\.zip$");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].status, 429);
  EXPECT_GE(log[1].start - log[0].end, 0.95);
}

TEST(Downloader, CapsALongRetryAfter) {
  ServeOptions serve;
  serve.fail_first = {"1:null_3\\.2\\.4_linux_arm64\\.zip$:503:3600"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto options = quiet_options(up);
  options.http.max_retry_wait = std::chrono::milliseconds(300);
  Downloader downloader(options);
  const auto start = std::chrono::steady_clock::now();
  auto outcomes = downloader.fetch_into_store(store, {item_for(up, package(up, "terraform-provider-null_3.2.4_linux_arm64.zip"))});
  EXPECT_TRUE(outcomes[0].ok) << outcomes[0].error;
  EXPECT_LT(seconds_since(start), 20.0);
}

TEST(Downloader, ResumesACutOffTransferWithRange) {
  ServeOptions serve;
  serve.cut_after = {"5000:tls_4\\.1\\.0_linux_arm64\\.zip$"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto pkg = package(up, "terraform-provider-tls_4.1.0_linux_arm64.zip");
  ASSERT_GT(pkg.size, 5000u);
  Downloader downloader(quiet_options(up));
  auto outcomes = downloader.fetch_into_store(store, {item_for(up, pkg)});
  ASSERT_TRUE(outcomes[0].ok) << outcomes[0].error;
  EXPECT_EQ(outcomes[0].digest, pkg.sha256);
  EXPECT_TRUE(store.has_object(pkg.sha256));
  auto log = up.requests("tls_4\\.1\\.0_linux_arm64\\.zip$");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].fault, "cut");
  EXPECT_EQ(log[0].bytes, 5000u);
  EXPECT_EQ(log[1].status, 206);
  EXPECT_EQ(log[1].range.value_or(""), "bytes=5000-");
  EXPECT_EQ(log[1].bytes, pkg.size - 5000);
  // Only the missing part came again.
  EXPECT_EQ(downloader.totals().bytes, pkg.size);
}

TEST(Downloader, RestartsWhenTheServerIgnoresRange) {
  ServeOptions serve;
  serve.cut_after = {"5000:random_3\\.7\\.2_darwin_amd64\\.zip$"};
  serve.ignore_range = {"random_3\\.7\\.2_darwin_amd64\\.zip$"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto pkg = package(up, "terraform-provider-random_3.7.2_darwin_amd64.zip");
  Downloader downloader(quiet_options(up));
  auto outcomes = downloader.fetch_into_store(store, {item_for(up, pkg)});
  ASSERT_TRUE(outcomes[0].ok) << outcomes[0].error;
  EXPECT_EQ(outcomes[0].digest, pkg.sha256);
  auto log = up.requests("random_3\\.7\\.2_darwin_amd64\\.zip$");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].range.value_or(""), "bytes=5000-");
  EXPECT_EQ(log[1].status, 200);
  EXPECT_EQ(log[1].fault, "ignore-range");
}

// A file fetched to a destination with another algorithm (a vmconfig item's sha512) gets that
// digest hashed as it streams, across a resumed transfer (the bytes before the cut count) and
// a restarted one (they do not).
TEST(Downloader, AnotherDigestIsHashedAsTheFileStreamsAcrossResumeAndRestart) {
  ServeOptions serve;
  serve.cut_after = {"5000:tls_4\\.1\\.0_linux_arm64\\.zip$", "5000:random_3\\.7\\.2_darwin_amd64\\.zip$"};
  serve.ignore_range = {"random_3\\.7\\.2_darwin_amd64\\.zip$"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  std::vector<DownloadItem> items;
  std::vector<fs::path> destinations;
  for (const char* name : {"terraform-provider-tls_4.1.0_linux_arm64.zip", "terraform-provider-random_3.7.2_darwin_amd64.zip",
                           "terraform-provider-null_3.2.4_linux_amd64.zip"}) {
    items.push_back(item_for(up, package(up, name)));
    destinations.push_back(tmp / "dl" / name);
  }
  items[0].other_algorithm = DigestAlgorithm::sha512;
  items[1].other_algorithm = DigestAlgorithm::sha512;
  Downloader downloader(quiet_options(up));
  auto outcomes = downloader.fetch_to_files(items, destinations);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(outcomes[i].ok) << outcomes[i].error;
    Hasher sha512(DigestAlgorithm::sha512);
    sha512.update(read_file(destinations[i]));
    EXPECT_EQ(outcomes[i].other_digest, sha512.finish_hex()) << items[i].label;
  }
  ASSERT_TRUE(outcomes[2].ok) << outcomes[2].error;
  EXPECT_EQ(outcomes[2].other_digest, "") << "none asked";
  EXPECT_EQ(up.requests("tls_4\\.1\\.0_linux_arm64\\.zip$").back().status, 206);
  EXPECT_EQ(up.requests("random_3\\.7\\.2_darwin_amd64\\.zip$").back().fault, "ignore-range");
}

TEST(Downloader, WrongExpectedDigestIsAClearErrorAndLeavesNoObject) {
  FixtureUpstream up;
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto pkg = package(up, "terraform-provider-aws_6.0.0_darwin_arm64.zip");
  auto item = item_for(up, pkg);
  const std::string wrong(64, 'a');
  item.expected_sha256 = wrong;
  Downloader downloader(quiet_options(up));
  auto outcomes = downloader.fetch_into_store(store, {item});
  ASSERT_FALSE(outcomes[0].ok);
  const std::string& error = outcomes[0].error;
  EXPECT_NE(error.find("hash mismatch for terraform-provider-aws_6.0.0_darwin_arm64.zip"), std::string::npos) << error;
  EXPECT_NE(error.find("  expected: sha256:" + wrong), std::string::npos) << error;
  EXPECT_NE(error.find("  got:      sha256:" + pkg.sha256), std::string::npos) << error;
  EXPECT_FALSE(store.has_object(pkg.sha256));
  EXPECT_FALSE(fs::exists(store.object_path(pkg.sha256)));
  // No temp file is left behind anywhere under the store.
  for (const auto& entry : fs::recursive_directory_iterator(tmp / "deps")) {
    if (!entry.is_regular_file()) continue;
    const auto name = entry.path().filename().string();
    EXPECT_TRUE(name.rfind("index.db", 0) == 0 || name == "lock") << "left behind: " << entry.path();
  }
}

// Publish::by_caller (deps tf): the object is checked as it streams but left unsynced in the
// store's temp area, its writer in the outcome, until the caller seals and publishes it; a
// wrong digest still fails the item and leaves nothing; an unpublished writer dropped leaves
// nothing either.
TEST(Downloader, AnObjectPublishedByTheCallerIsAnObjectOnlyOncePublished) {
  FixtureUpstream up;
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto kept = package(up, "terraform-provider-aws_6.0.0_darwin_arm64.zip");
  auto dropped = package(up, "terraform-provider-aws_6.0.0_linux_amd64.zip");
  auto wrong = package(up, "terraform-provider-aws_6.0.0_linux_arm64.zip");
  std::vector<DownloadItem> items{item_for(up, kept), item_for(up, dropped), item_for(up, wrong)};
  items[2].expected_sha256 = std::string(64, 'b');
  for (auto& item : items) item.publish = DownloadItem::Publish::by_caller;
  Downloader downloader(quiet_options(up));
  auto outcomes = downloader.fetch_into_store(store, items);
  ASSERT_TRUE(outcomes[0].ok) << outcomes[0].error;
  ASSERT_TRUE(outcomes[1].ok) << outcomes[1].error;
  EXPECT_FALSE(outcomes[2].ok);
  EXPECT_NE(outcomes[2].error.find("hash mismatch"), std::string::npos) << outcomes[2].error;
  EXPECT_EQ(outcomes[2].unpublished, nullptr);
  EXPECT_EQ(outcomes[0].digest, kept.sha256);
  ASSERT_NE(outcomes[0].unpublished, nullptr);
  ASSERT_NE(outcomes[1].unpublished, nullptr);
  // Checked, readable where it was written, and not yet an object.
  const fs::path temp = outcomes[0].unpublished->temp_path();
  EXPECT_EQ(podplane::file_digest_hex(temp), kept.sha256);
  EXPECT_FALSE(store.has_object(kept.sha256));
  EXPECT_FALSE(fs::exists(store.object_path(kept.sha256)));

  const fs::path dropped_temp = outcomes[1].unpublished->temp_path();
  EXPECT_TRUE(fs::exists(dropped_temp));
  outcomes[1].unpublished.reset();
  EXPECT_FALSE(fs::exists(dropped_temp)) << "a writer dropped unpublished left its temp file";

  std::thread([&] { outcomes[0].unpublished->seal(std::nullopt); }).join();  // any thread may seal
  auto digests = store.publish_sealed({outcomes[0].unpublished.get()});
  ASSERT_EQ(digests, std::vector<std::string>{kept.sha256});
  EXPECT_TRUE(store.has_object(kept.sha256));
  EXPECT_EQ(podplane::file_digest_hex(store.object_path(kept.sha256)), kept.sha256);
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(store.has_object(dropped.sha256));
  EXPECT_FALSE(store.has_object(wrong.sha256));
}

TEST(Downloader, A404IsAPerItemError) {
  FixtureUpstream up;
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto good = package(up, "terraform-provider-podplane_1.3.0_linux_amd64.zip");
  DownloadItem missing;
  missing.url = up.url("/releases/podplane/1.3.0/terraform-provider-podplane_1.3.0_windows_arm64.zip");
  missing.label = "terraform-provider-podplane_1.3.0_windows_arm64.zip";
  Downloader downloader(quiet_options(up));
  auto outcomes = downloader.fetch_into_store(store, {item_for(up, good), missing, item_for(up, good, false)});
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_TRUE(outcomes[0].ok) << outcomes[0].error;
  EXPECT_FALSE(outcomes[1].ok);
  EXPECT_NE(outcomes[1].error.find("windows_arm64.zip"), std::string::npos) << outcomes[1].error;
  EXPECT_NE(outcomes[1].error.find("HTTP 404"), std::string::npos) << outcomes[1].error;
  EXPECT_TRUE(outcomes[2].ok);
  EXPECT_EQ(outcomes[2].digest, good.sha256);
  EXPECT_EQ(up.requests("windows_arm64").size(), 1u);  // a 404 is not retried
}

TEST(Downloader, UnreachableHostFailsAfterRetries) {
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  DownloadOptions options;
  options.progress = net::Progress::quiet;
  options.http.max_retries = 1;
  options.http.initial_backoff = std::chrono::milliseconds(10);
  DownloadItem item;
  item.url = "https://127.0.0.1:1/nothing.zip";  // port 1: connection refused
  item.label = "nothing.zip";
  Downloader downloader(options);
  auto outcomes = downloader.fetch_into_store(store, {item});
  ASSERT_FALSE(outcomes[0].ok);
  EXPECT_NE(outcomes[0].error.find("nothing.zip"), std::string::npos);
  EXPECT_NE(outcomes[0].error.find("2 attempts"), std::string::npos) << outcomes[0].error;
}

TEST(Downloader, FetchToFileIsAtomic) {
  ServeOptions serve;
  serve.cut_after = {"3000:cloudinit_2\\.3\\.7_linux_amd64\\.zip$"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  Downloader downloader(quiet_options(up));
  auto pkg = package(up, "terraform-provider-cloudinit_2.3.7_linux_amd64.zip");
  auto item = item_for(up, pkg);
  downloader.fetch_to_file(item, tmp / "dl" / "p.zip");
  EXPECT_EQ(read_file(tmp / "dl" / "p.zip"), read_file(up.www() / pkg.url_path.substr(1)));
  EXPECT_EQ(up.requests("cloudinit_2\\.3\\.7_linux_amd64\\.zip$", 206).size(), 1u);

  item.expected_sha256 = std::string(64, '0');
  EXPECT_THROW(downloader.fetch_to_file(item, tmp / "dl" / "bad.zip"), Error);
  EXPECT_FALSE(fs::exists(tmp / "dl" / "bad.zip"));
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(tmp / "dl")) files += entry.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);  // no .part file left behind
}

std::string captured(const std::function<void(std::FILE*)>& body) {
  std::FILE* file = std::tmpfile();
  body(file);
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, file)) text.append(buffer, n);
  std::fclose(file);
  return text;
}

TEST(ProgressDisplay, PlainLinesWhenNotATerminalAndNothingWhenQuiet) {
  auto lines = captured([](std::FILE* out) {
    net::ProgressDisplay progress(net::Progress::automatic, 2, out);  // a file is not a terminal
    progress.received(2048);
    progress.finished("a.zip", true, 2048);
    progress.retrying("b.zip", "HTTP 503", std::chrono::milliseconds(1500));
    progress.finished("b.zip", false, 0);
    progress.done();
  });
  EXPECT_NE(lines.find("fetched a.zip (2.0 KiB) [1/2]\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("retrying b.zip in 1.5s: HTTP 503\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("failed b.zip [2/2]\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("fetched 1 of 2 files, 2.0 KiB in"), std::string::npos) << lines;
  EXPECT_EQ(lines.find('\r'), std::string::npos);

  auto quiet = captured([](std::FILE* out) {
    net::ProgressDisplay progress(net::Progress::quiet, 1, out);
    progress.finished("a.zip", true, 1);
    progress.done();
  });
  EXPECT_EQ(quiet, "");
}

TEST(ProgressDisplay, DownloaderPrintsPlainLines) {
  FixtureUpstream up;
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto options = quiet_options(up);
  options.progress = net::Progress::plain_lines;
  Downloader downloader(options);
  testing::internal::CaptureStderr();
  auto outcomes = downloader.fetch_into_store(store, {item_for(up, package(up, "terraform-provider-null_3.2.3_linux_amd64.zip"))});
  const auto err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(outcomes[0].ok);
  EXPECT_NE(err.find("fetched terraform-provider-null_3.2.3_linux_amd64.zip"), std::string::npos) << err;
}

}  // namespace
}  // namespace podplane::test

namespace podplane::test {
namespace {

// The terminal mode, on a pseudo-terminal: one line rewritten in place, cleared at the end.
TEST(ProgressDisplay, RewritesOneLineOnATerminal) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  std::FILE* out = fdopen(slave, "w");
  {
    ScopedEnv term("TERM", "xterm");
    net::ProgressDisplay progress(net::Progress::automatic, 3, out);
    EXPECT_TRUE(progress.terminal());
    progress.expect_bytes(4096);
    progress.received(4096);
    progress.finished("a.zip", true, 4096);
    progress.retrying("b.zip", "HTTP 503", std::chrono::milliseconds(10));  // not printed on a terminal
    progress.done();
  }
  std::fclose(out);
  std::string text;
  char buffer[4096];
  pollfd fd{master, POLLIN, 0};
  while (poll(&fd, 1, 200) > 0) {
    ssize_t n = read(master, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  close(master);
  EXPECT_NE(text.find("\r\033[K[1/3] 4.0 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("a.zip"), std::string::npos) << text;
  EXPECT_EQ(text.find("retrying"), std::string::npos) << text;
  EXPECT_NE(text.find("fetched 1 of 3 files"), std::string::npos) << text;
}

}  // namespace
}  // namespace podplane::test
