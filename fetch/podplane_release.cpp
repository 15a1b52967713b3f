#include "fetch/podplane_release.hpp"

#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/digest.hpp"
#include "base/error.hpp"
#include "cache/podplane_releases.hpp"

namespace podplane::fetch {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ReleaseFile {
  fs::path path;
  cache::PodplaneReleaseFile release;
  std::string digest;  // filled once hashed
};

// The release files of `dir` by name; every entry must be one, all of one version.
std::map<std::string, ReleaseFile> read_release_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("--podplane-release " + dir.string() + ": not a directory");
  std::map<std::string, ReleaseFile> files;
  std::vector<std::string> unknown;
  std::map<std::string, std::vector<std::string>> by_version;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    auto release = cache::parse_podplane_release_name(name);
    if (!release || !entry.is_regular_file()) {
      unknown.push_back(name);
      continue;
    }
    by_version[release->version].push_back(name);
    files[name] = ReleaseFile{entry.path(), *release, ""};
  }
  if (!unknown.empty()) {
    std::string message = dir.string() + " holds what is not a podplane release file (podplane-<version>-<os>-<arch>.tar.gz, "
                                         "podplane_<version>_<arch>.deb, podplane-mirror-<version>-<os>-<arch>.oci.tar):";
    for (const auto& name : unknown) message += "\n  " + name;
    throw Error(message);
  }
  if (files.empty()) throw Error(dir.string() + " holds no podplane release file");
  if (by_version.size() > 1) {
    std::string message = dir.string() + " holds release files of " + std::to_string(by_version.size()) +
                          " podplane versions; give a directory of one version:";
    for (const auto& [version, names] : by_version) {
      message += "\n  " + version + ":";
      for (const auto& name : names) message += " " + name;
    }
    throw Error(message);
  }
  return files;
}

cache::Artifact release_row(cache::ArtifactKind kind, const std::string& version, const std::string& platform,
                            const std::string& filename, const std::string& digest, std::uintmax_t size) {
  cache::Artifact row;
  row.kind = kind;
  row.address = std::string(cache::kPodplaneReleaseAddress);
  row.version = version;
  row.platform = platform;
  row.filename = filename;
  row.digest = digest;
  row.size = static_cast<std::int64_t>(size);
  // Taken from the operator's directory on the operator's word (the flag): no upstream signs
  // them; the bundle's signature vouches for them across the air gap.
  row.trust = cache::Trust::unverified;
  return row;
}

// The release key's signature of `sums` as a row to index (its object added), or nullopt when
// the store holds that key's signature already. Error: signed by another key already.
std::optional<cache::Artifact> release_signature_row(cache::Store& store, const std::string& version, const std::string& sums,
                                                     const ed25519::SigningKey& key) {
  const std::string name = cache::podplane_signature_name(version);
  const std::string address(cache::kPodplaneReleaseAddress);
  if (auto stored = store.find_artifact(cache::ArtifactKind::tool_signature, address, version, "", name)) {
    auto signature = ed25519::DetachedSignature::parse(store.read_object(stored->digest), "the stored " + name);
    if (signature.key_id == key.public_key().key_id()) return std::nullopt;
    throw Error(mismatch_message("podplane " + version + " is signed already by another release key; a release keeps its signature",
                                 signature.key_id, key.public_key().key_id()));
  }
  const std::string block = ed25519::DetachedSignature::make(key, sums).serialize();
  return release_row(cache::ArtifactKind::tool_signature, version, "", name, store.add_bytes(block), block.size());
}

}  // namespace

