#include "mirror/oci.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <regex>

#include <nlohmann/json.hpp>

#include "lockfile/error.hpp"
#include "lockfile/hash.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;
using nlohmann::json;

OciTarget OciTarget::parse(const std::string& text) {
  const std::string scheme = "oci://";
  if (text.rfind(scheme, 0) != 0 || text.size() == scheme.size())
    throw UsageError("mirror push wants oci://REGISTRY[:PORT]/PREFIX; got '" + text + "'");
  std::string rest = text.substr(scheme.size());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  OciTarget target;
  auto slash = rest.find('/');
  target.registry = rest.substr(0, slash);
  target.prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  static const std::regex registry_re(R"(^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:]+\](:[0-9]{1,5})?$)");
  if (target.registry.empty() || !std::regex_match(target.registry, registry_re))
    throw UsageError("mirror push: '" + target.registry + "' is not a registry host[:port] (in '" + text + "')");
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

struct CurlDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
using CurlEasy = std::unique_ptr<CURL, CurlDeleter>;
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using CurlHeaders = std::unique_ptr<curl_slist, SlistDeleter>;
struct UrlDeleter {
  void operator()(CURLU* handle) const { curl_url_cleanup(handle); }
};
struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

struct Response {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names, last value wins
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// A request body from memory or from part of a file.
struct Body {
  std::string_view bytes;
  std::FILE* file = nullptr;
  std::uint64_t remaining = 0;
};

std::size_t read_body(char* buffer, std::size_t size, std::size_t count, void* context) {
  auto* body = static_cast<Body*>(context);
  std::size_t want = size * count;
  if (body->file != nullptr) {
    want = static_cast<std::size_t>(std::min<std::uint64_t>(want, body->remaining));
    std::size_t got = want == 0 ? 0 : std::fread(buffer, 1, want, body->file);
    if (got < want && std::ferror(body->file)) return CURL_READFUNC_ABORT;
    body->remaining -= got;
    return got;
  }
  std::size_t n = std::min(want, body->bytes.size());
  std::memcpy(buffer, body->bytes.data(), n);
  body->bytes.remove_prefix(n);
  return n;
}

std::size_t collect_body(char* data, std::size_t size, std::size_t count, void* context) {
  auto* response = static_cast<Response*>(context);
  if (response->body.size() < (1 << 20)) response->body.append(data, size * count);  // error texts only
  return size * count;
}

std::size_t collect_header(char* data, std::size_t size, std::size_t count, void* context) {
  auto* response = static_cast<Response*>(context);
  std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) response->headers.clear();  // a new response (after 100 or a redirect)
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    auto first = value.find_first_not_of(" \t");
    auto last = value.find_last_not_of(" \t\r\n");
    response->headers[name] = first == std::string::npos ? "" : value.substr(first, last - first + 1);
  }
  return size * count;
}

