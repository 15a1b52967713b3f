#include "cache/row_rules.hpp"

#include <algorithm>
#include <regex>
#include <set>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "base/hex.hpp"
#include "cache/podplane_releases.hpp"
#include "cache/tool_releases.hpp"
#include "lockfile/hash.hpp"
#include "lockfile/platform.hpp"
#include "lockfile/provider_names.hpp"
#include "lockfile/version.hpp"

namespace podplane::cache {

namespace {

// Long enough for any real module tree, short enough that <deps root>/tf/modules/<address>/
// <version>/<path> stays far below PATH_MAX (4096) on any sane deps root.
constexpr std::size_t kMaxModuleAddress = 512;
constexpr std::size_t kMaxModulePath = 1024;
// Registries list one or two plugin protocols ("5.0", "6.0"); far more is not a registry answer.
constexpr std::size_t kMaxProtocols = 16;
constexpr std::size_t kMaxProtocolLength = 32;

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

[[noreturn]] void refuse(const std::string& row, const std::string& why) { throw Error(row + ": " + why); }

void require_segment(const std::string& row, std::string_view field, std::string_view value) {
  if (auto problem = segment_problem(value)) {
    refuse(row, std::string(field) + " '" + std::string(value) + "' is not a plain path segment (" + *problem + ")");
  }
}

void require_text(const std::string& row, std::string_view field, std::string_view value) {
  if (has_control_character(value)) refuse(row, std::string(field) + " contains a control character");
}

// A version as the views and the lock file write it: 6.2.0, never 6.2 or v6.2.0 (so that the
// file names of one release agree, and no version can be "index" beside index.json).
void require_canonical_version(const std::string& row, std::string_view field, std::string_view version) {
  std::string canonical;
  try {
    canonical = lockfile::Version::parse(version).str();
  } catch (const Error& error) {
    refuse(row, std::string(field) + " '" + std::string(version) + "' is not a version: " + error.what());
  }
  if (canonical != version) {
    refuse(row, mismatch_message(std::string(field) + " is not written canonically", canonical, std::string(version)));
  }
}

void require_platform(const std::string& row, std::string_view platform) {
  bool ok = false;
  try {
    ok = lockfile::Platform::parse(platform).str() == platform;
  } catch (const Error&) {
  }
  if (!ok) refuse(row, "platform '" + std::string(platform) + "' is not of the form os_arch (e.g. linux_amd64)");
}

// As Podplane names the file: what follows the last '/' of the URL without its query.
std::string last_url_segment(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::optional<std::string> segment_problem(std::string_view name) {
  if (name.empty()) return "empty";
  if (name == "." || name == "..") return "a relative directory reference ('" + std::string(name) + "')";
  if (name.size() > 255) return "longer than 255 bytes";
  for (char c : name) {
    if (c == '/') return "contains a path separator ('/')";
    if (c == '\\') return "contains a path separator ('\\')";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "contains a control character";
  }
  return std::nullopt;
}

std::optional<std::string> relative_path_problem(std::string_view path) {
  if (path.empty()) return "empty";
  if (path.front() == '/') return "absolute";
  std::size_t start = 0;
  for (;;) {
    auto end = path.find('/', start);
    auto part = path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (auto problem = segment_problem(part)) return "a component is " + *problem;
    if (end == std::string_view::npos) return std::nullopt;
    start = end + 1;
  }
}

std::optional<std::string> provider_address_problem(std::string_view address) {
  if (std::count(address.begin(), address.end(), '/') != 2) return "not a provider address HOST/NAMESPACE/TYPE";
  try {
    std::string normal = lockfile::ProviderAddress::parse(address, "").str();
    if (normal != address) return "not normalised (expected " + normal + ")";
  } catch (const Error& error) {
    return std::string(error.what());
  }
  return std::nullopt;
}

std::optional<std::string> image_address_problem(std::string_view address) {
  // The registry host never holds '/', the repository may: split at the first '/'.
  auto slash = address.find('/');
  if (slash == std::string_view::npos) return "not <registry>/<repository>";
  static const std::regex host_re(R"(^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[0-9]{1,5})?$)");
  static const std::regex repository_re(R"(^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$)");
  std::string host(address.substr(0, slash));
  std::string repository(address.substr(slash + 1));
  if (!std::regex_match(host, host_re)) return "registry '" + host + "' is not a lower-case host[:port]";
  if (repository.size() > 255 || !std::regex_match(repository, repository_re))
    return "repository '" + repository + "' is not an OCI repository name (lower-case components separated by '/')";
  return std::nullopt;
}

std::optional<std::string> image_tag_problem(std::string_view tag) {
  static const std::regex re(R"(^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$)");
  if (!std::regex_match(std::string(tag), re)) return "'" + std::string(tag) + "' is not an OCI tag";
  return std::nullopt;
}

std::optional<std::string> image_digest_problem(std::string_view digest) {
  if (digest.substr(0, 7) != "sha256:" || !is_sha256_hex(digest.substr(7)))
    return "'" + std::string(digest) + "' is not a sha256:<64 lower-case hex> digest";
  return std::nullopt;
}

std::optional<std::string> image_attachment_tag(std::string_view tag) {
  constexpr std::string_view prefix = "sha256-";
  if (tag.size() <= prefix.size() + 64 || tag.substr(0, prefix.size()) != prefix || !is_sha256_hex(tag.substr(prefix.size(), 64)))
    return std::nullopt;
  auto suffix = tag.substr(prefix.size() + 64);
  if (suffix != kCosignSignatureSuffix && suffix != kCosignAttestationSuffix && suffix != kCosignSbomSuffix) return std::nullopt;
  return "sha256:" + std::string(tag.substr(prefix.size(), 64));
}

Artifact image_row(ArtifactKind kind, const std::string& address, const std::string& version, const std::string& platform,
                   const std::string& digest, std::int64_t size, const std::string& upstream_url) {
  Artifact row;
  row.kind = kind;
  row.address = address;
  row.version = version;
  row.platform = platform;
  row.filename = digest;
  row.digest = digest.substr(7);
  row.size = size;
  row.upstream_digest = digest;
  row.upstream_url = upstream_url;
  row.trust = Trust::checksum;
  return row;
}

std::string cosign_attachment_tag(std::string_view digest, std::string_view suffix) {
  return "sha256-" + std::string(digest.substr(7)) + std::string(suffix);
}

std::string image_signature_tag(std::string_view digest) { return cosign_attachment_tag(digest, kCosignSignatureSuffix); }

std::optional<std::string> image_platform_problem(std::string_view platform) {
  static const std::regex re(R"(^[a-z0-9]+_[a-z0-9]+(_[a-z0-9]+)?$)");
  if (!std::regex_match(std::string(platform), re))
    return "platform '" + std::string(platform) + "' is not os_arch or os_arch_variant (e.g. linux_arm64, linux_arm_v7)";
  return std::nullopt;
}

std::string vmconfig_view_name(const Artifact& artifact) {
  return artifact.upstream_url.empty() ? artifact.filename : last_url_segment(artifact.upstream_url);
}

std::string provider_package_name(const Artifact& artifact) {
  std::string type = artifact.address.substr(artifact.address.find_last_of('/') + 1);
  return lockfile::provider_package_filename(type, artifact.version, artifact.platform);
}

std::string describe(const Artifact& a) {
  std::string text = std::string(to_string(a.kind)) + " " + a.address + " " + a.version;
  if (!a.platform.empty()) text += " " + a.platform;
  return text + " (" + a.filename + ")";
}

std::string describe(const ModuleTree& tree) { return "module " + tree.address + " " + tree.version; }

bool version_precedes(std::string_view a, std::string_view b) {
  try {
    return lockfile::Version::parse(a) < lockfile::Version::parse(b);
  } catch (const Error&) {
    return false;
  }
}

void check_common_layout(const std::string& row, const Artifact& a, bool protocols_allowed) {
  if (a.address.empty()) refuse(row, "address is empty");
  if (a.version.empty()) refuse(row, "version is empty");
  require_segment(row, "filename", a.filename);
  require_text(row, "address", a.address);
  require_text(row, "version", a.version);
  require_text(row, "upstream URL", a.upstream_url);
  require_text(row, "h1", a.h1);
  require_text(row, "zh", a.zh);
  if (!is_sha256_hex(a.digest)) refuse(row, "digest '" + a.digest + "' is not 64 lower-case hex digits");
  if (!a.upstream_digest.empty()) {
    try {
      (void)TypedDigest::parse(a.upstream_digest);
    } catch (const Error& error) {
      refuse(row, std::string("upstream digest: ") + error.what());
    }
  }
  if (a.protocols && !protocols_allowed) refuse(row, "only a provider package has plugin protocols");
  if (a.protocols) {
    // As the registry gave them, so not parsed as MAJOR.MINOR (the engines skip what they
    // cannot read); but they are served in JSON answers, so bounded and printable.
    if (a.protocols->size() > kMaxProtocols) refuse(row, "more than " + std::to_string(kMaxProtocols) + " plugin protocols");
    for (const auto& protocol : *a.protocols) {
      bool printable = std::all_of(protocol.begin(), protocol.end(), [](char c) { return c > 0x20 && c < 0x7f; });
      if (protocol.empty() || protocol.size() > kMaxProtocolLength || !printable)
        refuse(row, "plugin protocol '" + protocol + "' is not a short printable word such as 6.0");
    }
  }
}

void check_provider_package_layout(const std::string& row, const Artifact& a) {
  if (auto problem = provider_address_problem(a.address)) refuse(row, "address: " + *problem);
  require_canonical_version(row, "version", a.version);
  if (a.platform.empty()) refuse(row, "a provider package needs a platform (os_arch)");
  require_platform(row, a.platform);
  if (a.filename != provider_package_name(a)) {
    refuse(row, mismatch_message("filename is not the package's name", provider_package_name(a), a.filename));
  }
  if (!a.h1.empty() && (a.h1.rfind("h1:", 0) != 0 || a.h1.size() == 3 || a.h1.find_first_of(" \"\\") != std::string::npos)) {
    refuse(row, "h1 '" + a.h1 + "' is not an h1: hash");
  }
  if (!a.zh.empty() && a.zh != lockfile::zh_hash(a.digest)) {
    refuse(row, mismatch_message("zh hash does not match the object", lockfile::zh_hash(a.digest), a.zh));
  }
}

void check_provider_document_layout(const std::string& row, const Artifact& a) {
  if (auto problem = provider_address_problem(a.address)) refuse(row, "address: " + *problem);
  require_canonical_version(row, "version", a.version);
  if (!a.platform.empty()) require_platform(row, a.platform);
}

void check_vmconfig_manifest_layout(const std::string& row, const Artifact& a) {
  require_segment(row, "manifest name (address)", a.address);
}

void check_vmconfig_artifact_layout(const std::string& row, const Artifact& a) {
  require_segment(row, "name (address)", a.address);
  require_segment(row, "version", a.version);
  if (!a.platform.empty()) require_platform(row, a.platform);
  std::string view = vmconfig_view_name(a);
  if (auto problem = segment_problem(view)) {
    refuse(row, "the view file name '" + view + "' taken from its upstream URL " + a.upstream_url +
                    " is not a plain path segment (" + *problem + ")");
  }
}

void check_boot_file_layout(const std::string& row, const Artifact& a) {
  if (a.address != "os-image") refuse(row, mismatch_message("a boot file's address (the image it is read from)", "os-image", a.address));
  require_segment(row, "version", a.version);
  if (!a.platform.empty()) require_platform(row, a.platform);
  if (a.upstream_digest.empty()) refuse(row, "a boot file needs the digest os.boot gives it");
}

namespace {

// What every image row meets: its address, and the OCI digest that names it is the object's own
// (what we serve under a digest is what it names).
void check_image_object(const std::string& row, const Artifact& a) {
  if (auto problem = image_address_problem(a.address)) refuse(row, "address: " + *problem);
  if (a.filename != "sha256:" + a.digest)
    refuse(row, mismatch_message("filename is not the object's OCI digest", "sha256:" + a.digest, a.filename));
  if (a.upstream_digest != a.filename)
    refuse(row, mismatch_message("upstream digest is not the object's OCI digest", a.filename, a.upstream_digest));
}

// An index, a manifest or an attachment is stored under the tag it was fetched by, or a digest.
void require_tag_or_digest(const std::string& row, const Artifact& a) {
  if (image_digest_problem(a.version) && image_tag_problem(a.version)) {
    refuse(row, "version '" + a.version + "' is neither an OCI tag nor a sha256: digest");
  }
}

void require_image_platform(const std::string& row, const Artifact& a) {
  if (auto problem = image_platform_problem(a.platform)) refuse(row, *problem);
}

}  // namespace

void check_image_index_layout(const std::string& row, const Artifact& a) {
  check_image_object(row, a);
  require_tag_or_digest(row, a);
  if (!a.platform.empty()) refuse(row, "an image index has no platform");
}

void check_image_manifest_layout(const std::string& row, const Artifact& a) {
  check_image_object(row, a);
  require_tag_or_digest(row, a);
  require_image_platform(row, a);
}

void check_image_blob_layout(const std::string& row, const Artifact& a) {
  check_image_object(row, a);
  if (auto problem = image_digest_problem(a.version)) refuse(row, "version (the image manifest's digest): " + *problem);
  if (!a.platform.empty()) require_image_platform(row, a);
}

void check_image_attachment_layout(const std::string& row, const Artifact& a) {
  check_image_object(row, a);
  require_tag_or_digest(row, a);
  // A cosign signature, attestation or SBOM at its tag sha256-<hex>.sig|.att|.sbom, or a
  // referrer (a manifest whose subject is the image's): version = that subject's digest.
  if (!image_attachment_tag(a.version) && image_digest_problem(a.version))
    refuse(row, "version '" + a.version + "' is not an attachment tag sha256-<64 hex>.sig, .att or .sbom, nor the sha256: digest of a referrer's subject");
  if (!a.platform.empty()) refuse(row, "an image attachment has no platform");
}

void check_seed_manifest_layout(const std::string& row, const Artifact& a) {
  if (a.address != "seeds") refuse(row, mismatch_message("a seeds manifest's address", "seeds", a.address));
  require_segment(row, "version", a.version);
}

void check_seed_snapshot_layout(const std::string& row, const Artifact& a) {
  require_segment(row, "seed name (address)", a.address);
  require_segment(row, "version", a.version);
  if (a.upstream_digest.rfind("sha512:", 0) != 0)
    refuse(row, "a seed snapshot needs its sha512: digest from seeds.json, got '" + a.upstream_digest + "'");
}

namespace {

// Engine releases are served at /tools/<engine>/<version>/<filename>: every part fixed by the
// release's name. The engine, from the row's address.
lockfile::Engine release_engine(const std::string& row, const Artifact& a) {
  if (a.address != "terraform" && a.address != "tofu")
    refuse(row, "engine (address) must be terraform or tofu, not '" + a.address + "'");
  require_canonical_version(row, "version", a.version);
  return lockfile::parse_engine(a.address);
}

void require_release_name(const std::string& row, const Artifact& a, const std::string& expected) {
  if (a.filename != expected) refuse(row, mismatch_message("filename is not the release's name", expected, a.filename));
}

void require_no_release_platform(const std::string& row, const Artifact& a) {
  if (!a.platform.empty()) refuse(row, "an engine release's SHA256SUMS and signature have no platform");
}

}  // namespace

void check_engine_archive_layout(const std::string& row, const Artifact& a) {
  const auto engine = release_engine(row, a);
  if (a.platform.empty()) refuse(row, "an engine release zip needs a platform (os_arch)");
  require_platform(row, a.platform);
  require_release_name(row, a, tool_archive_name(engine, a.version, a.platform));
}

void check_engine_shasums_layout(const std::string& row, const Artifact& a) {
  const auto engine = release_engine(row, a);
  require_no_release_platform(row, a);
  require_release_name(row, a, tool_shasums_name(engine, a.version));
}

void check_engine_signature_layout(const std::string& row, const Artifact& a) {
  const auto engine = release_engine(row, a);
  require_no_release_platform(row, a);
  require_release_name(row, a, tool_signature_name(engine, a.version));
}

// Podplane's own release files (docs/tools.md): served at /tools/podplane/<version>/<filename>,
// the name fixing version and platform, beside the SHA256SUMS the store wrote. No signature.
void check_podplane_archive_layout(const std::string& row, const Artifact& a) {
  require_canonical_version(row, "version", a.version);
  auto file = parse_podplane_release_name(a.filename);
  if (!file) refuse(row, "'" + a.filename + "' is not the name of a podplane release file (tarball, deb or OCI image)");
  if (file->version != a.version) refuse(row, mismatch_message("the file name's version is not the row's", a.version, file->version));
  if (file->platform != a.platform)
    refuse(row, mismatch_message("the file name's platform is not the row's", a.platform, file->platform));
}

void check_podplane_shasums_layout(const std::string& row, const Artifact& a) {
  require_canonical_version(row, "version", a.version);
  if (!a.platform.empty()) refuse(row, "a podplane release's SHA256SUMS has no platform");
  if (a.filename != podplane_shasums_name(a.version))
    refuse(row, mismatch_message("filename is not the release's SHA256SUMS", podplane_shasums_name(a.version), a.filename));
}

void check_podplane_signature_layout(const std::string& row, const Artifact& a) {
  require_canonical_version(row, "version", a.version);
  if (!a.platform.empty()) refuse(row, "a podplane release's signature has no platform");
  if (a.filename != podplane_signature_name(a.version))
    refuse(row, mismatch_message("filename is not the release's signature", podplane_signature_name(a.version), a.filename));
}

namespace {

// A git snapshot belongs to the module tree of its address and version: the same rules, and a
// file name of the commit's full id (40 or 64 lower-case hex digits) and the given suffix.
void check_git_snapshot_layout(const std::string& row, const Artifact& a, std::string_view suffix) {
  if (auto problem = relative_path_problem(a.address)) refuse(row, "address is not a relative path (" + *problem + ")");
  if (a.address.size() > kMaxModuleAddress) refuse(row, "address is longer than " + std::to_string(kMaxModuleAddress) + " bytes");
  require_segment(row, "version", a.version);
  if (!a.platform.empty()) refuse(row, "a git snapshot has no platform");
  const std::string id = a.filename.size() > suffix.size() && a.filename.ends_with(suffix)
                             ? a.filename.substr(0, a.filename.size() - suffix.size())
                             : "";
  if ((id.size() != 40 && id.size() != 64) || id.find_first_not_of("0123456789abcdef") != std::string::npos)
    refuse(row, "file name '" + a.filename + "' is not <commit id>" + std::string(suffix));
  require_text(row, "upstream URL", a.upstream_url);
}

}  // namespace

void check_git_pack_layout(const std::string& row, const Artifact& a) { check_git_snapshot_layout(row, a, ".pack"); }
void check_git_refs_layout(const std::string& row, const Artifact& a) { check_git_snapshot_layout(row, a, ".refs.json"); }

void check_module_tree_layout(const ModuleTree& tree) {
  const std::string row = describe(tree);
  if (auto problem = relative_path_problem(tree.address)) refuse(row, "address is not a relative path (" + *problem + ")");
  if (tree.address.size() > kMaxModuleAddress) refuse(row, "address is longer than " + std::to_string(kMaxModuleAddress) + " bytes");
  if (tree.address.substr(0, tree.address.find('/')) == kStackModuleDir) {
    refuse(row, "address starts with '" + std::string(kStackModuleDir) + "/', which is reserved for the stack's module package (tf/modules/" +
                    std::string(kStackModuleDir) + "/)");
  }
  require_segment(row, "version", tree.version);
  require_text(row, "upstream URL", tree.upstream_url);
  if (tree.files.empty()) refuse(row, "the module has no files");
  std::set<std::string> paths;
  for (const auto& file : tree.files) {
    if (auto problem = relative_path_problem(file.path)) refuse(row, "unsafe file path '" + file.path + "' (" + *problem + ")");
    if (file.path.size() > kMaxModulePath) refuse(row, "file path '" + file.path.substr(0, 64) + "…' is too long");
    if ((file.mode & ~0777u) != 0) refuse(row, file.path + ": mode has bits other than permissions");
    if (!is_sha256_hex(file.digest)) refuse(row, file.path + ": digest '" + file.digest + "' is not 64 lower-case hex digits");
    if (!paths.insert(file.path).second) refuse(row, "file " + file.path + " is listed twice");
  }
  for (const auto& path : paths) {
    for (auto slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      if (paths.count(path.substr(0, slash))) {
        refuse(row, "'" + path.substr(0, slash) + "' is both a file and a directory (of " + path + ")");
      }
    }
  }
}

void check_selected_provider(const TfSelection::Provider& provider) {
  const std::string row = "selected provider " + provider.address + " " + provider.version;
  if (auto problem = provider_address_problem(provider.address)) refuse(row, "address: " + *problem);
  require_canonical_version(row, "version", provider.version);
  try {
    (void)lockfile::Constraints::parse(provider.constraints);
  } catch (const Error& error) {
    refuse(row, std::string("constraints: ") + error.what());
  }
}

void check_selection_layout(const TfSelection& selection) {
  const std::string row = "the tf selection";
  if (selection.engine != "tofu" && selection.engine != "terraform") {
    refuse(row, "engine must be tofu or terraform, not '" + selection.engine + "'");
  }
  for (const auto& platform : selection.platforms) require_platform(row, platform);
  std::set<std::string> addresses;
  for (const auto& provider : selection.providers) {
    check_selected_provider(provider);
    if (!addresses.insert(provider.address).second) refuse(row, "provider " + provider.address + " is listed twice");
  }
  if (!selection.module_address.empty()) {
    if (auto problem = relative_path_problem(selection.module_address)) {
      refuse(row, "module address '" + selection.module_address + "' is not a relative path (" + *problem + ")");
    }
  }
  if (!selection.module_version.empty()) require_segment(row, "module version", selection.module_version);
}

}  // namespace podplane::cache
