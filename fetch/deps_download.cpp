#include "fetch/deps_download.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/parallel.hpp"
#include "cache/views.hpp"
#include "base/scratch_dir.hpp"
#include "fetch/boot_files.hpp"
#include "net/http.hpp"
#include "fetch/images.hpp"
#include "fetch/seeds.hpp"
#include "fetch/vmconfig.hpp"

namespace podplane::fetch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string platform_of(const std::string& arch) { return "linux_" + arch; }

std::string join_list(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& value : values) out += (out.empty() ? "" : ",") + value;
  return out;
}

void check_choice(const std::string& value, std::initializer_list<const char*> allowed, const char* what) {
  for (const char* option : allowed) {
    if (value == option) return;
  }
  throw UsageError("unsupported " + std::string(what) + " \"" + value + "\"");
}

struct FetchedManifest {
  std::string url;
  std::string bytes;
  VmconfigManifest manifest;
};

FetchedManifest fetch_manifest(net::HttpClient& http, const std::string& base, const std::string& kind, const std::string& arch) {
  auto name = vmconfig_manifest_name(kind, arch);
  FetchedManifest fetched;
  fetched.url = base + "/manifests/" + name + ".json";
  auto response = http.get(fetched.url, {"Accept: application/json"});
  if (response.status == 404) throw Error("file not found: " + net::redact_url(fetched.url));
  if (response.status != 200) throw Error("cannot fetch " + net::redact_url(fetched.url) + ": " + response.status_text());
  fetched.bytes = std::move(response.body);
  fetched.manifest = parse_vmconfig_manifest(fetched.bytes, name);
  return fetched;
}

struct ManifestKey {
  std::string kind;
  std::string arch;
};

// Every manifest of `keys` at once, a thread and an HTTP client each (a handful of small
// documents); the error of the first failing key, in order, is thrown.
std::vector<FetchedManifest> fetch_manifests(const net::HttpOptions& http_options, const std::string& base,
                                             const std::vector<ManifestKey>& keys) {
  std::vector<FetchedManifest> fetched(keys.size());
  rethrow_first(on_threads(
      keys.size(),
      [&](std::size_t i) {
        net::HttpClient http(http_options);
        fetched[i] = fetch_manifest(http, base, keys[i].kind, keys[i].arch);
      },
      keys.size()));
  return fetched;
}

// The stored manifest row of `name` that is current (the newest).
std::optional<cache::Artifact> current_manifest(const cache::Store& store, const std::string& name) {
  cache::ArtifactQuery query;
  query.kind = cache::ArtifactKind::vmconfig_manifest;
  query.address = name;
  auto rows = store.artifacts(query);
  if (rows.empty()) return std::nullopt;
  return *std::max_element(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.added_at, a.id) < std::tie(b.added_at, b.id);
  });
}

bool is_cached(const cache::Store& store, const VmconfigItem& item, const std::string& arch) {
  auto row = store.find_artifact(cache::ArtifactKind::vmconfig_artifact, item.name, item.version, platform_of(arch),
                                 item.basename());
  return row && row->upstream_digest == item.digest && store.has_object(row->digest);
}

bool is_boot_file_cached(const cache::Store& store, const VmconfigItem& image, const VmconfigBootFile& file,
                         const std::string& arch) {
  auto row = store.find_artifact(cache::ArtifactKind::vmconfig_boot_file, image.name, image.version, platform_of(arch),
                                 file.file_name());
  return row && row->upstream_digest == file.digest && store.has_object(row->digest);
}

std::string image_label(const VmconfigItem& image) { return image.name + " " + image.version + " (" + image.basename() + ")"; }

// What one run transferred, each kind counted once: an artifact that several manifests list
// is downloaded once, and boot files and seed snapshots are not vmconfig artifacts, so the
// per-manifest lines above do not add up to the total without this breakdown.
struct TransferTally {
  std::size_t artifacts = 0, boot_files = 0, seeds = 0, images = 0;
  std::uint64_t bytes = 0;
};

