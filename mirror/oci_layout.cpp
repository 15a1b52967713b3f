#include "mirror/oci_layout.hpp"

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "net/oci_reference.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;
using nlohmann::json;

std::size_t write_oci_layout(const PublishedImage& image, const fs::path& dir, const PlaceObject& place) {
  fs::create_directories(dir / "blobs" / "sha256");
  std::set<std::string> placed;
  auto put = [&](const std::string& digest, const fs::path& object, std::int64_t size) {
    std::string hex = digest.substr(7);  // digests were validated as sha256:<64 hex> by the site
    if (!placed.insert(hex).second) return;
    place(object, hex, size, dir / "blobs" / "sha256" / hex);
  };
  for (const auto& blob : image.blobs) put(blob.digest, blob.object, blob.size);
  for (const auto& manifest : image.manifests) put(manifest.digest, manifest.object, manifest.size);
  json manifests = json::array();
  for (const auto& tag : image.tags) {
    manifests.push_back({{"mediaType", tag.media_type},
                         {"digest", tag.digest},
                         {"size", tag.size},
                         {"annotations",
                          {{"org.opencontainers.image.ref.name", tag.tag},
                           {"io.containerd.image.name", image.address + ":" + tag.tag}}}});
  }
  write_file_durably(dir / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  write_file_durably(dir / "index.json",
             json{{"schemaVersion", 2}, {"mediaType", net::image_media::oci_index}, {"manifests", manifests}}.dump());
  return placed.size();
}

}  // namespace podplane::mirror
