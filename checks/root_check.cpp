#include "checks/root_check.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "base/error.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/hash.hpp"
#include "checks/stored_package.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/lock_rules.hpp"
#include "lockfile/provider_names.hpp"
#include "fetch/deps_tf.hpp"
#include "fetch/module_source.hpp"
#include "fetch/registry.hpp"
#include "fetch/tf_requirements.hpp"
#include "lockfile/tf_config.hpp"
#include "fetch/tf_resolution.hpp"
#include "fetch/vendor_modules.hpp"
#include "net/download.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;
using lockfile::Constraints;
using lockfile::ProviderAddress;
using lockfile::Version;
using net::HttpClient;
using fetch::ModulePackage;
using fetch::MirrorArchive;
using fetch::parse_module_versions;
using net::redact_url;
using fetch::RegistryClient;
using fetch::RootNeeds;

namespace {

std::string engine_flag(lockfile::Engine engine) {
  return engine == lockfile::Engine::terraform ? " --engine terraform" : "";
}

// The --repo-root a root is read with, repeated in the commands that read it again.
std::string repo_root_flag(const RootCheckOptions& options) {
  return options.repo_root ? " --repo-root " + options.repo_root->string() : "";
}

// The command that fills this root online, or the bundle that carries it.
std::string fill_command(const fs::path& root, lockfile::Engine engine, const std::string& platform,
                         const std::string& what, const RootCheckOptions& options) {
  std::string platforms = platform.empty() ? "" : " --platform " + platform;
  return "podplane deps tf" + engine_flag(engine) + " --stack " + root.string() + repo_root_flag(options) + platforms +
         " (online), or import a bundle that has " + what;
}

// Where a mirror serves git repositories (mirror/site_paths.hpp, which checks/ does not see).
constexpr std::string_view mirror_git_path = "/git/";

// A running mirror's module registry and git repositories as a ModuleLookup: registry modules by
// their version lists, git sources by the repositories it serves; the packages it hands out are
// fetched into the scratch directory so that the calls inside them are followed, as from the
// store. An archive URL's package is never served (the engine fetches it from its own host).
class MirrorModuleLookup : public fetch::ModuleLookup {
 public:
  explicit MirrorModuleLookup(const RootCheckSource& source)
      : source_(source),
        http_(source.http),
        downloader_(net::DownloadOptions{.http = source.http, .progress = net::Progress::quiet}) {}

  std::vector<Version> registry_versions(const fetch::ModuleAddress& m) override {
    std::string url = source_.mirror_url + "/v1/modules/" + m.host + "/" + m.ns + "/" + m.name + "/" + m.system + "/versions";
    auto response = http_.get(url, {"Accept: application/json"});
    if (response.status == 404) return {};
    if (response.status != 200) throw Error(redact_url(url) + ": " + response.status_text());
    return parse_module_versions(response.body, url);
  }
  // That the ref is in a repository served, the engine's run proves.
  bool holds(const fetch::ModuleSource& source, const ModulePackage& package) override {
    if (source.kind != fetch::ModuleSource::Kind::git) return false;
    return http_.get(git_url(package) + "/info/refs?service=git-upload-pack").status == 200;
  }
  std::optional<fs::path> files(const fetch::ModuleSource& source, const ModulePackage& package,
                                const fs::path& scratch) override {
    fetch::ModuleSource location;
    if (source.kind == fetch::ModuleSource::Kind::registry) {
      // The mirror's module registry, where the engine's host block sends the registry's host.
      lockfile::CliConfig config;
      config.host_services[source.registry.host]["modules.v1"] =
          source_.mirror_url + "/v1/modules/" + source.registry.host + "/";
      RegistryClient registry(http_, config);
      location = fetch::ModuleSource::parse(registry.module_location(source.registry, Version::parse(package.version)),
                                            source.registry.host);
    } else if (source.kind == fetch::ModuleSource::Kind::git) {
      location = source;
      location.url = git_url(package);
      location.subdir.clear();  // the whole repository is the package
    } else {
      return std::nullopt;
    }
    fetch::ModuleFetcher fetcher(http_, downloader_, scratch / ("mirror-" + std::to_string(fetched_++)));
    return fetcher.fetch(location).root;
  }
  std::string where() const override { return source_.mirror_url; }