std::string transfer_summary(const TransferTally& tally) {
  std::vector<std::string> parts;
  auto count = [&](std::size_t n, const char* one, const char* many) {
    if (n > 0) parts.push_back(std::to_string(n) + " " + (n == 1 ? one : many));
  };
  count(tally.artifacts, "vmconfig artifact", "vmconfig artifacts");
  count(tally.boot_files, "boot file read out of an os image", "boot files read out of os images");
  count(tally.seeds, "seed snapshot", "seed snapshots");
  count(tally.images, "container image", "container images");
  if (parts.empty()) return "No new artifacts: nothing was transferred.\n";
  std::string line = "Fetched ";
  for (std::size_t i = 0; i < parts.size(); ++i) line += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return line + " (" + std::to_string(tally.bytes) + " bytes).\n";
}

// knc and knd manifests share most artifacts: each (url, digest) is fetched once per run, by
// the first manifest that lists it; the others take its result.
struct Fetch {
  VmconfigItem item;
  std::string arch;
  std::optional<std::pair<std::string, std::uint64_t>> object;  // digest, size, once fetched
  std::string error;
  // An os image whose os.boot files are still to be read: they are read out of the scratch
  // file and checked before the image is added, so nothing of it is stored when one differs.
  std::vector<VmconfigBootFile> boot_files;
};

struct Claim {
  std::size_t item;   // index in the manifest's items
  std::size_t fetch;  // index in fetches
};

struct ManifestPlan {
  std::string arch;
  std::vector<VmconfigItem> items;
  std::vector<Claim> shared, direct, scratch;  // fetched for an earlier manifest; by this one into the store; via a file
  std::optional<cache::Artifact> manifest_row;
  std::optional<VmconfigItem> image;        // the os image, when boot files of it are missing
  std::vector<VmconfigBootFile> boot_files;  // os.boot files not stored yet
};

// What one manifest lists that the store lacks.
struct ManifestNeeds {
  std::vector<VmconfigItem> items;    // selected for the providers
  std::vector<VmconfigItem> missing;  // of `items`, not stored
  std::optional<VmconfigItem> image;  // the os image, when it lists one
  std::vector<VmconfigBootFile> missing_boot;
  std::vector<ImageRequest> missing_images;  // not stored and not listed by an earlier manifest
};

struct ManifestCount {
  std::string manifest;  // knc_debian-13_amd64
  std::size_t fetched = 0, present = 0;
  std::size_t shared = 0;  // of `fetched`, listed by an earlier manifest too and fetched once for both
};

// Boot files read out of an image (on any thread, into `work`), then stored by the run.
struct BootRead {
  fs::path work;
  std::vector<ExtractedBootFile> extracted;
};

BootRead read_boot_into(const VmconfigItem& image, const fs::path& image_file, const std::vector<VmconfigBootFile>& wanted,
                        const fs::path& work) {
  fs::create_directories(work);
  return BootRead{work, read_boot_files(image_file, image_label(image), wanted, work)};
}

// Boot files read out of an os image this run are known by "<image url> <image digest> <path>
// <digest>": knc and knd manifests of one arch name the same ones.
std::string boot_key(const VmconfigItem& image, const VmconfigBootFile& file) {
  return image.url + " " + image.digest + " " + file.path + " " + file.digest;
}

// A scratch file checked: its object sealed in the store's temp area (published on the run's
// thread, after the run), and its boot files read.
struct CheckedScratch {
  cache::ObjectWriter object;
  std::optional<BootRead> boot;
};

// A file fetched into scratch (a sha512 item, or an os image with boot files to read). Its
// digest is hashed as it streams (a sha512 on a thread of its own). As soon as it lands, on a
// thread of its own, the digest is checked, the boot files are read, and the file itself
// becomes the object (Store::adopt_file: moved, not copied, named by the sha256 hashed as it
// streamed), sealed (synced). An os image of hundreds of MiB thus costs one sync that overlaps
// the rest of the run, rather than a copy with three more hashes after it.
struct ScratchFetch {
  std::size_t fetch;  // index in fetches
  fs::path file;
  std::optional<net::DownloadOutcome> outcome;
  std::future<CheckedScratch> checked;
};

