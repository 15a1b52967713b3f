#pragma once
// Resolution (the second stage of `deps tf`): from what a root needs and what upstream
// offers, the version of every provider and module package, and the provider packages to
// fetch. Pure functions of their inputs; the caller fetches the metadata they read, so it
// may fetch it however and whenever it likes. One call per root: roots resolve on their own.
// Errors are podplane::Error naming the provider or module and the constraints.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "lockfile/version.hpp"
#include "fetch/registry.hpp"
#include "fetch/tf_package_job.hpp"
#include "fetch/tf_requirements.hpp"

namespace podplane::fetch {

// The versions an engine could install: those whose plugin protocol it speaks (5 or 6, or
// none listed, as network mirrors list none).
[[nodiscard]] std::vector<lockfile::Version> installable_versions(const std::vector<ProviderVersion>& listed);

// The version of one wanted provider: its pin, which must meet every constraint and be
// offered, else the newest offered version that meets them all.
[[nodiscard]] lockfile::Version choose_provider_version(const ProviderWant& want,
                                                        const std::vector<lockfile::Version>& offered);

// A root's selection: one entry per wanted provider, in address order, with its canonical
// merged constraints. `offered` maps every wanted address to its installable versions.
[[nodiscard]] std::vector<cache::TfSelection::Provider> resolve_root(
    const RootRequirements& root, const std::map<std::string, std::vector<lockfile::Version>>& offered);

// Every root's selection, in the order of `roots`, each resolved on its own constraints and
// pins. `offered` must cover every provider any root wants (offered_addresses lists them).
[[nodiscard]] std::vector<std::vector<cache::TfSelection::Provider>> resolve_roots(
    const std::vector<RootRequirements>& roots, const std::map<std::string, std::vector<lockfile::Version>>& offered);

// The providers whose offers the roots need, each once, in address order.
[[nodiscard]] std::vector<lockfile::ProviderAddress> offered_addresses(const std::vector<RootRequirements>& roots);

// terraform-provider-<type>_<version>_<os>_<arch>.zip
[[nodiscard]] std::string package_filename(const lockfile::ProviderAddress& address, const lockfile::Version& version,
                                           const lockfile::Platform& platform);

// The package jobs of `selection` × `platforms`, each provider version and platform once;
// those `in_store` says the store already holds are counted instead of planned.
struct PackagePlan {
  std::vector<PackageJob> jobs;  // every one at Stage::planned
  std::size_t present = 0;
};
[[nodiscard]] PackagePlan plan_package_jobs(const std::vector<cache::TfSelection::Provider>& selection,
                                            const std::vector<std::string>& platforms, const std::string& registry_host,
                                            const std::function<bool(const PackageJob&)>& in_store);

// A registry module call's package: the newest offered version that meets the call's constraints.
[[nodiscard]] ModulePackage choose_module_version(const RemoteModuleCall& call,
                                                  const std::vector<lockfile::Version>& offered);

// A direct (git, archive, http) module call's package as the store indexes it: the source's
// host and path, at its git ref ('/' made '_') or "unversioned". A version constraint on a
// direct source is an Error, as in the engines.
[[nodiscard]] ModulePackage direct_module_package(const RemoteModuleCall& call);

}  // namespace podplane::fetch