 private:
  // The mirror's URL of a git package's repository: /git/<host[:port]>/<path>.git.
  std::string git_url(const ModulePackage& package) const {
    return source_.mirror_url + std::string(mirror_git_path) + package.address + ".git";
  }

  const RootCheckSource& source_;
  HttpClient http_;
  net::Downloader downloader_;
  int fetched_ = 0;
};

// The platforms to check: those asked for; else those the store holds packages of for the
// lock's providers; else this machine's.
std::vector<std::string> platforms_to_check(const RootCheckSource& source, const lockfile::LockFile& lock,
                                            const std::vector<std::string>& asked) {
  std::set<std::string> platforms;
  for (const auto& text : asked) platforms.insert(lockfile::Platform::parse(text).str());
  if (platforms.empty() && source.store != nullptr && source.mirror_url.empty()) {
    for (const auto& provider : lock.providers)
      for (const auto& package :
           source.store->artifacts({cache::ArtifactKind::provider_package, provider.address, provider.version, {}}))
        if (!package.platform.empty()) platforms.insert(package.platform);
  }
  if (platforms.empty()) platforms.insert(lockfile::host_platform().str());
  return {platforms.begin(), platforms.end()};
}

// The engine accepts a package when one of its hashes is in the lock (lockfile/lock_rules.hpp).
void check_provider_in_store(const cache::Store& store, const RootNeeds& needs, const lockfile::ProviderLock& provider,
                             const std::string& platform, const RootCheckOptions& options, CheckReporter& out) {
  const std::string item = "provider " + provider.address + " " + provider.version;
  const StoredPackage judged = judge_stored_package(store, provider, platform);
  switch (judged.verdict) {
    case StoredPackage::Verdict::missing:
      out.fail(platform, item, "MISSING: no package in the store",
               fill_command(needs.root, needs.engine, platform,
                            provider.address + " " + provider.version + " for " + platform, options));
      break;
    case StoredPackage::Verdict::not_in_lock:
      out.fail(platform, item,
               "LOCK: the lock has no hash of the store's package (" + short_hash(judged.hashes.front()) + ")",
               "the root's lock names other packages than the store holds: podplane deps tf" + engine_flag(needs.engine) +
                   " --stack " + needs.root.string() + repo_root_flag(options) + " --platform " + platform +
                   " --write-lock --upgrade (online)");
      break;
    case StoredPackage::Verdict::view_missing:
    case StoredPackage::Verdict::view_damaged:
      out.fail(platform, item,
               "VIEW: " + judged.view.string() + " is missing or damaged (the store's tfrc installs from it)",
               "the store's views disagree with its index: run `podplane deps verify` to find and repair the damaged "
               "files");
      break;
    case StoredPackage::Verdict::ok:
      out.ok(platform, item);
      break;
  }
}

void check_provider_in_mirror(RegistryClient& registry, const RootCheckSource& source, const RootNeeds& needs,
                              const lockfile::ProviderLock& provider, const std::vector<std::string>& platforms,
                              const RootCheckOptions& options, CheckReporter& out) {
  const std::string item = "provider " + provider.address + " " + provider.version;
  std::map<std::string, MirrorArchive> archives;
  try {
    archives = registry.mirror_archives(source.mirror_url + "/v1/mirror/",
                                        ProviderAddress::parse(provider.address, "registry.opentofu.org"),
                                        Version::parse(provider.version));
  } catch (const Error& error) {
    for (const auto& platform : platforms)
      out.fail(platform, item, "MISSING: " + error.message(),
               fill_command(needs.root, needs.engine, platform, provider.address + " " + provider.version, options));
    return;
  }
  for (const auto& platform : platforms) {
    auto it = archives.find(platform);
    if (it == archives.end()) {
      out.fail(platform, item, "MISSING: the mirror has no " + platform + " package",
               fill_command(needs.root, needs.engine, platform,
                            provider.address + " " + provider.version + " for " + platform, options));
    } else if (!lockfile::package_matches_lock(it->second.hashes, provider.hashes)) {
      out.fail(platform, item, "LOCK: the lock has no hash of the mirror's package",
               "the root's lock names other packages than the mirror serves: podplane deps tf" +
                   engine_flag(needs.engine) + " --stack " + needs.root.string() + repo_root_flag(options) +
                   " --platform " + platform + " --write-lock --upgrade (online)");
    } else {
      out.ok(platform, item, "ok: " + source.mirror_url);
    }
  }
}

// The fix of an archive URL call, whatever the source: its package vendored into the root from
// a store (`stack vendor` reads this host's store). Where that store is not known to hold the
// package (a mirror was checked, or the store lacks it), the command that fills it comes first.
std::string vendor_command(const RootCheckSource& source, const fs::path& root, lockfile::Engine engine,
                           const fetch::ModuleSelection& selection, const RootCheckOptions& options) {
  const std::string vendor = "podplane stack vendor " + root.string() + repo_root_flag(options) + " (offline)";
  const std::string commit = "then commit the root's vendor/modules/ and its changed sources";
  const std::string module = "module " + selection.source.store_address();
  if (!source.mirror_url.empty())
    return vendor + ", on a host whose store holds " + module + " (" + fill_command(root, engine, "", "it", options) +
           "); " + commit;
  if (!selection.package) return fill_command(root, engine, "", module, options) + "; then " + vendor + ", " + commit;
  return vendor + ", " + commit;
}

// The fix of an archive URL call written inside a module package: `stack vendor` changes only
// the repository's files and the engine fetches the package as published, so no command here
// can point that call elsewhere; what works is a package of the calling module without it.
std::string called_inside_a_package_fix(const fetch::ModuleSelection& selection) {
  return "the call is inside a module package (" + selection.context +
         "), which stack vendor does not change: call a version of that module whose package calls no archive URL, "
         "or copy the module into the repository, call the copy by a local path, then podplane stack vendor the root";
}

// What comes before the fill when a package is held but cannot be read: its damaged copy set
// aside, so that the fill takes it again (`deps tf` fetches a module whose tree row is gone).
std::string repair_command(const RootCheckSource& source) {
  return source.mirror_url.empty()
             ? "podplane deps verify --repair (it sets the damaged package aside), then "
             : "on the mirror's host, which lists the package but does not hand it out: podplane deps verify --repair, then ";
}

// What the root needs, read through the source's modules; a root that cannot be read is a row.
std::optional<RootNeeds> read_needs(const RootCheckSource& source, const fs::path& root, lockfile::Engine engine,
                                    const RootCheckOptions& options, CheckReporter& out) {
  std::unique_ptr<fetch::ModuleLookup> lookup;
  if (source.mirror_url.empty())
    lookup = std::make_unique<fetch::StoreModuleLookup>(*source.store);
  else
    lookup = std::make_unique<MirrorModuleLookup>(source);
  try {
    return fetch::root_needs(root, fetch::module_boundary(root, options.repo_root), *lookup);
  } catch (const lockfile::LocalModuleOutside& e) {
    out.fail("-", "root " + root.string(), "UNREADABLE: " + e.message(),
             "podplane stack check " + root.string() + " --repo-root " + e.suggested_root().string() + options.flags);
  } catch (const Error& e) {
    out.fail("-", "root " + root.string(), "UNREADABLE: " + e.message(),
             "fix the root's configuration so that `" + std::string(lockfile::engine_name(engine)) +
                 " validate` reads it");
  }
  return std::nullopt;
}

// The lock covers what the root and every module it calls require (lockfile/lock_rules.hpp).
void check_lock_covers(const RootNeeds& needs, const RootCheckOptions& options, CheckReporter& out) {
  std::map<std::string, lockfile::RequiredProvider> required;
  for (const auto& [address, want] : needs.requirements.providers) required[address] = {want.constraints, want.declared_in};
  const auto gaps = lockfile::lock_gaps(required, *needs.lock);
  const std::string fill = "podplane deps tf" + engine_flag(needs.engine) + " --stack " + needs.root.string() +
                           repo_root_flag(options) + " --write-lock";
  for (const auto& gap : gaps) {
    if (gap.kind == lockfile::LockGap::Kind::no_entry)
      out.fail("-", "lock covers " + gap.address, "LOCK: " + gap.declared_in + " requires it, the lock has no entry",
               fill + " (online), then commit the lock");
    else
      out.fail("-", "lock covers " + gap.address,
               "LOCK: the lock has " + gap.locked_version + ", which \"" + gap.constraints +
                   "\" (the root's requirements) does not allow",
               // Without --upgrade, deps tf keeps the locked version and refuses it, as `init` would.
               fill + " --upgrade (online), then commit the lock");
  }
  if (gaps.empty()) {
    const std::size_t covered = required.size();
    out.ok("-", "lock covers the " + std::to_string(covered) + (covered == 1 ? " provider" : " providers") +
                    " the root requires");
  }
}

}  // namespace