// Throws the mismatch unless the fetched bytes have the digest `expected`: their sha256, or
// their digest in another algorithm (DownloadItem::other_algorithm), both hashed as they streamed.
void check_fetched_digest(const net::DownloadOutcome& outcome, const TypedDigest& expected, const std::string& what) {
  TypedDigest got{expected.algorithm,
                  expected.algorithm == DigestAlgorithm::sha256 ? outcome.digest : outcome.other_digest};
  if (got.hex != expected.hex) throw Error(mismatch_message("checksum mismatch for " + what, expected.str(), got.str()));
}

// One run: manifests → what each needs (listed in a dry run) → one download run for all of
// them, the seeds and the images → rows in manifest order → one transaction → report.
// Everything is fetched and checked first; rows are indexed together at the end.
class VmconfigRun {
 public:
  VmconfigRun(cache::Store& store, const DepsDownloadOptions& options, std::vector<std::string> archs, std::string base,
              cache::CosignPolicy cosign_policy, std::ostream& out, std::ostream& log)
      : store_(store),
        options_(options),
        out_(out),
        log_(log),
        archs_(std::move(archs)),
        base_(std::move(base)),
        dry_run_(options.mode == DepsDownloadOptions::Mode::dry_run),
        quiet_(options.download.progress == net::Progress::quiet),
        cosign_policy_(std::move(cosign_policy)),
        downloader_(options.download) {}

  void run() {
    // Every manifest first, all at once, then every missing artifact of all of them in one
    // parallel run: one manifest after another, each with its own small batch, cost a round
    // trip per manifest and per sha512 file on a slow link.
    for (const auto& arch : archs_) {
      for (const auto& kind : options_.kinds) keys_.push_back({kind, arch});
    }
    start_seeds_document();
    auto manifests = fetch_manifests(options_.download.http, base_, keys_);
    for (std::size_t m = 0; m < keys_.size(); ++m) {
      auto needs = needs_of(keys_[m].arch, manifests[m].manifest);
      if (dry_run_) list(manifests[m], needs);
      else plan(keys_[m], manifests[m], std::move(needs));
    }
    // Seeds are cross-arch: fetched once (Podplane: with the first arch).
    if (seeds_document_.valid()) seeds_.emplace(store_, seeds_document_.get());
    if (!dry_run_ && !image_requests_.empty())
      images_.emplace(store_, image_requests_, options_.download, net::RegistryCredentials::load(options_.registry_auth));
    if (images_) images_->require_signatures(cosign_policy_);
    if (!dry_run_) fetch();
    // Rows and failures in the order of the manifests, as one manifest after another gave them.
    for (const auto& plan : plans_) collect(plan);
    if (dry_run_) {
      if (seeds_ && !seeds_->missing().empty()) {
        out_ << "Seed snapshots that would be downloaded:\n";
        for (const auto& path : seeds_->missing()) out_ << "  \u2022 " << path << "\n";
      }
      return;
    }
    finish_seeds_and_images();
    commit();
    report();
  }

 private:
  // seeds.json alongside the manifests: it needs nothing from them. Its error, if any, is
  // thrown where the seeds are taken (after the manifests' own errors and dry-run listing).
  // The future waits for its thread when it is destroyed, so a throw before then leaves none
  // behind.
  void start_seeds_document() {
    if (options_.seeds != DepsDownloadOptions::Seeds::fetch) return;
    seeds_document_ = std::async(std::launch::async, [this] {
      net::HttpClient seeds_http(options_.download.http);
      return fetch_seeds_document(seeds_http, base_);
    });
  }

  // ---- what each manifest needs ---------------------------------------------------------
  ManifestNeeds needs_of(const std::string& arch, const VmconfigManifest& manifest) {
    ManifestNeeds needs;
    needs.items = select_vmconfig_items(manifest, options_.providers);
    validate_vmconfig_items(manifest, needs.items);
    for (const auto& item : needs.items) {
      if (!is_cached(store_, item, arch)) needs.missing.push_back(item);
    }
    // The kernel and initrd os.boot names inside the image: read out of it and checked
    // before the image or they are committed (fetch/boot_files.hpp).
    auto image = std::find_if(needs.items.begin(), needs.items.end(),
                              [](const VmconfigItem& item) { return item.name == "os-image"; });
    if (image != needs.items.end()) {
      needs.image = *image;
      for (const auto& file : manifest.boot_files) {
        if (is_boot_file_cached(store_, *image, file, arch)) continue;
        needs.missing_boot.push_back(file);
      }
    }
    // Container images of every manifest, once each (knc and knd list the same ones).
    for (auto& request : vmconfig_image_requests(manifest.document, manifest.name)) {
      std::string key = request.reference.address() + " " + request.pinned_manifest;
      if (!images_seen_.insert(key).second || image_stored(store_, request, cosign_policy_)) continue;
      needs.missing_images.push_back(request);
      image_requests_.push_back(std::move(request));
    }
    return needs;
  }

