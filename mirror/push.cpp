#include "mirror/push.hpp"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/url.hpp"
#include "cache/kinds.hpp"
#include "mirror/git_repositories.hpp"
#include "net/http.hpp"
#include "net/transport.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;
using nlohmann::json;

OciTarget OciTarget::parse(const std::string& text) {
  // Nothing but oci://host[:port][/prefix]: the text is those parts put back together (a login
  // goes by --creds-file or an auth file; no query or fragment).
  const auto url = split_url(text);
  if (!url || url->scheme != "oci" || !ascii_iequals(text, "oci://" + authority(*url) + url->path))
    throw UsageError("mirror push wants oci://REGISTRY[:PORT]/PREFIX; got '" + text + "'");
  OciTarget target;
  target.registry = authority(*url);
  if (!valid_authority(target.registry))
    throw UsageError("mirror push: '" + target.registry + "' is not a registry host[:port] (in '" + text + "')");
  target.prefix = without_trailing_slashes(url->path);
  if (target.prefix.starts_with('/')) target.prefix.erase(0, 1);
  return target;
}

namespace {

// The OCI 1.1 empty descriptor: artifacts without configuration carry "{}" as their config.
constexpr const char* kEmptyConfig = "{}";
const std::string kEmptyConfigDigest = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

bool valid_repository(const std::string& name) {
  static const std::regex re(R"(^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$)");
  return name.size() <= 255 && std::regex_match(name, re);
}

std::string tag_of(std::string version) {
  for (auto& c : version)
    if (c == '+') c = '_';
  static const std::regex re(R"(^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$)");
  return std::regex_match(version, re) ? version : std::string();
}

// The manifests an index lists that the store does not hold: a fill for some platforms stores
// the upstream's index whole, with only those platforms' manifests (and never attestations).
struct ManifestsNotStored {
  std::string listed;             // "linux/arm/v7 sha256:…, …"; empty when all are stored
  bool platform_missing = false;  // one of them is a platform's (`deps images --arch all` takes it)
};

ManifestsNotStored manifests_not_stored(const std::string& index_bytes, const PublishedImage& image) {
  ManifestsNotStored missing;
  const auto index = json::parse(index_bytes, nullptr, false);
  if (!index.is_object() || !index.contains("manifests") || !index["manifests"].is_array()) return missing;
  for (const auto& entry : index["manifests"]) {
    if (!entry.is_object() || !entry.contains("digest") || !entry["digest"].is_string()) continue;
    const auto digest = entry["digest"].get<std::string>();
    const bool stored = std::any_of(image.manifests.begin(), image.manifests.end(),
                                    [&](const PublishedImage::Content& held) { return held.digest == digest; });
    if (stored) continue;
    std::string platform;
    if (const auto p = entry.find("platform"); p != entry.end() && p->is_object())
      for (const char* field : {"os", "architecture", "variant"})
        if (const auto part = p->find(field); part != p->end() && part->is_string())
          platform += (platform.empty() ? "" : "/") + part->get<std::string>();
    missing.platform_missing = missing.platform_missing || platform != "unknown/unknown";
    missing.listed += (missing.listed.empty() ? "" : ", ") + (platform.empty() ? "" : platform + " ") + digest;
  }
  return missing;
}

// How `deps images` names the image whose index or manifest is `digest`: by a tag of it, else
// by the digest.
std::string reference_of(const PublishedImage& image, const std::string& digest) {
  for (const auto& tag : image.tags)
    if (tag.digest == digest) return image.address + ":" + tag.tag;
  return image.address + "@" + digest;
}

// Called while `error` (a push of `bytes` refused) is being handled: rethrows it, with why and
// what to do when it is distribution's answer to an index listing manifests the store lacks.
[[noreturn]] void explain_partial_index(const Error& error, const std::string& bytes, const PublishedImage& image,
                                        const std::string& reference) {
  const auto missing = manifests_not_stored(bytes, image);
  if (std::string_view(error.what()).find("MANIFEST_BLOB_UNKNOWN") == std::string_view::npos || missing.listed.empty()) throw;
  throw Error(std::string(error.what()) + "\n" + reference + " is an index of which the store holds only some manifests " +
              "(it lacks " + missing.listed + "); a registry that checks that it has every manifest an index lists " +
              "(CNCF distribution, Harbor) refuses it. " +
              (missing.platform_missing
                   ? "Fetch every platform of the image, then push again: echo " + reference + " | podplane deps images -f - --arch all"
                   : std::string("podplane does not fetch attestation manifests (unknown/unknown): push to a registry that "
                                 "accepts such an index (zot), or serve it with podplane mirror serve")));
}

class Registry {
 public:
  // Every request goes through the one HTTP client: SSL_CERT_FILE (or --ca-file), protocol
  // limits, proxies, timeouts and the retry budget, as for every other transfer.
  Registry(OciTarget target, const PushOptions& options, net::RegistryCredentials credentials)
      : target_(std::move(target)), options_(options), http_(http_options(options)),
        auth_(std::move(credentials), net::RegistryAccess::push),
        base_((options.transport == Transport::https ? "https://" : "http://") + target_.registry),
        origin_(net::transport::origin(base_ + "/")) {}

