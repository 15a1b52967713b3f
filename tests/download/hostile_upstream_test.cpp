// The HTTP client and the download engine against hostile upstreams: a 1 byte/s drip, a
// Content-Length that lies while Range is ignored, 503 forever, and a transfer that is fast
// enough but never ends. Every one must end within the retry budget, with an error naming the
// URL and the reason; the request counts are taken from the server's access log.
#include <gtest/gtest.h>

#include <chrono>

#include "base/error.hpp"
#include "cache/store.hpp"
#include "mirror/download.hpp"
#include "mirror/http.hpp"
#include "tests/support/upstream.hpp"
#include "tests/support/watchdog.hpp"

namespace podplane::test {
namespace {

using mirror::DownloadItem;
using mirror::DownloadOptions;
using mirror::Downloader;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kZipPath = "/releases/aws/6.2.0/terraform-provider-aws_6.2.0_linux_amd64.zip";
const std::string kZipRegex = "aws_6\\.2\\.0_linux_amd64\\.zip$";

DownloadOptions budget_options(const FixtureUpstream& up) {
  DownloadOptions options;
  options.progress = mirror::Progress::quiet;
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
  std::vector<mirror::DownloadOutcome> outcomes;
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
  std::vector<mirror::DownloadOutcome> outcomes;
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
  std::vector<mirror::DownloadOutcome> outcomes;
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
  mirror::HttpOptions options;
  options.ca_file = up.ca_file();
  options.max_retries = 1;
  options.initial_backoff = milliseconds(10);
  options.low_speed_timeout = seconds(1);
  mirror::HttpClient http(options);
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
  mirror::HttpOptions options;
  options.ca_file = up.ca_file();
  options.max_retries = 2;
  options.initial_backoff = milliseconds(10);
  mirror::HttpClient http(options);
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

}  // namespace
}  // namespace podplane::test
