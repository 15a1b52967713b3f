// The read side of the OCI distribution API over the store's images, as paths of the site map:
//   /v2/                                                  {} + Docker-Distribution-API-Version
//   /v2/mirror/<registry>/<repository>/manifests/<tag>    the newest index (or manifest) of that tag
//   /v2/mirror/<registry>/<repository>/manifests/sha256:… every stored index and manifest
//   /v2/mirror/<registry>/<repository>/blobs/sha256:…     every stored config and layer
//   /v2/mirror/<registry>/<repository>/tags/list
//   /v2/mirror/<registry>/<repository>/manifests/sha256-<hex>.sig  the image's cosign signature
//   /v2/mirror/<registry>/<repository>/referrers/sha256:…  an OCI index of the stored manifests
//                                                          whose subject is that digest (OCI 1.1)
// Only the rows of that repository answer under its name: a blob of another image, or any other
// store object, is never reachable through it.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cache/kinds.hpp"
#include "cache/row_rules.hpp"
#include "net/oci_reference.hpp"
#include "mirror/serve_site.hpp"

namespace podplane::mirror {

namespace {

using nlohmann::json;

// The Content-Type a stored manifest is served with: its own mediaType when that is a manifest
// or index type, else application/octet-stream (a row from an older store or a bundle may
// name anything; a browser must never be handed it as a page).
std::string media_type_of(const cache::Store& store, const cache::Artifact& row) {
  json document;
  try {
    document = json::parse(store.read_object(row.digest), nullptr, false);
  } catch (const std::exception&) {
    return "";
  }
  if (!document.is_object()) return "";
  if (document.contains("mediaType") && document["mediaType"].is_string()) {
    auto type = document["mediaType"].get<std::string>();
    return net::image_media::is_manifest_type(type) ? type : "application/octet-stream";
  }
  return document.contains("manifests") ? net::image_media::oci_index : net::image_media::oci_manifest;
}

// A referrer's descriptor in a referrers index (OCI 1.1): its media type, digest and size, its
// artifactType (else its config's media type) and its annotations. nullopt when unreadable.
std::optional<json> referrer_descriptor(const cache::Store& store, const cache::Artifact& row, const std::string& media_type) {
  json document;
  try {
    document = json::parse(store.read_object(row.digest), nullptr, false);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!document.is_object()) return std::nullopt;
  json descriptor{{"mediaType", media_type}, {"digest", row.filename}, {"size", row.size}};
  if (document.contains("artifactType") && document["artifactType"].is_string())
    descriptor["artifactType"] = document["artifactType"];
  else if (document.contains("config") && document["config"].is_object() && document["config"].contains("mediaType") &&
           document["config"]["mediaType"].is_string())
    descriptor["artifactType"] = document["config"]["mediaType"];
  if (document.contains("annotations") && document["annotations"].is_object()) descriptor["annotations"] = document["annotations"];
  return descriptor;
}

json referrers_index(const json& descriptors) {
  return json{{"schemaVersion", 2}, {"mediaType", net::image_media::oci_index}, {"manifests", descriptors}};
}

}  // namespace

void add_image_resources(const cache::Store& store, ImageRows all, MirrorSite& site) {
  std::map<std::string, ImageRows> images;  // by address: that repository's rows
  // An attachment (a cosign signature at its tag sha256-<hex>.sig, as cosign and
  // containers/image look for it, or a referrer) is served as a manifest, with its payloads as blobs.
  for (auto* served : {&all.indexes, &all.manifests, &all.attachments, &all.blobs}) {
    for (auto& row : *served) {
      try {
        cache::check_artifact_layout(row);
      } catch (const std::exception& error) {
        site.skipped_.push_back(std::string("image row: ") + error.what());
        continue;
      }
      auto& rows = images[row.address];
      (served == &all.indexes ? rows.indexes : served == &all.manifests ? rows.manifests : served == &all.attachments ? rows.attachments : rows.blobs)
          .push_back(std::move(row));
    }
  }
  if (images.empty()) return;

  auto add = [&site](const std::string& path, SiteResource resource) {
    resource.registry_api = true;
    site.resources_[path] = std::move(resource);
  };
  {
    SiteResource base;
    base.content_type = "application/json";
    base.body = "{}";
    add(std::string(site_paths::registry_api), std::move(base));
  }
  auto object = [&store](const cache::Artifact& row, const std::string& media_type) {
    SiteResource resource;
    resource.kind = ResourceKind::object;
    resource.content_type = media_type;
    resource.object = store.object_path(row.digest);
    resource.size = row.size;
    resource.digest = row.digest;
    resource.oci_digest = row.filename;
    return resource;
  };

  for (auto& [address, rows] : images) {
    PublishedImage image;
    image.address = address;
    image.repository = net::mirror_repository(address);
    std::string prefix = std::string(site_paths::registry_api) + image.repository + "/";
    // The newest row of a tag wins (a later fetch of a moved tag), indexes before manifests.
    struct Tagged {
      const cache::Artifact* row;
      std::string media_type;
      bool index;
    };
    std::map<std::string, Tagged> tags;
    std::set<std::string> seen;
    std::map<std::string, json> referrers;  // subject digest → the descriptors of its referrers
    auto publish_manifest = [&](const cache::Artifact& row, cache::Served served) {
      const bool index = served == cache::Served::oci_index;
      std::string media_type = media_type_of(store, row);
      if (media_type.empty()) {
        site.skipped_.push_back("image " + address + ": the manifest " + row.filename + " is not readable JSON");
        return;
      }
      if (cache::image_tag_problem(row.version) == std::nullopt) {
        auto it = tags.find(row.version);
        bool wins = it == tags.end() || (index && !it->second.index) || (it->second.index == index && it->second.row->id < row.id);
        if (wins) tags[row.version] = {&row, media_type, index};
      }
      // A referrer (an attachment whose version is its subject's digest) is listed under its subject.
      if (served == cache::Served::oci_attachment && !cache::image_digest_problem(row.version)) {
        auto& list = referrers.try_emplace(row.version, json::array()).first->second;
        bool listed = std::any_of(list.begin(), list.end(), [&](const json& d) { return d["digest"] == row.filename; });
        if (auto descriptor = referrer_descriptor(store, row, media_type); descriptor && !listed) list.push_back(*descriptor);
      }
      if (!seen.insert(row.filename).second) return;
      add(prefix + "manifests/" + row.filename, object(row, media_type));
      image.manifests.push_back({row.filename, media_type, store.object_path(row.digest), row.size});
    };
    for (const auto& row : rows.manifests) publish_manifest(row, cache::Served::oci_manifest);
    for (const auto& row : rows.attachments) publish_manifest(row, cache::Served::oci_attachment);
    for (const auto& row : rows.indexes) publish_manifest(row, cache::Served::oci_index);
    std::set<std::string> blob_seen;
    for (const auto& row : rows.blobs) {
      if (!blob_seen.insert(row.filename).second) continue;
      add(prefix + "blobs/" + row.filename, object(row, "application/octet-stream"));
      image.blobs.push_back({row.filename, "", store.object_path(row.digest), row.size});
    }
    json tag_list = json::array();
    for (const auto& [tag, chosen] : tags) {
      add(prefix + "manifests/" + tag, object(*chosen.row, chosen.media_type));
      image.tags.push_back({tag, chosen.row->filename, chosen.media_type, chosen.row->size});
      tag_list.push_back(tag);
    }
    // Every manifest served here answers /referrers/ (empty when it has none); other digests
    // get an empty index from mirror serve itself.
    for (const auto& digest : seen) referrers.try_emplace(digest, json::array());
    for (const auto& [subject, descriptors] : referrers) {
      if (!descriptors.empty()) image.referrers[subject] = referrers_index(descriptors).dump();
      SiteResource index;
      index.referrers_index = true;
      index.content_type = net::image_media::oci_index;
      index.body = referrers_index(descriptors).dump();
      add(prefix + "referrers/" + subject, std::move(index));
    }
    SiteResource list;
    list.content_type = "application/json";
    list.body = json{{"name", image.repository}, {"tags", tag_list}}.dump();
    add(prefix + "tags/list", std::move(list));
    site.images_.push_back(std::move(image));
  }
}

}  // namespace podplane::mirror