  void list(const FetchedManifest& fetched, const ManifestNeeds& needs) {
    out_ << "VMConfig manifest: " << net::redact_url(fetched.url) << "\n";
    out_ << "VMConfig cache directory: " << (store_.root() / "vmconfig").string() << "\n";
    if (needs.missing.empty() && needs.missing_boot.empty()) {
      out_ << "All dependencies already cached, nothing to download.\n";
    } else {
      out_ << "VMConfig artifacts that would be downloaded:\n";
      for (const auto& item : needs.missing) out_ << "  \u2022 " << item.view_path() << " (" << item.size << " bytes)\n";
      for (const auto& file : needs.missing_boot)
        out_ << "  \u2022 " << file.view_path(needs.image->version) << " (read from the image, partition " << file.partition
             << " " << file.path << ")\n";
    }
    if (!needs.missing_images.empty()) {
      out_ << "Container images that would be downloaded:\n";
      for (const auto& request : needs.missing_images)
        out_ << "  \u2022 " << request.reference.str() << " " << request.pinned_manifest << " ("
             << (request.platforms.empty() ? std::string("all platforms") : request.platforms.front()) << ")\n";
    }
  }

  // ---- plan: who fetches what -----------------------------------------------------------
  void plan(const ManifestKey& key, const FetchedManifest& fetched, ManifestNeeds needs) {
    const auto& missing_boot = needs.missing_boot;
    ManifestPlan plan;
    plan.arch = key.arch;
    if (!missing_boot.empty()) {
      plan.image = needs.image;
      plan.boot_files = missing_boot;
    }
    plan.items = std::move(needs.missing);
    std::size_t shared_boot_files = 0;
    for (std::size_t i = 0; i < plan.items.size(); ++i) {
      const auto& item = plan.items[i];
      // An image with boot files to read goes through a scratch file: nothing of it reaches
      // the store before they are checked.
      bool read_boot = item.name == "os-image" && !missing_boot.empty();
      auto [known, added] = fetch_of_.try_emplace(item.url + " " + item.digest, fetches_.size());
      if (!added) {
        if (read_boot) {
          auto& wanted = fetches_[known->second].boot_files;
          for (const auto& file : missing_boot) {
            bool listed = std::any_of(wanted.begin(), wanted.end(), [&](const VmconfigBootFile& w) {
              return boot_key(item, w) == boot_key(item, file);
            });
            if (!listed) wanted.push_back(file);
          }
          shared_boot_files = missing_boot.size();  // read once, out of the image the earlier manifest fetches
        }
        plan.shared.push_back({i, known->second});
        continue;
      }
      fetches_.push_back({item, key.arch, std::nullopt, "", read_boot ? missing_boot : std::vector<VmconfigBootFile>{}});
      // sha256 items stream straight into the store, checked before the object is committed;
      // sha512 items (and images with boot files to read) land in a scratch file first,
      // checked, then added.
      (item.digest.starts_with("sha256:") && !read_boot ? plan.direct : plan.scratch).push_back({i, known->second});
    }
    plan.manifest_row = new_manifest_row(key.arch, fetched);
    const auto& manifest = fetched.manifest;
    if (!quiet_) {
      log_ << "vmconfig " << key.kind << "_debian-13_" << key.arch << ": " << needs.items.size() << " artifacts, "
           << plan.items.size() << " to fetch\n";
    }
    counts_.push_back({key.kind + "_debian-13_" + key.arch, plan.items.size() + plan.boot_files.size(),
                       needs.items.size() - plan.items.size() + manifest.boot_files.size() - plan.boot_files.size(),
                       plan.shared.size() + shared_boot_files});
    plans_.push_back(std::move(plan));
  }

