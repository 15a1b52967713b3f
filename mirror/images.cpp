#include "mirror/images.hpp"

#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cache/row_rules.hpp"
#include "cache/views.hpp"
#include "base/error.hpp"
#include "base/digest.hpp"

namespace podplane::mirror {

namespace {

using nlohmann::json;

bool is_index(const std::string& media_type) {
  return media_type == image_media::oci_index || media_type == image_media::docker_list;
}

struct Platform {
  std::string os, arch, variant;
  // "linux/arm64", "linux/arm/v7".
  std::string str() const { return os + "/" + arch + (variant.empty() ? "" : "/" + variant); }
  // The store's form: linux_arm64, linux_arm_v7 (arm64's usual "v8" is left out).
  std::string row() const {
    return os + "_" + arch + (variant.empty() || (arch == "arm64" && variant == "v8") ? "" : "_" + variant);
  }
  bool matches(const std::string& wanted) const {
    auto parts = std::vector<std::string>{};
    std::stringstream in(wanted);
    for (std::string part; std::getline(in, part, '/');) parts.push_back(part);
    if (parts.size() < 2 || parts[0] != os || parts[1] != arch) return false;
    return parts.size() == 2 || parts[2] == variant || (arch == "arm64" && variant.empty() && parts[2] == "v8");
  }
};

std::string text_field(const json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

Platform platform_of(const json& object) {
  return {text_field(object, "os"), text_field(object, "architecture"), text_field(object, "variant")};
}

struct Descriptor {
  std::string digest;
  std::int64_t size = 0;
};

// A descriptor of a manifest we fetched: its digest must be one we can serve and store.
Descriptor descriptor_of(const json& entry, const std::string& where) {
  Descriptor descriptor;
  descriptor.digest = text_field(entry, "digest");
  if (auto problem = cache::image_digest_problem(descriptor.digest)) throw Error(where + ": descriptor digest " + *problem);
  if (!entry.contains("size") || !entry["size"].is_number_integer() || entry["size"].get<std::int64_t>() < 0)
    throw Error(where + ": descriptor " + descriptor.digest + " has no valid size");
  descriptor.size = entry["size"].get<std::int64_t>();
  return descriptor;
}

json parse_manifest(const FetchedManifest& manifest, const std::string& what) {
  auto document = json::parse(manifest.bytes, nullptr, false);
  if (!document.is_object()) throw Error(what + " (" + manifest.digest + ") is not a JSON object");
  return document;
}

cache::Artifact image_row(cache::ArtifactKind kind, const ImageReference& image, const std::string& version,
                          const std::string& platform, const std::string& digest, std::int64_t size, const std::string& url) {
  cache::Artifact row;
  row.kind = kind;
  row.address = image.address();
  row.version = version;
  row.platform = platform;
  row.filename = digest;
  row.digest = digest.substr(7);
  row.size = size;
  row.upstream_digest = digest;
  row.upstream_url = url;
  row.trust = cache::Trust::checksum;
  return row;
}

}  // namespace

std::vector<std::string> image_platforms_of_archs(const std::vector<std::string>& archs) {
  std::vector<std::string> platforms;
  for (const auto& arch : archs) {
    if (arch == "all") return {};
    platforms.push_back(arch.find('/') == std::string::npos ? "linux/" + arch : arch);
  }
  return platforms;
}

std::vector<ImageRequest> vmconfig_image_requests(const json& document, const std::string& source) {
  std::vector<ImageRequest> requests;
  if (!document.is_object() || !document.contains("vmconfig") || !document["vmconfig"].contains("images")) return requests;
  const auto& images = document["vmconfig"]["images"];
  if (!images.is_array()) throw Error(source + ": vmconfig.images is not an array");
  for (std::size_t i = 0; i < images.size(); ++i) {
    std::string where = source + " images[" + std::to_string(i) + "]";
    const auto& entry = images[i];
    ImageRequest request;
    request.source = where;
    request.reference = ImageReference::parse(text_field(entry, "image"));
    request.pinned_manifest = text_field(entry, "digest");
    request.pinned_index = text_field(entry, "index");
    if (auto problem = cache::image_digest_problem(request.pinned_manifest)) throw Error(where + ": digest " + *problem);
    if (!request.pinned_index.empty())
      if (auto problem = cache::image_digest_problem(request.pinned_index)) throw Error(where + ": index " + *problem);
    if (auto platform = text_field(entry, "platform"); !platform.empty()) request.platforms.push_back(platform);
    requests.push_back(std::move(request));
  }
  return requests;
}

std::vector<ImageRequest> parse_image_list(std::string_view text, const std::string& source,
                                           const std::vector<std::string>& platforms) {
  std::vector<ImageRequest> requests;
  std::istringstream in{std::string(text)};
  std::size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    line.erase(0, line.find_first_not_of(" \t\r"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty()) continue;
    ImageRequest request;
    request.source = source + ":" + std::to_string(number);
    try {
      request.reference = ImageReference::parse(line);
    } catch (const Error& error) {
      throw Error(request.source + ": " + error.what());
    }
    request.platforms = platforms;
    requests.push_back(std::move(request));
  }
  return requests;
}

bool image_stored(const cache::Store& store, const ImageRequest& request) {
  if (request.pinned_manifest.empty()) return false;
  auto manifests = store.artifacts({.kind = cache::ArtifactKind::image_manifest, .address = request.reference.address()});
  bool found = false;
  for (const auto& row : manifests) found = found || (row.filename == request.pinned_manifest && store.has_object(row.digest));
  if (!found) return false;
  if (!request.pinned_index.empty()) {
    bool index = false;
    for (const auto& row : store.artifacts({.kind = cache::ArtifactKind::image_index, .address = request.reference.address()}))
      index = index || (row.filename == request.pinned_index && store.has_object(row.digest));
    if (!index) return false;
  }
  auto blobs = store.artifacts(
      {.kind = cache::ArtifactKind::image_blob, .address = request.reference.address(), .version = request.pinned_manifest});
  if (blobs.empty()) return false;
  for (const auto& row : blobs)
    if (!store.has_object(row.digest)) return false;
  return true;
}

ImageFetch fetch_images(cache::Store& store, const std::vector<ImageRequest>& requests, const DownloadOptions& options,
                        const RegistryCredentials& credentials, std::ostream& log) {
  ImageFetch result;
  OciPuller puller(options.http, credentials);
  bool quiet = options.progress == Progress::quiet;
  std::vector<DownloadItem> downloads;
  std::vector<std::pair<std::string, std::int64_t>> download_sizes;  // what each download must be
  std::map<std::string, std::size_t> queued;                          // blob hex → index in downloads
  std::vector<std::size_t> download_request;                          // download → request index

  for (std::size_t r = 0; r < requests.size(); ++r) {
    const auto& request = requests[r];
    const auto& image = request.reference;
    std::vector<cache::Artifact> rows;
    try {
      // A pinned or given digest is fetched by digest: immutable, whatever the tag says today.
      std::string top_reference = !request.pinned_index.empty() ? request.pinned_index
                                  : !image.digest.empty()       ? image.digest
                                                                : image.tag;
      if (!request.pinned_index.empty() && !image.digest.empty() && image.digest != request.pinned_index)
        throw Error(mismatch_message("the reference's digest is not the pinned index", request.pinned_index, image.digest));
      auto top = puller.manifest(image, top_reference);
      std::string version = image.tag.empty() ? top.digest : image.tag;
      (void)store.add_bytes(top.bytes, top.digest.substr(7));

      std::vector<std::pair<FetchedManifest, Platform>> manifests;
      if (is_index(top.media_type)) {
        rows.push_back(image_row(cache::ArtifactKind::image_index, image, version, "", top.digest,
                                 static_cast<std::int64_t>(top.bytes.size()), top.url));
        auto document = parse_manifest(top, "the index of " + image.str());
        if (!document.contains("manifests") || !document["manifests"].is_array())
          throw Error("the index " + top.digest + " of " + image.str() + " has no manifests list");
        std::vector<std::string> offered;
        bool pinned_listed = false;
        for (const auto& entry : document["manifests"]) {
          auto platform = platform_of(entry.value("platform", json::object()));
          if (platform.os.empty() || platform.arch.empty() || platform.os == "unknown") continue;  // attestations
          offered.push_back(platform.str());
          auto descriptor = descriptor_of(entry, "the index " + top.digest + " of " + image.str());
          bool wanted = request.platforms.empty();
          for (const auto& p : request.platforms) wanted = wanted || platform.matches(p);
          if (!request.pinned_manifest.empty()) {
            if (descriptor.digest != request.pinned_manifest) continue;
            pinned_listed = true;
            if (!wanted)
              throw Error("the index " + top.digest + " lists the pinned manifest " + request.pinned_manifest + " for " +
                          platform.str() + ", not for " + request.platforms.front());
          } else if (!wanted) {
            continue;
          }
          auto manifest = puller.manifest(image, descriptor.digest);
          if (static_cast<std::int64_t>(manifest.bytes.size()) != descriptor.size)
            throw Error(mismatch_message("the manifest " + descriptor.digest + " of " + image.str() + " has another size than its index says",
                                         std::to_string(descriptor.size), std::to_string(manifest.bytes.size())));
          if (is_index(manifest.media_type))
            throw Error("the index " + top.digest + " of " + image.str() + " lists another index (" + descriptor.digest +
                        ") for " + platform.str() + "; nested indexes are not supported");
          manifests.emplace_back(std::move(manifest), platform);
        }
        if (!request.pinned_manifest.empty() && !pinned_listed)
          throw Error("the index " + top.digest + " of " + image.str() + " does not list the pinned manifest " +
                      request.pinned_manifest);
        if (manifests.empty()) {
          std::string list;
          for (const auto& p : offered) list += (list.empty() ? "" : ", ") + p;
          std::string wanted;
          for (const auto& p : request.platforms) wanted += (wanted.empty() ? "" : ", ") + p;
          throw Error("the index " + top.digest + " of " + image.str() + " has no manifest for " + wanted + " (it has: " +
                      (list.empty() ? "none" : list) + ")");
        }
      } else {
        if (!request.pinned_manifest.empty() && request.pinned_manifest != top.digest)
          throw Error(mismatch_message("image " + image.str() + " is not the pinned manifest", request.pinned_manifest, top.digest));
        // A single-platform image: its platform is in its config, fetched below like any blob;
        // read it here (small) so that the rows say which platform it is.
        auto document = parse_manifest(top, "the manifest of " + image.str());
        auto config = descriptor_of(document.value("config", json::object()), "the manifest " + top.digest + " of " + image.str());
        if (config.size > 4 * 1024 * 1024) throw Error("the config of " + image.str() + " is larger than 4 MiB");
        Downloader small(options);
        auto outcome = small.fetch_into_store(
            store, {DownloadItem{puller.blob_url(image, config.digest), config.digest.substr(7), image.str() + " config",
                                 puller.auth_headers(image)}});
        if (!outcome[0].ok) throw Error(outcome[0].error);
        auto platform = platform_of(json::parse(store.read_object(config.digest.substr(7)), nullptr, false));
        if (platform.os.empty() || platform.arch.empty())
          throw Error("the config " + config.digest + " of " + image.str() + " names no os and architecture");
        bool wanted = request.platforms.empty();
        for (const auto& p : request.platforms) wanted = wanted || platform.matches(p);
        if (!wanted)
          throw Error("image " + image.str() + " is a single-platform image for " + platform.str() + ", which was not asked for");
        manifests.emplace_back(top, platform);
      }

      for (const auto& [manifest, platform] : manifests) {
        (void)store.add_bytes(manifest.bytes, manifest.digest.substr(7));
        rows.push_back(image_row(cache::ArtifactKind::image_manifest, image, version, platform.row(), manifest.digest,
                                 static_cast<std::int64_t>(manifest.bytes.size()), manifest.url));
        auto document = parse_manifest(manifest, "the manifest of " + image.str() + " for " + platform.str());
        std::string where = "the manifest " + manifest.digest + " of " + image.str();
        std::vector<Descriptor> blobs{descriptor_of(document.value("config", json::object()), where)};
        if (!document.contains("layers") || !document["layers"].is_array()) throw Error(where + " has no layers list");
        for (const auto& layer : document["layers"]) blobs.push_back(descriptor_of(layer, where));
        for (const auto& blob : blobs) {
          std::string hex = blob.digest.substr(7);
          rows.push_back(image_row(cache::ArtifactKind::image_blob, image, manifest.digest, platform.row(), blob.digest,
                                   blob.size, puller.blob_url(image, blob.digest)));
          if (queued.count(hex)) continue;
          if (store.has_object(hex)) {
            std::error_code ec;
            auto stored = std::filesystem::file_size(store.object_path(hex), ec);
            if (!ec && static_cast<std::int64_t>(stored) != blob.size)
              throw Error(mismatch_message(where + " gives blob " + blob.digest + " another size than the stored object's",
                                           std::to_string(stored), std::to_string(blob.size)));
            ++result.blobs_present;
            queued[hex] = SIZE_MAX;
            continue;
          }
          queued[hex] = downloads.size();
          downloads.push_back(DownloadItem{puller.blob_url(image, blob.digest), hex, image.address() + "@" + blob.digest,
                                           puller.auth_headers(image)});
          download_sizes.emplace_back(blob.digest, blob.size);
          download_request.push_back(r);
        }
      }
      if (!quiet) log << "image " << image.str() << ": " << manifests.size() << " platform(s)\n";
      result.rows.insert(result.rows.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    } catch (const Error& error) {
      result.failures.push_back(request.source + ": " + image.str() + ": " + error.what());
    }
  }

  Downloader downloader(options);
  auto outcomes = downloader.fetch_into_store(store, downloads);
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const auto& request = requests[download_request[i]];
    if (!outcomes[i].ok) {
      result.failures.push_back(request.source + ": " + request.reference.str() + ": " + outcomes[i].error);
      continue;
    }
    if (static_cast<std::int64_t>(outcomes[i].size) != download_sizes[i].second)
      result.failures.push_back(request.source + ": " + request.reference.str() + ": " +
                                mismatch_message("blob " + download_sizes[i].first + " has another size than its manifest says",
                                                 std::to_string(download_sizes[i].second), std::to_string(outcomes[i].size)));
    ++result.blobs_fetched;
    result.bytes += outcomes[i].size;
  }
  return result;
}

void deps_images(cache::Store& store, const DepsImagesOptions& options, std::ostream& out, std::ostream& log) {
  if (options.list_file.empty()) throw UsageError("deps images needs -f FILE (one image reference a line)");
  std::string text;
  if (options.list_file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(options.list_file, std::ios::binary);
    if (!in) throw Error("cannot read the image list " + options.list_file);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const auto& arch : options.archs)
    if (arch != "all" && arch != "amd64" && arch != "arm64" && arch.find('/') == std::string::npos)
      throw UsageError("unsupported arch \"" + arch + "\" (amd64, arm64, all, or an os/arch[/variant] platform)");
  auto requests = parse_image_list(text, options.list_file, image_platforms_of_archs(options.archs));
  if (requests.empty()) throw Error("the image list " + options.list_file + " names no image");
  auto fetched = fetch_images(store, requests, options.download, RegistryCredentials::load(options.registry_auth), log);
  if (!fetched.failures.empty()) {
    std::string message = "deps images failed; nothing was indexed:";
    for (const auto& failure : fetched.failures) message += "\n" + failure;
    throw Error(message);
  }
  store.in_transaction([&] {
    for (const auto& row : fetched.rows) (void)store.add_artifact(row);
    store.audit("fetch", "deps images",
                nlohmann::json{{"images", requests.size()}, {"blobs", fetched.blobs_fetched}, {"bytes", fetched.bytes}});
  });
  out << "Stored " << requests.size() << " images: fetched " << fetched.blobs_fetched << " blobs (" << fetched.bytes
      << " bytes), " << fetched.blobs_present << " already stored.\n";
}

}  // namespace podplane::mirror
