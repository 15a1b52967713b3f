#include "fetch/tf_metadata.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "base/parallel.hpp"
#include "base/url.hpp"
#include "net/http.hpp"

namespace podplane::fetch {

ProviderMetadata::ProviderMetadata(const net::DownloadOptions& options, const lockfile::CliConfig& config,
                                   RegistryClient& registry)
    : options_(options), config_(config), registry_(registry) {}

namespace {

// One thread's clients: a registry client talks through its own HTTP client.
struct Clients {
  Clients(const net::HttpOptions& options, const lockfile::CliConfig& config) : http(options), registry(http, config) {}
  net::HttpClient http;
  RegistryClient registry;
};

}  // namespace

// Registry answers and release documents are a few KiB each: their time is round trips, not
// bandwidth. In waves of --jobs (8) the 24 download answers and 12 signed documents of 6
// providers x 4 platforms took 5 round trips before the first zip (docs/performance.md), so
// these requests go three times --jobs at once (at most 32; never fewer than --jobs).
constexpr int kSmallRequestsPerJob = 3;
constexpr int kMostSmallRequestsAtOnce = 32;

int ProviderMetadata::requests_at_once() const {
  const int jobs = std::max(1, options_.jobs);
  return std::max(jobs, std::min(kSmallRequestsPerJob * jobs, kMostSmallRequestsAtOnce));
}

// Runs fn(i, http, registry) for i in [0, count) on up to requests_at_once() threads, each with
// its own clients, and rethrows the error of the lowest index.
template <typename Fn>
void ProviderMetadata::parallel_for(std::size_t count, Fn fn) {
  if (count == 0) return;
  auto workers = static_cast<std::size_t>(requests_at_once());
  rethrow_first(on_threads_with_state(
      count, workers, [&] { return Clients(options_.http, config_); },
      [&](std::size_t i, Clients& clients) { fn(i, clients.http, clients.registry); }));
}

const lockfile::InstallationMethod* ProviderMetadata::network_mirror_for(const lockfile::ProviderAddress& address) const {
  return config_.network_mirror_for(address.str());
}

std::vector<std::vector<ProviderVersion>> ProviderMetadata::versions(const std::vector<lockfile::ProviderAddress>& providers) {
  std::vector<std::vector<ProviderVersion>> listed(providers.size());
  parallel_for(providers.size(), [&](std::size_t i, net::HttpClient&, RegistryClient& registry) {
    if (const auto* mirror = network_mirror_for(providers[i])) {
      for (auto& version : registry.mirror_versions(mirror->location, providers[i])) {
        listed[i].push_back({std::move(version), {}, {}});
      }
    } else {
      listed[i] = registry.provider_versions(providers[i]);
    }
  });
  return listed;
}

std::vector<std::optional<ProviderDownload>> ProviderMetadata::download_answers(const std::vector<PackageJob>& jobs) {
  std::vector<std::optional<ProviderDownload>> answers(jobs.size());
  parallel_for(jobs.size(), [&](std::size_t i, net::HttpClient&, RegistryClient& registry) {
    if (network_mirror_for(jobs[i].address) != nullptr) return;
    answers[i] = registry.provider_download(jobs[i].address, jobs[i].version, jobs[i].platform);
  });
  return answers;
}

std::map<std::string, std::string> ProviderMetadata::documents(const std::vector<std::string>& urls) {
  std::vector<std::string> bodies(urls.size());
  parallel_for(urls.size(), [&](std::size_t i, net::HttpClient& http, RegistryClient&) {
    auto response = http.get(urls[i]);  // no token: not a registry JSON request
    if (response.status != 200) {
      throw Error("cannot fetch " + url_basename(urls[i]) + " (" + net::redact_url(urls[i]) + "): " + response.status_text());
    }
    bodies[i] = std::move(response.body);
  });
  std::map<std::string, std::string> by_url;
  for (std::size_t i = 0; i < urls.size(); ++i) by_url[urls[i]] = std::move(bodies[i]);
  return by_url;
}

MirrorArchive ProviderMetadata::mirror_archive(const PackageJob& job) {
  const auto* mirror = network_mirror_for(job.address);
  if (mirror == nullptr) throw Error("internal: no network mirror serves " + job.address.str());
  auto key = job.address.str() + " " + job.version.str();
  auto it = mirror_versions_.find(key);
  if (it == mirror_versions_.end()) {
    it = mirror_versions_.emplace(key, registry_.mirror_archives(mirror->location, job.address, job.version)).first;
  }
  auto archive = it->second.find(job.platform.str());
  if (archive == it->second.end()) {
    throw Error("the network mirror has no package of " + job.address.str() + " " + job.version.str() +
                " for platform " + job.platform.str());
  }
  return archive->second;
}

}  // namespace podplane::fetch
