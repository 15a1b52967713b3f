#pragma once
// An OCI image layout (image-spec "image-layout.md": oci-layout, index.json, blobs/sha256/<hex>)
// of one published image, as `mirror export` writes it under registry/<mirror name>/ (the
// layout Podplane's registry cache uses, so zot, skopeo `oci:` and containerd can read it).
// index.json lists what each tag resolves to, with org.opencontainers.image.ref.name = the tag.
// Errors: podplane::Error.
#include <cstdint>
#include <filesystem>
#include <functional>

#include "mirror/serve_site.hpp"

namespace podplane::mirror {

// Places one store object at `destination` (a hard link or a copy), checked against its digest.
using PlaceObject = std::function<void(const std::filesystem::path& object, const std::string& sha256_hex,
                                       std::int64_t size, const std::filesystem::path& destination)>;

// Writes the layout into `dir` (created); returns the number of blobs placed.
std::size_t write_oci_layout(const PublishedImage& image, const std::filesystem::path& dir, const PlaceObject& place);

}  // namespace podplane::mirror
