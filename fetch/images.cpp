#include "fetch/images.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cache/row_rules.hpp"
#include "cache/views.hpp"
#include "base/error.hpp"
#include "base/digest.hpp"
#include "net/oci_reference.hpp"

namespace podplane::fetch {

namespace {

using nlohmann::json;

bool is_index(const std::string& media_type) {
  return media_type == net::image_media::oci_index || media_type == net::image_media::docker_list;
}

struct Platform {
  std::string os, arch, variant;
  // An OCI artifact that no machine runs (a Helm chart) is stored as unknown/unknown, the
  // platform image indexes give such manifests (buildx's attestations).
  static Platform none() { return {"unknown", "unknown", ""}; }
  bool is_none() const { return os == "unknown" && arch == "unknown"; }
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

// Only manifests and indexes of the OCI and Docker types are stored, so that `mirror serve`
// never hands a browser another type (text/html with a script) from the mirror's origin.
void check_manifest_type(const FetchedManifest& manifest, const std::string& what) {
  if (net::image_media::is_manifest_type(manifest.media_type)) return;
  std::string shown;
  for (unsigned char c : manifest.media_type.substr(0, 100)) shown += (c < 0x20 || c >= 0x7f || c == '"') ? '?' : static_cast<char>(c);
  throw Error(what + " (" + manifest.digest + ") has the media type \"" + shown +
              "\", not an OCI or Docker image manifest or index; it was not stored");
}

// Whether a manifest is an OCI artifact rather than a runnable image: it says so
// (`artifactType`, OCI 1.1), or its config is not an image config (a Helm chart's
// application/vnd.cncf.helm.config.v1+json, a Flux artifact's). An artifact has no platform to
// select: it is taken whatever --arch says, and its config is a blob like any other.
bool is_artifact(const json& manifest) {
  if (manifest.contains("artifactType")) return true;
  auto config = text_field(manifest.value("config", json::object()), "mediaType");
  return !config.empty() && config != net::image_media::oci_config && config != net::image_media::docker_config;
}

json parse_manifest(const FetchedManifest& manifest, const std::string& what) {
  auto document = json::parse(manifest.bytes, nullptr, false);
  if (!document.is_object()) throw Error(what + " (" + manifest.digest + ") is not a JSON object");
  return document;
}

// A manifest whose `subject` is an image's top manifest (an SBOM, an attestation, a cosign
// signature in the referrers form), or one cosign attached to it by tag (sha256-<hex>.att,
// .sbom), held in memory from fetch_tops() until the run is over; its config and layers come
// with the run like any image's blobs.
struct Referrer {
  FetchedManifest manifest;
  std::vector<Descriptor> blobs;  // config, then layers
  std::string tag;                // cosign's tag it was fetched at; empty for a referrer
};

// The config and layers of an image manifest, in that order.
std::vector<Descriptor> manifest_blobs(const json& manifest, const std::string& what) {
  std::vector<Descriptor> blobs{descriptor_of(manifest.value("config", json::object()), what)};
  if (!manifest.contains("layers") || !manifest["layers"].is_array()) throw Error(what + " has no layers list");
  for (const auto& layer : manifest["layers"]) blobs.push_back(descriptor_of(layer, what));
  return blobs;
}

// The referrers of `subject` (OciPuller::referrers), each fetched by its digest and checked: a
// manifest type, the size the index gives it, and a subject that is `subject` (the tag
// schema's index is anyone's to push). An index among them is left out (not supported).
std::vector<Referrer> fetch_referrers(OciPuller& puller, const net::ImageReference& image, const std::string& subject) {
  std::vector<Referrer> found;
  auto index = puller.referrers(image, subject);
  if (!index) return found;
  std::string where = "the referrers of " + image.address() + "@" + subject;
  auto document = json::parse(index->bytes, nullptr, false);
  if (!document.is_object() || !document.contains("manifests") || !document["manifests"].is_array())
    throw Error(where + " (" + net::redact_url(index->url) + ") are not an OCI image index");
  // Each referrer is a request and stays in memory until the run ends: a list of thousands
  // (anyone may push to the tag schema's index) is refused before any is fetched.
  check_referrer_limits(document["manifests"], kSignatureLimits, where);
  std::set<std::string> seen;
  for (const auto& entry : document["manifests"]) {
    auto descriptor = descriptor_of(entry, where);
    if (is_index(text_field(entry, "mediaType")) || !seen.insert(descriptor.digest).second) continue;
    std::string what = "the referrer " + descriptor.digest + " of " + image.address() + "@" + subject;
    Referrer referrer;
    referrer.manifest = puller.manifest(image, descriptor.digest);
    check_manifest_type(referrer.manifest, what);
    if (is_index(referrer.manifest.media_type)) continue;
    if (static_cast<std::int64_t>(referrer.manifest.bytes.size()) != descriptor.size)
      throw Error(mismatch_message(what + " has another size than the referrers index says", std::to_string(descriptor.size),
                                   std::to_string(referrer.manifest.bytes.size())));
    auto manifest = parse_manifest(referrer.manifest, what);
    auto named = text_field(manifest.value("subject", json::object()), "digest");
    if (named != subject) throw Error(mismatch_message(what + " names another subject", subject, named.empty() ? "none" : named));
    referrer.blobs = manifest_blobs(manifest, what);
    found.push_back(std::move(referrer));
  }
  return found;
}

// What cosign attached to `subject` by tag besides its signature: attestations at
// sha256-<hex>.att (DSSE envelopes) and an SBOM at sha256-<hex>.sbom; this is the one at
// `suffix`. Most images have neither, so a 404 is no error (nullopt); any other failure is.
// Each must be an image manifest (as cosign writes them) and is fetched by tag, so only the
// registry's Docker-Content-Digest vouches for it; its blobs are held to their digests like
// every blob. Carried, never verified (docs/images.md "Attestations and SBOMs attached by tag").
std::optional<Referrer> fetch_cosign_attachment(OciPuller& puller, const net::ImageReference& image, const std::string& subject,
                                                std::string_view suffix) {
  std::string tag = cache::cosign_attachment_tag(subject, suffix);
  auto manifest = puller.manifest_if_present(image, tag);
  if (!manifest) return std::nullopt;
  std::string what = "the cosign attachment " + image.address() + ":" + tag;
  check_manifest_type(*manifest, what);
  if (is_index(manifest->media_type)) throw Error(what + " (" + manifest->digest + ") is an index, not an image manifest");
  auto blobs = manifest_blobs(parse_manifest(*manifest, what), what);
  return Referrer{std::move(*manifest), std::move(blobs), tag};
}

cache::Artifact image_row(cache::ArtifactKind kind, const net::ImageReference& image, const std::string& version,
                          const std::string& platform, const std::string& digest, std::int64_t size, const std::string& url) {
  return cache::image_row(kind, image.address(), version, platform, digest, size, url);
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
    request.reference = net::ImageReference::parse(text_field(entry, "image"));
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
      request.reference = net::ImageReference::parse(line);
    } catch (const Error& error) {
      throw Error(request.source + ": " + error.what());
    }
    request.platforms = platforms;
    requests.push_back(std::move(request));
  }
  return requests;
}

bool image_stored(const cache::Store& store, const ImageRequest& request, const cache::CosignPolicy& cosign_policy) {
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
  if (const auto& trust = cosign_policy.trust_for(request.reference.address()); !trust.empty()) {
    const std::string& top = request.pinned_index.empty() ? request.pinned_manifest : request.pinned_index;
    try {
      (void)cache::verify_stored_cosign_signature(store, request.reference.address(), top, trust);
    } catch (const Error&) {
      return false;  // fetched again, signature and all
    }
  }
  return true;
}

// Per image request: what resolve() found, then what the run brought.
struct ImageFetcher::Impl {
  // One platform manifest an image wants, in the order its index lists it.
  struct Wanted {
    Descriptor descriptor;
    std::string media_type;                 // the index's word for it, until the bytes say
    Platform platform;
    std::optional<FetchedManifest> manifest;  // once in the store
    std::vector<Descriptor> blobs;          // config, then layers, once the manifest is read
    std::string error;
  };
  struct Image {
    std::optional<FetchedManifest> top;  // stored by finish(), once the run is over
    std::string version;
    std::optional<cache::Artifact> index_row;
    std::vector<Wanted> wanted;
    std::string error;  // resolving it failed: no rows
  };