  // The row of a manifest the store does not hold yet (its bytes go in after the run), or
  // nullopt when the current one is the same.
  std::optional<cache::Artifact> new_manifest_row(const std::string& arch, const FetchedManifest& fetched) {
    const auto& manifest = fetched.manifest;
    cache::Artifact row;
    row.kind = cache::ArtifactKind::vmconfig_manifest;
    row.address = manifest.name;
    row.version = manifest.version;
    row.platform = platform_of(arch);
    row.digest = sha256_hex(fetched.bytes);
    row.size = static_cast<std::int64_t>(fetched.bytes.size());
    row.upstream_url = fetched.url;
    row.trust = cache::Trust::unverified;  // manifests carry no signature upstream
    auto current = current_manifest(store_, manifest.name);
    if (current && current->digest == row.digest) return std::nullopt;
    row.filename = manifest.name + "_" + utc_file_stamp(std::time(nullptr)) + "_" + row.digest.substr(0, 12) + ".json";
    manifest_bytes_.push_back(fetched.bytes);  // stored after the run, with the others
    return row;
  }

  // ---- fetch ----------------------------------------------------------------------------
  // One run for everything: the artifacts, the seed snapshots and the images' manifests and
  // blobs share the --jobs and per-host caps, and an image's blobs start as soon as their
  // manifest lands. A sha512 file (or an os image with boot files to read) is checked, and
  // its boot files read, on a thread of its own as soon as it lands, while the run goes on.
  void fetch() {
    std::deque<ScratchFetch> scratch_fetches;
    downloader_.run(store_, [&](net::DownloadRun& run) {
      // What has the longest way after it goes first: the images, then the files checked and
      // read after they land (the os images), then the rest.
      if (images_) start_images(run);
      for (const auto& plan : plans_) {
        for (const auto& claim : plan.scratch) add_scratch_fetch(run, claim, scratch_fetches);
      }
      for (const auto& plan : plans_) {
        for (const auto& claim : plan.direct) {
          const auto& item = fetches_[claim.fetch].item;
          run.add(net::DownloadItem{item.url, TypedDigest::parse(item.digest).hex, item.view_path(), {}, item.size},
                  [&fetch = fetches_[claim.fetch]](const net::DownloadOutcome& outcome) {
                    if (outcome.ok) fetch.object = {outcome.digest, outcome.size};
                    else fetch.error = outcome.error;
                  });
        }
      }
      if (seeds_ && !seeds_->missing().empty()) seeds_->start(run, item_scratch());
    });
    // The manifests' syncs overlap here instead of holding up the first request.
    (void)store_.add_all_bytes(manifest_bytes_);
    for (auto& pending : scratch_fetches) store_scratch_fetch(pending);
  }

  // The images' top manifests come on a thread of their own while the run begins; their
  // platform manifests join the run (ahead of what is still queued) as soon as they are in,
  // and each one's blobs when it lands.
  void start_images(net::DownloadRun& run) {
    auto tops = std::async(std::launch::async, [this, &run] {
                  struct WakeAtEnd {
                    net::DownloadRun& run;
                    ~WakeAtEnd() { run.wake(); }
                  } wake{run};
                  images_->fetch_tops();
                }).share();
    run.after(tops, [tops, this, &run] {
      tops.get();  // what fetch_tops could not keep to one image
      images_->resolve_tops();
      images_->start(run);
    });
  }

  void add_scratch_fetch(net::DownloadRun& run, const Claim& claim, std::deque<ScratchFetch>& scratch_fetches) {
    auto& pending = scratch_fetches.emplace_back();
    pending.fetch = claim.fetch;
    pending.file = item_scratch() / ("item-" + std::to_string(scratch_fetches.size() - 1));
    const auto& fetch = fetches_[claim.fetch];
    fs::path work = fetch.boot_files.empty() ? fs::path() : next_boot_work();
    const auto expected = TypedDigest::parse(fetch.item.digest);
    net::DownloadItem item{fetch.item.url, std::nullopt, fetch.item.view_path(), {}, fetch.item.size};
    if (expected.algorithm != DigestAlgorithm::sha256) item.other_algorithm = expected.algorithm;
    run.add(std::move(item), pending.file,
            [this, &pending, &fetch, work](const net::DownloadOutcome& outcome) {
              pending.outcome = outcome;
              if (!outcome.ok) return;
              pending.checked = std::async(std::launch::async, [this, &pending, &fetch, work]() -> CheckedScratch {
                const std::string& sha256 = pending.outcome->digest;
                check_fetched_digest(*pending.outcome, TypedDigest::parse(fetch.item.digest), fetch.item.view_path());
                std::optional<BootRead> boot;
                if (!fetch.boot_files.empty()) boot = read_boot_into(fetch.item, pending.file, fetch.boot_files, work);
                CheckedScratch checked{store_.adopt_file(pending.file, fetch.item.view_path(), sha256), std::move(boot)};
                checked.object.seal(sha256);
                return checked;
              });
            });
  }

