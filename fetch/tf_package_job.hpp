#pragma once
// One provider package (address, version, platform) on its way into the store, carrying
// every result about it. Its stages, each entered through one call that takes only that
// stage's input:
//   planned   what to fetch                                   (plan_package_jobs)
//   checked   where from, what its bytes must be, on whose word (checked)
//   fetched   in the store as an object: digest and size       (fetched)
//   hashed    its h1                                           (hashed)
// Then the run commits every job's row in one transaction. Because a stage needs nothing
// but the job and its own input, a scheduler may move each job on as soon as that input
// lands, in any interleaving across jobs. Entering a stage out of order is an Error.
// Not thread-safe: one thread moves a given job at a time.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockfile/lock_file.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/version.hpp"
#include "fetch/tf_verification.hpp"

namespace podplane::fetch {

struct PackageJob {
  enum class Stage { planned, checked, fetched, hashed };
  Stage stage = Stage::planned;

  // planned
  lockfile::ProviderAddress address;
  lockfile::Version version;
  lockfile::Platform platform;
  std::string filename;  // terraform-provider-<type>_<version>_<os>_<arch>.zip; checked: as upstream names it

  // checked
  std::string url;                          // the zip; fetched without credentials
  PackageExpectations expected;
  std::shared_ptr<const SignedSums> sums;   // the signed documents it was checked against; null from a network mirror
  // The registry's plugin protocols for it, as listed (docs/store.md); nullopt from a network
  // mirror, whose protocol lists none.
  std::optional<std::vector<std::string>> protocols;

  // fetched
  std::string digest;                       // sha256 hex of the store object
  std::uint64_t size = 0;

  // hashed
  std::string h1;

  void checked(std::string upstream_filename, std::string package_url, PackageExpectations expectations,
               std::shared_ptr<const SignedSums> signed_sums,
               std::optional<std::vector<std::string>> plugin_protocols = std::nullopt);
  void fetched(std::string object_digest, std::uint64_t object_size);
  void hashed(std::string h1_hash);
};

}  // namespace podplane::fetch