  cache::Store& store;
  std::vector<ImageRequest> requests;
  net::DownloadOptions options;
  std::vector<OciPuller> pullers;  // one per request: each resolves on its own thread
  // The request whose top manifest (and puller, with its auth) serves request r: knc and knd
  // manifests pin the same images, one request per arch.
  std::vector<std::size_t> first;

  OciPuller& puller(std::size_t r) { return pullers[first[r]]; }
  std::vector<Image> images;
  // Every blob hex this run: what the run made of it (nullopt while it is on its way, or when
  // the store had it already).
  std::map<std::string, std::optional<net::DownloadOutcome>> blobs;
  std::set<std::string> present;  // blob hex the store had before
  std::size_t blobs_present = 0;
  std::vector<std::optional<FetchedManifest>> tops;  // by fetch_tops(), for each first request
  std::vector<std::string> top_errors;
  // require_signatures(): the policy, and what fetch_tops() made of each first request's signature.
  cache::CosignPolicy policy;
  const cache::CosignTrust& trust_for(std::size_t r) const { return policy.trust_for(requests[r].reference.address()); }
  std::vector<std::optional<FetchedSignature>> signatures;
  std::vector<std::string> signature_errors;
  // take_referrers(): what fetch_tops() found of each first request's referrers.
  bool with_referrers = false;
  std::vector<std::vector<Referrer>> referrers;
  std::vector<std::string> referrer_errors;
  // Set by the lookups of each first request's referrers (fetch_tops()), which run beside the
  // rest of the image: ready once referrers[r] and referrer_errors[r] are. start() hands them
  // to the run (after()), which then holds the last reference to each.
  std::vector<std::shared_future<void>> referrers_found;
  std::atomic<net::DownloadRun*> run_to_wake{nullptr};  // set by start(): woken as each lookup ends

