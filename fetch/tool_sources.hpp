#pragma once
// Where `tools install` takes a release file from (docs/tools.md), for the engines' zips and
// podplane's tarballs alike: the local store (the row's object, its bytes hashed again), or a
// site's `mirror serve` / `mirror export` at <base>/tools/<name>/<version>/ (each file fetched and
// checked against the sha256 its release's SHA256SUMS lists). What vouches for that SHA256SUMS
// is the caller's: a pinned release key for the engines, the bundle for podplane.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "cache/store.hpp"
#include "net/http.hpp"

namespace podplane::fetch {

// The object of `row` (a tool_archive row the store was asked for, nullopt when it has none),
// rehashed. An Error names `filename`, and says `how_to_get_it`, when the store lacks it.
[[nodiscard]] std::filesystem::path stored_tool_file(const cache::Store& store, const std::optional<cache::Artifact>& row,
                                                     const std::string& filename, const std::string& how_to_get_it);

// A release directory on a site mirror, ending in '/': <base>/tools/<name>/<version>/.
[[nodiscard]] std::string mirror_tool_dir(const std::string& base_url, std::string_view name, const std::string& version);

// One small document of that directory (a SHA256SUMS or its signature); anything but a 200 is
// an Error naming it.
[[nodiscard]] std::string fetch_tool_document(net::HttpClient& http, const std::string& dir, const std::string& name);

// `dir` + `filename` downloaded to `scratch`/`filename`, which is returned once its bytes, hashed
// as they streamed to disk, have `sha256` (hex); a mismatch is an Error naming the file.
[[nodiscard]] std::filesystem::path fetch_tool_file(const net::HttpOptions& http, const std::string& dir, const std::string& filename,
                                                    const std::string& sha256, const std::filesystem::path& scratch);

}  // namespace podplane::fetch
