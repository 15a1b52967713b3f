// The HTTP client and the download engine against hostile upstreams: a 1 byte/s drip, a
// Content-Length that lies while Range is ignored, 503 forever, a transfer that is fast
// enough but never ends, and one that sends more than the item's declared size. Every one must end within the retry budget, with an error naming the
// URL and the reason; the request counts are taken from the server's access log.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "base/error.hpp"
#include "cache/store.hpp"
#include "net/download.hpp"
#include "net/http.hpp"
#include "tests/support/upstream.hpp"
#include "tests/support/watchdog.hpp"

namespace podplane::test {
namespace {

using net::DownloadItem;
using net::DownloadOptions;
using net::Downloader;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kZipPath = "/releases/aws/6.2.0/terraform-provider-aws_6.2.0_linux_amd64.zip";
const std::string kZipRegex = "aws_6\\.2\\.0_linux_amd64\\.zip$";

DownloadOptions budget_options(const FixtureUpstream& up) {
  DownloadOptions options;
  options.progress = net::Progress::quiet;
  options.http.ca_file = up.ca_file();
  options.http.max_retries = 2;
  options.http.initial_backoff = milliseconds(10);
  options.http.low_speed_timeout = seconds(1);
  return options;
}

DownloadItem zip_item(const FixtureUpstream& up) {
  DownloadItem item;
  item.url = up.url(kZipPath);
  item.label = "terraform-provider-aws_6.2.0_linux_amd64.zip";
  return item;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(HostileUpstream, EngineGivesUpOnALyingLengthThatIgnoresRange) {
  ServeOptions serve;
  serve.lie_length = {"1000000000:100:" + kZipRegex};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto options = budget_options(up);
  Downloader downloader(options);
  // Credentials in the URL never reach a message.
  auto item = zip_item(up);
  item.url = "https://user:s3cret@" + up.url(kZipPath).substr(std::string("https://").size());
  std::vector<net::DownloadOutcome> outcomes;
  {
    Watchdog watchdog(seconds(60), "a download from an upstream that lies about Content-Length");
    outcomes = downloader.fetch_into_store(store, {item});
  }
  ASSERT_FALSE(outcomes[0].ok);
  const auto& error = outcomes[0].error;
  EXPECT_TRUE(contains(error, up.url(kZipPath))) << error;
  EXPECT_FALSE(contains(error, "s3cret")) << error;
  EXPECT_TRUE(contains(error, "answered a Range request with the whole file")) << error;
  // The first cut-off brought new bytes: a free resume. Each later attempt was answered from
  // zero, which counts as a failure: 1 + 1 + max_retries attempts, not one more.
  auto log = up.requests(kZipRegex);
  EXPECT_EQ(log.size(), 4u);
  for (const auto& entry : log) EXPECT_EQ(entry.fault, "lie-length");
  EXPECT_FALSE(log.back().range.value_or("").empty()) << "later attempts resume with Range";
}

TEST(HostileUpstream, EngineAbandonsAOneBytePerSecondDrip) {
  ServeOptions serve;
  serve.drip = {"1:" + kZipRegex};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto options = budget_options(up);
  options.http.max_retries = 1;
  Downloader downloader(options);
  std::vector<net::DownloadOutcome> outcomes;
  const auto start = std::chrono::steady_clock::now();
  {
    Watchdog watchdog(seconds(60), "a download from a 1 byte/s drip");
    outcomes = downloader.fetch_into_store(store, {zip_item(up)});
  }
  const double elapsed = seconds_since(start);
  ASSERT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(contains(outcomes[0].error, up.url(kZipPath))) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "too slow")) << outcomes[0].error;
  // A stall counts as a failed attempt even when a few bytes came: two attempts, about a
  // second each (the low-speed window), and a short backoff.
  EXPECT_EQ(up.requests(kZipRegex).size(), 2u);
  EXPECT_LT(elapsed, 30.0);
}

TEST(HostileUpstream, EngineStopsAt503ForeverAfterTheRetries) {
  ServeOptions serve;
  serve.fail_first = {"1000000:" + kZipRegex + ":503"};
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  Downloader downloader(budget_options(up));
  std::vector<net::DownloadOutcome> outcomes;
  {
    Watchdog watchdog(seconds(60), "a download from an upstream that answers 503 forever");
    outcomes = downloader.fetch_into_store(store, {zip_item(up)});
  }
  ASSERT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(contains(outcomes[0].error, up.url(kZipPath))) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "HTTP 503")) << outcomes[0].error;
  auto answered = up.requests(kZipRegex);
  EXPECT_EQ(answered.size(), 3u);
  for (const auto& entry : answered) EXPECT_EQ(entry.status, 503);
}