  // On a thread of its own: the referrers' lookups' results in their order (the first error
  // wins), then a wake for the run, which looks at once (before the future is ready, as the
  // run may end and go once it is).
  void collect_referrers(std::size_t r, std::vector<std::future<std::vector<Referrer>>>& lookups) {
    for (auto& found : lookups) {
      try {
        auto got = found.get();
        if (!referrer_errors[r].empty()) continue;
        for (auto& referrer : got) referrers[r].push_back(std::move(referrer));
      } catch (const Error& error) {
        if (referrer_errors[r].empty()) referrer_errors[r] = error.what();
      }
    }
    if (net::DownloadRun* run = run_to_wake.load()) run->wake();
  }

  // On the run's thread once the referrers of request r's top are known: their blobs join the
  // run, or their error fails the image.
  void referrers_arrived(std::size_t r, net::DownloadRun& run) {
    if (!images[r].error.empty()) return;
    const std::size_t f = first[r];
    const auto& image = requests[r].reference;
    try {
      if (!referrer_errors[f].empty()) throw Error(referrer_errors[f]);
      for (const auto& referrer : referrers[f])
        add_blobs(r, referrer.blobs, "the referrer " + referrer.manifest.digest + " of " + image.str(), run);
    } catch (const Error& error) {
      images[r].error = error.what();
    }
  }

  // Reads a platform manifest (fetched for an index, or the image's own) and adds the blobs the
  // store lacks to `run`. Errors go to the manifest's `error`.
  void read_manifest(std::size_t r, Wanted& wanted, net::DownloadRun& run) {
    const auto& image = requests[r].reference;
    const auto& manifest = *wanted.manifest;
    auto document = parse_manifest(manifest, "the manifest of " + image.str() + " for " + wanted.platform.str());
    std::string where = "the manifest " + manifest.digest + " of " + image.str();
    std::vector<Descriptor> found{descriptor_of(document.value("config", json::object()), where)};
    if (!document.contains("layers") || !document["layers"].is_array()) throw Error(where + " has no layers list");
    for (const auto& layer : document["layers"]) found.push_back(descriptor_of(layer, where));
    wanted.blobs = found;
    add_blobs(r, found, where, run);
  }

