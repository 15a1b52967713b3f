#include "fetch/deps_tf.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/parallel.hpp"
#include "base/url.hpp"
#include "cache/views.hpp"
#include "lockfile/cli_config.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/provider_names.hpp"
#include "fetch/deps_download.hpp"
#include "fetch/module_archive.hpp"
#include "fetch/module_source.hpp"
#include "fetch/registry.hpp"
#include "base/scratch_dir.hpp"
#include "fetch/root_lock.hpp"
#include "fetch/root_needs.hpp"
#include "fetch/tf_metadata.hpp"
#include "fetch/tf_modules.hpp"
#include "fetch/tf_package_job.hpp"
#include "fetch/tf_requirements.hpp"
#include "fetch/tf_resolution.hpp"
#include "lockfile/tf_config.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using lockfile::Platform;
using lockfile::Version;

// The platforms asked for plus every platform already in the store; this machine's when none.
std::vector<std::string> platforms_of(const std::vector<std::string>& asked, const std::optional<cache::TfSelection>& previous) {
  std::set<std::string> set;
  for (const auto& text : split_list(asked)) set.insert(Platform::parse(text).str());
  if (previous) set.insert(previous->platforms.begin(), previous->platforms.end());
  if (set.empty()) set.insert(lockfile::host_platform().str());
  return {set.begin(), set.end()};
}

// One run: requirements → resolution → check → fetch → commit → report. Each stage's results
// are the next stage's arguments; the package jobs carry their own.
class TfRun {
 public:
  TfRun(cache::Store& store, const DepsTfOptions& options, std::ostream& out, std::ostream& log)
      : store_(store),
        options_(options),
        out_(out),
        log_(log),
        quiet_(options.download.progress == net::Progress::quiet),
        config_(lockfile::load_cli_config_from_environment()),
        http_(options.download.http),
        registry_(http_, config_),
        downloader_(options.download),
        fetcher_(http_, downloader_, scratch_.path() / "fetch"),
        host_(lockfile::default_registry_host(options.engine)),
        modules_(store, registry_, fetcher_, scratch_.path(), host_, [this](const std::string& line) { note(line); }),
        metadata_(options.download, config_, registry_) {
    fs::create_directories(scratch_.path() / "fetch");
  }

  DepsTfSummary run() {
    const auto previous = store_.tf_selection();
    const auto platforms = platforms_of(options_.platforms, previous);
    const auto roots = requirements();
    const auto selections = resolve(roots);
    std::vector<cache::TfSelection::Provider> wanted;  // every root's selection: the packages to hold
    for (const auto& selection : selections) wanted.insert(wanted.end(), selection.begin(), selection.end());
    for (const auto& provider : wanted) held_.insert({provider.address, provider.version});
    auto plan = plan_package_jobs(wanted, platforms, host_, [&](const PackageJob& job) { return in_store(job); });
    check(plan.jobs);
    DepsTfSummary summary;
    fetch(plan.jobs, summary);

    summary.packages_present = plan.present;
    summary.packages_fetched = plan.jobs.size() - summary.packages_reused;
    commit(next_selection(roots, selections, platforms, previous), plan.jobs, summary);
    (void)cache::rebuild_views(store_);
    write_root_locks(roots, selections, platforms);
    report(roots, selections, platforms, summary);
    return summary;
  }

 private:
  void note(const std::string& line) {
    if (!quiet_) log_ << line << "\n";
  }

  // ---- requirements ---------------------------------------------------------------------
  // Podplane's stack, or each --stack root on its own: its constraints and its own lock's pins
  // (none with --upgrade).
  std::vector<RootRequirements> requirements() {
    if (options_.stacks.empty()) {
      return {read_podplane_stack(cache::podplane_stack(options_.default_stack), host_, modules_)};
    }
    std::vector<RootRequirements> roots;
    for (const auto& stack : options_.stacks) {
      roots.push_back(read_root(stack, host_, modules_, module_boundary(stack, options_.repo_root)));
      if (options_.locked_versions == LockedVersions::upgrade) {
        for (auto& [address, want] : roots.back().providers) want.pinned.reset();
      }
    }
    return roots;
  }