TEST(HostileUpstream, DocumentGetAbandonsADrip) {
  ServeOptions serve;
  serve.drip = {"1:/versions$"};
  FixtureUpstream up({}, serve);
  net::HttpOptions options;
  options.ca_file = up.ca_file();
  options.max_retries = 1;
  options.initial_backoff = milliseconds(10);
  options.low_speed_timeout = seconds(1);
  net::HttpClient http(options);
  const auto url = up.url("/v1/providers/hashicorp/aws/versions");
  std::string error;
  {
    Watchdog watchdog(seconds(60), "a document GET from a 1 byte/s drip");
    try {
      (void)http.get(url);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  EXPECT_TRUE(contains(error, url)) << error;
  EXPECT_TRUE(contains(error, "too slow")) << error;
  EXPECT_TRUE(contains(error, "2 attempts")) << error;
  EXPECT_EQ(up.requests("/aws/versions$").size(), 2u);
}

TEST(HostileUpstream, DocumentGetGivesUpOnALyingLength) {
  ServeOptions serve;
  serve.lie_length = {"1000000:10:/versions$"};
  FixtureUpstream up({}, serve);
  net::HttpOptions options;
  options.ca_file = up.ca_file();
  options.max_retries = 2;
  options.initial_backoff = milliseconds(10);
  net::HttpClient http(options);
  const auto url = up.url("/v1/providers/hashicorp/aws/versions");
  std::string error;
  {
    Watchdog watchdog(seconds(60), "a document GET from an upstream that lies about Content-Length");
    try {
      (void)http.get(url);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  EXPECT_TRUE(contains(error, url)) << error;
  EXPECT_TRUE(contains(error, "3 attempts")) << error;
  EXPECT_EQ(up.requests("/aws/versions$").size(), 3u);
}

// Regular files under `dir` (temp files included): what a refused transfer left behind.
std::size_t files_under(const fs::path& dir) {
  std::size_t count = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file()) ++count;
  return count;
}

TEST(HostileUpstream, EngineStopsAnItemAtItsDeclaredSizeAndKeepsNothing) {
  const std::string arm64_zip = "/releases/aws/6.2.0/terraform-provider-aws_6.2.0_linux_arm64.zip";
  const std::uint64_t streamed = 32 << 20;
  ServeOptions serve;
  serve.stream = {std::to_string(streamed) + ":aws_6\\.2\\.0_linux_arm64\\.zip$"};  // no Content-Length
  FixtureUpstream up({}, serve);
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  const auto zip_size = fs::file_size(up.www() / kZipPath.substr(1));
  Downloader downloader(budget_options(up));

  auto announced = zip_item(up);  // its Content-Length says more than declared: no byte is taken
  announced.expected_size = 1000;
  auto exact = zip_item(up);      // the declared size, exactly: fetched as ever
  exact.expected_size = zip_size;
  DownloadItem unannounced;      // the body only shows it, as it streams
  unannounced.url = up.url(arm64_zip);
  unannounced.label = "aws arm64 zip";
  unannounced.expected_size = 1000;
  std::vector<net::DownloadOutcome> outcomes;
  std::vector<net::DownloadOutcome> to_file;
  {
    Watchdog watchdog(seconds(60), "downloads larger than their declared size");
    outcomes = downloader.fetch_into_store(store, {announced, exact});
    to_file = downloader.fetch_to_files({unannounced}, {tmp / "files" / "arm64.zip"});
  }
  ASSERT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(contains(outcomes[0].error, up.url(kZipPath))) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "more than its declared size")) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "expected: 1000 bytes")) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "got:      " + std::to_string(zip_size) + " bytes (its Content-Length)"))
      << outcomes[0].error;
  ASSERT_TRUE(outcomes[1].ok) << outcomes[1].error;
  EXPECT_EQ(outcomes[1].size, zip_size);
  EXPECT_EQ(files_under(tmp / "deps" / "store" / "objects"), 1u) << "only the exact item is stored";

  ASSERT_FALSE(to_file[0].ok);
  EXPECT_TRUE(contains(to_file[0].error, "expected: 1000 bytes")) << to_file[0].error;
  EXPECT_TRUE(contains(to_file[0].error, "got:      at least ")) << to_file[0].error;
  EXPECT_EQ(files_under(tmp / "files"), 0u) << "nothing kept, no temp file left";
  // Stopped at once, not retried, and long before the 32 MiB the server would send.
  std::vector<AccessLogEntry> sent;
  for (auto deadline = std::chrono::steady_clock::now() + seconds(20);
       (sent = up.requests("linux_arm64\\.zip$")).empty() && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(milliseconds(20));  // the server logs once its writes fail
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].fault, "stream");
  EXPECT_LT(sent[0].bytes, streamed / 2);
}