  // Adds the blobs of one manifest (`where`) that neither the store nor this run has to `run`.
  void add_blobs(std::size_t r, const std::vector<Descriptor>& found, const std::string& where, net::DownloadRun& run) {
    const auto& image = requests[r].reference;
    auto& puller = this->puller(r);
    for (const auto& blob : found) {
      std::string hex = blob.digest.substr(7);
      if (blobs.count(hex)) continue;
      if (store.has_object(hex)) {
        std::error_code ec;
        auto stored = std::filesystem::file_size(store.object_path(hex), ec);
        if (!ec && static_cast<std::int64_t>(stored) != blob.size)
          throw Error(mismatch_message(where + " gives blob " + blob.digest + " another size than the stored object's",
                                       std::to_string(stored), std::to_string(blob.size)));
        blobs[hex] = std::nullopt;
        present.insert(hex);
        ++blobs_present;
        continue;
      }
      blobs[hex] = std::nullopt;
      run.add(net::DownloadItem{puller.blob_url(image, blob.digest), hex, image.address() + "@" + blob.digest,
                           puller.auth_headers(image), static_cast<std::uint64_t>(blob.size)},
              [this, hex](const net::DownloadOutcome& outcome) { blobs[hex] = outcome; });
    }
  }

  // A platform manifest the run brought (checked against its digest by the store's writer).
  void manifest_arrived(std::size_t r, Wanted& wanted, const net::DownloadOutcome& outcome, net::DownloadRun& run) {
    const auto& image = requests[r].reference;
    try {
      if (!outcome.ok)
        throw Error("cannot fetch the manifest " + image.address() + "@" + wanted.descriptor.digest + ": " + outcome.error);
      FetchedManifest manifest;
      manifest.bytes = store.read_object(outcome.digest);
      manifest.digest = "sha256:" + outcome.digest;
      manifest.media_type = net::manifest_media_type(manifest.bytes, wanted.media_type);
      manifest.url = puller(r).manifest_url(image, wanted.descriptor.digest);
      check_manifest_type(manifest, "the manifest " + wanted.descriptor.digest + " of " + image.str());
      if (static_cast<std::int64_t>(manifest.bytes.size()) != wanted.descriptor.size)
        throw Error(mismatch_message("the manifest " + wanted.descriptor.digest + " of " + image.str() +
                                         " has another size than its index says",
                                     std::to_string(wanted.descriptor.size), std::to_string(manifest.bytes.size())));
      if (is_index(manifest.media_type))
        throw Error("the index " + images[r].index_row->filename + " of " + image.str() + " lists another index (" +
                    wanted.descriptor.digest + ") for " + wanted.platform.str() + "; nested indexes are not supported");
      wanted.manifest = std::move(manifest);
      read_manifest(r, wanted, run);
    } catch (const Error& error) {
      wanted.error = error.what();
    }
  }

  // The top manifest of request r (fetched already) into the store, its wanted platforms chosen.
  void resolve(std::size_t r, const FetchedManifest& top) {
    const auto& request = requests[r];
    const auto& image = request.reference;
    auto& state = images[r];
    check_manifest_type(top, "the manifest of " + image.str());
    state.version = image.tag.empty() ? top.digest : image.tag;
    state.top = top;
    if (is_index(top.media_type)) {
      state.index_row = image_row(cache::ArtifactKind::image_index, image, state.version, "", top.digest,
                                  static_cast<std::int64_t>(top.bytes.size()), top.url);
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
        state.wanted.push_back({descriptor, text_field(entry, "mediaType"), platform, std::nullopt, {}, ""});
      }
      if (!request.pinned_manifest.empty() && !pinned_listed)
        throw Error("the index " + top.digest + " of " + image.str() + " does not list the pinned manifest " +
                    request.pinned_manifest);
      if (state.wanted.empty()) {
        std::string list;
        for (const auto& p : offered) list += (list.empty() ? "" : ", ") + p;
        std::string wanted;
        for (const auto& p : request.platforms) wanted += (wanted.empty() ? "" : ", ") + p;
        throw Error("the index " + top.digest + " of " + image.str() + " has no manifest for " + wanted + " (it has: " +
                    (list.empty() ? "none" : list) + ")");
      }
      return;
    }
    if (!request.pinned_manifest.empty() && request.pinned_manifest != top.digest)
      throw Error(mismatch_message("image " + image.str() + " is not the pinned manifest", request.pinned_manifest, top.digest));
    auto document = parse_manifest(top, "the manifest of " + image.str());
    if (is_artifact(document)) {
      state.wanted.push_back({Descriptor{top.digest, static_cast<std::int64_t>(top.bytes.size())}, top.media_type,
                              Platform::none(), top, {}, ""});
      return;
    }
    // A single-platform image: its platform is in its config, fetched here (small) so that the
    // rows say which platform it is.
    auto config = descriptor_of(document.value("config", json::object()), "the manifest " + top.digest + " of " + image.str());
    if (config.size > 4 * 1024 * 1024) throw Error("the config of " + image.str() + " is larger than 4 MiB");
    net::Downloader small(options);
    auto outcome = small.fetch_into_store(
        store, {net::DownloadItem{puller(r).blob_url(image, config.digest), config.digest.substr(7), image.str() + " config",
                             puller(r).auth_headers(image), static_cast<std::uint64_t>(config.size)}});
    if (!outcome[0].ok) throw Error(outcome[0].error);
    auto platform = platform_of(json::parse(store.read_object(config.digest.substr(7)), nullptr, false));
    if (platform.os.empty() || platform.arch.empty())
      throw Error("the config " + config.digest + " of " + image.str() + " names no os and architecture");
    bool wanted = request.platforms.empty();
    for (const auto& p : request.platforms) wanted = wanted || platform.matches(p);
    if (!wanted)
      throw Error("image " + image.str() + " is a single-platform image for " + platform.str() + ", which was not asked for");
    state.wanted.push_back({Descriptor{top.digest, static_cast<std::int64_t>(top.bytes.size())}, top.media_type, platform,
                            top, {}, ""});
  }
};