PodplaneReleaseResult add_podplane_release(cache::Store& store, const fs::path& dir, std::ostream& out,
                                           const ed25519::SigningKey* release_key) {
  auto files = read_release_dir(dir);
  PodplaneReleaseResult result;
  result.version = files.begin()->second.release.version;
  const std::string& version = result.version;
  const std::string address(cache::kPodplaneReleaseAddress);
  const std::string sums_name = cache::podplane_shasums_name(version);
  for (auto& [name, file] : files) file.digest = file_digest_hex(file.path);

  // A stored release keeps the files its SHA256SUMS lists, the same bytes: it is written once.
  std::map<std::string, cache::Artifact> stored;
  for (auto& row : store.artifacts({.kind = cache::ArtifactKind::tool_archive, .address = address, .version = version}))
    stored.emplace(row.filename, std::move(row));
  if (!stored.empty()) {
    for (const auto& [name, file] : files) {
      auto row = stored.find(name);
      if (row == stored.end()) {
        std::string listed;
        for (const auto& [filename, _] : stored) listed += "\n  " + filename;
        throw Error("podplane " + version + " is stored already, and its " + sums_name + " lists no " + name +
                    "; a stored release keeps the files it was added with:" + listed);
      }
      if (row->second.digest != file.digest) {
        throw Error(mismatch_message(file.path.string() + " is not the podplane " + version + " release file the store holds",
                                     row->second.digest, file.digest));
      }
    }
    // Objects a repair quarantined come back from the same bytes; the rows stay as they are.
    std::size_t restored = 0;
    for (const auto& [name, file] : files) {
      if (store.has_object(file.digest)) continue;
      (void)store.add_file(file.path, file.digest);
      ++restored;
    }
    if (auto sums = store.find_artifact(cache::ArtifactKind::tool_shasums, address, version, "", sums_name);
        sums && !store.has_object(sums->digest)) {
      std::map<std::string, std::string> digests;
      for (const auto& [filename, row] : stored) digests[filename] = row.digest;
      (void)store.add_bytes(cache::podplane_shasums_document(digests), sums->digest);
      ++restored;
    }
    result.present = files.size();
    out << "podplane " << version << ": up to date (" << stored.size() << " file(s) stored"
        << (restored == 0 ? std::string() : ", " + std::to_string(restored) + " object(s) put back") << ")\n";
    if (release_key) {
      std::map<std::string, std::string> digests;
      for (const auto& [filename, row] : stored) digests[filename] = row.digest;
      if (auto signature = release_signature_row(store, version, cache::podplane_shasums_document(digests), *release_key)) {
        store.in_transaction([&] { (void)store.add_artifact(*signature); });
        out << "podplane " << version << ": signed " << sums_name << " with " << release_key->public_key().key_id() << "\n";
      }
    }
    return result;
  }

  std::vector<fs::path> paths;
  std::map<std::string, std::string> digests;
  for (const auto& [name, file] : files) {
    paths.push_back(file.path);
    digests[name] = file.digest;
  }
  // Hashed again as they stream into the store: a file changed since is refused.
  auto added = store.add_files(paths);
  std::size_t i = 0;
  for (const auto& [name, file] : files) {
    if (added[i] != file.digest) throw Error(mismatch_message(file.path.string() + " changed while it was added", file.digest, added[i]));
    ++i;
  }
  const std::string sums = cache::podplane_shasums_document(digests);
  const std::string sums_digest = store.add_bytes(sums);
  auto signature = release_key ? release_signature_row(store, version, sums, *release_key) : std::nullopt;
  store.in_transaction([&] {
    if (signature) (void)store.add_artifact(*signature);
    (void)store.add_artifact(
        release_row(cache::ArtifactKind::tool_shasums, version, "", sums_name, sums_digest, sums.size()));
    for (const auto& [name, file] : files) {
      (void)store.add_artifact(release_row(cache::ArtifactKind::tool_archive, version, file.release.platform, name, file.digest,
                                           fs::file_size(file.path)));
    }
    json names = json::array();
    for (const auto& [name, file] : files) names.push_back(name);
    store.audit("fetch", "deps tools --podplane-release", json{{"version", version}, {"added", names}});
  });
  for (const auto& [name, file] : files) {
    out << "podplane " << version << " " << file.release.platform << ": added " << name << " (sha256:" << file.digest << ")\n";
    ++result.added;
  }
  out << "podplane " << version << ": wrote " << sums_name << " listing " << files.size() << " file(s)"
      << (signature ? ", signed with " + release_key->public_key().key_id() : std::string()) << "\n";
  return result;
}

}  // namespace podplane::fetch