class Registry {
 public:
  Registry(OciTarget target, const PushOptions& options)
      : target_(std::move(target)), options_(options),
        base_((options.transport == Transport::https ? "https://" : "http://") + target_.registry) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
  }

  Response request(const std::string& method, const std::string& url, const std::vector<std::string>& headers,
                   Body* body = nullptr) {
    CurlEasy easy(curl_easy_init());
    if (!easy) throw Error("cannot start libcurl");
    CURL* h = easy.get();
    Response response;
    curl_slist* list = nullptr;
    for (const auto& header : headers) list = curl_slist_append(list, header.c_str());
    list = curl_slist_append(list, "Expect:");  // no 100-continue round trip per upload
    CurlHeaders header_list(list);
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "podplane/" PODPLANE_VERSION);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, collect_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &response);
    if (options_.ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, options_.ca_file->c_str());
    if (method == "HEAD") {
      curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (method == "POST") {
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
    } else if (method == "PUT" || method == "PATCH") {
      static Body empty;
      Body* source = body ? body : &empty;
      std::uint64_t size = source->file ? source->remaining : source->bytes.size();
      curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(h, CURLOPT_READFUNCTION, read_body);
      curl_easy_setopt(h, CURLOPT_READDATA, source);
      curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
      if (method == "PATCH") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PATCH");
    }
    CURLcode code = curl_easy_perform(h);
    if (code != CURLE_OK) throw Error(method + " " + url + ": " + curl_easy_strerror(code));
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
    if (response.status == 401 || response.status == 403)
      throw Error(method + " " + url + ": the registry wants credentials (HTTP " + std::to_string(response.status) +
                  "); mirror push supports registries open to push on the site network (docs/mirror.md)");
    return response;
  }

  std::string url(const std::string& repository, const std::string& tail) const {
    return base_ + "/v2/" + repository + "/" + tail;
  }

  // An upload Location may be relative to the registry (distribution answers "/v2/…").
  std::string resolve(const std::string& location) const {
    std::unique_ptr<CURLU, UrlDeleter> u(curl_url());
    char* out = nullptr;
    if (curl_url_set(u.get(), CURLUPART_URL, (base_ + "/").c_str(), 0) != CURLUE_OK ||
        curl_url_set(u.get(), CURLUPART_URL, location.c_str(), 0) != CURLUE_OK ||
        curl_url_get(u.get(), CURLUPART_URL, &out, 0) != CURLUE_OK)
      throw Error("the registry answered an unusable upload location: " + location);
    std::string resolved(out);
    curl_free(out);
    return resolved;
  }

  static std::string with_digest(const std::string& location, const std::string& digest) {
    return location + (location.find('?') == std::string::npos ? "?" : "&") + "digest=" + digest;
  }

  bool has_blob(const std::string& repository, const std::string& digest) {
    auto response = request("HEAD", url(repository, "blobs/" + digest), {});
    return response.status == 200;
  }

  std::string start_upload(const std::string& repository) {
    auto response = request("POST", url(repository, "blobs/uploads/"), {});
    if (response.status != 202 || response.header("location").empty())
      throw Error("cannot start an upload to " + repository + ": HTTP " + std::to_string(response.status) + " " +
                  response.body);
    return resolve(response.header("location"));
  }

  void finish(const Response& response, const std::string& repository, const std::string& digest) {
    if (response.status != 201)
      throw Error("upload of " + digest + " to " + repository + " failed: HTTP " + std::to_string(response.status) +
                  " " + response.body);
  }

  void upload_bytes(const std::string& repository, const std::string& digest, std::string_view bytes) {
    std::string location = start_upload(repository);
    Body body{bytes, nullptr, 0};
    finish(request("PUT", with_digest(location, digest), {"Content-Type: application/octet-stream"}, &body), repository,
           digest);
  }

  void upload_file(const std::string& repository, const std::string& digest, const fs::path& file, std::uint64_t size) {
    std::unique_ptr<std::FILE, FileCloser> in(std::fopen(file.c_str(), "rb"));
    if (!in) throw Error("cannot read " + file.string() + " (object " + digest + ")");
    std::string location = start_upload(repository);
    if (size <= options_.chunk_size) {
      Body body{{}, in.get(), size};
      finish(request("PUT", with_digest(location, digest), {"Content-Type: application/octet-stream"}, &body),
             repository, digest);
      return;
    }
    // Chunked upload (OCI distribution spec "pushing a blob in chunks"): PATCH each range in
    // order, following the Location each answer gives, then PUT with the digest.
    std::uint64_t offset = 0;
    while (offset < size) {
      std::uint64_t length = std::min<std::uint64_t>(options_.chunk_size, size - offset);
      Body body{{}, in.get(), length};
      auto response = request("PATCH", location,
                              {"Content-Type: application/octet-stream",
                               "Content-Range: " + std::to_string(offset) + "-" + std::to_string(offset + length - 1)},
                              &body);
      if (response.status != 202)
        throw Error("chunk " + std::to_string(offset) + " of " + digest + " refused by " + repository + ": HTTP " +
                    std::to_string(response.status) + " " + response.body);
      if (!response.header("location").empty()) location = resolve(response.header("location"));
      offset += length;
    }
    finish(request("PUT", with_digest(location, digest), {}), repository, digest);
  }

  // The digest the registry has under `reference`, if any.
  std::string manifest_digest(const std::string& repository, const std::string& reference) {
    auto response = request("HEAD", url(repository, "manifests/" + reference),
                            {std::string("Accept: ") + oci_media::index + ", " + oci_media::manifest});
    return response.status == 200 ? response.header("docker-content-digest") : std::string();
  }

  void put_manifest(const std::string& repository, const std::string& reference, const std::string& media_type,
                    const std::string& bytes) {
    Body body{bytes, nullptr, 0};
    auto response = request("PUT", url(repository, "manifests/" + reference), {"Content-Type: " + media_type}, &body);
    if (response.status != 201)
      throw Error("the registry refused the manifest " + repository + ":" + reference + ": HTTP " +
                  std::to_string(response.status) + " " + response.body);
  }

  const OciTarget& target() const { return target_; }

 private:
  OciTarget target_;
  PushOptions options_;
  std::string base_;
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
    say("uploading " + file.filename().string() + " → " + repository + " (" + std::to_string(size) + " bytes)");
    registry_.upload_file(repository, digest, file, size);
    ++stats.blobs_uploaded;
    stats.bytes_uploaded += size;
  }

  // Pushes `bytes` under `reference` (a tag, or its own digest) unless it is already there.
  std::string manifest(const std::string& repository, const std::string& reference, const char* media_type,
                       const std::string& bytes) {
    std::string digest = "sha256:" + lockfile::sha256_hex(bytes);
    if (registry_.manifest_digest(repository, reference.empty() ? digest : reference) == digest) {
      ++stats.manifests_present;
    } else {
      registry_.put_manifest(repository, reference.empty() ? digest : reference, media_type, bytes);
      ++stats.manifests_pushed;
    }
    return digest;
  }

  void say(const std::string& line) {
    if (progress_) *progress_ << "podplane: mirror push: " << line << "\n";
  }

  PushStats stats;

 private:
  Registry& registry_;
  std::ostream* progress_;
};

