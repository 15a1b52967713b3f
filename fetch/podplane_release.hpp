#pragma once
// `podplane deps tools --podplane-release DIR`: podplane's own release files (docs/tools.md),
// the tarball, deb and OCI image scripts/package writes into dist/, added to the store as
// tool_archive rows of the address "podplane" beside a SHA256SUMS the store writes listing
// them (cache/podplane_releases.hpp). One version a run, named by the files. Additive: a
// release the store holds is "up to date". Errors: podplane::Error naming the file.
#include <cstddef>
#include <filesystem>
#include <ostream>
#include <string>

#include "cache/store.hpp"

#include "base/ed25519.hpp"

namespace podplane::fetch {

struct PodplaneReleaseResult {
  std::string version;
  std::size_t added = 0;    // release files indexed this run
  std::size_t present = 0;  // release files the store had already
};

// Reads every entry of `dir`: each must be a regular file named as a release file of one and
// the same version (an Error lists the names it cannot place, or the versions it found). A
// version the store holds keeps the files its SHA256SUMS lists: a file of another digest, or
// one it does not list, is an Error. Indexes all rows at once, at the end. With `release_key`
// (deps tools --sign), the release's SHA256SUMS is signed with it and the signature stored
// beside it (podplane_<v>_SHA256SUMS.sig), a stored release too when it has none yet; one
// signed by another key already is an Error (a release keeps its signature).
PodplaneReleaseResult add_podplane_release(cache::Store& store, const std::filesystem::path& dir, std::ostream& out,
                                           const ed25519::SigningKey* release_key = nullptr);

}  // namespace podplane::fetch
