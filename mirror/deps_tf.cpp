#include "mirror/deps_tf.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cache/views.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/error.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/tf_config.hpp"
#include "lockfile/version.hpp"
#include "mirror/deps_download.hpp"
#include "mirror/module_archive.hpp"
#include "mirror/module_source.hpp"
#include "mirror/openpgp.hpp"
#include "mirror/registry.hpp"
#include "mirror/scratch_dir.hpp"
#include "mirror/shasums.hpp"

namespace podplane::mirror {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using lockfile::Constraints;
using lockfile::Platform;
using lockfile::ProviderAddress;
using lockfile::Version;

constexpr int kMaxModuleDepth = 8;  // nested remote module calls followed at most this deep

std::string basename_of_url(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct ProviderWant {
  ProviderAddress address;
  std::vector<Constraints> constraints;
  std::optional<Version> pinned;   // from a stack's .terraform.lock.hcl or the kept selection
  std::string declared_in;
};

struct ModulePlan {
  std::string address;
  std::string version;
  std::string upstream_url;
  fs::path root;                 // the package tree on disk (fetched or materialized from the store)
  bool present = false;          // already indexed: nothing to add
};

// One provider package to fetch, with everything its checks need.
struct PackageJob {
  ProviderAddress address;
  Version version;
  Platform platform;
  std::string filename;
  std::string url;
  std::string expected_sha256;
  std::vector<std::string> expected_h1;   // network mirror / registry packages h1 hashes, any may match
  std::optional<std::uint64_t> expected_size;
  cache::Trust trust = cache::Trust::unverified;
  std::string result;                     // provenance text
  std::string shasums_url, signature_url; // registry path only
  std::string keys_json;
  std::string fingerprint;
};

struct SignedDocuments {
  std::string shasums;
  std::string signature;
  std::map<std::string, std::string> lines;
  std::string fingerprint;
  bool verified = false;
};

class TfRun {
 public:
  TfRun(cache::Store& store, const DepsTfOptions& options, std::ostream& out, std::ostream& log)
      : store_(store),
        options_(options),
        out_(out),
        log_(log),
        quiet_(options.download.progress == Progress::quiet),
        config_(lockfile::load_cli_config_from_environment()),
        http_(options.download.http),
        registry_(http_, config_),
        downloader_(options.download),
        fetcher_(http_, downloader_, scratch_.path() / "fetch"),
        host_(lockfile::default_registry_host(options.engine)) {
    fs::create_directories(scratch_.path() / "fetch");
  }

  DepsTfSummary run() {
    auto previous = store_.tf_selection();
    auto platforms = platforms_of(previous);
    std::string module_address, module_version;
    if (options_.stacks.empty()) {
      collect_default_stack(module_address, module_version);
    } else {
      for (const auto& stack : options_.stacks) collect_stack(stack);
      keep_previous_providers(previous);
      if (previous) {
        module_address = previous->module_address;
        module_version = previous->module_version;
      }
    }
    auto selection = resolve_providers();
    auto jobs = plan_packages(selection, platforms);
    check_and_fetch(jobs);
    commit(selection, platforms, module_address, module_version, jobs);
    (void)cache::rebuild_views(store_);
    report(selection, platforms);
    return summary_;
  }

 private:
  void note(const std::string& line) {
    if (!quiet_) log_ << line << "\n";
  }

  std::vector<std::string> platforms_of(const std::optional<cache::TfSelection>& previous) {
    std::set<std::string> set;
    for (const auto& text : split_list(options_.platforms)) set.insert(Platform::parse(text).str());
    if (previous) {
      for (const auto& text : previous->platforms) set.insert(text);
    }
    if (set.empty()) set.insert(host_platform());
    return {set.begin(), set.end()};
  }

  // ---- requirements ---------------------------------------------------------------------

  void want_provider(const ProviderAddress& address, const std::string& constraints, const std::string& declared_in) {
    if (address.host == "terraform.io" && address.ns == "builtin") return;  // built into the engines
    auto [it, inserted] = wants_.try_emplace(address.str(), ProviderWant{address, {}, std::nullopt, declared_in});
    try {
      it->second.constraints.push_back(Constraints::parse(constraints));
    } catch (const Error& error) {
      throw Error(declared_in + ": provider " + address.str() + ": " + error.what());
    }
  }

  // required_providers of `dir` (and the local modules it calls), then its remote module calls.
  void collect_module_dir(const fs::path& dir, int depth) {
    auto requirements = lockfile::read_module_requirements(dir);
    for (const auto& provider : requirements.providers) {
      std::string source = provider.source.empty() ? "hashicorp/" + provider.local_name : provider.source;
      ProviderAddress address;
      try {
        address = ProviderAddress::parse(source, host_);
      } catch (const Error& error) {
        throw Error(provider.declared_in + ": " + error.what());
      }
      want_provider(address, provider.constraints, provider.declared_in);
    }
    for (const auto& call : requirements.remote_modules) {
      if (depth >= kMaxModuleDepth) {
        throw Error(call.declared_in + ": module \"" + call.name + "\": remote module calls nest deeper than " +
                    std::to_string(kMaxModuleDepth));
      }
      auto source = ModuleSource::parse(call.source, host_);
      if (source.kind == ModuleSource::Kind::local) continue;  // followed by read_module_requirements
      auto module_dir = resolve_module(source, call.version, call.declared_in + ": module \"" + call.name + "\"");
      collect_module_dir(module_dir, depth + 1);
    }
  }

  void collect_default_stack(std::string& module_address, std::string& module_version) {
    const cache::PodplaneStack stack = cache::podplane_stack(options_.default_stack);
    for (const auto& provider : stack.providers) {
      want_provider(ProviderAddress::parse(provider.source, host_), provider.constraints, "podplane default stack");
    }
    auto source = ModuleSource::parse(stack.module_package, host_);
    auto root = resolve_module(source, stack.module_constraints, "podplane default stack: module " + stack.module_package);
    const auto& plan = modules_.at(last_module_key_);
    module_address = plan.address;
    module_version = plan.version;
    for (const char* name : cache::kStackSubmodules) {
      auto dir = root / "modules" / name;
      if (!fs::is_directory(dir)) {
        throw Error("module package " + plan.address + " " + plan.version + " lacks modules/" + name);
      }
      collect_module_dir(dir, 1);
    }
  }

  void collect_stack(const fs::path& stack) {
    if (!fs::is_directory(stack)) throw UsageError("--stack " + stack.string() + " is not a directory");
    std::map<std::string, Version> pins;
    auto lock_path = stack / ".terraform.lock.hcl";
    if (fs::exists(lock_path)) {
      for (const auto& entry : lockfile::read_lock_file(lock_path).providers) {
        pins.emplace(entry.address, Version::parse(entry.version));
      }
    }
    auto before = wants_.size();
    (void)before;
    collect_module_dir(stack, 0);
    for (const auto& [address, version] : pins) {
      auto it = wants_.find(address);
      if (it == wants_.end()) continue;  // a lock entry no module asks for: the engines drop it too
      if (it->second.pinned && !(*it->second.pinned == version)) {
        throw Error(mismatch_message("stacks lock " + address + " at different versions",
                                     it->second.pinned->str(), version.str() + " (" + lock_path.string() + ")"));
      }
      it->second.pinned = version;
    }
  }

  // A --stack run adds to what the store last resolved instead of replacing it, so the
  // Podplane stack's lock keeps its providers (with every platform).
  void keep_previous_providers(const std::optional<cache::TfSelection>& previous) {
    if (!previous || previous->engine != (options_.engine == lockfile::Engine::tofu ? "tofu" : "terraform")) return;
    for (const auto& provider : previous->providers) {
      if (wants_.count(provider.address)) continue;
      auto address = ProviderAddress::parse(provider.address, host_);
      want_provider(address, provider.constraints, "the store's previous selection");
      wants_.at(provider.address).pinned = Version::parse(provider.version);
    }
  }

  // Chooses the version, fetches the package unless the store has it, returns the module
  // directory (package root plus the address's //subdir).
  fs::path resolve_module(const ModuleSource& source, const std::string& constraint_text, const std::string& context) {
    ModulePlan plan;
    std::string call_subdir = source.subdir;
    if (source.kind == ModuleSource::Kind::registry) {
      auto versions = registry_.module_versions(source.registry);
      Constraints constraints;
      try {
        constraints = Constraints::parse(constraint_text);
      } catch (const Error& error) {
        throw Error(context + ": " + error.what());
      }
      auto chosen = lockfile::newest_allowed(versions, constraints);
      if (!chosen) {
        throw Error(context + ": no version of module " + source.registry.str() + " matches \"" + constraint_text + "\"");
      }
      plan.address = source.registry.str();
      plan.version = chosen->str();
    } else {
      if (!constraint_text.empty()) {
        throw Error(context + ": a version constraint needs a registry module source, got " + redact_url(source.text));
      }
      plan.address = source.store_address();
      plan.version = source.kind == ModuleSource::Kind::git && !source.ref.empty() ? source.ref : "unversioned";
      std::replace(plan.version.begin(), plan.version.end(), '/', '_');  // a branch "a/b" is one path segment
    }
    auto key = plan.address + " " + plan.version;
    last_module_key_ = key;
    if (auto it = modules_.find(key); it != modules_.end()) return resolve_subdir(it->second.root, call_subdir);

    if (auto stored = store_.find_module_tree(plan.address, plan.version)) {
      plan.present = true;
      plan.upstream_url = stored->upstream_url;
      plan.root = materialize(*stored);
      note("module " + plan.address + " " + plan.version + ": already in the store");
    } else {
      ModuleSource package = source;
      if (source.kind == ModuleSource::Kind::registry) {
        auto location = registry_.module_location(source.registry, Version::parse(plan.version));
        package = ModuleSource::parse(location, host_);
        if (package.kind == ModuleSource::Kind::registry || package.kind == ModuleSource::Kind::local) {
          throw Error(context + ": the registry's location for " + plan.address + " " + plan.version +
                      " must be a direct remote package address, got " + redact_url(location));
        }
      } else {
        package.subdir.clear();  // the whole repository or archive is the package
      }
      note("module " + plan.address + " " + plan.version + ": fetching " + package.package_address());
      auto fetched = fetcher_.fetch(package);
      plan.root = fetched.root;
      plan.upstream_url = fetched.upstream_url;
    }
    auto root = plan.root;
    modules_.emplace(key, std::move(plan));
    return resolve_subdir(root, call_subdir);
  }

  // Writes a stored module tree out of the objects so its .tf files can be read offline.
  fs::path materialize(const cache::ModuleTree& tree) {
    fs::path root = scratch_.path() / ("stored-" + std::to_string(++materialized_));
    for (const auto& file : tree.files) {
      auto target = root / file.path;
      fs::create_directories(target.parent_path());
      fs::copy_file(store_.object_path(file.digest), target);
      fs::permissions(target, fs::perms(0644) | fs::perms::owner_write);
    }
    fs::create_directories(root);
    return root;
  }

  // Runs fn(i, http, registry) for i in [0, count) on up to --jobs threads, each with its own
  // HTTP and registry client (neither is thread-safe). Registry answers are small but many:
  // fetching them one after another would dominate a cold run on a slow link. The error of
  // the lowest index is rethrown, so failures are reported deterministically.
  template <typename Fn>
  void parallel_for(std::size_t count, Fn fn) {
    if (count == 0) return;
    std::atomic<std::size_t> next{0};
    std::vector<std::exception_ptr> errors(count);
    auto workers = std::min<std::size_t>(static_cast<std::size_t>(std::max(1, options_.download.jobs)), count);
    auto work = [&] {
      HttpClient http(options_.download.http);
      RegistryClient registry(http, config_);
      for (std::size_t i = next++; i < count; i = next++) {
        try {
          fn(i, http, registry);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work);
    work();
    for (auto& thread : threads) thread.join();
    for (const auto& error : errors) {
      if (error) std::rethrow_exception(error);
    }
  }

  // ---- providers --------------------------------------------------------------------------

  std::vector<cache::TfSelection::Provider> resolve_providers() {
    std::vector<const ProviderWant*> wants;
    for (const auto& [text, want] : wants_) wants.push_back(&want);
    std::vector<std::vector<Version>> listed(wants.size());
    parallel_for(wants.size(), [&](std::size_t i, HttpClient&, RegistryClient& registry) {
      const auto& want = *wants[i];
      if (const auto* mirror = config_.network_mirror_for(want.address.str())) {
        listed[i] = registry.mirror_versions(mirror->location, want.address);
      } else {
        for (const auto& version : registry.provider_versions(want.address)) {
          if (protocols_supported(version.protocols)) listed[i].push_back(version.version);
        }
      }
    });
    std::vector<cache::TfSelection::Provider> selection;
    std::size_t index = 0;
    for (auto& [text, want] : wants_) {
      auto merged = Constraints::merge(want.constraints);
      const auto& available = listed[index++];
      Version chosen;
      if (want.pinned) {
        if (!merged.allows(*want.pinned)) {
          throw Error("locked version " + want.pinned->str() + " of " + text + " does not meet the constraints \"" +
                      merged.canonical() + "\"");
        }
        if (std::find(available.begin(), available.end(), *want.pinned) == available.end()) {
          throw Error("locked version " + want.pinned->str() + " of " + text + " is not offered upstream");
        }
        chosen = *want.pinned;
      } else {
        auto newest = lockfile::newest_allowed(available, merged);
        if (!newest) {
          throw Error("no version of " + text + " matches \"" + merged.canonical() + "\" (asked for by " +
                      want.declared_in + ")");
        }
        chosen = *newest;
      }
      note("provider " + text + ": " + chosen.str());
      selection.push_back({text, chosen.str(), merged.canonical()});
    }
    return selection;
  }

  std::vector<PackageJob> plan_packages(const std::vector<cache::TfSelection::Provider>& selection,
                                        const std::vector<std::string>& platforms) {
    std::vector<PackageJob> jobs;
    for (const auto& provider : selection) {
      auto address = ProviderAddress::parse(provider.address, host_);
      auto version = Version::parse(provider.version);
      for (const auto& platform_text : platforms) {
        auto platform = Platform::parse(platform_text);
        std::string filename =
            "terraform-provider-" + address.type + "_" + version.str() + "_" + platform.str() + ".zip";
        auto stored = store_.find_artifact(cache::ArtifactKind::provider_package, provider.address, version.str(),
                                           platform.str(), filename);
        if (stored && store_.has_object(stored->digest)) {
          ++summary_.packages_present;
          continue;
        }
        PackageJob job;
        job.address = address;
        job.version = version;
        job.platform = platform;
        job.filename = filename;
        jobs.push_back(std::move(job));
      }
    }
    return jobs;
  }

  const SignedDocuments& signed_documents(const PackageJob& job, const ProviderDownload& answer) {
    auto key = answer.shasums_url + "\n" + answer.shasums_signature_url + "\n" + answer.signing_keys_json;
    auto it = documents_.find(key);
    if (it != documents_.end()) return it->second;
    SignedDocuments documents;
    auto sums_name = basename_of_url(answer.shasums_url);
    documents.shasums = fetched_documents_.at(answer.shasums_url);
    documents.signature = fetched_documents_.at(answer.shasums_signature_url);
    if (answer.signing_keys.empty()) {
      if (options_.verification != Verification::allow_unverified) {
        throw Error("signature check failed for " + sums_name + ": the registry lists no signing keys for " +
                    job.address.str() + " " + job.version.str() +
                    "; refusing unsigned packages (pass --allow-unverified to take them, recorded as unverified)");
      }
    } else {
      std::vector<std::string> armors;
      for (const auto& key_entry : answer.signing_keys) armors.push_back(key_entry.ascii_armor);
      auto check = verify_detached_signature(documents.shasums, documents.signature, armors, sums_name);
      documents.fingerprint = check.fingerprint;
      documents.verified = true;
    }
    documents.lines = parse_shasums(documents.shasums, sums_name);
    return documents_.emplace(key, std::move(documents)).first->second;
  }

  // Phase 1: registry answers, signed SHA256SUMS and the agreement of every checksum, before
  // a single package byte is fetched.
  void prepare_registry_job(PackageJob& job, ProviderDownload& answer) {
    job.filename = answer.filename;
    job.url = answer.download_url;
    const auto& documents = signed_documents(job, answer);
    auto sums_name = basename_of_url(answer.shasums_url);
    auto line = documents.lines.find(answer.filename);
    if (line == documents.lines.end()) {
      throw Error("SHA256SUMS check failed: " + sums_name + " has no line for " + answer.filename);
    }
    if (line->second != answer.shasum) {
      throw Error(mismatch_message("SHA256SUMS check failed for " + answer.filename +
                                       ": the signed SHA256SUMS line and the registry's shasum disagree",
                                   "sha256:" + line->second + " (" + sums_name + ")",
                                   "sha256:" + answer.shasum + " (registry shasum)"));
    }
    job.expected_sha256 = line->second;
    for (const auto& hash : answer.package_hashes[job.platform.str()]) {
      if (hash.starts_with("h1:")) job.expected_h1.push_back(hash);
    }
    if (auto size = answer.package_sizes.find(job.platform.str()); size != answer.package_sizes.end() && size->second > 0) {
      job.expected_size = size->second;
    }
    job.shasums_url = answer.shasums_url;
    job.signature_url = answer.shasums_signature_url;
    job.keys_json = answer.signing_keys_json.empty() ? "{}" : answer.signing_keys_json;
    job.fingerprint = documents.fingerprint;
    job.trust = documents.verified ? cache::Trust::signed_upstream : cache::Trust::unverified;
    job.result = documents.verified ? "signed" : "unverified (--allow-unverified: the registry listed no signing keys)";
  }

  void prepare_mirror_job(PackageJob& job, const std::string& base_url) {
    auto key = job.address.str() + " " + job.version.str();
    auto it = mirror_documents_.find(key);
    if (it == mirror_documents_.end()) {
      it = mirror_documents_.emplace(key, registry_.mirror_archives(base_url, job.address, job.version)).first;
    }
    auto archive = it->second.find(job.platform.str());
    if (archive == it->second.end()) {
      throw Error("the network mirror has no package of " + job.address.str() + " " + job.version.str() +
                  " for platform " + job.platform.str());
    }
    job.url = archive->second.url;
    for (const auto& hash : archive->second.hashes) {
      if (hash.starts_with("zh:")) job.expected_sha256 = hash.substr(3);
      if (hash.starts_with("h1:")) job.expected_h1.push_back(hash);
    }
    if (job.expected_sha256.empty() && job.expected_h1.empty()) {
      if (options_.verification != Verification::allow_unverified) {
        throw Error("the network mirror lists no hashes for " + job.filename +
                    "; refusing an unverified package (pass --allow-unverified to take it)");
      }
      job.trust = cache::Trust::unverified;
      job.result = "unverified (--allow-unverified: the network mirror listed no hashes)";
    } else {
      job.trust = cache::Trust::checksum;
      job.result = "network mirror hashes matched";
    }
  }

  void check_and_fetch(std::vector<PackageJob>& jobs) {
    // Registry answers, then SHA256SUMS and signatures, each fetched in parallel; the checks
    // then run in order. SHA256SUMS and signatures go without the registry token (§1.3).
    std::vector<std::optional<ProviderDownload>> answers(jobs.size());
    parallel_for(jobs.size(), [&](std::size_t i, HttpClient&, RegistryClient& registry) {
      if (config_.network_mirror_for(jobs[i].address.str()) != nullptr) return;
      answers[i] = registry.provider_download(jobs[i].address, jobs[i].version, jobs[i].platform);
    });
    std::vector<std::string> document_urls;
    for (const auto& answer : answers) {
      if (!answer) continue;
      for (const auto* url : {&answer->shasums_url, &answer->shasums_signature_url}) {
        if (std::find(document_urls.begin(), document_urls.end(), *url) == document_urls.end()) {
          document_urls.push_back(*url);
        }
      }
    }
    std::vector<std::string> bodies(document_urls.size());
    parallel_for(document_urls.size(), [&](std::size_t i, HttpClient& http, RegistryClient&) {
      auto response = http.get(document_urls[i]);
      if (response.status != 200) {
        throw Error("cannot fetch " + basename_of_url(document_urls[i]) + " (" + redact_url(document_urls[i]) +
                    "): " + response.status_text());
      }
      bodies[i] = std::move(response.body);
    });
    for (std::size_t i = 0; i < document_urls.size(); ++i) fetched_documents_[document_urls[i]] = std::move(bodies[i]);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (answers[i]) {
        prepare_registry_job(jobs[i], *answers[i]);
      } else {
        prepare_mirror_job(jobs[i], config_.network_mirror_for(jobs[i].address.str())->location);
      }
    }
    if (jobs.empty()) return;
    note("fetching " + std::to_string(jobs.size()) + " provider packages");
    std::vector<DownloadItem> items;
    for (const auto& job : jobs) {
      DownloadItem item;
      item.url = job.url;
      if (!job.expected_sha256.empty()) item.expected_sha256 = job.expected_sha256;
      item.label = job.filename;
      items.push_back(std::move(item));  // no token: packages are fetched without credentials
    }
    auto outcomes = downloader_.fetch_into_store(store_, items);
    std::vector<std::string> failures;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto& job = jobs[i];
      const auto& outcome = outcomes[i];
      if (!outcome.ok) {
        failures.push_back("zip sha256 check or transfer failed for " + job.filename + ": " + outcome.error);
        continue;
      }
      job_digest_[i] = outcome.digest;
      job_size_[i] = outcome.size;
      auto h1 = lockfile::h1_hash_of_zip(store_.object_path(outcome.digest));
      job_h1_[i] = h1;
      if (job.expected_size && *job.expected_size != outcome.size) {
        failures.push_back(mismatch_message("package size check failed for " + job.filename,
                                            std::to_string(*job.expected_size) + " bytes (registry package_size)",
                                            std::to_string(outcome.size) + " bytes"));
      }
      if (!job.expected_h1.empty() &&
          std::find(job.expected_h1.begin(), job.expected_h1.end(), h1) == job.expected_h1.end()) {
        failures.push_back(mismatch_message("h1 check failed for " + job.filename, job.expected_h1.front(), h1));
      }
      summary_.package_bytes += outcome.size;
    }
    if (!failures.empty()) {
      std::string message = "deps tf failed; the store's index and views are unchanged:";
      for (const auto& failure : failures) message += "\n" + failure;
      throw Error(message);
    }
    summary_.packages_fetched = jobs.size();
  }

  // ---- commit -----------------------------------------------------------------------------

  void commit(const std::vector<cache::TfSelection::Provider>& selection, const std::vector<std::string>& platforms,
              const std::string& module_address, const std::string& module_version, const std::vector<PackageJob>& jobs) {
    // Objects first (content, harmless without rows), rows last in one transaction.
    struct DocumentRows {
      cache::Artifact shasums, signature, keys;
    };
    std::map<std::string, DocumentRows> document_rows;  // by provider+version+urls
    for (const auto& job : jobs) {
      if (job.shasums_url.empty()) continue;
      auto key = job.address.str() + " " + job.version.str() + " " + job.shasums_url + " " + job.signature_url;
      if (document_rows.count(key)) continue;
      const auto& documents = documents_by_url(job);
      auto make = [&](cache::ArtifactKind kind, const std::string& bytes, std::string filename, std::string url) {
        cache::Artifact row;
        row.kind = kind;
        row.address = job.address.str();
        row.version = job.version.str();
        row.filename = std::move(filename);
        row.digest = store_.add_bytes(bytes);
        row.size = static_cast<std::int64_t>(bytes.size());
        row.upstream_url = std::move(url);
        row.trust = job.trust;
        return row;
      };
      document_rows.emplace(
          key, DocumentRows{
                   make(cache::ArtifactKind::provider_shasums, documents.shasums, basename_of_url(job.shasums_url),
                        job.shasums_url),
                   make(cache::ArtifactKind::provider_signature, documents.signature,
                        basename_of_url(job.signature_url), job.signature_url),
                   make(cache::ArtifactKind::provider_keys, job.keys_json,
                        "terraform-provider-" + job.address.type + "_" + job.version.str() + "_signing_keys.json", ""),
               });
    }
    std::vector<cache::ModuleTree> trees;
    for (auto& [key, plan] : modules_) {
      if (plan.present) {
        ++summary_.modules_present;
        continue;
      }
      trees.push_back(ingest_module_tree(store_, plan.root, plan.address, plan.version, plan.upstream_url));
      ++summary_.modules_fetched;
    }

    cache::TfSelection next;
    next.providers = selection;
    std::sort(next.providers.begin(), next.providers.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    next.platforms = platforms;
    next.module_address = module_address;
    next.module_version = module_version;
    next.engine = options_.engine == lockfile::Engine::tofu ? "tofu" : "terraform";

    store_.in_transaction([&] {
      for (const auto& [key, rows] : document_rows) {
        (void)store_.add_artifact(rows.shasums);
        (void)store_.add_artifact(rows.signature);
        (void)store_.add_artifact(rows.keys);
      }
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        const auto& job = jobs[i];
        cache::Artifact row;
        row.kind = cache::ArtifactKind::provider_package;
        row.address = job.address.str();
        row.version = job.version.str();
        row.platform = job.platform.str();
        row.filename = job.filename;
        row.digest = job_digest_.at(i);
        row.size = static_cast<std::int64_t>(job_size_.at(i));
        row.h1 = job_h1_.at(i);
        row.zh = "zh:" + row.digest;
        row.upstream_url = job.url;
        row.trust = job.trust;
        auto id = store_.add_artifact(row);
        cache::Provenance provenance;
        provenance.artifact_id = id;
        if (!job.shasums_url.empty()) {
          const auto& rows =
              document_rows.at(job.address.str() + " " + job.version.str() + " " + job.shasums_url + " " + job.signature_url);
          provenance.shasums_digest = rows.shasums.digest;
          provenance.signature_digest = rows.signature.digest;
          provenance.keys_digest = rows.keys.digest;
        }
        provenance.key_fingerprint = job.fingerprint;
        provenance.result = job.result;
        store_.add_provenance(provenance);
      }
      for (const auto& tree : trees) (void)store_.add_module_tree(tree);
      store_.set_tf_selection(next);
      store_.audit("fetch", "deps tf",
                   json{{"packages_fetched", summary_.packages_fetched},
                        {"packages_present", summary_.packages_present},
                        {"package_bytes", summary_.package_bytes},
                        {"modules_fetched", summary_.modules_fetched},
                        {"platforms", platforms},
                        {"engine", next.engine}});
    });
  }

  const SignedDocuments& documents_by_url(const PackageJob& job) {
    for (const auto& [key, documents] : documents_) {
      if (key.starts_with(job.shasums_url + "\n" + job.signature_url + "\n")) return documents;
    }
    throw Error("internal: no SHA256SUMS kept for " + job.filename);
  }

  void report(const std::vector<cache::TfSelection::Provider>& selection, const std::vector<std::string>& platforms) {
    std::string platform_list;
    for (const auto& platform : platforms) platform_list += (platform_list.empty() ? "" : ", ") + platform;
    for (const auto& provider : selection) out_ << "provider " << provider.address << " " << provider.version << "\n";
    for (const auto& [key, plan] : modules_) {
      out_ << "module " << plan.address << " " << plan.version << (plan.present ? " (already in the store)" : " (fetched)")
           << "\n";
    }
    if (summary_.packages_fetched == 0) {
      out_ << "Nothing new: all " << summary_.packages_present << " provider packages for " << platform_list
           << " were already in the store; no package bytes transferred.\n";
    } else {
      out_ << "Fetched " << summary_.packages_fetched << " provider packages (" << summary_.package_bytes
           << " bytes); " << summary_.packages_present << " were already in the store. Platforms: " << platform_list
           << ".\n";
    }
    out_ << "Cached cluster OpenTofu/Terraform dependencies\n";
  }

  cache::Store& store_;
  const DepsTfOptions& options_;
  std::ostream& out_;
  std::ostream& log_;
  bool quiet_;
  ScratchDir scratch_{"podplane-tf-"};
  lockfile::CliConfig config_;
  HttpClient http_;
  RegistryClient registry_;
  Downloader downloader_;
  ModuleFetcher fetcher_;
  std::string host_;

  std::map<std::string, ProviderWant> wants_;
  std::map<std::string, ModulePlan> modules_;
  std::string last_module_key_;
  int materialized_ = 0;
  std::map<std::string, SignedDocuments> documents_;
  std::map<std::string, std::string> fetched_documents_;  // SHA256SUMS and signatures by URL
  std::map<std::string, std::map<std::string, MirrorArchive>> mirror_documents_;
  std::map<std::size_t, std::string> job_digest_;
  std::map<std::size_t, std::uint64_t> job_size_;
  std::map<std::size_t, std::string> job_h1_;
  DepsTfSummary summary_;
};

}  // namespace

std::string host_platform() {
  utsname name{};
  std::string os = "linux";
  std::string arch = "amd64";
  if (uname(&name) == 0) {
    std::string sys = name.sysname;
    std::transform(sys.begin(), sys.end(), sys.begin(), [](unsigned char c) { return std::tolower(c); });
    if (sys == "darwin") os = "darwin";
    std::string machine = name.machine;
    if (machine == "aarch64" || machine == "arm64") arch = "arm64";
  }
  return os + "_" + arch;
}

DepsTfSummary deps_tf(cache::Store& store, const DepsTfOptions& options, std::ostream& out, std::ostream& log) {
  TfRun run(store, options, out, log);
  return run.run();
}

}  // namespace podplane::mirror
