#include "mirror/deps_download.hpp"

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
#include <thread>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/parallel.hpp"
#include "cache/views.hpp"
#include "base/scratch_dir.hpp"
#include "mirror/boot_files.hpp"
#include "mirror/http.hpp"
#include "mirror/images.hpp"
#include "mirror/seeds.hpp"
#include "mirror/vmconfig.hpp"

namespace podplane::mirror {
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

FetchedManifest fetch_manifest(HttpClient& http, const std::string& base, const std::string& kind, const std::string& arch) {
  auto name = vmconfig_manifest_name(kind, arch);
  FetchedManifest fetched;
  fetched.url = base + "/manifests/" + name + ".json";
  auto response = http.get(fetched.url, {"Accept: application/json"});
  if (response.status == 404) throw Error("file not found: " + redact_url(fetched.url));
  if (response.status != 200) throw Error("cannot fetch " + redact_url(fetched.url) + ": " + response.status_text());
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
std::vector<FetchedManifest> fetch_manifests(const HttpOptions& http_options, const std::string& base,
                                             const std::vector<ManifestKey>& keys) {
  std::vector<FetchedManifest> fetched(keys.size());
  rethrow_first(on_threads(
      keys.size(),
      [&](std::size_t i) {
        HttpClient http(http_options);
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
  bool dry_run = options.mode == DepsDownloadOptions::Mode::dry_run;
  bool quiet = options.download.progress == Progress::quiet;
  out << "Providers: " << (options.providers.empty() ? std::string("none (only the items every provider needs)") : join_list(options.providers))
      << (options.providers_reason.empty() ? "" : " (" + options.providers_reason + ")") << "\n";
  // A bad key or policy stops the run before it begins.
  auto cosign_policy = cache::cosign_policy_of(options.cosign_keys, options.cosign_policy);

  // Everything is fetched and checked first; rows are indexed together at the end.
  std::vector<cache::Artifact> rows;
  std::vector<std::string> failures;
  std::uint64_t fetched_bytes = 0;
  std::size_t fetched_items = 0;       // vmconfig artifacts downloaded (each once, however many manifests list it)
  std::size_t fetched_boot_files = 0;  // kernels and initrds read out of os images
  Downloader downloader(options.download);
  ScratchDir scratch{"podplane-deps-"};
  struct ManifestCount {
    std::string manifest;  // knc_debian-13_amd64
    std::size_t fetched = 0, present = 0;
    std::size_t shared = 0;  // of `fetched`, listed by an earlier manifest too and fetched once for both
  };
  std::vector<ManifestCount> counts;
  // Container images of every manifest, once each (knc and knd list the same ones).
  std::vector<ImageRequest> image_requests;
  std::set<std::string> images_seen;

  // Every manifest first, all at once, then every missing artifact of all of them in one
  // parallel run: one manifest after another, each with its own small batch, cost a round
  // trip per manifest and per sha512 file on a slow link.
  std::vector<ManifestKey> keys;
  for (const auto& arch : archs) {
    for (const auto& kind : options.kinds) keys.push_back({kind, arch});
  }
  // seeds.json alongside them: it needs nothing from them. Its error, if any, is thrown where
  // the seeds are taken (after the manifests' own errors and dry-run listing, as before). The
  // future waits for its thread when it is destroyed, so a throw before then leaves none behind.
  std::future<SeedsDocument> seeds_document;
  if (options.seeds == DepsDownloadOptions::Seeds::fetch) {
    seeds_document = std::async(std::launch::async, [&] {
      HttpClient seeds_http(options.download.http);
      return fetch_seeds_document(seeds_http, base);
    });
  }
  auto manifests = fetch_manifests(options.download.http, base, keys);

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
  std::vector<Fetch> fetches;
  std::map<std::string, std::size_t> fetch_of;  // "url digest" → index in fetches
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
  std::vector<ManifestPlan> plans;
  std::vector<std::string_view> manifest_bytes;  // new vmconfig manifests, into the store after the run

  // Boot files read out of an os image this run, by "<image url> <image digest> <path> <digest>":
  // knc and knd manifests of one arch name the same ones.
  std::map<std::string, cache::Artifact> boot_rows_this_run;
  std::size_t boot_reads = 0;  // names each read's scratch dir
  auto boot_key = [](const VmconfigItem& image, const VmconfigBootFile& file) {
    return image.url + " " + image.digest + " " + file.path + " " + file.digest;
  };
  // Boot files read out of an image (on any thread, into `work`), then stored here: added to
  // the store and to boot_rows_this_run, and `work` removed.
  struct BootRead {
    fs::path work;
    std::vector<ExtractedBootFile> extracted;
  };
  auto next_boot_work = [&] { return scratch.path() / ("boot-" + std::to_string(boot_reads++)); };
  auto read_boot_into = [](const VmconfigItem& image, const fs::path& image_file, const std::vector<VmconfigBootFile>& wanted,
                      const fs::path& work) {
    fs::create_directories(work);
    return BootRead{work, read_boot_files(image_file, image_label(image), wanted, work)};
  };
  auto store_boot_files = [&](const VmconfigItem& image, const std::string& arch, const BootRead& boot) {
    std::vector<cache::Artifact> read;
    for (const auto& file : boot.extracted) {
      cache::Artifact row;
      row.kind = cache::ArtifactKind::vmconfig_boot_file;
      row.address = image.name;
      row.version = image.version;
      row.platform = platform_of(arch);
      row.filename = file.file.file_name();
      row.size = static_cast<std::int64_t>(fs::file_size(file.path));
      row.digest = store.add_file(file.path);
      row.upstream_digest = file.file.digest;
      row.trust = cache::Trust::checksum;
      read.push_back(row);
    }
    for (std::size_t i = 0; i < read.size(); ++i) {
      boot_rows_this_run[boot_key(image, boot.extracted[i].file)] = read[i];
      fetched_bytes += static_cast<std::uint64_t>(read[i].size);
      ++fetched_boot_files;
    }
    std::error_code ignored;
    fs::remove_all(boot.work, ignored);
  };

  for (std::size_t m = 0; m < keys.size(); ++m) {
    const auto& [kind, arch] = keys[m];
    const auto& fetched = manifests[m];
    const auto& manifest = fetched.manifest;
    auto items = select_vmconfig_items(manifest, options.providers);
    validate_vmconfig_items(manifest, items);

    std::vector<VmconfigItem> missing;
    for (const auto& item : items) {
      if (!is_cached(store, item, arch)) missing.push_back(item);
    }
    // The kernel and initrd os.boot names inside the image: read out of it and checked
    // before the image or they are committed (mirror/boot_files.hpp).
    auto image = std::find_if(items.begin(), items.end(), [](const VmconfigItem& item) { return item.name == "os-image"; });
    std::vector<VmconfigBootFile> missing_boot;
    if (image != items.end()) {
      for (const auto& file : manifest.boot_files) {
        if (is_boot_file_cached(store, *image, file, arch)) continue;
        missing_boot.push_back(file);
      }
    }
    std::vector<ImageRequest> missing_images;
    for (auto& request : vmconfig_image_requests(manifest.document, manifest.name)) {
      std::string key = request.reference.address() + " " + request.pinned_manifest;
      if (!images_seen.insert(key).second || image_stored(store, request, cosign_policy)) continue;
      missing_images.push_back(request);
      image_requests.push_back(std::move(request));
    }
    if (dry_run) {
      out << "VMConfig manifest: " << redact_url(fetched.url) << "\n";
      out << "VMConfig cache directory: " << (store.root() / "vmconfig").string() << "\n";
      if (missing.empty() && missing_boot.empty()) {
        out << "All dependencies already cached, nothing to download.\n";
      } else {
        out << "VMConfig artifacts that would be downloaded:\n";
        for (const auto& item : missing) out << "  \u2022 " << item.view_path() << " (" << item.size << " bytes)\n";
        for (const auto& file : missing_boot)
          out << "  \u2022 " << file.view_path(image->version) << " (read from the image, partition " << file.partition
              << " " << file.path << ")\n";
      }
      if (!missing_images.empty()) {
        out << "Container images that would be downloaded:\n";
        for (const auto& request : missing_images)
          out << "  \u2022 " << request.reference.str() << " " << request.pinned_manifest << " ("
              << (request.platforms.empty() ? std::string("all platforms") : request.platforms.front()) << ")\n";
      }
      continue;
    }

    ManifestPlan plan;
    plan.arch = arch;
    if (!missing_boot.empty()) {
      plan.image = *image;
      plan.boot_files = missing_boot;
    }
    plan.items = std::move(missing);
    std::size_t shared_boot_files = 0;
    for (std::size_t i = 0; i < plan.items.size(); ++i) {
      const auto& item = plan.items[i];
      // An image with boot files to read goes through a scratch file: nothing of it reaches
      // the store before they are checked.
      bool read_boot = item.name == "os-image" && !missing_boot.empty();
      auto [known, added] = fetch_of.try_emplace(item.url + " " + item.digest, fetches.size());
      if (!added) {
        if (read_boot) {
          auto& wanted = fetches[known->second].boot_files;
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
      fetches.push_back({item, arch, std::nullopt, "", read_boot ? missing_boot : std::vector<VmconfigBootFile>{}});
      // sha256 items stream straight into the store, checked before the object is committed;
      // sha512 items (and images with boot files to read) land in a scratch file first,
      // checked, then added.
      (item.digest.starts_with("sha256:") && !read_boot ? plan.direct : plan.scratch).push_back({i, known->second});
    }

    cache::Artifact manifest_row;
    manifest_row.kind = cache::ArtifactKind::vmconfig_manifest;
    manifest_row.address = manifest.name;
    manifest_row.version = manifest.version;
    manifest_row.platform = platform_of(arch);
    manifest_row.digest = sha256_hex(fetched.bytes);
    manifest_row.size = static_cast<std::int64_t>(fetched.bytes.size());
    manifest_row.upstream_url = fetched.url;
    manifest_row.trust = cache::Trust::unverified;  // manifests carry no signature upstream
    auto current = current_manifest(store, manifest.name);
    if (!current || current->digest != manifest_row.digest) {
      manifest_row.filename = manifest.name + "_" + utc_file_stamp(std::time(nullptr)) + "_" + manifest_row.digest.substr(0, 12) + ".json";
      manifest_bytes.push_back(fetched.bytes);  // stored after the run, with the others
      plan.manifest_row = std::move(manifest_row);
    }
    if (!quiet) {
      log << "vmconfig " << kind << "_debian-13_" << arch << ": " << items.size() << " artifacts, " << plan.items.size()
          << " to fetch\n";
    }
    counts.push_back({kind + "_debian-13_" + arch, plan.items.size() + plan.boot_files.size(),
                      items.size() - plan.items.size() + manifest.boot_files.size() - plan.boot_files.size(),
                      plan.shared.size() + shared_boot_files});
    plans.push_back(std::move(plan));
  }

  // Seeds are cross-arch: fetched once (Podplane: with the first arch).
  std::optional<SeedsFetcher> seeds;
  if (seeds_document.valid()) seeds.emplace(store, seeds_document.get(), scratch.path());
  std::optional<ImageFetcher> images;
  if (!dry_run && !image_requests.empty())
    images.emplace(store, image_requests, options.download, RegistryCredentials::load(options.registry_auth));
  if (images) images->require_signatures(cosign_policy);

  if (!dry_run) {
    // One run for everything: the artifacts, the seed snapshots and the images' manifests and
    // blobs share the --jobs and per-host caps, and an image's blobs start as soon as their
    // manifest lands. A sha512 file (or an os image with boot files to read) is checked, and
    // its boot files read, on a thread of its own as soon as it lands, while the run goes on.
    struct ScratchFetch {
      std::size_t fetch;  // index in fetches
      fs::path file;
      std::optional<DownloadOutcome> outcome;
      std::future<std::optional<BootRead>> checked;  // the digest checked, the boot files read
    };
    std::deque<ScratchFetch> scratch_fetches;
    downloader.run(store, [&](DownloadRun& run) {
      // What has the longest way after it goes first. The images' top manifests come on a
      // thread of their own while the run begins; their platform manifests join the run (ahead
      // of what is still queued) as soon as they are in, and each one's blobs when it lands.
      // Then the files checked and read after they land (the os images), then the rest.
      if (images) {
        auto tops = std::async(std::launch::async, [&images, &run] {
                      struct WakeAtEnd {
                        DownloadRun& run;
                        ~WakeAtEnd() { run.wake(); }
                      } wake{run};
                      images->fetch_tops();
                    }).share();
        run.after(tops, [tops, &images, &run] {
          tops.get();  // what fetch_tops could not keep to one image
          images->resolve_tops();
          images->start(run);
        });
      }
      for (const auto& plan : plans) {
        for (const auto& claim : plan.scratch) {
          auto& pending = scratch_fetches.emplace_back();
          pending.fetch = claim.fetch;
          pending.file = scratch.path() / ("item-" + std::to_string(scratch_fetches.size() - 1));
          const auto& fetch = fetches[claim.fetch];
          fs::path work = fetch.boot_files.empty() ? fs::path() : next_boot_work();
          run.add(DownloadItem{fetch.item.url, std::nullopt, fetch.item.view_path(), {}, fetch.item.size}, pending.file,
                  [&pending, &fetch, work, &read_boot_into](const DownloadOutcome& outcome) {
                    pending.outcome = outcome;
                    if (!outcome.ok) return;
                    pending.checked = std::async(std::launch::async, [&pending, &fetch, work, &read_boot_into]() -> std::optional<BootRead> {
                      auto expected = TypedDigest::parse(fetch.item.digest);
                      auto got = file_digest_hex(pending.file, expected.algorithm);
                      if (got != expected.hex) {
                        throw Error(mismatch_message("checksum mismatch for " + fetch.item.view_path(), expected.str(),
                                                     TypedDigest{expected.algorithm, got}.str()));
                      }
                      if (fetch.boot_files.empty()) return std::nullopt;
                      return read_boot_into(fetch.item, pending.file, fetch.boot_files, work);
                    });
                  });
        }
      }
      for (const auto& plan : plans) {
        for (const auto& claim : plan.direct) {
          const auto& item = fetches[claim.fetch].item;
          run.add(DownloadItem{item.url, TypedDigest::parse(item.digest).hex, item.view_path(), {}, item.size},
                  [&fetch = fetches[claim.fetch]](const DownloadOutcome& outcome) {
                    if (outcome.ok) fetch.object = {outcome.digest, outcome.size};
                    else fetch.error = outcome.error;
                  });
        }
      }
      if (seeds) seeds->start(run);
    });
    // The manifests' syncs overlap here instead of holding up the first request.
    (void)store.add_all_bytes(manifest_bytes);
    for (auto& pending : scratch_fetches) {
      auto& fetch = fetches[pending.fetch];
      try {
        if (!pending.outcome) throw Error("cannot fetch " + fetch.item.view_path() + ": the run stopped before it");
        if (!pending.outcome->ok) throw Error(pending.outcome->error);
        auto boot = pending.checked.get();
        if (boot) store_boot_files(fetch.item, fetch.arch, *boot);
        auto size = fs::file_size(pending.file);
        fetch.object = {store.add_file(pending.file), size};
      } catch (const Error& error) {
        fetch.error = error.what();
      }
      std::error_code ec;
      fs::remove(pending.file, ec);
    }
  }

  // Rows and failures in the order of the manifests, as one manifest after another gave them.
  for (const auto& plan : plans) {
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
      rows.push_back(std::move(row));
    };
    for (const auto& claim : plan.shared) {
      if (fetches[claim.fetch].object) make_row(plan.items[claim.item], *fetches[claim.fetch].object);
    }
    for (const auto* claims : {&plan.direct, &plan.scratch}) {
      for (const auto& claim : *claims) {
        const auto& fetch = fetches[claim.fetch];
        if (!fetch.object) {
          failures.push_back(fetch.error);
          continue;
        }
        make_row(plan.items[claim.item], *fetch.object);
        fetched_bytes += fetch.object->second;
        ++fetched_items;
      }
    }
    if (plan.image) {
      // Boot files not read this run come out of an image that was already stored.
      std::vector<VmconfigBootFile> to_read;
      for (const auto& file : plan.boot_files)
        if (!boot_rows_this_run.count(boot_key(*plan.image, file))) to_read.push_back(file);
      auto fetch = fetch_of.find(plan.image->url + " " + plan.image->digest);
      bool fetched_here = fetch != fetch_of.end();
      if (!to_read.empty() && !fetched_here) {  // a fetched image that failed has said so
        auto row = store.find_artifact(cache::ArtifactKind::vmconfig_artifact, plan.image->name, plan.image->version,
                                       platform_of(plan.arch), plan.image->basename());
        if (row && row->upstream_digest == plan.image->digest && store.has_object(row->digest)) {
          try {
            store_boot_files(*plan.image, plan.arch, read_boot_into(*plan.image, store.object_path(row->digest), to_read, next_boot_work()));
          } catch (const Error& error) {
            failures.push_back(error.what());
          }
        }
      }
      for (const auto& file : plan.boot_files)
        if (auto done = boot_rows_this_run.find(boot_key(*plan.image, file)); done != boot_rows_this_run.end())
          rows.push_back(done->second);
    }
    if (plan.manifest_row) rows.push_back(*plan.manifest_row);
  }
  std::size_t seeds_fetched = 0;
  if (seeds && dry_run && !seeds->missing().empty()) {
    out << "Seed snapshots that would be downloaded:\n";
    for (const auto& path : seeds->missing()) out << "  \u2022 " << path << "\n";
  }
  if (dry_run) return;
  if (seeds) {
    auto fetched = seeds->finish();
    failures.insert(failures.end(), fetched.failures.begin(), fetched.failures.end());
    rows.insert(rows.end(), fetched.rows.begin(), fetched.rows.end());
    fetched_bytes += fetched.bytes;
    seeds_fetched = fetched.fetched;
  }
  std::size_t images_fetched = 0;
  std::vector<ImageSignatureRecord> image_signatures;
  if (images) {
    auto fetched = images->finish(log);
    image_signatures = std::move(fetched.signatures);
    failures.insert(failures.end(), fetched.failures.begin(), fetched.failures.end());
    rows.insert(rows.end(), fetched.rows.begin(), fetched.rows.end());
    fetched_bytes += fetched.bytes;
    images_fetched = image_requests.size();
  }
  if (!failures.empty()) {
    std::string message = "deps download failed; nothing was indexed:";
    for (const auto& failure : failures) message += "\n" + failure;
    throw Error(message);
  }
  store.in_transaction([&] {
    for (const auto& row : rows) (void)store.add_artifact(row);
    record_image_signatures(store, image_signatures);
    store.audit("fetch", "deps download",
                json{{"items", fetched_items + fetched_boot_files}, {"images", images_fetched}, {"seeds", seeds_fetched}, {"bytes", fetched_bytes}, {"archs", archs},
                     {"kinds", options.kinds}});
  });
  (void)cache::rebuild_views(store);
  // "Up to date" only where nothing had to come: a manifest whose items arrived in this run
  // says so, so a fill is never mistaken for a check.
  for (const auto& count : counts) {
    std::string tally = "fetched " + std::to_string(count.fetched) + ", present " + std::to_string(count.present);
    if (count.fetched == 0) {
      out << "All dependencies for " << count.manifest << " are up to date (" << tally << ").\n";
      continue;
    }
    out << "vmconfig " << count.manifest << ": " << tally;
    if (count.shared > 0) out << " (" << count.shared << " of them also listed by an earlier manifest: downloaded once)";
    out << ".\n";
  }
  out << transfer_summary({fetched_items, fetched_boot_files, seeds_fetched, images_fetched, fetched_bytes});
}

DepsStatus deps_status(const cache::Store* store, const DepsDownloadOptions& options, std::ostream& out) {
  auto archs = options.archs.empty() ? std::vector<std::string>{default_vmconfig_arch()} : options.archs;
  for (const auto& arch : archs) check_choice(arch, {"amd64", "arm64"}, "arch");
  for (const auto& kind : options.kinds) check_choice(kind, {"knc", "knd"}, "kind");
  std::string base = options.base_url.empty() ? deps_base_url() : options.base_url;
  HttpClient http(options.download.http);
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

}  // namespace podplane::mirror