std::optional<RootNeeds> check_root(const RootCheckSource& source, const fs::path& root_dir,
                                    const RootCheckOptions& options, CheckReporter& out) {
  std::error_code error;
  if (!fs::is_directory(root_dir, error)) throw Error(root_dir.string() + " is not a directory (a root to check)");
  if (source.mirror_url.empty() && source.store == nullptr) throw Error("a root is checked against a store or a mirror");
  const fs::path root = fs::absolute(root_dir).lexically_normal();
  fs::path lock_path = root / ".terraform.lock.hcl";
  try {
    lock_path = lockfile::root_lock_file(root, fetch::module_boundary(root, options.repo_root));
  } catch (const Error& e) {
    out.fail("-", "lock " + lock_path.string(), "REFUSED: " + e.message(),
             "remove the link " + lock_path.string() + ", then podplane deps tf --stack " + root.string() +
                 repo_root_flag(options) + " --write-lock (online) writes the root's own lock");
    return std::nullopt;
  }
  if (!fs::exists(lock_path, error)) {
    out.fail("-", "lock " + lock_path.string(), "MISSING: the root has no lock, so `init -lockfile=readonly` fails",
             "podplane deps tf --stack " + root.string() + repo_root_flag(options) +
                 " --write-lock --platform <os_arch> (online), then commit the lock");
    return std::nullopt;
  }
  lockfile::Engine engine = lockfile::Engine::tofu;
  try {
    engine = fetch::lock_engine(lockfile::read_lock_file(lock_path));
  } catch (const Error& e) {
    out.fail("-", "lock " + lock_path.string(), "INVALID: " + e.message(),
             "repair or remove " + lock_path.string() + ", then podplane deps tf --stack " + root.string() +
                 repo_root_flag(options) + " --write-lock (online)");
    return std::nullopt;
  }

  auto needs = read_needs(source, root, engine, options, out);
  if (!needs) return std::nullopt;
  check_lock_covers(*needs, options, out);
  for (const auto& selection : needs->modules) {
    if (fetch::fetched_only_from_its_host(selection.source))
      out.fail("-", selection.item,
               "CANNOT REDIRECT: the engine fetches an archive URL from its own host, which no mirror setting changes; " +
                   selection.context,
               fetch::vendor_can_change(selection, needs->boundary)
                   ? vendor_command(source, root, engine, selection, options)
                   : called_inside_a_package_fix(selection));
    else if (!selection.problem.empty())
      out.fail("-", selection.item, selection.problem,
               (selection.package ? repair_command(source) : "") +
                   fill_command(root, engine, "", "module " + selection.source.store_address(), options));
    else
      out.ok("-", selection.item, "ok: " + selection.package->version + " from " +
                                      (source.mirror_url.empty() ? "the store" : source.mirror_url));
  }

  const auto wanted = platforms_to_check(source, *needs->lock, options.platforms);
  if (source.mirror_url.empty()) {
    for (const auto& platform : wanted)
      for (const auto& provider : needs->lock->providers)
        check_provider_in_store(*source.store, *needs, provider, platform, options, out);
    return needs;
  }
  HttpClient http(source.http);
  lockfile::CliConfig no_config;
  RegistryClient registry(http, no_config);
  for (const auto& provider : needs->lock->providers)
    check_provider_in_mirror(registry, source, *needs, provider, wanted, options, out);
  return needs;
}

}  // namespace podplane::checks
