#include "fetch/tf_resolution.hpp"

#include <algorithm>
#include <set>

#include "base/error.hpp"
#include "lockfile/provider_names.hpp"
#include "net/http.hpp"

namespace podplane::fetch {

using lockfile::Constraints;
using lockfile::Platform;
using lockfile::ProviderAddress;
using lockfile::Version;

std::vector<Version> installable_versions(const std::vector<ProviderVersion>& listed) {
  std::vector<Version> versions;
  for (const auto& entry : listed) {
    if (protocols_supported(entry.protocols)) versions.push_back(entry.version);
  }
  return versions;
}

Version choose_provider_version(const ProviderWant& want, const std::vector<Version>& offered) {
  const auto merged = Constraints::merge(want.constraints);
  const std::string address = want.address.str();
  if (want.pinned) {
    if (!merged.allows(*want.pinned)) {
      // The constraints moved past the root's lock: only choosing afresh can follow them, as
      // the engine's own `init -upgrade` would.
      throw Error("locked version " + want.pinned->str() + " of " + address + " does not meet the constraints \"" +
                  merged.canonical() + "\" (asked for by " + want.declared_in +
                  "); rerun this `podplane deps tf --stack … --write-lock` with --upgrade to choose a version "
                  "afresh within them and rewrite the lock");
    }
    if (std::find(offered.begin(), offered.end(), *want.pinned) == offered.end()) {
      throw Error("locked version " + want.pinned->str() + " of " + address + " is not offered upstream");
    }
    return *want.pinned;
  }
  auto newest = lockfile::newest_allowed(offered, merged);
  if (!newest) {
    throw Error("no version of " + address + " matches \"" + merged.canonical() + "\" (asked for by " +
                want.declared_in + ")");
  }
  return *newest;
}

std::vector<cache::TfSelection::Provider> resolve_root(const RootRequirements& root,
                                                       const std::map<std::string, std::vector<Version>>& offered) {
  std::vector<cache::TfSelection::Provider> selection;
  for (const auto& [address, want] : root.providers) {
    auto listed = offered.find(address);
    if (listed == offered.end()) throw Error("internal: no upstream versions were fetched for " + address);
    auto chosen = choose_provider_version(want, listed->second);
    selection.push_back({address, chosen.str(), Constraints::merge(want.constraints).canonical()});
  }
  return selection;
}

std::vector<std::vector<cache::TfSelection::Provider>> resolve_roots(
    const std::vector<RootRequirements>& roots, const std::map<std::string, std::vector<Version>>& offered) {
  std::vector<std::vector<cache::TfSelection::Provider>> selections;
  selections.reserve(roots.size());
  for (const auto& root : roots) selections.push_back(resolve_root(root, offered));
  return selections;
}

std::vector<ProviderAddress> offered_addresses(const std::vector<RootRequirements>& roots) {
  std::map<std::string, ProviderAddress> by_address;
  for (const auto& root : roots) {
    for (const auto& [address, want] : root.providers) by_address.try_emplace(address, want.address);
  }
  std::vector<ProviderAddress> addresses;
  for (const auto& [text, address] : by_address) addresses.push_back(address);
  return addresses;
}

std::string package_filename(const ProviderAddress& address, const Version& version, const Platform& platform) {
  return lockfile::provider_package_filename(address.type, version.str(), platform.str());
}

PackagePlan plan_package_jobs(const std::vector<cache::TfSelection::Provider>& selection,
                              const std::vector<std::string>& platforms, const std::string& registry_host,
                              const std::function<bool(const PackageJob&)>& in_store) {
  PackagePlan plan;
  std::set<std::string> planned;  // several roots may select one provider version
  for (const auto& provider : selection) {
    auto address = ProviderAddress::parse(provider.address, registry_host);
    auto version = Version::parse(provider.version);
    for (const auto& platform_text : platforms) {
      PackageJob job;
      job.address = address;
      job.version = version;
      job.platform = Platform::parse(platform_text);
      job.filename = package_filename(address, version, job.platform);
      if (!planned.insert(address.str() + " " + job.filename).second) continue;
      if (in_store(job)) {
        ++plan.present;
        continue;
      }
      plan.jobs.push_back(std::move(job));
    }
  }
  return plan;
}

ModulePackage choose_module_version(const RemoteModuleCall& call, const std::vector<Version>& offered) {
  Constraints constraints;
  try {
    constraints = Constraints::parse(call.constraints);
  } catch (const Error& error) {
    throw Error(call.context + ": " + error.what());
  }
  auto chosen = lockfile::newest_allowed(offered, constraints);
  if (!chosen) {
    throw Error(call.context + ": no version of module " + call.source.registry.str() + " matches \"" +
                call.constraints + "\"");
  }
  return {call.source.registry.str(), chosen->str()};
}

ModulePackage direct_module_package(const RemoteModuleCall& call) {
  if (!call.constraints.empty()) {
    throw Error(call.context + ": a version constraint needs a registry module source, got " +
                net::redact_url(call.source.text));
  }
  const auto& source = call.source;
  std::string version = source.kind == ModuleSource::Kind::git && !source.ref.empty() ? source.ref : "unversioned";
  std::replace(version.begin(), version.end(), '/', '_');  // a branch "a/b" is one path segment
  return {source.store_address(), version};
}

}  // namespace podplane::fetch
