#include "fetch/oci_registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cache/row_rules.hpp"
#include "base/error.hpp"
#include "base/digest.hpp"

namespace podplane::fetch {

using nlohmann::json;

namespace {

bool plain_http_registry(const std::string& registry) {
  const char* env = std::getenv("PODPLANE_PLAIN_HTTP_REGISTRIES");
  if (env == nullptr) return false;
  std::stringstream list(env);
  for (std::string item; std::getline(list, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item == registry) return true;
  }
  return false;
}


}  // namespace

OciPuller::OciPuller(net::HttpOptions options, net::RegistryCredentials credentials)
    : options_(options), http_(std::move(options)), auth_(std::move(credentials), net::RegistryAccess::pull) {}

OciPuller OciPuller::sibling() const {
  OciPuller twin(options_, net::RegistryCredentials{});
  twin.auth_ = auth_;
  return twin;
}

std::string OciPuller::base(const net::ImageReference& image) const {
  return (plain_http_registry(image.registry) ? "http://" : "https://") +
         (image.registry == "docker.io" ? std::string("registry-1.docker.io") : image.registry);
}

std::string OciPuller::manifest_url(const net::ImageReference& image, const std::string& reference) const {
  return base(image) + "/v2/" + image.repository + "/manifests/" + reference;
}

std::string OciPuller::blob_url(const net::ImageReference& image, const std::string& digest) const {
  return base(image) + "/v2/" + image.repository + "/blobs/" + digest;
}

std::vector<std::string> OciPuller::auth_headers(const net::ImageReference& image) const {
  return auth_.headers(image.registry, image.repository);
}

net::HttpResponse OciPuller::get(const net::ImageReference& image, const std::string& url, const std::string& accept) {
  auto send = [&] {
    auto headers = auth_headers(image);
    headers.push_back("Accept: " + accept);
    return http_.get(url, headers);
  };
  auto response = send();
  if (response.status != 401) return response;
  auth_.answer(http_, image.registry, image.repository, url, response);
  response = send();
  if (response.status == 401) throw auth_.refused(image.registry, image.repository, url);
  return response;
}

FetchedManifest OciPuller::manifest(const net::ImageReference& image, const std::string& reference) {
  auto fetched = manifest_if_present(image, reference);
  if (!fetched)
    throw Error("image " + image.address() + ":" + reference + " not found (" + net::redact_url(manifest_url(image, reference)) + ")");
  return std::move(*fetched);
}

std::optional<FetchedManifest> OciPuller::manifest_if_present(const net::ImageReference& image, const std::string& reference) {
  FetchedManifest fetched;
  fetched.url = manifest_url(image, reference);
  auto response = get(image, fetched.url, net::image_media::accept_all);
  if (response.status == 404) return std::nullopt;
  if (response.status != 200)
    throw Error("cannot fetch the manifest " + image.address() + ":" + reference + " (" + net::redact_url(fetched.url) +
                "): " + response.status_text());
  fetched.bytes = std::move(response.body);
  fetched.digest = "sha256:" + sha256_hex(fetched.bytes);
  std::string expected = reference.rfind("sha256:", 0) == 0 ? reference : response.header("docker-content-digest");
  if (!expected.empty() && expected != fetched.digest)
    throw Error(mismatch_message("manifest digest mismatch for " + image.address() + ":" + reference, expected, fetched.digest));
  fetched.media_type = net::manifest_media_type(fetched.bytes, response.content_type());
  return fetched;
}

std::optional<FetchedManifest> OciPuller::referrers(const net::ImageReference& image, const std::string& digest) {
  // A registry without the API answers 404 (distribution 2.8), or another 4xx for a path it
  // does not route; a 5xx that outlived the retries is a failure, not "none".
  auto unsupported = [](long status) { return status == 404 || (status >= 400 && status < 500) || status == 501; };
  FetchedManifest fetched;
  fetched.url = base(image) + "/v2/" + image.repository + "/referrers/" + digest;
  auto response = get(image, fetched.url, net::image_media::oci_index);
  if (response.status == 200 && response.content_type() == net::image_media::oci_index) {
    fetched.bytes = std::move(response.body);
  } else if (response.status == 200 || unsupported(response.status)) {
    std::string tag = "sha256-" + digest.substr(7);
    fetched.url = manifest_url(image, tag);
    response = get(image, fetched.url, net::image_media::accept_all);
    if (response.status == 404) return std::nullopt;
    if (response.status != 200)
      throw Error("cannot fetch the referrers of " + image.address() + "@" + digest + " (" + net::redact_url(fetched.url) +
                  "): " + response.status_text());
    fetched.bytes = std::move(response.body);
  } else {
    throw Error("cannot fetch the referrers of " + image.address() + "@" + digest + " (" + net::redact_url(fetched.url) +
                "): " + response.status_text());
  }
  fetched.digest = "sha256:" + sha256_hex(fetched.bytes);
  fetched.media_type = net::manifest_media_type(fetched.bytes, response.content_type());
  return fetched;
}

std::string OciPuller::small_blob(const net::ImageReference& image, const std::string& digest, std::int64_t size,
                                  std::int64_t limit) {
  std::string what = "the blob " + image.address() + "@" + digest;
  if (size > limit) throw Error(what + " is larger than " + std::to_string(limit) + " bytes (" + std::to_string(size) + ")");
  std::string url = blob_url(image, digest);
  auto response = get(image, url, "*/*");
  if (response.status != 200) throw Error("cannot fetch " + what + " (" + net::redact_url(url) + "): " + response.status_text());
  if (static_cast<std::int64_t>(response.body.size()) != size)
    throw Error(mismatch_message(what + " has another size than its descriptor says", std::to_string(size),
                                 std::to_string(response.body.size())));
  std::string got = "sha256:" + sha256_hex(response.body);
  if (got != digest) throw Error(mismatch_message("digest mismatch for " + what, digest, got));
  return std::move(response.body);
}

}  // namespace podplane::fetch
