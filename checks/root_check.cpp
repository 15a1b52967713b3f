#include "checks/root_check.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "base/error.hpp"
#include "base/scratch_dir.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/hash.hpp"
#include "checks/stored_package.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/lock_rules.hpp"
#include "lockfile/provider_names.hpp"
#include "fetch/deps_tf.hpp"
#include "fetch/registry.hpp"
#include "fetch/tf_requirements.hpp"
#include "fetch/tf_resolution.hpp"

namespace podplane::checks {

namespace fs = std::filesystem;
using lockfile::Constraints;
using lockfile::ProviderAddress;
using lockfile::Version;
using mirror::choose_module_version;
using mirror::direct_module_package;
using mirror::HttpClient;
using mirror::ModulePackage;
using mirror::ModulePackages;
using mirror::ModuleSource;
using mirror::MirrorArchive;
using mirror::parse_module_versions;
using mirror::read_root;
using mirror::redact_url;
using mirror::RegistryClient;
using mirror::RemoteModuleCall;
using mirror::resolve_subdir;
using mirror::RootRequirements;

namespace {

std::string engine_flag(lockfile::Engine engine) {
  return engine == lockfile::Engine::terraform ? " --engine terraform" : "";
}

// The command that fills this root online, or the bundle that carries it.
std::string fill_command(const fs::path& root, lockfile::Engine engine, const std::string& platform,
                         const std::string& what) {
  std::string platforms = platform.empty() ? "" : " --platform " + platform;
  return "podplane deps tf" + engine_flag(engine) + " --stack " + root.string() + platforms +
         " (online), or import a bundle that has " + what;
}

// Module packages as the store (or a mirror's module registry) has them: a call resolves to the
// newest stored version its constraints allow, written out of the store so the modules it calls
// in turn are followed too. A call nothing answers is recorded and resolves to an empty module.
class CheckedModules : public ModulePackages {
 public:
  CheckedModules(const RootCheckSource& source, const fs::path& scratch) : source_(source), scratch_(scratch) {
    if (source_.store != nullptr) trees_ = source_.store->module_trees();
    fs::create_directories(scratch_ / "empty");
    if (!source_.mirror_url.empty()) http_.emplace(source_.http);
  }

  struct Outcome {
    std::string item;    // "module ADDRESS VERSION-CONSTRAINT"
    bool ok = false;
    std::string detail;
    std::string what;    // for the remedy: "module ADDRESS"
  };
  const std::vector<Outcome>& outcomes() const { return outcomes_; }

  Called call(const RemoteModuleCall& call) override {
    const auto& source = call.source;
    const std::string address = source.store_address();
    const std::string wanted = call.constraints.empty() ? "" : " " + call.constraints;
    Outcome outcome{"module " + address + wanted, false, "", "module " + address};
    const std::string where = source_.mirror_url.empty() ? "the store" : source_.mirror_url;
    try {
      std::optional<ModulePackage> package;
      if (source.kind == ModuleSource::Kind::registry) {
        std::vector<Version> offered = offered_versions(source);
        try {
          package = choose_module_version(call, offered);
        } catch (const Error&) {
          std::string have;
          for (const auto& version : offered) have += (have.empty() ? "" : ", ") + version.str();
          outcome.detail = "MISSING: " + where + " has no version that \"" + call.constraints + "\" allows" +
                           (have.empty() ? "" : " (it has " + have + ")") + "; " + call.context;
        }
      } else if (!source_.mirror_url.empty()) {
        outcome.detail = "NOT SERVED: a mirror serves registry modules only; " + call.context + " calls " +
                         redact_url(source.text);
      } else {
        package = direct_module_package(call);
        if (!source_.store->find_module_tree(package->address, package->version)) {
          outcome.detail = "MISSING: no package " + package->address + " " + package->version + " in the store; " +
                           call.context;
          package.reset();
        }
      }
      if (package) {
        outcome.ok = true;
        outcome.detail = "ok: " + package->version + " from " + where;
        auto dir = written_out(*package);
        remember(std::move(outcome));
        const fs::path root = dir ? *dir : scratch_ / "empty";
        return {*package, dir ? resolve_subdir(*dir, source.subdir) : root, root};
      }
    } catch (const Error& error) {
      outcome.detail = "UNREADABLE: " + error.message();
    }
    remember(std::move(outcome));
    return {{address, "missing"}, scratch_ / "empty", scratch_ / "empty"};
  }