  // One request for `repository`, with the Authorization its last challenge asked for when it
  // goes to the registry itself; a 401 from the registry is answered once
  // (net/oci_auth.hpp) and the request sent again. A request elsewhere (an upload Location
  // on another host, port or scheme) carries no login, and a 401 from there is an error.
  net::HttpResponse request(net::Method method, const std::string& repository, const std::string& url,
                       const std::vector<std::string>& headers, net::RequestBody body = {}) {
    net::HttpRequest request;
    request.method = method;
    request.url = url;
    request.body = std::move(body);
    const bool to_registry = net::transport::origin(url) == origin_;
    auto send = [&] {
      request.headers.clear();
      if (to_registry) request.headers = auth_.headers(target_.registry, repository);
      request.headers.insert(request.headers.end(), headers.begin(), headers.end());
      return http_.send(request);
    };
    auto response = send();
    if (response.status == 401 && !to_registry)
      throw Error(describe(method, url) + ": HTTP 401 from outside the registry " + origin_ +
                  "; podplane sends the registry's login to the registry alone");
    if (response.status == 401) {
      auth_.answer(http_, target_.registry, repository, url, response);
      response = send();
      if (response.status == 401) throw auth_.refused(target_.registry, repository, url);
    }
    if (response.status == 403)
      throw Error(describe(method, url) + ": the registry denied this login the push to " + repository + " (" +
                  response.status_text() + ")");
    return response;
  }

  std::string url(const std::string& repository, const std::string& tail) const {
    return base_ + "/v2/" + repository + "/" + tail;
  }

  // An upload Location may be relative to the registry (distribution answers "/v2/…"), or
  // elsewhere (then it gets no login, see request()), but never plain http from an https one.
  std::string resolve(const std::string& location) const {
    std::string resolved;
    try {
      resolved = net::resolve_url(base_ + "/", location);
    } catch (const Error&) {
      throw Error("the registry answered an unusable upload location: " + net::redact_url(location));
    }
    if (origin_.rfind("https://", 0) == 0 && net::transport::origin(resolved).rfind("https://", 0) != 0)
      throw Error("the registry " + target_.registry + " answered an upload location that leaves https (" +
                  net::redact_url(resolved) + "); podplane does not send a blob over plain http from a TLS registry");
    return resolved;
  }

  static std::string with_digest(const std::string& location, const std::string& digest) {
    return location + (location.find('?') == std::string::npos ? "?" : "&") + "digest=" + digest;
  }

  bool has_blob(const std::string& repository, const std::string& digest) {
    const auto blob_url = url(repository, "blobs/" + digest);
    return present(request(net::Method::head, repository, blob_url, {}), blob_url);
  }

  // Cross-repository blob mount (distribution spec): 201 when the registry linked the blob
  // from `from` without an upload; anything else means "upload it".
  bool mount(const std::string& repository, const std::string& digest, const std::string& from) {
    const auto mount_url = url(repository, "blobs/uploads/?mount=" + digest + "&from=" + from);
    auto response = request(net::Method::post, repository, mount_url, {});
    return response.status == 201;
  }

  std::string start_upload(const std::string& repository) {
    const auto upload_url = url(repository, "blobs/uploads/");
    auto response = request(net::Method::post, repository, upload_url, {});
    if (response.status != 202 || response.header("location").empty())
      throw Error("cannot start an upload to " + repository + " (POST " + upload_url + "): " +
                  response.status_text() + " " + brief(response.body));
    return resolve(response.header("location"));
  }

  void finish(const net::HttpResponse& response, const std::string& repository, const std::string& digest,
              const std::string& put_url) {
    if (response.status != 201)
      throw Error("upload of " + digest + " to " + repository + " failed (PUT " + net::redact_url(put_url) + "): " +
                  response.status_text() + " " + brief(response.body));
  }

