#include "fetch/seeds.hpp"

#include <ctime>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/url.hpp"
#include "cache/row_rules.hpp"
#include "base/error.hpp"
#include "base/digest.hpp"

namespace podplane::fetch {

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
    snapshot.filename = url_basename(snapshot.url);
    if (snapshot.filename.empty()) snapshot.filename = name + ".netsy";
    if (auto problem = cache::segment_problem(snapshot.filename)) throw Error(where + ": its file name is " + *problem);
    manifest.snapshots.push_back(std::move(snapshot));
  }
  return manifest;
}

void check_seed_digest(const std::string& got_sha512_hex, const std::string& expected) {
  const std::string got = "sha512:" + got_sha512_hex;
  if (got != expected) throw Error("podplane seed file digest is " + got + ", want " + expected);
}

SeedsDocument fetch_seeds_document(net::HttpClient& http, const std::string& base) {
  SeedsDocument document;
  document.url = base + "/manifests/seeds.json";
  auto response = http.get(document.url, {"Accept: application/json"});
  if (response.status == 404)
    throw Error("file not found: " + net::redact_url(document.url) + " (pass --skip-seeds to go without seeds)");
  if (response.status != 200) throw Error("cannot fetch " + net::redact_url(document.url) + ": " + response.status_text());
  document.bytes = std::move(response.body);
  document.manifest = parse_seeds_manifest(document.bytes, "seeds.json");
  return document;
}

SeedsFetcher::SeedsFetcher(cache::Store& store, SeedsDocument document) : store_(store), document_(std::move(document)) {
  for (const auto& snapshot : document_.manifest.snapshots) {
    std::string view = "seeds/snapshots/" + snapshot.name + "/" + document_.manifest.version + "/" + snapshot.filename;
    auto stored = store_.find_artifact(cache::ArtifactKind::seed_snapshot, snapshot.name, document_.manifest.version, "",
                                       snapshot.filename);
    if (stored && stored->upstream_digest == snapshot.digest && store_.has_object(stored->digest)) continue;
    missing_.push_back(view);
    pending_.push_back({&snapshot, fs::path(), std::nullopt});
  }
}

void SeedsFetcher::start(net::DownloadRun& run, const fs::path& scratch) {
  // Each snapshot to its own scratch file, its sha512 hashed as it streams; checked and added
  // by finish().
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    pending_[i].file = scratch / ("seed-" + pending_[i].snapshot->name);
    net::DownloadItem item{pending_[i].snapshot->url, std::nullopt, missing_[i], {}, pending_[i].snapshot->size};
    item.other_algorithm = DigestAlgorithm::sha512;
    run.add(std::move(item), pending_[i].file, [this, i](const net::DownloadOutcome& outcome) { pending_[i].outcome = outcome; });
  }
}

SeedsFetch SeedsFetcher::finish() {
  SeedsFetch result;
  result.missing = missing_;
  const auto& manifest = document_.manifest;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    const auto& pending = pending_[i];
    const auto& snapshot = *pending.snapshot;
    const auto& file = pending.file;
    try {
      if (!pending.outcome) throw Error("not fetched: the run stopped before it");
      if (!pending.outcome->ok) throw Error(pending.outcome->error);
      check_seed_digest(pending.outcome->other_digest, snapshot.digest);
      // The scratch file becomes the object (named by the sha256 hashed as it streamed).
      cache::ObjectWriter object = store_.adopt_file(file, missing_[i], pending.outcome->digest);
      object.seal(pending.outcome->digest);
      cache::Artifact row;
      row.kind = cache::ArtifactKind::seed_snapshot;
      row.address = snapshot.name;
      row.version = manifest.version;
      row.filename = snapshot.filename;
      row.size = static_cast<std::int64_t>(object.size());
      row.digest = object.publish();
      row.upstream_digest = snapshot.digest;
      row.upstream_url = snapshot.url;
      row.trust = cache::Trust::checksum;
      result.bytes += static_cast<std::uint64_t>(row.size);
      result.rows.push_back(std::move(row));
      ++result.fetched;
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
  row.digest = sha256_hex(document_.bytes);
  row.size = static_cast<std::int64_t>(document_.bytes.size());
  row.upstream_url = document_.url;
  row.trust = cache::Trust::unverified;  // published without a signature upstream
  bool known = false;
  for (const auto& stored : store_.artifacts({.kind = cache::ArtifactKind::seed_manifest})) known = known || stored.digest == row.digest;
  if (!known) {
    row.filename = "seeds_" + utc_file_stamp(std::time(nullptr)) + "_" + row.digest.substr(0, 12) + ".json";
    (void)store_.add_bytes(document_.bytes, row.digest);
    result.rows.push_back(std::move(row));
  }
  return result;
}

}  // namespace podplane::fetch
