#include "fetch/tf_package_job.hpp"

#include "base/error.hpp"

namespace podplane::fetch {
namespace {

const char* name_of(PackageJob::Stage stage) {
  switch (stage) {
    case PackageJob::Stage::planned: return "planned";
    case PackageJob::Stage::checked: return "checked";
    case PackageJob::Stage::fetched: return "fetched";
    case PackageJob::Stage::hashed: return "hashed";
  }
  return "unknown";
}

void enter(PackageJob& job, PackageJob::Stage from, PackageJob::Stage to) {
  if (job.stage != from) {
    throw Error(std::string("internal: provider package ") + job.filename + " cannot become " + name_of(to) +
                " while " + name_of(job.stage) + " (it must be " + name_of(from) + ")");
  }
  job.stage = to;
}

}  // namespace

void PackageJob::checked(std::string upstream_filename, std::string package_url, PackageExpectations expectations,
                         std::shared_ptr<const SignedSums> signed_sums,
                         std::optional<std::vector<std::string>> plugin_protocols) {
  enter(*this, Stage::planned, Stage::checked);
  protocols = std::move(plugin_protocols);
  filename = std::move(upstream_filename);
  url = std::move(package_url);
  expected = std::move(expectations);
  sums = std::move(signed_sums);
}

void PackageJob::fetched(std::string object_digest, std::uint64_t object_size) {
  enter(*this, Stage::checked, Stage::fetched);
  digest = std::move(object_digest);
  size = object_size;
}

void PackageJob::hashed(std::string h1_hash) {
  enter(*this, Stage::fetched, Stage::hashed);
  h1 = std::move(h1_hash);
}

}  // namespace podplane::fetch
