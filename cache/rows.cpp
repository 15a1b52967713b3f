#include "cache/rows.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace podplane::cache {

std::string_view to_string(ArtifactKind kind) {
  switch (kind) {
    case ArtifactKind::provider_package: return "provider_package";
    case ArtifactKind::provider_shasums: return "provider_shasums";
    case ArtifactKind::provider_signature: return "provider_signature";
    case ArtifactKind::provider_keys: return "provider_keys";
    case ArtifactKind::vmconfig_manifest: return "vmconfig_manifest";
    case ArtifactKind::vmconfig_artifact: return "vmconfig_artifact";
    case ArtifactKind::vmconfig_boot_file: return "vmconfig_boot_file";
    case ArtifactKind::image_index: return "image_index";
    case ArtifactKind::image_manifest: return "image_manifest";
    case ArtifactKind::image_blob: return "image_blob";
    case ArtifactKind::image_attachment: return "image_attachment";
    case ArtifactKind::seed_manifest: return "seed_manifest";
    case ArtifactKind::seed_snapshot: return "seed_snapshot";
    case ArtifactKind::tool_archive: return "tool_archive";
    case ArtifactKind::tool_shasums: return "tool_shasums";
    case ArtifactKind::tool_signature: return "tool_signature";
  }
  return "unknown";
}

ArtifactKind parse_artifact_kind(std::string_view text) {
  for (auto kind : {ArtifactKind::provider_package, ArtifactKind::provider_shasums, ArtifactKind::provider_signature,
                    ArtifactKind::provider_keys, ArtifactKind::vmconfig_manifest, ArtifactKind::vmconfig_artifact,
                    ArtifactKind::vmconfig_boot_file,
                    ArtifactKind::image_index, ArtifactKind::image_manifest, ArtifactKind::image_blob,
                    ArtifactKind::image_attachment,
                    ArtifactKind::seed_manifest, ArtifactKind::seed_snapshot,
                    ArtifactKind::tool_archive, ArtifactKind::tool_shasums, ArtifactKind::tool_signature}) {
    if (to_string(kind) == text) return kind;
  }
  throw Error("unknown artifact kind '" + std::string(text) +
              "' (expected provider_package, provider_shasums, provider_signature, provider_keys, "
              "vmconfig_manifest, vmconfig_artifact, vmconfig_boot_file, image_index, image_manifest, image_blob, image_attachment, seed_manifest, "
              "seed_snapshot, tool_archive, tool_shasums or tool_signature)");
}

std::string_view to_string(Trust trust) {
  switch (trust) {
    case Trust::signed_upstream: return "signed_upstream";
    case Trust::checksum: return "checksum";
    case Trust::unverified: return "unverified";
  }
  return "unknown";
}

Trust parse_trust(std::string_view text) {
  for (auto trust : {Trust::signed_upstream, Trust::checksum, Trust::unverified}) {
    if (to_string(trust) == text) return trust;
  }
  throw Error("unknown trust level '" + std::string(text) + "' (expected signed_upstream, checksum or unverified)");
}

std::string protocols_column(const std::optional<std::vector<std::string>>& protocols) {
  if (!protocols) return "";
  return nlohmann::json(*protocols).dump();
}

std::optional<std::vector<std::string>> parse_protocols_column(std::string_view text) {
  if (text.empty()) return std::nullopt;
  auto document = nlohmann::json::parse(text, nullptr, false);
  bool ok = document.is_array() &&
            std::all_of(document.begin(), document.end(), [](const nlohmann::json& item) { return item.is_string(); });
  if (!ok) throw Error(mismatch_message("plugin protocols are not a list of strings", "[\"6.0\", …]", std::string(text)));
  return document.get<std::vector<std::string>>();
}

}  // namespace podplane::cache
