#include "mirror/deps_download.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/digest.hpp"
#include "base/error.hpp"
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

  HttpClient http(options.download.http);
  // Everything is fetched and checked first; rows are indexed together at the end.
  std::vector<cache::Artifact> rows;
  std::vector<std::string> failures;
  std::uint64_t fetched_bytes = 0;
  std::size_t fetched_items = 0;
  Downloader downloader(options.download);
  ScratchDir scratch{"podplane-deps-"};
  std::map<std::string, std::pair<std::string, std::uint64_t>> fetched_this_run;  // "url digest" → object, size
  // Boot files read out of an os image this run, by "<image url> <image digest> <path> <digest>":
  // knc and knd manifests of one arch name the same ones.
  std::map<std::string, cache::Artifact> boot_rows_this_run;
  // "url digest" that failed this run: knc and knd share artifacts, and one that already spent
  // its retry budget is not tried again for the next manifest (its failure is reported once).
  std::set<std::string> failed_this_run;
  struct ManifestCount {
    std::string manifest;  // knc_debian-13_amd64
    std::size_t fetched = 0, present = 0;
  };
  std::vector<ManifestCount> counts;
  // Container images of every manifest, once each (knc and knd list the same ones).
  std::vector<ImageRequest> image_requests;
  std::set<std::string> images_seen;

  for (const auto& arch : archs) {
    for (const auto& kind : options.kinds) {
      auto fetched = fetch_manifest(http, base, kind, arch);
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
      auto boot_key = [&](const VmconfigBootFile& file) {
        return image->url + " " + image->digest + " " + file.path + " " + file.digest;
      };
      if (image != items.end()) {
        for (const auto& file : manifest.boot_files) {
          if (is_boot_file_cached(store, *image, file, arch)) continue;
          missing_boot.push_back(file);
        }
      }
      std::vector<ImageRequest> missing_images;
      for (auto& request : vmconfig_image_requests(manifest.document, manifest.name)) {
        std::string key = request.reference.address() + " " + request.pinned_manifest;
        if (!images_seen.insert(key).second || image_stored(store, request)) continue;
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

      auto make_row = [&](const VmconfigItem& item, const std::string& digest, std::uint64_t size) {
        cache::Artifact row;
        row.kind = cache::ArtifactKind::vmconfig_artifact;
        row.address = item.name;
        row.version = item.version;
        row.platform = platform_of(arch);
        row.filename = item.basename();
        row.digest = digest;
        row.size = static_cast<std::int64_t>(size);
        row.upstream_digest = item.digest;
        row.upstream_url = item.url;
        row.trust = cache::Trust::checksum;
        rows.push_back(std::move(row));
      };
      // Reads the boot files of `wanted` out of `image_file`, checks them, and adds them to the
      // store and the rows to index. Throws (nothing added) when one does not match.
      auto add_boot_files = [&](const fs::path& image_file, const std::vector<VmconfigBootFile>& wanted) {
        fs::path work = scratch.path() / ("boot-" + std::to_string(boot_rows_this_run.size()) + "-" + std::to_string(failures.size()));
        fs::create_directories(work);
        auto extracted = read_boot_files(image_file, image_label(*image), wanted, work);
        for (const auto& file : extracted) {
          cache::Artifact row;
          row.kind = cache::ArtifactKind::vmconfig_boot_file;
          row.address = image->name;
          row.version = image->version;
          row.platform = platform_of(arch);
          row.filename = file.file.file_name();
          row.size = static_cast<std::int64_t>(fs::file_size(file.path));
          row.digest = store.add_file(file.path);
          row.upstream_digest = file.file.digest;
          row.trust = cache::Trust::checksum;
          boot_rows_this_run[boot_key(file.file)] = row;
          rows.push_back(row);
          fetched_bytes += static_cast<std::uint64_t>(row.size);
          ++fetched_items;
        }
        std::error_code ignored;
        fs::remove_all(work, ignored);
      };
      // Boot files this run already read from the same image (the other kind's manifest).
      std::vector<VmconfigBootFile> to_read;
      for (const auto& file : missing_boot) {
        if (auto done = boot_rows_this_run.find(boot_key(file)); done != boot_rows_this_run.end()) rows.push_back(done->second);
        else to_read.push_back(file);
      }
      // sha256 items stream straight into the store, checked before the object is committed;
      // sha512 items land in a scratch file first, checked, then added.
      std::vector<DownloadItem> direct;
      std::vector<const VmconfigItem*> direct_items;
      std::vector<const VmconfigItem*> scratch_items;
      for (const auto& item : missing) {
        // knc and knd manifests share most artifacts: fetch each (url, digest) once per run.
        if (auto known = fetched_this_run.find(item.url + " " + item.digest); known != fetched_this_run.end()) {
          make_row(item, known->second.first, known->second.second);
          continue;
        }
        if (failed_this_run.count(item.url + " " + item.digest)) continue;
        // An image with boot files to read goes through a scratch file: nothing of it reaches
        // the store before they are checked.
        bool read_boot = item.name == "os-image" && !to_read.empty();
        if (item.digest.starts_with("sha256:") && !read_boot) {
          direct.push_back(DownloadItem{item.url, TypedDigest::parse(item.digest).hex, item.view_path(), {}});
          direct_items.push_back(&item);
        } else {
          scratch_items.push_back(&item);
        }
      }
      auto outcomes = downloader.fetch_into_store(store, direct);
      for (std::size_t i = 0; i < outcomes.size(); ++i) {
        if (!outcomes[i].ok) {
          failures.push_back(outcomes[i].error);
          failed_this_run.insert(direct_items[i]->url + " " + direct_items[i]->digest);
          continue;
        }
        make_row(*direct_items[i], outcomes[i].digest, outcomes[i].size);
        fetched_this_run[direct_items[i]->url + " " + direct_items[i]->digest] = {outcomes[i].digest, outcomes[i].size};
        fetched_bytes += outcomes[i].size;
        ++fetched_items;
      }
      for (const auto* item : scratch_items) {
        fs::path file = scratch.path() / ("item-" + std::to_string(fetched_items + failures.size()));
        try {
          downloader.fetch_to_file(DownloadItem{item->url, std::nullopt, item->view_path(), {}}, file);
          auto expected = TypedDigest::parse(item->digest);
          auto got = file_digest_hex(file, expected.algorithm);
          if (got != expected.hex) {
            throw Error(mismatch_message("checksum mismatch for " + item->view_path(), expected.str(),
                                         TypedDigest{expected.algorithm, got}.str()));
          }
          if (item->name == "os-image" && !to_read.empty()) {
            add_boot_files(file, to_read);
            to_read.clear();
          }
          auto size = fs::file_size(file);
          auto digest = store.add_file(file);
          make_row(*item, digest, size);
          fetched_this_run[item->url + " " + item->digest] = {digest, size};
          fetched_bytes += size;
          ++fetched_items;
        } catch (const Error& error) {
          failures.push_back(error.what());
          failed_this_run.insert(item->url + " " + item->digest);
        }
        std::error_code ec;
        fs::remove(file, ec);
      }

      // Boot files still to read come out of an image that is already stored.
      if (!to_read.empty() && image != items.end()) {
        std::optional<std::string> stored;
        if (auto row = store.find_artifact(cache::ArtifactKind::vmconfig_artifact, image->name, image->version,
                                           platform_of(arch), image->basename());
            row && row->upstream_digest == image->digest && store.has_object(row->digest)) {
          stored = row->digest;
        } else if (auto known = fetched_this_run.find(image->url + " " + image->digest); known != fetched_this_run.end()) {
          stored = known->second.first;
        }
        if (stored) {  // otherwise the image failed, and said so
          try {
            add_boot_files(store.object_path(*stored), to_read);
          } catch (const Error& error) {
            failures.push_back(error.what());
          }
        }
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
        (void)store.add_bytes(fetched.bytes, manifest_row.digest);
        rows.push_back(std::move(manifest_row));
      }
      if (!quiet) {
        log << "vmconfig " << kind << "_debian-13_" << arch << ": " << items.size() << " artifacts, "
            << missing.size() << " to fetch\n";
      }
      counts.push_back({kind + "_debian-13_" + arch, missing.size() + missing_boot.size(),
                        items.size() - missing.size() + manifest.boot_files.size() - missing_boot.size()});
    }
  }
  // Seeds are cross-arch: fetched once (Podplane: with the first arch).
  std::size_t seeds_fetched = 0;
  if (options.seeds == DepsDownloadOptions::Seeds::fetch) {
    auto seeds = fetch_seeds(store, http, downloader, base, scratch.path(), dry_run ? SeedsMode::list_only : SeedsMode::fetch);
    if (dry_run && !seeds.missing.empty()) {
      out << "Seed snapshots that would be downloaded:\n";
      for (const auto& path : seeds.missing) out << "  \u2022 " << path << "\n";
    }
    failures.insert(failures.end(), seeds.failures.begin(), seeds.failures.end());
    rows.insert(rows.end(), seeds.rows.begin(), seeds.rows.end());
    fetched_bytes += seeds.bytes;
    seeds_fetched = seeds.fetched;
  }
  if (dry_run) return;
  std::size_t images_fetched = 0;
  if (!image_requests.empty()) {
    auto images = fetch_images(store, image_requests, options.download, RegistryCredentials::load(options.registry_auth), log);
    failures.insert(failures.end(), images.failures.begin(), images.failures.end());
    rows.insert(rows.end(), images.rows.begin(), images.rows.end());
    fetched_bytes += images.bytes;
    images_fetched = image_requests.size();
  }
  if (!failures.empty()) {
    std::string message = "deps download failed; nothing was indexed:";
    for (const auto& failure : failures) message += "\n" + failure;
    throw Error(message);
  }
  store.in_transaction([&] {
    for (const auto& row : rows) (void)store.add_artifact(row);
    store.audit("fetch", "deps download",
                json{{"items", fetched_items}, {"images", images_fetched}, {"seeds", seeds_fetched}, {"bytes", fetched_bytes}, {"archs", archs},
                     {"kinds", options.kinds}});
  });
  (void)cache::rebuild_views(store);
  // "Up to date" only where nothing had to come: a manifest whose items arrived in this run
  // says so, so a fill is never mistaken for a check.
  for (const auto& count : counts) {
    std::string tally = "fetched " + std::to_string(count.fetched) + ", present " + std::to_string(count.present);
    if (count.fetched == 0) out << "All dependencies for " << count.manifest << " are up to date (" << tally << ").\n";
    else out << "vmconfig " << count.manifest << ": " << tally << ".\n";
  }
  fetched_items += seeds_fetched;
  if (fetched_items == 0 && images_fetched == 0) out << "No new artifacts: nothing was transferred.\n";
  else if (images_fetched == 0) out << "Fetched " << fetched_items << " artifacts (" << fetched_bytes << " bytes).\n";
  else out << "Fetched " << fetched_items << " artifacts and " << images_fetched << " images (" << fetched_bytes << " bytes).\n";
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
