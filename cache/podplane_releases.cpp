#include "cache/podplane_releases.hpp"

#include "base/error.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/shasums.hpp"
#include "lockfile/version.hpp"

namespace podplane::cache {

namespace {

bool is_canonical_version(std::string_view text) {
  try {
    return lockfile::Version::parse(text).str() == text;
  } catch (const Error&) {
    return false;
  }
}

// "linux_amd64" from os and arch, or "" when they are not of Platform's alphabet.
std::string platform_of(std::string_view os, std::string_view arch) {
  const std::string text = std::string(os) + "_" + std::string(arch);
  try {
    return lockfile::Platform::parse(text).str() == text ? text : std::string();
  } catch (const Error&) {
    return {};
  }
}

// "<version>-<os>-<arch>" (the version may hold '-' itself: 0.2.0-rc1) into its file's fields.
std::optional<PodplaneReleaseFile> versioned_platform(std::string_view middle, PodplaneReleaseFile::Form form) {
  const auto arch_at = middle.rfind('-');
  if (arch_at == std::string_view::npos || arch_at == 0) return std::nullopt;
  const auto os_at = middle.rfind('-', arch_at - 1);
  if (os_at == std::string_view::npos) return std::nullopt;
  PodplaneReleaseFile file;
  file.form = form;
  file.version = std::string(middle.substr(0, os_at));
  file.platform = platform_of(middle.substr(os_at + 1, arch_at - os_at - 1), middle.substr(arch_at + 1));
  if (file.platform.empty() || !is_canonical_version(file.version)) return std::nullopt;
  return file;
}

bool strip(std::string_view& text, std::string_view prefix, std::string_view suffix) {
  if (text.size() <= prefix.size() + suffix.size() || !text.starts_with(prefix) || !text.ends_with(suffix)) return false;
  text = text.substr(prefix.size(), text.size() - prefix.size() - suffix.size());
  return true;
}

}  // namespace

std::optional<PodplaneReleaseFile> parse_podplane_release_name(std::string_view filename) {
  using Form = PodplaneReleaseFile::Form;
  // The image first: "podplane-mirror-…" also starts as a tarball's name does.
  if (std::string_view middle = filename; strip(middle, "podplane-mirror-", ".oci.tar")) {
    return versioned_platform(middle, Form::oci_image);
  }
  if (std::string_view middle = filename; strip(middle, "podplane-", ".tar.gz")) {
    return versioned_platform(middle, Form::tarball);
  }
  if (std::string_view middle = filename; strip(middle, "podplane_", ".deb")) {
    // Debian names the architecture only; a deb is for Linux.
    const auto arch_at = middle.rfind('_');
    if (arch_at == std::string_view::npos) return std::nullopt;
    PodplaneReleaseFile file;
    file.form = Form::deb;
    file.version = std::string(middle.substr(0, arch_at));
    file.platform = platform_of("linux", middle.substr(arch_at + 1));
    if (file.platform.empty() || !is_canonical_version(file.version)) return std::nullopt;
    return file;
  }
  return std::nullopt;
}

std::string podplane_tarball_name(std::string_view version, std::string_view platform) {
  std::string os_arch(platform);
  if (auto at = os_arch.find('_'); at != std::string::npos) os_arch[at] = '-';
  return "podplane-" + std::string(version) + "-" + os_arch + ".tar.gz";
}

std::string podplane_shasums_name(std::string_view version) { return "podplane_" + std::string(version) + "_SHA256SUMS"; }

std::string podplane_shasums_document(const std::map<std::string, std::string>& digests) {
  std::string document;
  for (const auto& [filename, digest] : digests) document += digest + "  " + filename + "\n";
  return document;
}

PodplaneRecheck recheck_podplane_releases(const Store& store, const std::vector<Artifact>& archives) {
  PodplaneRecheck result;
  std::map<std::string, std::map<std::string, std::string>> listed_by_version;  // parsed once per release
  for (const auto& archive : archives) {
    if (archive.kind != ArtifactKind::tool_archive || archive.address != kPodplaneReleaseAddress) continue;
    const std::string what = archive.address + " " + archive.version + " " + archive.filename;
    ++result.files_checked;
    const std::string sums_name = podplane_shasums_name(archive.version);
    try {
      auto listed = listed_by_version.find(archive.version);
      if (listed == listed_by_version.end()) {
        auto sums = store.find_artifact(ArtifactKind::tool_shasums, kPodplaneReleaseAddress, archive.version, "", sums_name);
        if (!sums || !store.has_object(sums->digest)) {
          result.problems.push_back(what + ": the store holds no " + sums_name + " for it");
          continue;
        }
        listed = listed_by_version.emplace(archive.version, lockfile::parse_shasums(store.read_object(sums->digest), sums_name)).first;
      }
      auto line = listed->second.find(archive.filename);
      if (line == listed->second.end()) {
        result.problems.push_back(what + ": " + sums_name + " lists no " + archive.filename);
      } else if (line->second != archive.digest) {
        result.problems.push_back(mismatch_message(what + ": " + sums_name + " does not list this file's digest", line->second,
                                                   archive.digest));
      }
    } catch (const Error& error) {
      result.problems.push_back(what + ": " + error.what());
    }
  }
  return result;
}

PodplaneRecheck recheck_podplane_releases(const Store& store) {
  return recheck_podplane_releases(
      store, store.artifacts({.kind = ArtifactKind::tool_archive, .address = std::string(kPodplaneReleaseAddress)}));
}

}  // namespace podplane::cache