ImageFetcher::ImageFetcher(cache::Store& store, std::vector<ImageRequest> requests, const net::DownloadOptions& options,
                           const net::RegistryCredentials& credentials)
    : impl_(new Impl{store, std::move(requests), options, {}, {}, {}, {}, {}, 0, {}, {}, cache::CosignPolicy{}, {}, {}, false, {}, {}, {}, {}}) {
  for (std::size_t r = 0; r < impl_->requests.size(); ++r) impl_->pullers.emplace_back(options.http, credentials);
  impl_->images.resize(impl_->requests.size());
}

ImageFetcher::~ImageFetcher() = default;

void ImageFetcher::require_signatures(cache::CosignPolicy policy) { impl_->policy = std::move(policy); }

void ImageFetcher::take_referrers() { impl_->with_referrers = true; }

void ImageFetcher::resolve() {
  fetch_tops();
  resolve_tops();
}

void ImageFetcher::fetch_tops() {
  auto& impl = *impl_;
  const std::size_t count = impl.requests.size();
  // Every top manifest at once (a thread and a puller each, at most --jobs at a time): they
  // answer the registries' auth too, so that the run's requests carry it.
  impl.tops.assign(count, std::nullopt);
  impl.top_errors.assign(count, "");
  auto& tops = impl.tops;
  auto& errors = impl.top_errors;
  impl.signatures.assign(count, std::nullopt);
  impl.signature_errors.assign(count, "");
  impl.referrers.assign(count, {});
  impl.referrer_errors.assign(count, "");
  impl.referrers_found.assign(count, {});
  auto top_reference = [&](std::size_t r) {
    // A pinned or given digest is fetched by digest: immutable, whatever the tag says today.
    const auto& request = impl.requests[r];
    return !request.pinned_index.empty() ? request.pinned_index
           : !request.reference.digest.empty() ? request.reference.digest
                                                : request.reference.tag;
  };
  std::map<std::string, std::size_t> first_of;  // "address reference" → the first request asking it
  std::vector<std::size_t> fetching;           // requests whose top is fetched
  impl.first.clear();
  for (std::size_t r = 0; r < count; ++r) {
    auto [known, added] = first_of.try_emplace(impl.requests[r].reference.address() + " " + top_reference(r), r);
    impl.first.push_back(known->second);
    if (added) fetching.push_back(r);
  }
  // What hangs beside a top manifest: its signature (when keys are given), its referrers and
  // cosign's .att and .sbom tags. Independent lookups, mostly 404s: made at once, the
  // referrers' each on a sibling of the request's puller (its auth already answered), so that
  // they cost one round trip rather than one each. The signature is waited for here (it is
  // checked before anything of the image is fetched); the referrers are not: they are collected
  // on a thread of their own while the image's platform manifests and blobs come, and their
  // blobs join the run when they are known (start()).
  auto fetch_beside_top = [&](std::size_t r) {
    const auto& image = impl.requests[r].reference;
    const std::string subject = tops[r]->digest;
    if (impl.with_referrers) {
      auto lookup = [&](auto fetch) {
        return std::async(std::launch::async, [fetch, puller = impl.pullers[r].sibling()]() mutable { return fetch(puller); });
      };
      std::vector<std::future<std::vector<Referrer>>> lookups;
      lookups.push_back(lookup([&image, subject](OciPuller& puller) { return fetch_referrers(puller, image, subject); }));
      for (auto suffix : {cache::kCosignAttestationSuffix, cache::kCosignSbomSuffix}) {
        lookups.push_back(lookup([&image, subject, suffix](OciPuller& puller) {
          std::vector<Referrer> found;
          if (auto attached = fetch_cosign_attachment(puller, image, subject, suffix)) found.push_back(std::move(*attached));
          return found;
        }));
      }
      impl.referrers_found[r] = std::async(std::launch::async, [&impl, r, lookups = std::move(lookups)]() mutable {
                                  impl.collect_referrers(r, lookups);
                                }).share();
    }
    if (!impl.trust_for(r).empty()) {
      try {
        impl.signatures[r] = fetch_verified_signature(impl.pullers[r], image, subject, impl.trust_for(r));
      } catch (const Error& error) {
        impl.signature_errors[r] = error.what();
      }
    }
  };
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k = next++; k < fetching.size(); k = next++) {
      const std::size_t r = fetching[k];
      try {
        tops[r] = impl.pullers[r].manifest(impl.requests[r].reference, top_reference(r));
      } catch (const Error& error) {
        errors[r] = error.what();
      }
      if (tops[r]) fetch_beside_top(r);
    }
  };
  std::vector<std::thread> threads;
  const std::size_t workers = std::min<std::size_t>(fetching.size(), static_cast<std::size_t>(std::max(1, impl.options.jobs)));
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& thread : threads) thread.join();
}