  // A scratch file checked (and its boot files read) goes into the store; any failure is its
  // fetch's error.
  void store_scratch_fetch(ScratchFetch& pending) {
    auto& fetch = fetches_[pending.fetch];
    try {
      if (!pending.outcome) throw Error("cannot fetch " + fetch.item.view_path() + ": the run stopped before it");
      if (!pending.outcome->ok) throw Error(pending.outcome->error);
      auto checked = pending.checked.get();
      if (checked.boot) store_boot_files(fetch.item, fetch.arch, *checked.boot);
      const auto size = checked.object.size();
      fetch.object = {checked.object.publish(), size};
    } catch (const Error& error) {
      fetch.error = error.what();
    }
    std::error_code ec;
    fs::remove(pending.file, ec);
  }

  // The scratch of the sha512 items, os images and seed snapshots: on the store's file system,
  // so that each checked file becomes its object without a copy. Made when first needed.
  const fs::path& item_scratch() {
    if (!item_scratch_) item_scratch_.emplace(store_.temp_dir(), "podplane-deps-items-");
    return item_scratch_->path();
  }

  fs::path next_boot_work() { return scratch_.path() / ("boot-" + std::to_string(boot_reads_++)); }

  // Boot files read out of an image: added to the store and to boot_rows_this_run_, and the
  // read's work directory removed.
  void store_boot_files(const VmconfigItem& image, const std::string& arch, const BootRead& boot) {
    std::vector<cache::Artifact> read;
    for (const auto& file : boot.extracted) {
      cache::Artifact row;
      row.kind = cache::ArtifactKind::vmconfig_boot_file;
      row.address = image.name;
      row.version = image.version;
      row.platform = platform_of(arch);
      row.filename = file.file.file_name();
      row.size = static_cast<std::int64_t>(fs::file_size(file.path));
      row.digest = store_.add_file(file.path);
      row.upstream_digest = file.file.digest;
      row.trust = cache::Trust::checksum;
      read.push_back(row);
    }
    for (std::size_t i = 0; i < read.size(); ++i) {
      boot_rows_this_run_[boot_key(image, boot.extracted[i].file)] = read[i];
      tally_.bytes += static_cast<std::uint64_t>(read[i].size);
      ++tally_.boot_files;
    }
    std::error_code ignored;
    fs::remove_all(boot.work, ignored);
  }

  // ---- rows -----------------------------------------------------------------------------
  void collect(const ManifestPlan& plan) {
    auto make_row = [&](const VmconfigItem& item, const std::pair<std::string, std::uint64_t>& object) {
      cache::Artifact row;
      row.kind = cache::ArtifactKind::vmconfig_artifact;
      row.address = item.name;
      row.version = item.version;
      row.platform = platform_of(plan.arch);
      row.filename = item.basename();
      row.digest = object.first;
      row.size = static_cast<std::int64_t>(object.second);
      row.upstream_digest = item.digest;
      row.upstream_url = item.url;
      row.trust = cache::Trust::checksum;
      rows_.push_back(std::move(row));
    };
    for (const auto& claim : plan.shared) {
      if (fetches_[claim.fetch].object) make_row(plan.items[claim.item], *fetches_[claim.fetch].object);
    }
    for (const auto* claims : {&plan.direct, &plan.scratch}) {
      for (const auto& claim : *claims) {
        const auto& fetch = fetches_[claim.fetch];
        if (!fetch.object) {
          failures_.push_back(fetch.error);
          continue;
        }
        make_row(plan.items[claim.item], *fetch.object);
        tally_.bytes += fetch.object->second;
        ++tally_.artifacts;
      }
    }
    if (plan.image) collect_boot_files(plan);
    if (plan.manifest_row) rows_.push_back(*plan.manifest_row);
  }