 private:
  std::vector<Version> offered_versions(const ModuleSource& source) {
    std::vector<Version> versions;
    if (!source_.mirror_url.empty()) {
      const auto& m = source.registry;
      std::string url = source_.mirror_url + "/v1/modules/" + m.host + "/" + m.ns + "/" + m.name + "/" + m.system +
                        "/versions";
      auto response = http_->get(url, {"Accept: application/json"});
      if (response.status == 404) return versions;
      if (response.status != 200) throw Error(redact_url(url) + ": " + response.status_text());
      return parse_module_versions(response.body, url);
    }
    const std::string address = source.registry.str();
    for (const auto& tree : trees_) {
      if (tree.address != address) continue;
      try {
        versions.push_back(Version::parse(tree.version));
      } catch (const Error&) {
      }
    }
    return versions;
  }

  // The stored package's files in the scratch dir (nullopt through a mirror: nested calls are
  // then not followed).
  std::optional<fs::path> written_out(const ModulePackage& package) {
    if (source_.store == nullptr || !source_.mirror_url.empty()) return std::nullopt;
    const std::string key = package.address + " " + package.version;
    if (auto it = written_.find(key); it != written_.end()) return it->second;
    auto tree = source_.store->find_module_tree(package.address, package.version);
    if (!tree) return std::nullopt;
    fs::path root = scratch_ / ("module-" + std::to_string(written_.size()));
    fs::create_directories(root);
    for (const auto& file : tree->files) {
      auto target = root / file.path;
      fs::create_directories(target.parent_path());
      fs::copy_file(source_.store->object_path(file.digest), target);
    }
    written_[key] = root;
    return root;
  }

  void remember(Outcome outcome) {
    for (const auto& seen : outcomes_)
      if (seen.item == outcome.item && seen.detail == outcome.detail) return;
    outcomes_.push_back(std::move(outcome));
  }

