#pragma once
// An OCI image layout (image-spec "image-layout.md": oci-layout, index.json, blobs/sha256/<hex>)
// of one published image, as `mirror export` writes it under registry/<mirror name>/ (the
// layout Podplane's registry cache uses, so zot, skopeo `oci:` and containerd can read it).
// index.json lists what each tag resolves to, with org.opencontainers.image.ref.name = the tag.
// Pure: the export plan (mirror/export_plan.hpp) turns it into files.
#include <string>
#include <vector>

#include "mirror/serve_site.hpp"

namespace podplane::mirror {

struct OciLayout {
  // Every blob, manifest and index of the image once, each at blobs/sha256/<hex of its digest>.
  std::vector<PublishedImage::Content> blobs;
  std::string oci_layout;  // the `oci-layout` file
  std::string index_json;  // `index.json`
};

[[nodiscard]] OciLayout oci_layout(const PublishedImage& image);

}  // namespace podplane::mirror