  void collect_boot_files(const ManifestPlan& plan) {
    const auto& image = *plan.image;
    // Boot files not read this run come out of an image that was already stored.
    std::vector<VmconfigBootFile> to_read;
    for (const auto& file : plan.boot_files)
      if (!boot_rows_this_run_.count(boot_key(image, file))) to_read.push_back(file);
    bool fetched_here = fetch_of_.find(image.url + " " + image.digest) != fetch_of_.end();
    if (!to_read.empty() && !fetched_here) {  // a fetched image that failed has said so
      auto row = store_.find_artifact(cache::ArtifactKind::vmconfig_artifact, image.name, image.version,
                                      platform_of(plan.arch), image.basename());
      if (row && row->upstream_digest == image.digest && store_.has_object(row->digest)) {
        try {
          store_boot_files(image, plan.arch, read_boot_into(image, store_.object_path(row->digest), to_read, next_boot_work()));
        } catch (const Error& error) {
          failures_.push_back(error.what());
        }
      }
    }
    for (const auto& file : plan.boot_files)
      if (auto done = boot_rows_this_run_.find(boot_key(image, file)); done != boot_rows_this_run_.end())
        rows_.push_back(done->second);
  }

  void finish_seeds_and_images() {
    if (seeds_) {
      auto fetched = seeds_->finish();
      failures_.insert(failures_.end(), fetched.failures.begin(), fetched.failures.end());
      rows_.insert(rows_.end(), fetched.rows.begin(), fetched.rows.end());
      tally_.bytes += fetched.bytes;
      tally_.seeds = fetched.fetched;
    }
    if (images_) {
      auto fetched = images_->finish(log_);
      image_signatures_ = std::move(fetched.signatures);
      failures_.insert(failures_.end(), fetched.failures.begin(), fetched.failures.end());
      rows_.insert(rows_.end(), fetched.rows.begin(), fetched.rows.end());
      tally_.bytes += fetched.bytes;
      tally_.images = image_requests_.size();
    }
  }

  // ---- commit and report ----------------------------------------------------------------
  void commit() {
    if (!failures_.empty()) {
      std::string message = "deps download failed; nothing was indexed:";
      for (const auto& failure : failures_) message += "\n" + failure;
      throw Error(message);
    }
    store_.in_transaction([&] {
      for (const auto& row : rows_) (void)store_.add_artifact(row);
      record_image_signatures(store_, image_signatures_);
      store_.audit("fetch", "deps download",
                   json{{"items", tally_.artifacts + tally_.boot_files}, {"images", tally_.images}, {"seeds", tally_.seeds},
                        {"bytes", tally_.bytes}, {"archs", archs_}, {"kinds", options_.kinds}});
    });
    (void)cache::rebuild_views(store_);
  }

  // "Up to date" only where nothing had to come: a manifest whose items arrived in this run
  // says so, so a fill is never mistaken for a check.
  void report() {
    for (const auto& count : counts_) {
      std::string tally = "fetched " + std::to_string(count.fetched) + ", present " + std::to_string(count.present);
      if (count.fetched == 0) {
        out_ << "All dependencies for " << count.manifest << " are up to date (" << tally << ").\n";
        continue;
      }
      out_ << "vmconfig " << count.manifest << ": " << tally;
      if (count.shared > 0) out_ << " (" << count.shared << " of them also listed by an earlier manifest: downloaded once)";
      out_ << ".\n";
    }
    out_ << transfer_summary(tally_);
  }

  cache::Store& store_;
  const DepsDownloadOptions& options_;
  std::ostream& out_;
  std::ostream& log_;
  const std::vector<std::string> archs_;
  const std::string base_;
  const bool dry_run_;
  const bool quiet_;
  const cache::CosignPolicy cosign_policy_;