  const RootCheckSource& source_;
  fs::path scratch_;
  std::vector<cache::ModuleTree> trees_;
  std::optional<HttpClient> http_;  // for a mirror's module registry
  std::map<std::string, fs::path> written_;
  std::vector<Outcome> outcomes_;
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
void check_provider_in_store(const cache::Store& store, const fs::path& root, lockfile::Engine engine,
                             const lockfile::ProviderLock& provider, const std::string& platform, CheckReporter& out) {
  const std::string item = "provider " + provider.address + " " + provider.version;
  const StoredPackage judged = judge_stored_package(store, provider, platform);
  switch (judged.verdict) {
    case StoredPackage::Verdict::missing:
      out.fail(platform, item, "MISSING: no package in the store",
               fill_command(root, engine, platform, provider.address + " " + provider.version + " for " + platform));
      break;
    case StoredPackage::Verdict::not_in_lock:
      out.fail(platform, item,
               "LOCK: the lock has no hash of the store's package (" + short_hash(judged.hashes.front()) + ")",
               "the root's lock names other packages than the store holds: podplane deps tf" + engine_flag(engine) +
                   " --stack " + root.string() + " --platform " + platform + " --write-lock --upgrade (online)");
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

void check_provider_in_mirror(RegistryClient& registry, const RootCheckSource& source, const fs::path& root,
                              lockfile::Engine engine, const lockfile::ProviderLock& provider,
                              const std::vector<std::string>& platforms, CheckReporter& out) {
  const std::string item = "provider " + provider.address + " " + provider.version;
  std::map<std::string, MirrorArchive> archives;
  try {
    archives = registry.mirror_archives(source.mirror_url + "/v1/mirror/",
                                        ProviderAddress::parse(provider.address, "registry.opentofu.org"),
                                        Version::parse(provider.version));
  } catch (const Error& error) {
    for (const auto& platform : platforms)
      out.fail(platform, item, "MISSING: " + error.message(),
               fill_command(root, engine, platform, provider.address + " " + provider.version));
    return;
  }
  for (const auto& platform : platforms) {
    auto it = archives.find(platform);
    if (it == archives.end()) {
      out.fail(platform, item, "MISSING: the mirror has no " + platform + " package",
               fill_command(root, engine, platform, provider.address + " " + provider.version + " for " + platform));
    } else if (!lockfile::package_matches_lock(it->second.hashes, provider.hashes)) {
      out.fail(platform, item, "LOCK: the lock has no hash of the mirror's package",
               "the root's lock names other packages than the mirror serves: podplane deps tf" + engine_flag(engine) +
                   " --stack " + root.string() + " --platform " + platform + " --write-lock --upgrade (online)");
    } else {
      out.ok(platform, item, "ok: " + source.mirror_url);
    }
  }
}

}  // namespace

lockfile::Engine root_engine(const fs::path& root_dir) {
  const fs::path lock_path = root_dir / ".terraform.lock.hcl";
  std::error_code error;
  if (!fs::exists(lock_path, error)) return lockfile::Engine::tofu;
  for (const auto& provider : lockfile::read_lock_file(lock_path).providers)
    if (provider.address.rfind("registry.terraform.io/", 0) == 0) return lockfile::Engine::terraform;
  return lockfile::Engine::tofu;
}

void check_root(const RootCheckSource& source, const fs::path& root_dir, const std::vector<std::string>& platforms,
                CheckReporter& out) {
  std::error_code error;
  if (!fs::is_directory(root_dir, error)) throw Error(root_dir.string() + " is not a directory (a root to check)");
  if (source.mirror_url.empty() && source.store == nullptr) throw Error("a root is checked against a store or a mirror");
  const fs::path root = fs::absolute(root_dir).lexically_normal();
  const fs::path lock_path = root / ".terraform.lock.hcl";
  if (!fs::exists(lock_path, error)) {
    out.fail("-", "lock " + lock_path.string(), "MISSING: the root has no lock, so `init -lockfile=readonly` fails",
             "podplane deps tf --stack " + root.string() + " --write-lock --platform <os_arch> (online), then commit "
             "the lock");
    return;
  }
  lockfile::LockFile lock;
  try {
    lock = lockfile::read_lock_file(lock_path);
  } catch (const Error& e) {
    out.fail("-", "lock " + lock_path.string(), "INVALID: " + e.message(),
             "repair or remove " + lock_path.string() + ", then podplane deps tf --stack " + root.string() +
                 " --write-lock (online)");
    return;
  }
  const lockfile::Engine engine = root_engine(root);
  const std::string host(lockfile::default_registry_host(engine));

  // What the root and every module it calls require, each call resolved from the source.
  ScratchDir scratch("podplane-stack-check-");
  CheckedModules modules(source, scratch.path());
  std::optional<RootRequirements> requirements;
  try {
    requirements = read_root(root, host, modules);
  } catch (const Error& e) {
    out.fail("-", "root " + root.string(), "UNREADABLE: " + e.message(),
             "fix the root's configuration so that `" + std::string(lockfile::engine_name(engine)) +
                 " validate` reads it");
  }
  if (requirements) {
    std::map<std::string, lockfile::RequiredProvider> required;
    for (const auto& [address, want] : requirements->providers) required[address] = {want.constraints, want.declared_in};
    const auto gaps = lockfile::lock_gaps(required, lock);
    for (const auto& gap : gaps) {
      if (gap.kind == lockfile::LockGap::Kind::no_entry)
        out.fail("-", "lock covers " + gap.address, "LOCK: " + gap.declared_in + " requires it, the lock has no entry",
                 "podplane deps tf" + engine_flag(engine) + " --stack " + root.string() +
                     " --write-lock (online), then commit the lock");
      else
        out.fail("-", "lock covers " + gap.address,
                 "LOCK: the lock has " + gap.locked_version + ", which \"" + gap.constraints +
                     "\" (the root's requirements) does not allow",
                 // Without --upgrade, deps tf keeps the locked version and refuses it, as `init` would.
                 "podplane deps tf" + engine_flag(engine) + " --stack " + root.string() +
                     " --write-lock --upgrade (online), then commit the lock");
    }
    if (gaps.empty()) {
      const std::size_t covered = required.size();
      out.ok("-", "lock covers the " + std::to_string(covered) + (covered == 1 ? " provider" : " providers") +
                      " the root requires");
    }
  }
  for (const auto& outcome : modules.outcomes()) {
    if (outcome.ok)
      out.ok("-", outcome.item, outcome.detail);
    else
      out.fail("-", outcome.item, outcome.detail, fill_command(root, engine, "", outcome.what));
  }

  const auto wanted = platforms_to_check(source, lock, platforms);
  if (source.mirror_url.empty()) {
    for (const auto& platform : wanted)
      for (const auto& provider : lock.providers) check_provider_in_store(*source.store, root, engine, provider, platform, out);
    return;
  }
  HttpClient http(source.http);
  lockfile::CliConfig no_config;
  RegistryClient registry(http, no_config);
  for (const auto& provider : lock.providers) check_provider_in_mirror(registry, source, root, engine, provider, wanted, out);
}

}  // namespace podplane::checks
