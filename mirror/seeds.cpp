#include "mirror/seeds.hpp"

#include <ctime>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "cache/row_rules.hpp"
#include "base/error.hpp"
#include "base/digest.hpp"

namespace podplane::mirror {

namespace fs = std::filesystem;
using nlohmann::json;

SeedsManifest parse_seeds_manifest(std::string_view bytes, const std::string& source) {
  auto document = json::parse(bytes, nullptr, false);
  if (!document.is_object() || !document.contains("seeds") || !document["seeds"].is_object())
    throw Error(source + ": not a seeds manifest (no \"seeds\" object)");
  const auto& seeds = document["seeds"];
  SeedsManifest manifest;
  manifest.version = seeds.value("version", "");
  if (auto problem = cache::segment_problem(manifest.version)) throw Error(source + ": seeds.version is " + *problem);
  if (!seeds.contains("snapshots") || !seeds["snapshots"].is_object()) throw Error(source + ": seeds.snapshots is not an object");
  for (const auto& [name, entry] : seeds["snapshots"].items()) {
    std::string where = source + ": seed snapshot " + name;
    if (auto problem = cache::segment_problem(name)) throw Error(where + ": the name is " + *problem);
    if (!entry.is_object()) throw Error(where + " is not an object");
    SeedSnapshot snapshot;
    snapshot.name = name;
    snapshot.url = entry.value("url", "");
    if (snapshot.url.empty())
      throw Error(where + " has no url (a local \"path\" works only for a seeds manifest read from disk, which deps download does not do)");
    snapshot.digest = entry.value("digest", "");
    if (snapshot.digest.rfind("sha512:", 0) != 0)
      throw Error(where + ": unsupported digest \"" + snapshot.digest + "\" (supported: sha512)");
    try {
      (void)TypedDigest::parse(snapshot.digest);
    } catch (const Error& error) {
      throw Error(where + ": " + error.what());
    }
    if (!entry.contains("size") || !entry["size"].is_number_integer() || entry["size"].get<std::int64_t>() <= 0)
      throw Error(where + " is missing size");
    snapshot.size = entry["size"].get<std::uint64_t>();
    snapshot.filename = url_file_name(snapshot.url);
    if (snapshot.filename.empty()) snapshot.filename = name + ".netsy";
    if (auto problem = cache::segment_problem(snapshot.filename)) throw Error(where + ": its file name is " + *problem);
    manifest.snapshots.push_back(std::move(snapshot));
  }
  return manifest;
}

void check_seed_digest(const fs::path& file, const std::string& expected) {
  std::string got = "sha512:" + file_digest_hex(file, DigestAlgorithm::sha512);
  if (got != expected) throw Error("podplane seed file digest is " + got + ", want " + expected);
}

SeedsFetch fetch_seeds(cache::Store& store, HttpClient& http, Downloader& downloader, const std::string& base,
                       const fs::path& scratch, SeedsMode mode) {
  SeedsFetch result;
  std::string url = base + "/manifests/seeds.json";
  auto response = http.get(url, {"Accept: application/json"});
  if (response.status == 404) throw Error("file not found: " + redact_url(url) + " (pass --skip-seeds to go without seeds)");
  if (response.status != 200) throw Error("cannot fetch " + redact_url(url) + ": " + response.status_text());
  auto manifest = parse_seeds_manifest(response.body, "seeds.json");

  struct Missing {
    const SeedSnapshot* snapshot;
    std::string view;
  };
  std::vector<Missing> missing;
  for (const auto& snapshot : manifest.snapshots) {
    std::string view = "seeds/snapshots/" + snapshot.name + "/" + manifest.version + "/" + snapshot.filename;
    auto stored = store.find_artifact(cache::ArtifactKind::seed_snapshot, snapshot.name, manifest.version, "", snapshot.filename);
    if (stored && stored->upstream_digest == snapshot.digest && store.has_object(stored->digest)) continue;
    result.missing.push_back(view);
    missing.push_back({&snapshot, view});
  }
  if (mode == SeedsMode::list_only) return result;
  // All snapshots in one parallel run, each to its own scratch file, checked, then added.
  std::vector<DownloadItem> items;
  std::vector<fs::path> files;
  for (const auto& [snapshot, view] : missing) {
    items.push_back(DownloadItem{snapshot->url, std::nullopt, view, {}});
    files.push_back(scratch / ("seed-" + snapshot->name));
  }
  auto outcomes = downloader.fetch_to_files(items, files);
  for (std::size_t i = 0; i < missing.size(); ++i) {
    const auto& snapshot = *missing[i].snapshot;
    const auto& file = files[i];
    try {
      if (!outcomes[i].ok) throw Error(outcomes[i].error);
      check_seed_digest(file, snapshot.digest);
      cache::Artifact row;
      row.kind = cache::ArtifactKind::seed_snapshot;
      row.address = snapshot.name;
      row.version = manifest.version;
      row.filename = snapshot.filename;
      row.size = static_cast<std::int64_t>(fs::file_size(file));
      row.digest = store.add_file(file);
      row.upstream_digest = snapshot.digest;
      row.upstream_url = snapshot.url;
      row.trust = cache::Trust::checksum;
      result.rows.push_back(std::move(row));
      ++result.fetched;
      result.bytes += fs::file_size(file);
    } catch (const Error& error) {
      result.failures.push_back("seed snapshot " + snapshot.name + ": " + error.what());
    }
    std::error_code ec;
    fs::remove(file, ec);
  }

  // seeds.json itself, under Podplane's historical name, when it changed.
  cache::Artifact row;
  row.kind = cache::ArtifactKind::seed_manifest;
  row.address = "seeds";
  row.version = manifest.version;
  row.digest = sha256_hex(response.body);
  row.size = static_cast<std::int64_t>(response.body.size());
  row.upstream_url = url;
  row.trust = cache::Trust::unverified;  // published without a signature upstream
  bool known = false;
  for (const auto& stored : store.artifacts({.kind = cache::ArtifactKind::seed_manifest})) known = known || stored.digest == row.digest;
  if (!known) {
    row.filename = "seeds_" + utc_file_stamp(std::time(nullptr)) + "_" + row.digest.substr(0, 12) + ".json";
    (void)store.add_bytes(response.body, row.digest);
    result.rows.push_back(std::move(row));
  }
  return result;
}

}  // namespace podplane::mirror
