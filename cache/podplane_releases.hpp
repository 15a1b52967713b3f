#pragma once
// Podplane's own release files kept in the store (docs/tools.md): the tarball, the deb and the
// mirror's OCI image that scripts/package writes, as tool_archive rows of the address
// "podplane", beside a SHA256SUMS the store writes itself (a tool_shasums row), signed, when the
// operator names a release key, by that key (a tool_signature row). No upstream signs them:
// they are trusted through the bundle that carries them, and from a mirror by that signature. Pure functions over names
// and bytes (their offline recheck is cache/recheck.hpp's); errors are podplane::Error naming the file.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace podplane::cache {

// The address of podplane's own release rows (the engines' is "terraform" or "tofu").
inline constexpr std::string_view kPodplaneReleaseAddress = "podplane";

// What one release file is, read from its name as scripts/package writes it.
struct PodplaneReleaseFile {
  enum class Form {
    tarball,    // podplane-<v>-<os>-<arch>.tar.gz: the self-contained tree
    deb,        // podplane_<v>_<arch>.deb (Linux only: platform linux_<arch>)
    oci_image,  // podplane-mirror-<v>-<os>-<arch>.oci.tar
  };
  Form form = Form::tarball;
  std::string version;   // canonical: 0.1.0
  std::string platform;  // os_arch: linux_amd64
};

// The release file `filename` names, or nullopt when it is none of the three forms (or its
// version is not canonical, or its platform not os-arch of [a-z0-9]).
[[nodiscard]] std::optional<PodplaneReleaseFile> parse_podplane_release_name(std::string_view filename);

// "podplane-0.1.0-linux-amd64.tar.gz" for linux_amd64.
[[nodiscard]] std::string podplane_tarball_name(std::string_view version, std::string_view platform);
// "podplane_0.1.0_SHA256SUMS", shaped like the engines' so that /tools/<name>/<v>/ reads alike.
[[nodiscard]] std::string podplane_shasums_name(std::string_view version);
// "podplane_0.1.0_SHA256SUMS.sig": the site's release key's signature of it (`deps tools
// --podplane-release DIR --sign KEY`), an Ed25519 signature block (base/ed25519.hpp
// DetachedSignature) that `tools install podplane --from` checks against its --trust keys.
[[nodiscard]] std::string podplane_signature_name(std::string_view version);
// The SHA256SUMS the store writes for a release: "<sha256>  <filename>\n" by filename, as
// sha256sum(1) writes and checks it. `digests`: filename -> lower-case hex.
[[nodiscard]] std::string podplane_shasums_document(const std::map<std::string, std::string>& digests);

}  // namespace podplane::cache