void ImageFetcher::resolve_tops() {
  auto& impl = *impl_;
  auto& tops = impl.tops;
  auto& errors = impl.top_errors;
  for (std::size_t r = 0; r < impl.requests.size(); ++r) {
    try {
      const auto& request = impl.requests[r];
      const auto& image = request.reference;
      if (!request.pinned_index.empty() && !image.digest.empty() && image.digest != request.pinned_index)
        throw Error(mismatch_message("the reference's digest is not the pinned index", request.pinned_index, image.digest));
      const std::size_t f = impl.first[r];
      if (!tops[f]) throw Error(errors[f]);
      // Refused before anything of it is stored: resolve() stores a single-platform config.
      if (!impl.trust_for(f).empty() && !impl.signatures[f]) throw Error(impl.signature_errors[f]);
      impl.resolve(r, *tops[f]);
    } catch (const Error& error) {
      impl.images[r].error = error.what();
    }
  }
}

void ImageFetcher::start(net::DownloadRun& run) {
  auto& impl = *impl_;
  // Every request's referrers, failed image or not: the run does not end before each lookup
  // has (so none wakes a run that is gone), and holds the last reference to it.
  impl.run_to_wake.store(&run);
  for (std::size_t r = 0; r < impl.requests.size(); ++r) {
    const auto& found = impl.referrers_found.empty() ? std::shared_future<void>() : impl.referrers_found[impl.first[r]];
    if (found.valid()) run.after(found, [&impl, r, &run] { impl.referrers_arrived(r, run); });
  }
  impl.referrers_found.clear();
  for (std::size_t r = 0; r < impl.requests.size(); ++r) {
    if (!impl.images[r].error.empty()) continue;
    const auto& image = impl.requests[r].reference;
    auto& puller = impl.puller(r);
    for (auto& wanted : impl.images[r].wanted) {
      if (wanted.manifest) {  // the image's own manifest, fetched by resolve()
        try {
          impl.read_manifest(r, wanted, run);
        } catch (const Error& error) {
          wanted.error = error.what();
        }
        continue;
      }
      auto headers = puller.auth_headers(image);
      headers.push_back(std::string("Accept: ") + net::image_media::accept_all);
      run.add(net::DownloadItem{puller.manifest_url(image, wanted.descriptor.digest), wanted.descriptor.digest.substr(7),
                           image.address() + "@" + wanted.descriptor.digest, std::move(headers),
                           static_cast<std::uint64_t>(wanted.descriptor.size)},
              [&impl, r, &wanted, &run](const net::DownloadOutcome& outcome) { impl.manifest_arrived(r, wanted, outcome, run); });
    }
  }
}

