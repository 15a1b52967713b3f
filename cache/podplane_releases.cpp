#include "cache/podplane_releases.hpp"

#include "base/error.hpp"
#include "lockfile/platform.hpp"
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

std::string podplane_signature_name(std::string_view version) { return podplane_shasums_name(version) + ".sig"; }

std::string podplane_shasums_document(const std::map<std::string, std::string>& digests) {
  std::string document;
  for (const auto& [filename, digest] : digests) document += digest + "  " + filename + "\n";
  return document;
}

}  // namespace podplane::cache