  void upload_bytes(const std::string& repository, const std::string& digest, std::string_view bytes) {
    std::string location = start_upload(repository);
    const auto put_url = with_digest(location, digest);
    finish(request(net::Method::put, repository, put_url, {"Content-Type: application/octet-stream"}, net::RequestBody::bytes(bytes)),
           repository, digest, put_url);
  }

  void upload_file(const std::string& repository, const std::string& digest, const fs::path& file, std::uint64_t size) {
    std::string location = start_upload(repository);
    if (size <= options_.chunk_size) {
      const auto put_url = with_digest(location, digest);
      finish(request(net::Method::put, repository, put_url, {"Content-Type: application/octet-stream"},
                     net::RequestBody::file_range(file, 0, size)),
             repository, digest, put_url);
      return;
    }
    // Chunked upload (OCI distribution spec "pushing a blob in chunks"): PATCH each range in
    // order, following the Location each answer gives, then PUT with the digest.
    std::uint64_t offset = 0;
    while (offset < size) {
      std::uint64_t length = std::min<std::uint64_t>(options_.chunk_size, size - offset);
      auto response = request(net::Method::patch, repository, location,
                              {"Content-Type: application/octet-stream",
                               "Content-Range: " + std::to_string(offset) + "-" + std::to_string(offset + length - 1)},
                              net::RequestBody::file_range(file, offset, length));
      if (response.status != 202)
        throw Error("chunk " + std::to_string(offset) + " of " + digest + " refused by " + repository + " (PATCH " +
                    net::redact_url(location) + "): " + response.status_text() + " " + brief(response.body));
      if (!response.header("location").empty()) location = resolve(response.header("location"));
      offset += length;
    }
    const auto put_url = with_digest(location, digest);
    finish(request(net::Method::put, repository, put_url, {}), repository, digest, put_url);
  }

  // The digest the registry has under `reference`, if any.
  std::string manifest_digest(const std::string& repository, const std::string& reference) {
    const auto manifest_url = url(repository, "manifests/" + reference);
    auto response = request(net::Method::head, repository, manifest_url, {std::string("Accept: ") + oci_media::index + ", " + oci_media::manifest});
    return present(response, manifest_url) ? response.header("docker-content-digest") : std::string();
  }

  // Whether the registry answers the OCI 1.1 referrers API (GET …/referrers/<digest> with an
  // index); distribution 2.8, Debian's docker-registry, does not.
  bool has_referrers_api(const std::string& repository, const std::string& subject) {
    auto response = request(net::Method::get, repository, url(repository, "referrers/" + subject), {std::string("Accept: ") + oci_media::index});
    return response.status == 200 && response.content_type() == oci_media::index;
  }

  // The bytes the registry has under `reference`, nullopt when it has none.
  std::optional<std::string> get_manifest(const std::string& repository, const std::string& reference, const std::string& accept) {
    const auto manifest_url = url(repository, "manifests/" + reference);
    auto response = request(net::Method::get, repository, manifest_url, {"Accept: " + accept});
    if (response.status == 404) return std::nullopt;
    if (response.status != 200)
      throw Error("cannot read the manifest " + repository + ":" + reference + " (GET " + net::redact_url(manifest_url) +
                  "): " + response.status_text());
    return std::move(response.body);
  }

  void put_manifest(const std::string& repository, const std::string& reference, const std::string& media_type,
                    const std::string& bytes) {
    const auto manifest_url = url(repository, "manifests/" + reference);
    auto response = request(net::Method::put, repository, manifest_url, {"Content-Type: " + media_type}, net::RequestBody::bytes(bytes));
    if (response.status != 201)
      throw Error("the registry refused the manifest " + repository + ":" + reference + " (PUT " + manifest_url +
                  "): " + response.status_text() + " " + brief(response.body));
  }

  const OciTarget& target() const { return target_; }

 private:
  static net::HttpOptions http_options(const PushOptions& push) {
    net::HttpOptions options = push.http;
    if (push.ca_file) options.ca_file = push.ca_file;
    return options;
  }

  static std::string describe(net::Method method, const std::string& url) {
    return std::string(to_string(method)) + " " + net::redact_url(url);
  }