  // ---- resolution -------------------------------------------------------------------------
  // One selection per root, each on its own constraints and pins: roots may disagree.
  std::vector<std::vector<cache::TfSelection::Provider>> resolve(const std::vector<RootRequirements>& roots) {
    const auto addresses = offered_addresses(roots);
    auto listed = metadata_.versions(addresses);
    std::map<std::string, std::vector<Version>> offered;
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      offered[addresses[i].str()] = installable_versions(listed[i]);
      if (metadata_.network_mirror_for(addresses[i])) continue;  // a mirror lists no protocols
      for (const auto& entry : listed[i]) registry_protocols_[{addresses[i].str(), entry.version.str()}] = entry.protocols;
    }
    auto selections = resolve_roots(roots, offered);
    for (std::size_t i = 0; i < roots.size(); ++i) {
      for (const auto& provider : selections[i]) {
        note("provider " + provider.address + ": " + provider.version +
             (options_.stacks.empty() ? "" : " (" + roots[i].name + ")"));
      }
    }
    return selections;
  }

  // The store's selection after this run. Podplane's stack replaces it; --stack roots leave
  // Podplane's providers, module package and engine as they were (tf/.terraform.lock.hcl is
  // that stack's lock, and each root's lock is its own) and add only their platforms.
  cache::TfSelection next_selection(const std::vector<RootRequirements>& roots,
                                    const std::vector<std::vector<cache::TfSelection::Provider>>& selections,
                                    const std::vector<std::string>& platforms,
                                    const std::optional<cache::TfSelection>& previous) const {
    cache::TfSelection next;
    next.platforms = platforms;
    next.engine = std::string(lockfile::engine_name(options_.engine));
    if (options_.stacks.empty()) {
      next.providers = selections.front();
      if (roots.front().stack_module) {
        next.module_address = roots.front().stack_module->address;
        next.module_version = roots.front().stack_module->version;
      }
      return next;
    }
    if (previous) {
      next.providers = previous->providers;
      next.module_address = previous->module_address;
      next.module_version = previous->module_version;
      next.engine = previous->engine;
    }
    return next;
  }

  // ---- root locks (--write-lock) -----------------------------------------------------------
  // For the platforms asked for (the run's when none were), after the commit: the packages
  // they hash are in the store by then.
  void write_root_locks(const std::vector<RootRequirements>& roots,
                        const std::vector<std::vector<cache::TfSelection::Provider>>& selections,
                        const std::vector<std::string>& run_platforms) {
    if (options_.stacks.empty() || options_.root_locks != RootLocks::write) return;
    std::vector<std::string> platforms;
    for (const auto& text : split_list(options_.platforms)) platforms.push_back(Platform::parse(text).str());
    if (platforms.empty()) platforms = run_platforms;
    for (std::size_t i = 0; i < roots.size(); ++i) {
      const fs::path dir = options_.stacks[i];
      const fs::path file = lockfile::root_lock_file(dir, module_boundary(dir, options_.repo_root));
      std::optional<lockfile::LockFile> committed;
      if (fs::exists(file)) committed = lockfile::read_lock_file(file);
      auto lock = root_lock(store_, selections[i], platforms, committed);
      bool changed = write_root_lock(file, lock, options_.engine);
      out_ << "lock " << file.string() << (changed ? " written" : " unchanged") << "\n";
    }
  }

  bool in_store(const PackageJob& job) const {
    auto stored = store_.find_artifact(cache::ArtifactKind::provider_package, job.address.str(), job.version.str(),
                                       job.platform.str(), job.filename);
    return stored && store_.has_object(stored->digest);
  }

  // ---- check: upstream answers and signed documents, before a single package byte --------
  void check(std::vector<PackageJob>& jobs) {
    auto answers = metadata_.download_answers(jobs);
    std::vector<std::string> urls;
    for (const auto& answer : answers) {
      if (!answer) continue;
      for (const auto* url : {&answer->shasums_url, &answer->shasums_signature_url}) {
        if (std::find(urls.begin(), urls.end(), *url) == urls.end()) urls.push_back(*url);
      }
    }
    auto documents = metadata_.documents(urls);
    std::map<std::string, std::shared_ptr<const SignedSums>> checked_sums;  // one per release document set
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto& job = jobs[i];
      if (!answers[i]) {
        auto archive = metadata_.mirror_archive(job);
        auto expected = expect_from_mirror(archive, job.filename, options_.verification);
        job.checked(job.filename, archive.url, std::move(expected), nullptr);
        continue;
      }
      const ProviderDownload& answer = *answers[i];
      auto key = answer.shasums_url + "\n" + answer.shasums_signature_url + "\n" + answer.signing_keys_json;
      auto sums = checked_sums[key];
      if (!sums) {
        sums = checked_sums[key] = std::make_shared<const SignedSums>(
            check_signed_sums(answer, documents.at(answer.shasums_url), documents.at(answer.shasums_signature_url),
                              job.address.str() + " " + job.version.str(), options_.verification));
      }
      job.checked(answer.filename, answer.download_url, expect_from_registry(answer, *sums, job.platform), sums,
                  answer.protocols);
    }
  }

  // ---- fetch: each zip into the store, then its h1 and the checks on what landed -----------
  void fetch(std::vector<PackageJob>& jobs, DepsTfSummary& summary) {
    // A zip whose sha256 (vouched for by the signed SHA256SUMS, or the mirror's hashes) the
    // store already holds is never downloaded again: switching engines, the other origin's
    // package of a byte-identical release costs metadata only.
    std::vector<PackageJob*> to_download;
    for (auto& job : jobs) {
      if (job.expected.sha256.empty() || !store_.has_object(job.expected.sha256)) {
        to_download.push_back(&job);
        continue;
      }
      std::error_code error;
      auto size = fs::file_size(store_.object_path(job.expected.sha256), error);
      if (error) {
        to_download.push_back(&job);
        continue;
      }
      job.fetched(job.expected.sha256, size);
      job.hashed(lockfile::h1_hash_of_zip(store_.object_path(job.digest)));
      auto found = package_failures(job.filename, job.expected, job.digest, job.size, job.h1);
      if (!found.empty()) {
        std::string message = "deps tf failed; the store's index and views are unchanged:";
        for (const auto& failure : found) message += "\n" + failure;
        throw Error(message);
      }
      ++summary.packages_reused;
    }
    if (to_download.empty()) return;
    note("fetching " + std::to_string(to_download.size()) + " provider packages");
    std::vector<net::DownloadItem> items;
    for (const auto* job_pointer : to_download) {
      const auto& job = *job_pointer;
      net::DownloadItem item;
      item.url = job.url;
      if (!job.expected.sha256.empty()) item.expected_sha256 = job.expected.sha256;
      item.label = job.filename;
      item.expected_size = job.expected.size;  // the registry's package_size, when it states one
      item.publish = net::DownloadItem::Publish::by_caller;
      items.push_back(std::move(item));  // no token: packages are fetched without credentials
    }
    // Each zip's h1 (inflating and hashing its whole contents: as much CPU as its download)
    // is computed on a worker the moment the zip lands, while the others still stream in,
    // rather than one after another once all have landed. The same worker then syncs the zip
    // (tens of MiB each, which the transfers' thread would otherwise wait for), and the zips
    // are published together once all have landed and passed.
    std::vector<net::DownloadOutcome> outcomes(items.size());
    std::vector<std::string> h1s(items.size());
    std::vector<std::exception_ptr> worker_errors(items.size());
    {
      TaskPool workers(std::max(1U, std::thread::hardware_concurrency()));
      downloader_.run(store_, [&](net::DownloadRun& run) {
        for (std::size_t i = 0; i < items.size(); ++i) {
          run.add(std::move(items[i]), [&, i](const net::DownloadOutcome& outcome) {
            outcomes[i] = outcome;
            if (!outcome.ok) return;
            workers.submit([&, i, zip = outcome.unpublished] {
              try {
                h1s[i] = lockfile::h1_hash_of_zip(zip->temp_path());
                zip->seal(std::nullopt);  // checked as it streamed
              } catch (...) {
                worker_errors[i] = std::current_exception();
              }
            });
          });
        }
      });
    }  // every worker is done
    std::vector<std::string> failures;
    std::vector<cache::ObjectWriter*> zips;
    for (std::size_t i = 0; i < to_download.size(); ++i) {
      auto& job = *to_download[i];
      const auto& outcome = outcomes[i];
      if (!outcome.ok) {
        failures.push_back("zip sha256 check or transfer failed for " + job.filename + ": " + outcome.error);
        continue;
      }
      job.fetched(outcome.digest, outcome.size);
      summary.package_bytes += outcome.size;
      if (worker_errors[i]) std::rethrow_exception(worker_errors[i]);
      job.hashed(std::move(h1s[i]));
      auto found = package_failures(job.filename, job.expected, job.digest, job.size, job.h1);
      failures.insert(failures.end(), found.begin(), found.end());
      zips.push_back(outcome.unpublished.get());
    }
    if (!failures.empty()) {
      // Nothing of this run was published: the zips' temp files go with their writers.
      std::string message = "deps tf failed; the store's index and views are unchanged:";
      for (const auto& failure : failures) message += "\n" + failure;
      throw Error(message);
    }
    (void)store_.publish_sealed(zips);
  }

  // ---- commit -----------------------------------------------------------------------------
  // Objects first (content, harmless without rows), then every row in one transaction.
  // Kept whole: the objects-then-rows order that keeps a crash from leaving a row without its object.
  void commit(const cache::TfSelection& selection, const std::vector<PackageJob>& jobs, DepsTfSummary& summary) {
    struct DocumentRows {
      cache::Artifact shasums, signature, keys;
    };
    auto documents_key = [](const PackageJob& job) {
      return job.address.str() + " " + job.version.str() + " " + job.sums->shasums_url + " " + job.sums->signature_url;
    };
    std::map<std::string, DocumentRows> document_rows;
    std::map<std::string, std::array<std::string_view, 3>> document_bytes;  // same keys and order
    for (const auto& job : jobs) {
      if (!job.sums || document_rows.count(documents_key(job))) continue;
      const SignedSums& sums = *job.sums;
      auto make = [&](cache::ArtifactKind kind, const std::string& bytes, std::string filename, std::string url) {
        cache::Artifact row;
        row.kind = kind;
        row.address = job.address.str();
        row.version = job.version.str();
        row.filename = std::move(filename);
        row.size = static_cast<std::int64_t>(bytes.size());  // the digest once all are added
        row.upstream_url = std::move(url);
        row.trust = job.expected.trust;
        return row;
      };
      document_rows.emplace(
          documents_key(job),
          DocumentRows{
              make(cache::ArtifactKind::provider_shasums, sums.shasums, url_basename(sums.shasums_url), sums.shasums_url),
              make(cache::ArtifactKind::provider_signature, sums.signature, url_basename(sums.signature_url),
                   sums.signature_url),
              make(cache::ArtifactKind::provider_keys, sums.keys_json,
                   lockfile::provider_signing_keys_filename(job.address.type, job.version.str()), ""),
          });
      document_bytes[documents_key(job)] = {sums.shasums, sums.signature, sums.keys_json};
    }
    {
      // All documents at once: their syncs overlap instead of queueing one after another.
      std::vector<std::string_view> contents;
      for (const auto& [key, bytes] : document_bytes) contents.insert(contents.end(), bytes.begin(), bytes.end());
      auto digests = store_.add_all_bytes(contents);
      std::size_t next = 0;
      for (auto& [key, rows] : document_rows) {
        for (auto* row : {&rows.shasums, &rows.signature, &rows.keys}) row->digest = digests.at(next++);
      }
    }
    std::vector<cache::ModuleTree> trees;
    std::vector<cache::Artifact> git_rows;
    for (const auto& [key, module] : modules_.packages()) {
      if (module.in_store) {
        ++summary.modules_present;
        continue;
      }
      trees.push_back(
          ingest_module_tree(store_, module.root, module.package.address, module.package.version, module.upstream_url));
      if (module.git) {
        auto rows = git_snapshot_rows(store_, module.package.address, module.package.version, module.upstream_url, *module.git);
        git_rows.insert(git_rows.end(), rows.begin(), rows.end());
      }
      ++summary.modules_fetched;
    }

    cache::TfSelection sorted = selection;
    std::sort(sorted.providers.begin(), sorted.providers.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });

    store_.in_transaction([&] {
      for (const auto& [key, rows] : document_rows) {
        (void)store_.add_artifact(rows.shasums);
        (void)store_.add_artifact(rows.signature);
        (void)store_.add_artifact(rows.keys);
      }
      for (const auto& job : jobs) {
        cache::Artifact row;
        row.kind = cache::ArtifactKind::provider_package;
        row.address = job.address.str();
        row.version = job.version.str();
        row.platform = job.platform.str();
        row.filename = job.filename;
        row.digest = job.digest;
        row.size = static_cast<std::int64_t>(job.size);
        row.h1 = job.h1;
        row.upstream_url = job.url;
        row.trust = job.expected.trust;
        row.protocols = job.protocols;
        auto id = store_.add_artifact(row);
        cache::Provenance provenance;
        provenance.artifact_id = id;
        if (job.sums) {
          const auto& rows = document_rows.at(documents_key(job));
          provenance.shasums_digest = rows.shasums.digest;
          provenance.signature_digest = rows.signature.digest;
          provenance.keys_digest = rows.keys.digest;
          provenance.key_fingerprint = job.sums->fingerprint;
        }
        provenance.result = job.expected.result;
        store_.add_provenance(provenance);
      }
      learn_protocols();
      for (const auto& tree : trees) (void)store_.add_module_tree(tree);
      for (const auto& row : git_rows) (void)store_.add_artifact(row);
      store_.set_tf_selection(sorted);
      store_.audit("fetch", "deps tf",
                   json{{"packages_fetched", summary.packages_fetched},
                        {"packages_present", summary.packages_present},
                        {"package_bytes", summary.package_bytes},
                        {"packages_reused", summary.packages_reused},
                        {"modules_fetched", summary.modules_fetched},
                        {"platforms", sorted.platforms},
                        {"engine", sorted.engine}});
    });
  }

  // Packages already in the store from before protocols were recorded (or from a bundle that
  // did not carry them) learn them from the registry's versions document read this run: the
  // same list upstream repeats in each download answer. Packages that know theirs keep them.
  void learn_protocols() {
    for (const auto& [address, version] : held_) {
      auto listed = registry_protocols_.find({address, version});
      if (listed == registry_protocols_.end()) continue;
      for (auto row : store_.artifacts({.kind = cache::ArtifactKind::provider_package, .address = address, .version = version})) {
        if (row.protocols) continue;
        row.protocols = listed->second;
        (void)store_.add_artifact(row);
      }
    }
  }

  // ---- report -----------------------------------------------------------------------------
  void report(const std::vector<RootRequirements>& roots,
              const std::vector<std::vector<cache::TfSelection::Provider>>& selections,
              const std::vector<std::string>& platforms, const DepsTfSummary& summary) {
    std::string platform_list;
    for (const auto& platform : platforms) platform_list += (platform_list.empty() ? "" : ", ") + platform;
    for (std::size_t i = 0; i < roots.size(); ++i) {
      for (const auto& provider : selections[i]) {
        out_ << "provider " << provider.address << " " << provider.version;
        if (!options_.stacks.empty()) out_ << " (" << roots[i].name << ")";
        out_ << "\n";
      }
    }
    for (const auto& [key, module] : modules_.packages()) {
      out_ << "module " << module.package.address << " " << module.package.version
           << (module.in_store ? " (already in the store)" : " (fetched)") << "\n";
    }
    out_ << "Engine: " << lockfile::engine_name(options_.engine) << " (" << options_.engine_reason << "); lock entries for "
         << host_ << "\n";
    if (summary.packages_reused > 0) {
      out_ << summary.packages_reused << " provider packages were already in the store under another origin "
           << "(same sha256 as the signed SHA256SUMS): not downloaded again.\n";
    }
    if (summary.packages_fetched == 0 && summary.packages_reused == 0) {
      out_ << "Nothing new: all " << summary.packages_present << " provider packages for " << platform_list
           << " were already in the store; no package bytes transferred.\n";
    } else {
      out_ << "Fetched " << summary.packages_fetched << " provider packages (" << summary.package_bytes
           << " bytes); " << summary.packages_present << " were already in the store. Platforms: " << platform_list
           << ".\n";
    }
    if (options_.stacks.empty()) {
      out_ << "Cached cluster OpenTofu/Terraform dependencies\n";  // the Podplane CLI's own last line
      return;
    }
    // A --stack run fetched for the user's roots, not for a cluster: name them.
    std::string root_list;
    for (const auto& root : roots) root_list += (root_list.empty() ? "" : ", ") + root.name;
    out_ << "Cached the OpenTofu/Terraform dependencies of " << root_list << "\n";
  }

  cache::Store& store_;
  const DepsTfOptions& options_;
  std::ostream& out_;
  std::ostream& log_;
  bool quiet_;
  ScratchDir scratch_{"podplane-tf-"};
  lockfile::CliConfig config_;
  net::HttpClient http_;
  RegistryClient registry_;
  net::Downloader downloader_;
  ModuleFetcher fetcher_;
  std::string host_;
  ModuleResolver modules_;
  ProviderMetadata metadata_;
  // (address, version) → the plugin protocols the registry's versions document listed.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> registry_protocols_;
  std::set<std::pair<std::string, std::string>> held_;  // (address, version) of every root's selection
};

}  // namespace

DepsTfSummary deps_tf(cache::Store& store, const DepsTfOptions& options, std::ostream& out, std::ostream& log) {
  TfRun run(store, options, out, log);
  return run.run();
}

}  // namespace podplane::fetch
