#pragma once
// The provider metadata `deps tf` reads upstream: the versions each provider offers, the
// registry's download answers, SHA256SUMS documents and their signatures, and network-mirror
// entries. This is the one place that decides how those requests are scheduled: today a
// batch per kind of request, up to requests_at_once() at once on a pool of threads (each with
// its own HTTP and registry client, since neither is thread-safe). Registry answers are small
// but many: one after another they would dominate a cold run on a slow link.
// Registry tokens go only to the registry JSON requests; SHA256SUMS and signatures are
// fetched without them (docs/protocols.md §1.3). Errors are podplane::Error naming the URL; of
// a batch, the error of the lowest index is thrown, so failures are reported the same way
// every run.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lockfile/cli_config.hpp"
#include "net/download.hpp"
#include "fetch/registry.hpp"
#include "fetch/tf_package_job.hpp"

namespace podplane::fetch {

class ProviderMetadata {
 public:
  // `config` must outlive this object. `registry` serves the requests made one at a time.
  ProviderMetadata(const net::DownloadOptions& options, const lockfile::CliConfig& config, RegistryClient& registry);

  // The network mirror the CLI config names for `address`, or null: the registry is its upstream.
  [[nodiscard]] const lockfile::InstallationMethod* network_mirror_for(const lockfile::ProviderAddress& address) const;

  // What each provider offers, from its network mirror (no protocols listed) or its registry.
  [[nodiscard]] std::vector<std::vector<ProviderVersion>> versions(const std::vector<lockfile::ProviderAddress>& providers);

  // The registry's download answer for each job; nullopt where a network mirror serves it.
  [[nodiscard]] std::vector<std::optional<ProviderDownload>> download_answers(const std::vector<PackageJob>& jobs);

  // The body of each URL by URL; any answer but 200 is an Error.
  [[nodiscard]] std::map<std::string, std::string> documents(const std::vector<std::string>& urls);

  // The network mirror's entry for the job's platform; one request per provider version.
  [[nodiscard]] MirrorArchive mirror_archive(const PackageJob& job);

  // How many of these small requests run at once: three times --jobs, at most 32, never fewer
  // than --jobs (the zips themselves stay at --jobs).
  [[nodiscard]] int requests_at_once() const;

 private:
  template <typename Fn>
  void parallel_for(std::size_t count, Fn fn);

  const net::DownloadOptions& options_;
  const lockfile::CliConfig& config_;
  RegistryClient& registry_;
  std::map<std::string, std::map<std::string, MirrorArchive>> mirror_versions_;  // by "address version"
};

}  // namespace podplane::fetch
