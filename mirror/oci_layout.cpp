#include "mirror/oci_layout.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "net/oci_reference.hpp"

namespace podplane::mirror {

using nlohmann::json;

OciLayout oci_layout(const PublishedImage& image) {
  OciLayout layout;
  std::set<std::string> placed;
  auto put = [&](const PublishedImage::Content& content) {
    if (placed.insert(content.digest).second) layout.blobs.push_back(content);
  };
  for (const auto& blob : image.blobs) put(blob);
  for (const auto& manifest : image.manifests) put(manifest);
  json manifests = json::array();
  for (const auto& tag : image.tags) {
    manifests.push_back({{"mediaType", tag.media_type},
                         {"digest", tag.digest},
                         {"size", tag.size},
                         {"annotations",
                          {{"org.opencontainers.image.ref.name", tag.tag},
                           {"io.containerd.image.name", image.address + ":" + tag.tag}}}});
  }
  layout.oci_layout = R"({"imageLayoutVersion":"1.0.0"})";
  layout.index_json =
      json{{"schemaVersion", 2}, {"mediaType", net::image_media::oci_index}, {"manifests", manifests}}.dump();
  return layout;
}

}  // namespace podplane::mirror
