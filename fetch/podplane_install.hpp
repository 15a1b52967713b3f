#pragma once
// `podplane tools install podplane V --to DIR`: podplane itself put in place offline
// (docs/tools.md), unpacked from its release tarball, which the local store holds or a site's
// `mirror serve` / `mirror export` serves at /tools/podplane/<version>/. From a URL, the
// release's SHA256SUMS must carry a signature by one of the --trust release keys (unsigned only
// with --allow-unsigned-release). The tarball's sha256
// is checked against the release's SHA256SUMS (and the store row) before anything is written
// under DIR; it unpacks by the rules every archive from outside is read by
// (fetch/module_archive.hpp) into a temp dir under DIR, renamed into place only when whole.
// Errors: podplane::Error naming the file; on error nothing of the run is left under DIR.
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cache/store.hpp"
#include "net/http_options.hpp"

namespace podplane::fetch {

enum class UnsignedReleases { refuse, allow };

struct PodplaneInstallOptions {
  std::string version;       // canonical
  std::string platform;      // os_arch
  std::filesystem::path to;  // the directory the release tree goes into (created when missing)
  std::string from_url;      // a site mirror's base URL; empty: the local store
  net::HttpOptions http;
  // --trust: the release keys (Ed25519 PEM public keys) one of which must have signed the
  // release's SHA256SUMS that from_url serves (podplane_<v>_SHA256SUMS.sig).
  std::vector<std::filesystem::path> trusted_keys;
  // --allow-unsigned-release: take a release from_url serves without a signature (its
  // SHA256SUMS then vouches only for what the same server says).
  UnsignedReleases unsigned_releases = UnsignedReleases::refuse;
};

// Installs DIR/podplane-<v>-<os>-<arch>/ (refused when it exists) and returns the path of its
// bin/podplane. `store` is read only when from_url is empty (it may be null otherwise).
std::filesystem::path install_podplane(const cache::Store* store, const PodplaneInstallOptions& options, std::ostream& out);

}  // namespace podplane::fetch