ImageFetch ImageFetcher::finish(std::ostream& log) {
  auto& impl = *impl_;
  for (const auto& found : impl.referrers_found)  // none left after start(): the run waited for them
    if (found.valid()) found.wait();
  ImageFetch result;
  const bool quiet = impl.options.progress == net::Progress::quiet;
  // The top manifests, kept out of the run's way until now (their syncs overlap here).
  std::vector<std::string_view> tops;
  std::set<std::string> top_digests;
  for (const auto& state : impl.images)
    if (state.top && top_digests.insert(state.top->digest).second) tops.push_back(state.top->bytes);
  // The signatures of the images that were not refused: their manifests and payloads too.
  for (std::size_t r = 0; r < impl.requests.size() && !impl.signatures.empty(); ++r) {
    const auto& signature = impl.signatures[impl.first[r]];
    if (!signature || !impl.images[r].error.empty() || !top_digests.insert(signature->manifest.digest).second) continue;
    tops.push_back(signature->manifest.bytes);
    for (const auto& [digest, bytes] : signature->bytes)
      if (top_digests.insert(digest).second) tops.push_back(bytes);
    // A keyless signature's trusted root stays with it (its provenance's keys_digest), so that
    // the check can be made again offline.
    if (signature->verified.keyless) {
      const auto& root = impl.trust_for(r).trusted_root;
      if (top_digests.insert("sha256:" + root->digest()).second) tops.push_back(root->text());
    }
  }
  // The referrers of the images that were not refused.
  for (std::size_t r = 0; r < impl.requests.size() && !impl.referrers.empty(); ++r) {
    if (!impl.images[r].error.empty()) continue;
    for (const auto& referrer : impl.referrers[impl.first[r]])
      if (top_digests.insert(referrer.manifest.digest).second) tops.push_back(referrer.manifest.bytes);
  }
  (void)impl.store.add_all_bytes(tops);
  // Rows and failures in the order of the requests and of each index, however the run went.
  for (std::size_t r = 0; r < impl.requests.size(); ++r) {
    const auto& request = impl.requests[r];
    const auto& image = request.reference;
    const auto& state = impl.images[r];
    std::string error = state.error;
    for (const auto& wanted : state.wanted)
      if (error.empty()) error = wanted.error;
    if (!error.empty()) {
      result.failures.push_back(request.source + ": " + image.str() + ": " + error);
      continue;
    }
    if (state.index_row) result.rows.push_back(*state.index_row);
    if (!impl.signatures.empty() && impl.signatures[impl.first[r]]) {
      const auto& signature = *impl.signatures[impl.first[r]];
      auto rows = signature_rows(image, impl.puller(r), signature);
      result.rows.insert(result.rows.end(), rows.begin(), rows.end());
      result.signatures.push_back(signature_record(image, signature, impl.trust_for(r)));
    }
    if (!impl.referrers.empty() && state.top) {
      for (const auto& referrer : impl.referrers[impl.first[r]]) {
        const auto& manifest = referrer.manifest;
        // A referrer under its subject's digest; a cosign attachment under its tag, as the .sig.
        const std::string& version = referrer.tag.empty() ? state.top->digest : referrer.tag;
        result.rows.push_back(image_row(cache::ArtifactKind::image_attachment, image, version, "", manifest.digest,
                                        static_cast<std::int64_t>(manifest.bytes.size()), manifest.url));
        for (const auto& blob : referrer.blobs)
          result.rows.push_back(image_row(cache::ArtifactKind::image_blob, image, manifest.digest, "", blob.digest, blob.size,
                                          impl.puller(r).blob_url(image, blob.digest)));
      }
    }
    for (const auto& wanted : state.wanted) {
      const auto& manifest = *wanted.manifest;
      result.rows.push_back(image_row(cache::ArtifactKind::image_manifest, image, state.version, wanted.platform.row(),
                                      manifest.digest, static_cast<std::int64_t>(manifest.bytes.size()), manifest.url));
      for (const auto& blob : wanted.blobs)
        result.rows.push_back(image_row(cache::ArtifactKind::image_blob, image, manifest.digest, wanted.platform.row(),
                                        blob.digest, blob.size, impl.puller(r).blob_url(image, blob.digest)));
    }
    if (quiet) continue;
    if (state.wanted.size() == 1 && state.wanted.front().platform.is_none())
      log << "artifact " << image.str() << ": no platform\n";
    else
      log << "image " << image.str() << ": " << state.wanted.size() << " platform(s)\n";
  }
  // Each fetched blob once, under the first request that lists it.
  std::set<std::string> reported;
  for (std::size_t r = 0; r < impl.requests.size(); ++r) {
    const auto& request = impl.requests[r];
    std::vector<const std::vector<Descriptor>*> lists;
    for (const auto& wanted : impl.images[r].wanted) lists.push_back(&wanted.blobs);
    if (!impl.referrers.empty() && impl.images[r].error.empty())
      for (const auto& referrer : impl.referrers[impl.first[r]]) lists.push_back(&referrer.blobs);
    for (const auto* blobs : lists) {
      for (const auto& blob : *blobs) {
        std::string hex = blob.digest.substr(7);
        if (impl.present.count(hex) || !reported.insert(hex).second) continue;
        const auto& outcome = impl.blobs[hex];
        if (!outcome) continue;  // never ended: the run stopped early
        if (!outcome->ok) {
          result.failures.push_back(request.source + ": " + request.reference.str() + ": " + outcome->error);
          continue;
        }
        if (static_cast<std::int64_t>(outcome->size) != blob.size)
          result.failures.push_back(request.source + ": " + request.reference.str() + ": " +
                                    mismatch_message("blob " + blob.digest + " has another size than its manifest says",
                                                     std::to_string(blob.size), std::to_string(outcome->size)));
        ++result.blobs_fetched;
        result.bytes += outcome->size;
      }
    }
  }
  result.blobs_present = impl.blobs_present;
  return result;
}