TEST(HostileUpstream, EngineHoldsAnItemOfUnknownSizeToTheCeiling) {
  FixtureUpstream up;
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  auto options = budget_options(up);
  options.http.max_download_bytes = 4096;
  Downloader downloader(options);
  auto outcomes = downloader.fetch_into_store(store, {zip_item(up)});
  ASSERT_FALSE(outcomes[0].ok);
  EXPECT_TRUE(contains(outcomes[0].error, "the ceiling for a download of unknown size (PODPLANE_HTTP_MAX_DOWNLOAD"))
      << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "expected: at most 4096 bytes")) << outcomes[0].error;
  EXPECT_EQ(files_under(tmp / "deps" / "store" / "objects"), 0u);
  // The server logs an answer cut short by the client once its writes fail, which may come
  // after the engine has returned: wait for that line, then make sure no second one follows.
  for (auto deadline = std::chrono::steady_clock::now() + seconds(20);
       up.requests(kZipRegex).empty() && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(milliseconds(20));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(up.requests(kZipRegex).size(), 1u) << "not retried";
}

TEST(HostileUpstream, ARedirectKeepsTheLoginHomeAndNeverLeavesHttps) {
  ServeOptions plain;
  plain.scheme = ServeOptions::Scheme::http;
  FixtureUpstream plain_host({}, plain);
  FixtureUpstream other_port;
  FixtureUpstream up;  // the three share one tree: the redirects below are up's
  write_file(up.www() / "redirect" / "to-plain.headers", "Status: 302\nLocation: " + plain_host.url(kZipPath) + "\n");
  write_file(up.www() / "redirect" / "to-port.headers", "Status: 302\nLocation: " + other_port.url(kZipPath) + "\n");
  TempDir tmp;
  auto store = cache::Store::open(tmp / "deps");
  Downloader downloader(budget_options(up));
  auto item = [&](const std::string& path) {
    DownloadItem redirected = zip_item(up);
    redirected.url = up.url(path);
    redirected.headers = {"Authorization: Basic dXNlcjpzM2NyZXQ="};
    return redirected;
  };
  auto outcomes = downloader.fetch_into_store(store, {item("/redirect/to-plain"), item("/redirect/to-port")});
  ASSERT_FALSE(outcomes[0].ok) << "followed a redirect from https to plain http";
  EXPECT_TRUE(contains(outcomes[0].error, up.url("/redirect/to-plain"))) << outcomes[0].error;
  EXPECT_TRUE(plain_host.access_log().empty()) << "a request went out over plain http";
  ASSERT_TRUE(outcomes[1].ok) << outcomes[1].error;
  auto there = other_port.requests(kZipRegex);
  ASSERT_EQ(there.size(), 1u);
  EXPECT_FALSE(there[0].authorization) << "the login followed the redirect to another port";
  EXPECT_TRUE(up.requests("/redirect/to-port$")[0].authorization) << "the first host got it";
}

}  // namespace
}  // namespace podplane::test