  // A HEAD answer: 200 present, 404 absent; anything else (a 503 that outlasted the retries)
  // is an error, not "absent".
  static bool present(const net::HttpResponse& response, const std::string& head_url) {
    if (response.status == 200) return true;
    if (response.status == 404) return false;
    throw Error("the registry cannot say whether it has " + net::redact_url(head_url) + " (HEAD): " + response.status_text());
  }

  // The start of an error body, on one line, for messages.
  static std::string brief(const std::string& body) {
    std::string line = body.substr(0, std::min<std::size_t>(body.find('\n'), 300));
    for (auto& c : line) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    return line;
  }

  OciTarget target_;
  PushOptions options_;
  net::HttpClient http_;
  net::RegistryAuth auth_;
  std::string base_;
  std::string origin_;  // scheme://host:port of base_: the only place a login is sent (and its token realm)
};

class Pusher {
 public:
  Pusher(Registry& registry, std::ostream* progress) : registry_(registry), progress_(progress) {}

  void blob_bytes(const std::string& repository, const std::string& digest, std::string_view bytes) {
    if (registry_.has_blob(repository, digest)) {
      ++stats.blobs_present;
      return;
    }
    registry_.upload_bytes(repository, digest, bytes);
    ++stats.blobs_uploaded;
    stats.bytes_uploaded += bytes.size();
  }

  void blob_file(const std::string& repository, const std::string& digest, const fs::path& file, std::uint64_t size) {
    if (registry_.has_blob(repository, digest)) {
      ++stats.blobs_present;
      return;
    }
    // A layer shared by two images goes up once; the second repository mounts it.
    if (auto from = uploaded_to_.find(digest); from != uploaded_to_.end() && registry_.mount(repository, digest, from->second)) {
      ++stats.blobs_mounted;
      return;
    }
    uploaded_to_[digest] = repository;
    // The digest whole: the object file is named by its digest less the two hex of its directory.
    say("uploading " + digest + " → " + repository + " (" + std::to_string(size) + " bytes)");
    registry_.upload_file(repository, digest, file, size);
    ++stats.blobs_uploaded;
    stats.bytes_uploaded += size;
  }

  // Pushes `bytes` under `reference` (a tag, or its own digest) unless it is already there.
  std::string manifest(const std::string& repository, const std::string& reference, const char* media_type,
                       const std::string& bytes) {
    std::string digest = "sha256:" + sha256_hex(bytes);
    if (registry_.manifest_digest(repository, reference.empty() ? digest : reference) == digest) {
      ++stats.manifests_present;
    } else {
      registry_.put_manifest(repository, reference.empty() ? digest : reference, media_type, bytes);
      ++stats.manifests_pushed;
    }
    return digest;
  }

  // The referrers tag schema (OCI 1.1) for a registry without the referrers API: the index at
  // sha256-<hex of subject> lists the subject's referrers, so that clients of that registry find
  // them. Whatever it lists already (other clients' referrers) stays listed; ours are added.
  void referrers_tag(const std::string& repository, const std::string& subject, const json& ours) {
    const std::string tag = "sha256-" + subject.substr(7);
    json index{{"schemaVersion", 2}, {"mediaType", oci_media::index}, {"manifests", json::array()}};
    const auto held = registry_.get_manifest(repository, tag, oci_media::index);
    if (held) {
      index = json::parse(*held, nullptr, false);
      if (!index.is_object() || !index.contains("manifests") || !index["manifests"].is_array())
        throw Error("the tag " + repository + ":" + tag + " holds something other than a referrers index; it was left as it is");
    }
    bool added = false;
    for (const auto& descriptor : ours["manifests"]) {
      const auto& listed = index["manifests"];
      auto same = [&](const json& d) { return d.is_object() && d.contains("digest") && d["digest"] == descriptor["digest"]; };
      if (std::any_of(listed.begin(), listed.end(), same)) continue;
      index["manifests"].push_back(descriptor);
      added = true;
    }
    if (held && !added) {
      ++stats.manifests_present;
      return;
    }
    registry_.put_manifest(repository, tag, oci_media::index, index.dump());
    ++stats.manifests_pushed;
  }

  void say(const std::string& line) {
    if (progress_) *progress_ << "podplane: mirror push: " << line << "\n";
  }

  PushStats stats;