ImageFetch fetch_images(cache::Store& store, const std::vector<ImageRequest>& requests, const net::DownloadOptions& options,
                        const net::RegistryCredentials& credentials, std::ostream& log,
                        const cache::CosignPolicy& cosign_policy) {
  ImageFetcher fetcher(store, requests, options, credentials);
  fetcher.require_signatures(cosign_policy);
  fetcher.take_referrers();
  fetcher.resolve();
  net::Downloader downloader(options);
  downloader.run(store, [&](net::DownloadRun& run) { fetcher.start(run); });
  return fetcher.finish(log);
}

void deps_images(cache::Store& store, const DepsImagesOptions& options, std::ostream& out, std::ostream& log) {
  if (options.list_name.empty()) throw UsageError("deps images needs -f FILE (one image reference a line)");
  for (const auto& arch : options.archs)
    if (arch != "all" && arch != "amd64" && arch != "arm64" && arch.find('/') == std::string::npos)
      throw UsageError("unsupported arch \"" + arch + "\" (amd64, arm64, all, or an os/arch[/variant] platform)");
  auto requests = parse_image_list(options.list_text, options.list_name, image_platforms_of_archs(options.archs));
  if (requests.empty()) throw Error("the image list " + options.list_name + " names no image");
  auto policy = cache::cosign_policy_of(options.cosign_keys, options.cosign_policy, options.cosign_keyless);
  auto fetched = fetch_images(store, requests, options.download, net::RegistryCredentials::load(options.registry_auth), log, policy);
  if (!fetched.failures.empty()) {
    std::string message = "deps images failed; nothing was indexed:";
    for (const auto& failure : fetched.failures) message += "\n" + failure;
    throw Error(message);
  }
  store.in_transaction([&] {
    for (const auto& row : fetched.rows) (void)store.add_artifact(row);
    record_image_signatures(store, fetched.signatures);
    store.audit("fetch", "deps images",
                nlohmann::json{{"images", requests.size()}, {"blobs", fetched.blobs_fetched}, {"bytes", fetched.bytes},
                               {"signed", fetched.signatures.size()}});
  });
  out << "Stored " << requests.size() << " images: fetched " << fetched.blobs_fetched << " blobs (" << fetched.bytes
      << " bytes), " << fetched.blobs_present << " already stored.\n";
  if (policy.requires_signatures())
    out << "Verified the cosign signatures of " << fetched.signatures.size() << " images with the keys or identities given.\n";
}

}  // namespace podplane::fetch