json empty_config_descriptor() {
  return {{"mediaType", oci_media::empty_config}, {"digest", kEmptyConfigDigest}, {"size", 2}, {"data", "e30="}};
}

std::string repository_path(const OciTarget& target, const std::string& tail) {
  return target.prefix.empty() ? tail : target.prefix + "/" + tail;
}

}  // namespace

PushStats push_to_oci(const fs::path& deps_root, const std::string& target_text, const PushOptions& options,
                      std::ostream* progress) {
  auto target = OciTarget::parse(target_text);
  // libarchive writes zip entry times as DOS local time: pin the zone so that a module zip
  // has the same bytes (and digest) on every host, which is what keeps re-pushes idempotent.
  ::setenv("TZ", "UTC0", 1);
  ::tzset();

  auto store = cache::Store::open(deps_root, cache::Store::Access::read_only);
  auto site = MirrorSite::build(store);
  Registry registry(target, options);
  Pusher push(registry, progress);

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
      json image = {
          {"schemaVersion", 2},
          {"mediaType", oci_media::manifest},
          {"artifactType", oci_media::provider_target},
          {"config", empty_config_descriptor()},
          {"layers", json::array({{{"mediaType", oci_media::zip_layer},
                                   {"digest", zip_digest},
                                   {"size", package.size},
                                   {"annotations", {{"org.opencontainers.image.title", package.filename}}}}})},
      };
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

  for (const auto& package : site.module_packages()) {
    std::string repository = repository_path(target, "modules/" + package->address);
    std::string tag = tag_of(package->version);
    if (!valid_repository(repository) || tag.empty()) {
      push.say("skipped module " + package->address + " " + package->version + ": not a valid OCI repository name or tag");
      continue;
    }
    std::string zip;
    write_module_zip(*package, [&zip](const char* data, std::size_t size) { zip.append(data, size); });
    std::string zip_digest = "sha256:" + lockfile::sha256_hex(zip);
    push.blob_bytes(repository, kEmptyConfigDigest, kEmptyConfig);
    push.blob_bytes(repository, zip_digest, zip);
    auto name = package->address.substr(package->address.find('/') + 1);
    for (auto& c : name)
      if (c == '/') c = '-';
    json image = {
        {"schemaVersion", 2},
        {"mediaType", oci_media::manifest},
        {"artifactType", oci_media::module_package},
        {"config", empty_config_descriptor()},
        {"layers", json::array({{{"mediaType", oci_media::zip_layer},
                                 {"digest", zip_digest},
                                 {"size", zip.size()},
                                 {"annotations", {{"org.opencontainers.image.title", name + "-" + package->version + ".zip"}}}}})},
    };
    push.manifest(repository, tag, oci_media::manifest, image.dump());
    push.stats.references.push_back(target.registry + "/" + repository + ":" + tag);
  }
  return push.stats;
}

}  // namespace podplane::mirror