 private:
  std::map<std::string, std::string> uploaded_to_;  // digest → repository it went up to this run
  Registry& registry_;
  std::ostream* progress_;
};

json empty_config_descriptor() {
  return {{"mediaType", oci_media::empty_config}, {"digest", kEmptyConfigDigest}, {"size", 2}, {"data", "e30="}};
}

// The image manifest of an artifact that is one zip (a provider package, a module package):
// the empty config and one zip layer titled `title`.
json zip_artifact_manifest(std::string_view artifact_type, const std::string& zip_digest, std::uint64_t size,
                           const std::string& title) {
  return {{"schemaVersion", 2},
          {"mediaType", oci_media::manifest},
          {"artifactType", artifact_type},
          {"config", empty_config_descriptor()},
          {"layers", json::array({{{"mediaType", oci_media::zip_layer},
                                   {"digest", zip_digest},
                                   {"size", size},
                                   {"annotations", {{"org.opencontainers.image.title", title}}}}})}};
}

std::string repository_path(const OciTarget& target, const std::string& tail) {
  return target.prefix.empty() ? tail : target.prefix + "/" + tail;
}

// Each provider version as OpenTofu's OCI provider mirror lays it out: an index per version, one
// manifest per platform, the zip its layer.
void push_provider_releases(Pusher& push, const OciTarget& target, const MirrorSite& site, const cache::Store& store) {
  for (const auto& release : site.provider_releases()) {
    std::string repository = repository_path(target, "providers/" + release.host + "/" + release.ns + "/" + release.type);
    std::string tag = tag_of(release.version);
    if (!valid_repository(repository) || tag.empty()) {
      push.say("skipped " + release.host + "/" + release.ns + "/" + release.type + " " + release.version +
               ": not a valid OCI repository name or tag (" + repository + ":" + tag + ")");
      continue;
    }
    push.blob_bytes(repository, kEmptyConfigDigest, kEmptyConfig);
    json manifests = json::array();
    for (const auto& package : release.packages) {
      auto os = package.platform.substr(0, package.platform.find('_'));
      auto arch = package.platform.substr(package.platform.find('_') + 1);
      std::string zip_digest = "sha256:" + package.digest;
      push.blob_file(repository, zip_digest, store.object_path(package.digest), static_cast<std::uint64_t>(package.size));
      json image = zip_artifact_manifest(oci_media::provider_target, zip_digest, static_cast<std::uint64_t>(package.size),
                                         package.filename);
      std::string bytes = image.dump();
      std::string digest = push.manifest(repository, "", oci_media::manifest, bytes);
      manifests.push_back({{"mediaType", oci_media::manifest},
                           {"artifactType", oci_media::provider_target},
                           {"digest", digest},
                           {"size", bytes.size()},
                           {"platform", {{"os", os}, {"architecture", arch}}}});
    }
    json index = {{"schemaVersion", 2},
                  {"mediaType", oci_media::index},
                  {"artifactType", oci_media::provider},
                  {"manifests", manifests}};
    push.manifest(repository, tag, oci_media::index, index.dump());
    push.stats.references.push_back(target.registry + "/" + repository + ":" + tag);
  }
}

// Each module package as OpenTofu's module package image: one zip layer.
void push_module_packages(Pusher& push, const OciTarget& target, const MirrorSite& site) {
  for (const auto& package : site.module_packages()) {
    std::string repository = repository_path(target, "modules/" + package->address);
    std::string tag = tag_of(package->version);
    if (!valid_repository(repository) || tag.empty()) {
      push.say("skipped module " + package->address + " " + package->version + ": not a valid OCI repository name or tag");
      continue;
    }
    std::string zip;
    write_module_zip(*package, [&zip](const char* data, std::size_t size) { zip.append(data, size); });
    std::string zip_digest = "sha256:" + sha256_hex(zip);
    push.blob_bytes(repository, kEmptyConfigDigest, kEmptyConfig);
    push.blob_bytes(repository, zip_digest, zip);
    auto name = package->address.substr(package->address.find('/') + 1);
    for (auto& c : name)
      if (c == '/') c = '-';
    json image = zip_artifact_manifest(oci_media::module_package, zip_digest, zip.size(),
                                       name + "-" + package->version + ".zip");
    push.manifest(repository, tag, oci_media::manifest, image.dump());
    push.stats.references.push_back(target.registry + "/" + repository + ":" + tag);
  }
}

void push_images(Pusher& push, Registry& registry, const OciTarget& target, const MirrorSite& site, const cache::Store& store) {
  // Container images under their mirror names (PREFIX/mirror/<registry>/<repository>:<tag>),
  // byte for byte as stored, so every digest stays the upstream's.
  for (const auto& image : site.images()) {
    std::string repository = repository_path(target, image.repository);
    if (!valid_repository(repository)) {
      push.say("skipped image " + image.address + ": " + repository + " is not a valid OCI repository name");
      continue;
    }
    for (const auto& blob : image.blobs)
      push.blob_file(repository, blob.digest, blob.object, static_cast<std::uint64_t>(blob.size));
    // An index refused for listing manifests the store lacks says which, and how to fetch them.
    auto push_manifest = [&](const std::string& tag, const std::string& digest, const std::string& media_type) {
      const std::string bytes = store.read_object(digest.substr(7));
      try {
        push.manifest(repository, tag, media_type.c_str(), bytes);
      } catch (const Error& error) {
        explain_partial_index(error, bytes, image, tag.empty() ? reference_of(image, digest) : image.address + ":" + tag);
      }
    };
    for (const auto& manifest : image.manifests) push_manifest("", manifest.digest, manifest.media_type);
    for (const auto& tag : image.tags) {
      push_manifest(tag.tag, tag.digest, tag.media_type);
      push.stats.references.push_back(target.registry + "/" + repository + ":" + tag.tag);
    }
    // Referrers went up by digest with the manifests above; a registry with the API lists them
    // from their subject, one without needs the tag schema's index.
    for (const auto& [subject, index] : image.referrers)
      if (!registry.has_referrers_api(repository, subject)) push.referrers_tag(repository, subject, json::parse(index));
  }
}

// Whether some kind whose rows make the repositories served at /git/ is pushed (the table's
// Pushed value of those rows decides, as for every other kind).
bool pushes_git_repositories() {
  const auto kinds = cache::kinds();
  return std::any_of(kinds.begin(), kinds.end(), [](const cache::KindInfo& kind) {
    return kind.served == cache::Served::git_repository && kind.pushed != cache::Pushed::none;
  });
}

// `text` inside a double-quoted shell word: what the shell would expand or end the word at escaped.
std::string double_quoted_part(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string git_repositories_note(const PushStats& stats) {
  const auto& repositories = stats.git_repositories_not_pushed;
  if (repositories.empty()) return "";
  const std::size_t n = repositories.size();
  std::string note = "podplane: " + std::to_string(n) + (n == 1 ? " git repository was" : " git repositories were") +
                     " not pushed: an OCI registry is no place for git repositories. Hand " + (n == 1 ? "it" : "them") +
                     " to the site git server instead (docs/ci.md \"Git sources\"), with DIR set to a new or empty directory and "
                     "SITE_GIT to the server's URL under which an empty repository waits for each:\n"
                     "  podplane mirror export \"$DIR\"\n";
  for (const auto& repository : repositories) {
    const std::string path = double_quoted_part(bare_repository_path(repository));
    note += "  git -C \"$DIR/git/" + path + "\" push --mirror \"$SITE_GIT/" + path + "\"\n";
  }
  return note;
}

PushStats push_to_oci(const fs::path& deps_root, const std::string& target_text, const PushOptions& options,
                      std::ostream* progress) {
  auto target = OciTarget::parse(target_text);
  // libarchive writes zip entry times as DOS local time: pin the zone so that a module zip
  // has the same bytes (and digest) on every host, which is what keeps re-pushes idempotent.
  ::setenv("TZ", "UTC0", 1);
  ::tzset();

  auto store = cache::Store::open(deps_root, cache::Store::Access::read_only);
  auto site = MirrorSite::build(store);
  auto auth_options = options.registry_auth;
  auth_options.creds_registry = target.registry;
  Registry registry(target, options, net::RegistryCredentials::load(auth_options));
  Pusher push(registry, progress);

  // Every form some kind of row (or module trees) is pushed as (cache/kinds.hpp Pushed), in the
  // order of that enum: providers, modules, images.
  std::set<cache::Pushed> forms{cache::kModuleTrees.pushed};
  for (const auto& kind : cache::kinds()) forms.insert(kind.pushed);
  for (auto form : forms) {
    switch (form) {
      case cache::Pushed::unset:
      case cache::Pushed::none: break;
      case cache::Pushed::provider_oci_mirror: push_provider_releases(push, target, site, store); break;
      case cache::Pushed::module_package: push_module_packages(push, target, site); break;
      case cache::Pushed::image_as_stored: push_images(push, registry, target, site, store); break;
    }
  }
  if (!pushes_git_repositories()) push.stats.git_repositories_not_pushed = site.git()->repositories();
  return push.stats;
}

}  // namespace podplane::mirror
