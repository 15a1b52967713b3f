#include "net/oci_reference.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "base/error.hpp"
#include "cache/row_rules.hpp"

namespace podplane::net {

using nlohmann::json;

std::string ImageReference::str() const {
  std::string text = address();
  if (!tag.empty()) text += ":" + tag;
  if (!digest.empty()) text += "@" + digest;
  return text;
}

ImageReference ImageReference::parse(std::string_view input) {
  std::string text(input);
  auto fail = [&](const std::string& why) -> ImageReference {
    throw Error("image reference '" + text + "': " + why);
  };
  if (text.empty()) return fail("empty");
  ImageReference image;
  std::string name = text;
  if (auto at = name.find('@'); at != std::string::npos) {
    image.digest = name.substr(at + 1);
    name = name.substr(0, at);
    if (auto problem = cache::image_digest_problem(image.digest)) return fail("digest " + *problem);
  }
  auto last_slash = name.rfind('/');
  auto colon = name.rfind(':');
  if (colon != std::string::npos && (last_slash == std::string::npos || colon > last_slash)) {
    image.tag = name.substr(colon + 1);
    name = name.substr(0, colon);
    if (auto problem = cache::image_tag_problem(image.tag)) return fail("tag " + *problem);
  }
  // Docker's rule: the first component is a registry when it looks like a host.
  auto slash = name.find('/');
  std::string first = name.substr(0, slash);
  if (slash != std::string::npos &&
      (first.find('.') != std::string::npos || first.find(':') != std::string::npos || first == "localhost")) {
    image.registry = first;
    image.repository = name.substr(slash + 1);
  } else {
    image.registry = "docker.io";
    image.repository = slash == std::string::npos ? "library/" + name : name;
  }
  image.registry = ascii_lower(image.registry);
  if (image.registry == "index.docker.io" || image.registry == "registry-1.docker.io") image.registry = "docker.io";
  if (auto problem = cache::image_address_problem(image.address())) return fail(*problem);
  if (image.tag.empty() && image.digest.empty()) image.tag = "latest";
  return image;
}

std::string mirror_registry_prefix(const std::string& registry) {
  std::string name = registry;
  std::replace(name.begin(), name.end(), ':', '_');
  return "mirror/" + name;
}

std::string mirror_repository(const std::string& address) {
  auto slash = address.find('/');
  if (slash == std::string::npos) return mirror_registry_prefix(address);
  return mirror_registry_prefix(address.substr(0, slash)) + address.substr(slash);
}

std::string address_of_mirror_repository(const std::string& repository) {
  if (repository.rfind("mirror/", 0) != 0) return "";
  std::string address = repository.substr(7);
  auto slash = address.find('/');
  if (slash == std::string::npos) return "";
  std::replace(address.begin(), address.begin() + static_cast<std::ptrdiff_t>(slash), '_', ':');
  return address;
}

bool image_media::is_manifest_type(std::string_view media_type) {
  return media_type == oci_index || media_type == oci_manifest || media_type == docker_list || media_type == docker_manifest;
}

std::string manifest_media_type(const std::string& bytes, const std::string& content_type) {
  auto document = json::parse(bytes, nullptr, false);
  if (document.is_object() && document.contains("mediaType") && document["mediaType"].is_string())
    return document["mediaType"].get<std::string>();
  if (document.is_object() && document.contains("manifests")) return image_media::oci_index;
  if (!content_type.empty() && content_type != "application/json" && content_type != "text/plain") return content_type;
  return image_media::oci_manifest;
}

}  // namespace podplane::net