  std::vector<cache::Artifact> rows_;
  std::vector<std::string> failures_;
  TransferTally tally_;
  std::vector<ImageSignatureRecord> image_signatures_;
  net::Downloader downloader_;
  ScratchDir scratch_{"podplane-deps-"};
  std::optional<ScratchDir> item_scratch_;  // under the store's temp area, made when first needed
  std::vector<ManifestCount> counts_;
  std::vector<ImageRequest> image_requests_;
  std::set<std::string> images_seen_;
  std::vector<ManifestKey> keys_;
  std::future<SeedsDocument> seeds_document_;
  std::vector<Fetch> fetches_;
  std::map<std::string, std::size_t> fetch_of_;  // "url digest" → index in fetches_
  std::vector<ManifestPlan> plans_;
  std::vector<std::string_view> manifest_bytes_;  // new vmconfig manifests, into the store after the run
  std::map<std::string, cache::Artifact> boot_rows_this_run_;  // by boot_key
  std::size_t boot_reads_ = 0;  // names each read's scratch dir
  std::optional<SeedsFetcher> seeds_;
  std::optional<ImageFetcher> images_;
};

}  // namespace

std::string deps_base_url() {
  const char* env = std::getenv("PODPLANE_DEPS_URL");
  std::string base = env != nullptr && *env != '\0' ? env : "https://deps.podplane.dev";
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

std::string default_vmconfig_arch() {
  if (const char* env = std::getenv("PODPLANE_ARCH"); env != nullptr && *env != '\0') return env;
  utsname name{};
  if (uname(&name) == 0) {
    std::string machine = name.machine;
    if (machine == "aarch64" || machine == "arm64") return "arm64";
  }
  return "amd64";
}

std::vector<std::string> split_list(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& value : values) {
    std::stringstream parts(value);
    for (std::string part; std::getline(parts, part, ',');) {
      part.erase(0, part.find_first_not_of(" \t"));
      part.erase(part.find_last_not_of(" \t") + 1);
      if (!part.empty() && std::find(out.begin(), out.end(), part) == out.end()) out.push_back(part);
    }
  }
  return out;
}

void deps_download(cache::Store& store, const DepsDownloadOptions& options, std::ostream& out, std::ostream& log) {
  auto archs = options.archs.empty() ? std::vector<std::string>{default_vmconfig_arch()} : options.archs;
  for (const auto& arch : archs) check_choice(arch, {"amd64", "arm64"}, "arch");
  for (const auto& kind : options.kinds) check_choice(kind, {"knc", "knd"}, "kind");
  std::string base = options.base_url.empty() ? deps_base_url() : options.base_url;
  out << "Providers: " << (options.providers.empty() ? std::string("none (only the items every provider needs)") : join_list(options.providers))
      << (options.providers_reason.empty() ? "" : " (" + options.providers_reason + ")") << "\n";
  // A bad key or policy stops the run before it begins.
  auto cosign_policy = cache::cosign_policy_of(options.cosign_keys, options.cosign_policy, options.cosign_keyless);
  VmconfigRun(store, options, std::move(archs), std::move(base), std::move(cosign_policy), out, log).run();
}

DepsStatus deps_status(const cache::Store* store, const DepsDownloadOptions& options, std::ostream& out) {
  auto archs = options.archs.empty() ? std::vector<std::string>{default_vmconfig_arch()} : options.archs;
  for (const auto& arch : archs) check_choice(arch, {"amd64", "arm64"}, "arch");
  for (const auto& kind : options.kinds) check_choice(kind, {"knc", "knd"}, "kind");
  std::string base = options.base_url.empty() ? deps_base_url() : options.base_url;
  net::HttpClient http(options.download.http);
  bool changed = false;
  for (const auto& arch : archs) {
    for (const auto& kind : options.kinds) {
      auto fetched = fetch_manifest(http, base, kind, arch);
      auto current = store == nullptr ? std::nullopt : current_manifest(*store, fetched.manifest.name);
      bool same = current && vmconfig_manifests_equal(json::parse(store->read_object(current->digest)),
                                                      fetched.manifest.document);
      if (!same) changed = true;
    }
  }
  out << (changed ? "New packages are available to download.\n" : "No new packages available.\n");
  return changed ? DepsStatus::new_available : DepsStatus::up_to_date;
}

}  // namespace podplane::fetch
