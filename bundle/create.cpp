#include "bundle/create.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/digest.hpp"
#include "base/durable_write.hpp"
#include "base/error.hpp"
#include "base/human_bytes.hpp"
#include "base/remove_on_signal.hpp"
#include "base/unique_fd.hpp"
#include "bundle/archive_io.hpp"
#include "bundle/signing.hpp"
#include "cache/kinds.hpp"
#include "cache/prune.hpp"

namespace podplane::bundle {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Within a release, the order of the table (cache/kinds.hpp bundle_rank): upstream documents first,
// then the packages they vouch for, so that one provider release usually lands in one volume
// together with its provenance.
int kind_rank(const cache::Artifact& artifact) { return cache::kind_info(artifact).bundle_rank; }

std::uint64_t statvfs_free(const fs::path& dir) {
  struct statvfs info {};
  if (::statvfs(dir.c_str(), &info) != 0) throw Error("cannot query free space of " + dir.string() + ": " + std::strerror(errno));
  return static_cast<std::uint64_t>(info.f_bavail) * info.f_frsize;
}

struct Row {
  enum class Type { artifact, module } type;
  std::size_t index;                  // into the artifact or module list
  std::vector<std::string> objects;   // objects of this row that travel
  std::size_t json_bytes = 0;         // its share of a manifest (upper bound)
};

// The bytes of the receiver's inventory file at `path`, with an Error that says how to make
// one where it is missing.
std::string read_inventory_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    // The first bundle of a site has no inventory to start from: say how to make it.
    throw Error("inventory " + path.string() +
                " does not exist; for a first bundle leave --since out (it then carries the whole store), and "
                "from then on pass the file `podplane bundle inventory -o FILE` writes on the other side");
  }
  if (!fs::is_regular_file(path, ec)) throw Error("inventory " + path.string() + " is not a readable file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw Error("cannot open inventory " + path.string() + ": " + std::strerror(errno));
  std::string bytes;
  char buffer[65536];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) bytes.append(buffer, n);
  std::fclose(f);
  return bytes;
}

// The objects of one volume and the rows they bring, with the bytes they take so far.
struct Packing {
  std::vector<std::size_t> objects;
  std::set<std::size_t> rows;
  std::uint64_t manifest_bytes = 0;
  std::uint64_t object_entries = 0;
  std::uint64_t total(std::uint64_t signature) const {
    return detail::tar_entry_bytes(manifest_bytes) + signature + object_entries + detail::kTarEndBytes;
  }
};

// One plan: the receiver's inventory → rows that travel, in a stable order → those the
// receiver lacks → their objects → the manifest every volume shares → objects packed into
// volumes → each volume's final manifest, signed. Each phase leaves its results in members
// the next one reads.
class BundlePlanner {
 public:
  BundlePlanner(const cache::Store& store, const CreateOptions& options) : store_(store), options_(options) {}

  BundlePlan plan(const fs::path& file) {
    if (options_.since) read_since(*options_.since);
    for (const auto& platform : options_.platforms) {
      check_safe_name("platform", platform);
      platforms_.insert(platform);
    }
    if (options_.signing_key) key_ = SigningKey::load(*options_.signing_key, options_.pkcs11_module);
    gather_rows();
    choose_rows();
    count_older_than_receiver();
    list_objects();
    make_base_manifest();
    pack_volumes();
    plan_volumes(file);
    plan_.file = file;
    plan_.signed_bundle = key_.has_value();
    if (key_) plan_.signer = key_->public_key().key_id();
    return std::move(plan_);
  }

 private:
  void read_since(const fs::path& path) {
    std::string bytes = read_inventory_file(path);
    try {
      inventory_ = Inventory::parse(bytes);
    } catch (const Error& e) {
      throw Error("cannot use inventory " + path.string() + ": " + e.what());
    }
    since_ = SinceInventory{sha256_hex(bytes), inventory_->store_id, inventory_->generation};
  }

  // ---- 1. rows that travel, in a stable order ---------------------------------------------
  void gather_rows() {
    for (auto& artifact : store_.artifacts()) {
      newest_ = std::max(newest_, artifact.added_at);
      const auto& kind = cache::kind_info(artifact);
      if (kind.bundle_platforms == cache::BundlePlatforms::selected_platforms && !platforms_.empty() &&
          !platforms_.count(artifact.platform))
        continue;
      if (!wanted(*kind.family, artifact.address, artifact.version)) continue;
      TravellingArtifact travelling{artifact, store_.provenance_of(artifact.id)};
      travelling.artifact.id = 0;
      for (auto& p : travelling.provenance) p.artifact_id = 0;
      std::sort(travelling.provenance.begin(), travelling.provenance.end(), [](const auto& a, const auto& b) {
        return std::tie(a.shasums_digest, a.signature_digest, a.keys_digest, a.key_fingerprint, a.result, a.checked_at) <
               std::tie(b.shasums_digest, b.signature_digest, b.keys_digest, b.key_fingerprint, b.result, b.checked_at);
      });
      artifacts_.push_back(std::move(travelling));
    }
    for (auto& tree : store_.module_trees()) {
      if (!wanted(*cache::kModuleTrees.family, tree.address, tree.version)) continue;
      newest_ = std::max(newest_, tree.added_at);
      tree.id = 0;
      std::sort(tree.files.begin(), tree.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
      trees_.push_back(std::move(tree));
    }
    std::sort(artifacts_.begin(), artifacts_.end(), [](const TravellingArtifact& x, const TravellingArtifact& y) {
      const auto& a = x.artifact;
      const auto& b = y.artifact;
      return std::make_tuple(a.address, a.version, kind_rank(a), a.platform, a.filename) <
             std::make_tuple(b.address, b.version, kind_rank(b), b.platform, b.filename);
    });
    std::sort(trees_.begin(), trees_.end(),
              [](const auto& a, const auto& b) { return std::tie(a.address, a.version) < std::tie(b.address, b.version); });
  }

  // Whether an item travels: every one, unless --for-root named the ones that do.
  bool wanted(cache::ItemFamily family, const std::string& name, const std::string& version) const {
    if (!options_.only) return true;
    return std::any_of(options_.only->begin(), options_.only->end(), [&](const cache::ItemPin& pin) {
      return pin.family == family && pin.name == name && pin.version == version;
    });
  }

  // A row travels unless the receiver lists it and holds all of its objects; those it holds
  // stay behind. `keep` adds the row to its kept list and returns the index there.
  template <typename Keep>
  void consider(Row::Type type, std::vector<std::string> objects, const std::string& id, Keep&& keep) {
    bool row_known = inventory_ && inventory_->rows.count(id);
    std::vector<std::string> travelling_objects;
    for (auto& d : objects)
      if (!inventory_ || !inventory_->objects.count(d)) travelling_objects.push_back(std::move(d));
    if (row_known && travelling_objects.empty()) return;
    std::sort(travelling_objects.begin(), travelling_objects.end());
    travelling_objects.erase(std::unique(travelling_objects.begin(), travelling_objects.end()), travelling_objects.end());
    rows_.push_back(Row{type, keep(), std::move(travelling_objects), 0});
  }

  // The receiver's newest version of each name, from the rows its inventory lists.
  void received(cache::ItemFamily family, const std::string& name, const std::string& version) {
    auto& newest_there = receiver_newest_[{family, name}];
    if (newest_there.empty() || cache::older_version(newest_there, version)) newest_there = version;
  }

  void choose_rows() {
    for (auto& a : artifacts_) {
      const std::string id = row_id(a.artifact, a.provenance);
      if (auto family = *cache::kind_info(a.artifact).family; cache::own_family(family) && inventory_ && inventory_->rows.count(id))
        received(family, a.artifact.address, a.artifact.version);
      consider(Row::Type::artifact, objects_of(a), id, [&] {
        kept_artifacts_.push_back(a);
        return kept_artifacts_.size() - 1;
      });
    }
    for (auto& t : trees_) {
      const std::string id = row_id(t);
      if (inventory_ && inventory_->rows.count(id)) received(*cache::kModuleTrees.family, t.address, t.version);
      consider(Row::Type::module, objects_of(t), id, [&] {
        kept_trees_.push_back(t);
        return kept_trees_.size() - 1;
      });
    }
    plan_.artifacts = kept_artifacts_.size();
    plan_.module_trees = kept_trees_.size();
  }

  void count_older_than_receiver() {
    std::set<std::tuple<cache::ItemFamily, std::string, std::string>> older;
    auto count_older = [&](cache::ItemFamily family, const std::string& name, const std::string& version, std::int64_t bytes) {
      auto there = receiver_newest_.find({family, name});
      if (there == receiver_newest_.end() || !cache::older_version(version, there->second)) return;
      older.emplace(family, name, version);
      plan_.older_than_receiver_bytes += static_cast<std::uint64_t>(bytes);
    };
    for (const auto& a : kept_artifacts_)
      if (auto family = *cache::kind_info(a.artifact).family; cache::own_family(family))
        count_older(family, a.artifact.address, a.artifact.version, a.artifact.size);
    for (const auto& t : kept_trees_) {
      std::int64_t bytes = 0;
      for (const auto& module_file : t.files) bytes += module_file.size;
      count_older(*cache::kModuleTrees.family, t.address, t.version, bytes);
    }
    plan_.older_than_receiver_items = older.size();
  }

  // ---- 2. objects in first-use order, each stat'ed so that a damaged store stops us here ----
  void list_objects() {
    std::map<std::string, std::size_t> object_index;
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      for (const auto& digest : rows_[r].objects) {
        rows_of_object_[digest].push_back(r);
        if (object_index.count(digest)) continue;
        std::error_code ec;
        fs::path path = store_.object_path(digest);
        auto size = fs::file_size(path, ec);
        if (ec || !store_.has_object(digest))
          throw Error("store object " + digest + " is missing or unreadable (" + path.string() +
                      "); run 'podplane deps verify' and fetch again");
        object_index[digest] = objects_.size();
        objects_.push_back(ManifestObject{digest, size});
        plan_.object_bytes += size;
      }
    }
    plan_.objects = objects_.size();
  }

  // ---- 3. the manifest of a volume --------------------------------------------------------
  // Fixed part + rows without travelling objects (in every volume) + per object its entry and
  // the rows it brings along. Each row's share of a manifest is measured here.
  void make_base_manifest() {
    // A bundle for some roots carries their items, not Podplane's own stack's selection.
    std::optional<cache::TfSelection> selection = options_.only ? std::nullopt : store_.tf_selection();
    if (selection && !platforms_.empty()) {
      std::vector<std::string> kept;
      for (const auto& p : selection->platforms)
        if (platforms_.count(p)) kept.push_back(p);
      selection->platforms = kept;
    }
    base_.tool_version = PODPLANE_VERSION;
    base_.created_at = newest_.empty() ? "1970-01-01T00:00:00Z" : newest_;
    base_.bundle_id = std::string(64, '0');
    base_.since = since_;
    base_.platforms.assign(platforms_.begin(), platforms_.end());
    base_.total_objects = plan_.objects;
    base_.total_bytes = plan_.object_bytes;
    base_.tf_selection = selection;
    if (options_.expires_in) {
      std::time_t now = options_.now ? options_.now() : std::time(nullptr);
      base_.expires_at = utc_timestamp(now + static_cast<std::time_t>(options_.expires_in->count()));
    }
    for (auto& row : rows_) {
      BundleManifest probe;
      if (row.type == Row::Type::artifact) probe.artifacts.push_back(kept_artifacts_[row.index]);
      else probe.module_trees.push_back(kept_trees_[row.index]);
      row.json_bytes = probe.serialize().size();
      if (row.objects.empty()) {
        if (row.type == Row::Type::artifact) base_.artifacts.push_back(kept_artifacts_[row.index]);
        else base_.module_trees.push_back(kept_trees_[row.index]);
      }
    }
  }

  // Bytes object `o` adds to `pack`'s manifest: its line and the rows it brings.
  std::uint64_t growth(const Packing& pack, std::size_t o) {
    std::uint64_t manifest = json{{"digest", objects_[o].digest}, {"size", objects_[o].size}}.dump().size() + 1;
    for (std::size_t r : rows_of_object_[objects_[o].digest])
      if (!pack.rows.count(r)) manifest += rows_[r].json_bytes - empty_manifest_bytes_ + 2;
    return manifest;
  }

  void add(Packing& pack, std::size_t o, std::uint64_t manifest_growth) {
    pack.objects.push_back(o);
    pack.object_entries += detail::tar_entry_bytes(objects_[o].size);
    pack.manifest_bytes += manifest_growth;
    for (std::size_t r : rows_of_object_[objects_[o].digest]) pack.rows.insert(r);
  }

  bool fits(const Packing& pack, std::size_t o, std::uint64_t manifest_growth) const {
    return detail::tar_entry_bytes(pack.manifest_bytes + manifest_growth) + signature_entry_ + pack.object_entries +
               detail::tar_entry_bytes(objects_[o].size) + detail::kTarEndBytes <=
           limit_;
  }

  // Objects in order into volumes, a new one where the next object does not fit, each volume
  // sized by an upper bound of its manifest and signature.
  void pack_volumes() {
    empty_manifest_bytes_ = BundleManifest{}.serialize().size();
    BundleManifest upper = base_;
    upper.volume_index = upper.volume_count = 999;
    const std::uint64_t base_bytes = upper.serialize().size();
    SignatureBlock signature_shape;
    if (key_) {
      signature_shape = SignatureBlock{"ed25519", key_->public_key().raw_hex(), key_->public_key().key_id(), std::string(128, '0')};
    }
    signature_entry_ = detail::tar_entry_bytes(signature_shape.serialize().size());
    limit_ = options_.volume_size.value_or(UINT64_MAX);

    packs_.resize(1);
    packs_.back().manifest_bytes = base_bytes;
    if (packs_.back().total(signature_entry_) > limit_)
      throw UsageError("volume size " + std::to_string(limit_) + " bytes cannot even hold the bundle manifest (" +
                       human_bytes(packs_.back().total(signature_entry_)) + ")");
    for (std::size_t o = 0; o < objects_.size(); ++o) {
      std::uint64_t manifest_growth = growth(packs_.back(), o);
      if (fits(packs_.back(), o, manifest_growth)) {
        add(packs_.back(), o, manifest_growth);
        continue;
      }
      Packing fresh;
      fresh.manifest_bytes = base_bytes;
      manifest_growth = growth(fresh, o);
      if (!fits(fresh, o, manifest_growth))
        throw UsageError("volume size " + std::to_string(limit_) + " bytes is too small for object " + objects_[o].digest +
                         " (" + human_bytes(objects_[o].size) + ") and its manifest; choose a larger --volume-size");
      add(fresh, o, manifest_growth);
      if (packs_.back().objects.empty()) packs_.back() = std::move(fresh);
      else packs_.push_back(std::move(fresh));
    }
    if (packs_.size() > 999)
      throw UsageError("the bundle would need " + std::to_string(packs_.size()) +
                       " volumes (at most 999); choose a larger --volume-size");
  }

  // ---- 4. final manifests: the bundle id ties the volumes together ------------------------
  void plan_volumes(const fs::path& file) {
    json id_source = json::array();
    for (const auto& pack : packs_) {
      json list = json::array();
      for (std::size_t o : pack.objects) list.push_back(objects_[o].digest);
      id_source.push_back(list);
    }
    id_source.push_back(since_ ? since_->inventory_digest : "");
    const std::string bundle_id = sha256_hex(id_source.dump());
    const int count = static_cast<int>(packs_.size());
    for (int v = 0; v < count; ++v) {
      VolumePlan volume = plan_volume(packs_[static_cast<std::size_t>(v)], bundle_id, v + 1, count);
      volume.file = volume_file(file, v + 1, count);
      plan_.total_bytes += volume.bytes;
      plan_.volumes.push_back(std::move(volume));
    }
  }

  VolumePlan plan_volume(const Packing& pack, const std::string& bundle_id, int index, int count) {
    VolumePlan volume;
    volume.manifest = base_;
    volume.manifest.bundle_id = bundle_id;
    volume.manifest.volume_index = index;
    volume.manifest.volume_count = count;
    volume.manifest.artifacts.clear();
    volume.manifest.module_trees.clear();
    // Rows in their global order: those without travelling objects plus those this volume feeds.
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      if (!rows_[r].objects.empty() && !pack.rows.count(r)) continue;
      if (rows_[r].type == Row::Type::artifact) volume.manifest.artifacts.push_back(kept_artifacts_[rows_[r].index]);
      else volume.manifest.module_trees.push_back(kept_trees_[rows_[r].index]);
    }
    for (std::size_t o : pack.objects) volume.manifest.objects.push_back(objects_[o]);
    volume.manifest_bytes = volume.manifest.serialize();
    if (volume.manifest_bytes.size() > kManifestLimit)
      throw Error("the manifest of volume " + std::to_string(index) + " would take " +
                  human_bytes(volume.manifest_bytes.size()) + ", more than import reads (" + human_bytes(kManifestLimit) +
                  "): cut a delta with --since, or bundle fewer platforms with --platform");
    SignatureBlock signature;
    if (key_) {
      signature = SignatureBlock{"ed25519", key_->public_key().raw_hex(), key_->public_key().key_id(),
                                 key_->sign_hex(volume.manifest_bytes)};
    }
    volume.signature_bytes = signature.serialize();
    volume.bytes = detail::tar_entry_bytes(volume.manifest_bytes.size()) +
                   detail::tar_entry_bytes(volume.signature_bytes.size()) + pack.object_entries + detail::kTarEndBytes;
    if (volume.bytes > limit_)  // the estimate above is an upper bound; this guards it
      throw Error("internal error: volume " + std::to_string(index) + " exceeds the volume size");
    return volume;
  }

  const cache::Store& store_;
  const CreateOptions& options_;
  std::optional<Inventory> inventory_;  // the receiver's, with --since
  std::optional<SinceInventory> since_;
  std::set<std::string> platforms_;
  std::optional<SigningKey> key_;
  std::vector<TravellingArtifact> artifacts_;
  std::vector<cache::ModuleTree> trees_;
  std::string newest_;  // the newest added_at of any row: the bundle's created_at
  std::map<std::pair<cache::ItemFamily, std::string>, std::string> receiver_newest_;
  std::vector<Row> rows_;
  std::vector<TravellingArtifact> kept_artifacts_;
  std::vector<cache::ModuleTree> kept_trees_;
  std::vector<ManifestObject> objects_;
  std::map<std::string, std::vector<std::size_t>> rows_of_object_;
  BundleManifest base_;
  std::size_t empty_manifest_bytes_ = 0;
  std::uint64_t signature_entry_ = 0;
  std::uint64_t limit_ = 0;
  std::vector<Packing> packs_;
  BundlePlan plan_;
};

}  // namespace

std::uint64_t parse_size(std::string_view text) {
  auto bad = [&] {
    return UsageError("invalid size '" + std::string(text) + "': expected a number with an optional K, M, G or T suffix (e.g. 700M, 4G)");
  };
  if (text.empty()) throw bad();
  std::uint64_t multiplier = 1;
  char last = text.back();
  std::string_view digits = text;
  if (!(last >= '0' && last <= '9')) {
    switch (last) {
      case 'K': case 'k': multiplier = 1ULL << 10; break;
      case 'M': case 'm': multiplier = 1ULL << 20; break;
      case 'G': case 'g': multiplier = 1ULL << 30; break;
      case 'T': case 't': multiplier = 1ULL << 40; break;
      default: throw bad();
    }
    digits.remove_suffix(1);
  }
  if (digits.empty() || digits.size() > 15) throw bad();
  std::uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') throw bad();
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value == 0) throw bad();
  if (value > std::numeric_limits<std::uint64_t>::max() / multiplier)
    throw UsageError("invalid size '" + std::string(text) + "': too large");
  return value * multiplier;
}

std::chrono::seconds parse_duration(std::string_view text) {
  auto bad = [&] {
    return UsageError("invalid duration '" + std::string(text) + "': expected a number with a d, h, m or s suffix (e.g. 30d, 12h)");
  };
  if (text.size() < 2) throw bad();
  std::int64_t unit = 0;
  switch (text.back()) {
    case 'd': unit = 86400; break;
    case 'h': unit = 3600; break;
    case 'm': unit = 60; break;
    case 's': unit = 1; break;
    default: throw bad();
  }
  std::string_view digits = text.substr(0, text.size() - 1);
  if (digits.size() > 9) throw bad();  // at most 999 999 999 units: no overflow below
  std::int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') throw bad();
    value = value * 10 + (c - '0');
  }
  if (value == 0) throw bad();
  return std::chrono::seconds(value * unit);
}

std::time_t parse_rfc3339(const std::string& text) {
  auto when = parse_utc_timestamp(text);
  if (!when) throw Error("'" + text + "' is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");
  return *when;
}

fs::path volume_file(const fs::path& file, int index, int count) {
  if (count == 1) return file;
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%03d-of-%03d", index, count);
  return fs::path(file.string() + suffix);
}

Inventory make_inventory(cache::Store& store) {
  Inventory inventory;
  inventory.tool_version = PODPLANE_VERSION;
  inventory.store_id = store.identity();
  std::set<std::string> referenced;
  auto artifacts = store.artifacts();
  for (const auto& artifact : artifacts) {
    TravellingArtifact travelling{artifact, store.provenance_of(artifact.id)};
    inventory.rows.insert(row_id(artifact, travelling.provenance));
    for (auto& d : objects_of(travelling)) referenced.insert(std::move(d));
  }
  auto trees = store.module_trees();
  for (const auto& tree : trees) {
    inventory.rows.insert(row_id(tree));
    for (auto& d : objects_of(tree)) referenced.insert(std::move(d));
  }
  for (const auto& digest : referenced)
    if (store.has_object(digest)) inventory.objects.insert(digest);
  inventory.generation = artifacts.size() + trees.size();
  return inventory;
}

BundlePlan plan_bundle(const cache::Store& store, const fs::path& file, const CreateOptions& options) {
  return BundlePlanner(store, options).plan(file);
}

BundleContents contents_of(const BundlePlan& plan) {
  BundleContents contents;
  if (plan.volumes.empty()) return contents;
  const BundleManifest& first = plan.volumes.front().manifest;
  contents.name = plan.file.filename().string();
  contents.bundle_id = first.bundle_id;
  contents.created_at = first.created_at;
  contents.tool_version = first.tool_version;
  contents.expires_at = first.expires_at;
  contents.since = first.since;
  contents.platforms = first.platforms;
  contents.signer = plan.signer;
  contents.volume_count = first.volume_count;
  contents.total_objects = first.total_objects;
  contents.total_bytes = first.total_bytes;
  contents.tf_selection = first.tf_selection;
  for (const auto& volume : plan.volumes) {
    std::uint64_t object_bytes = 0;
    for (const auto& object : volume.manifest.objects) object_bytes += object.size;
    contents.add(volume.manifest, ContentsVolume{volume.file, volume.manifest.volume_index, volume.manifest.objects.size(),
                                                 object_bytes, volume.bytes});
  }
  return contents;
}

namespace {

// par2's recovery data is the percentage asked of the volumes' bytes; each recovery file also
// repeats the set's descriptions and block checksums (about 20 bytes a block): 2% and 1 MiB cover those.
std::uint64_t parity_bytes_needed(const BundlePlan& plan, const CreateOptions& options) {
  if (!options.parity_percent) return 0;
  return plan.total_bytes / 100 * static_cast<std::uint64_t>(*options.parity_percent + 2) + (1u << 20);
}

// The transfer report takes about 1.4 KiB a row in JSON and HTML together, and a little per
// module file; 2 KiB and 512 B, plus 64 KiB for the rest, are an upper bound.
std::uint64_t report_bytes_needed(const BundlePlan& plan) {
  std::uint64_t module_files = 0;
  for (const auto& volume : plan.volumes)
    for (const auto& tree : volume.manifest.module_trees) module_files += tree.files.size();
  return (plan.artifacts + plan.module_trees) * 2048 + module_files * 512 + (64u << 10);
}

void check_room(const BundlePlan& plan, const CreateOptions& options, const fs::path& dir) {
  const std::uint64_t needed = plan.total_bytes + parity_bytes_needed(plan, options) + report_bytes_needed(plan);
  std::uint64_t free_bytes = options.free_space ? options.free_space(dir) : statvfs_free(dir);
  if (free_bytes < needed)
    // Refused before a byte is written; named like the write's own failure would be (ENOSPC),
    // so that scripts and people looking for a full disk find it.
    throw Error(mismatch_message("not enough free space in " + dir.string() + " for the bundle" +
                                     (options.parity_percent ? std::string(", its parity") : "") + " and its report (" +
                                     std::strerror(ENOSPC) + ")",
                                 std::to_string(needed) + " bytes (" + human_bytes(needed) + ")",
                                 std::to_string(free_bytes) + " bytes free (" + human_bytes(free_bytes) + ")"));
}

// After the volumes: the parity asked (an earlier bundle's of this name removed either way, as
// it describes volumes that were just replaced), then the report, which names the parity.
WrittenBundle write_companions(const BundlePlan& plan, const CreateOptions& options,
                               const std::function<void(const std::string&)>& progress) {
  WrittenBundle written;
  remove_stale_parity(plan.file);
  BundleContents contents = contents_of(plan);
  if (options.parity_percent) {
    std::vector<fs::path> volumes;
    for (const auto& volume : plan.volumes) volumes.push_back(volume.file);
    written.parity = write_parity(plan.file, volumes, *options.parity_percent);
    GivenFiles given{volumes, written.parity.files, {}};
    auto sets = find_parity_sets(given);
    if (sets.size() == 1) {
      written.parity_cover = single_loss_cover(sets.front());
      contents.parity = std::move(sets.front());
    }
    contents.parity_percent = options.parity_percent;
    if (progress)
      progress("wrote " + std::to_string(written.parity.files.size()) + " parity files (" +
               std::to_string(*options.parity_percent) + "%, " + human_bytes(written.parity.bytes) + ")");
  }
  written.report = write_transfer_report(plan.file, contents);
  return written;
}

}  // namespace

WrittenBundle write_bundle(cache::Store& store, const BundlePlan& plan, const CreateOptions& options,
                           const std::function<void(const std::string&)>& progress) {
  if (plan.volumes.empty()) throw Error("empty bundle plan");
  fs::path dir = plan.volumes.front().file.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("target directory " + dir.string() + " does not exist");
  if (options.parity_percent) require_par2("bundle create --parity");
  check_room(plan, options, dir);

  // A volume is a file. A symlink named as one is followed (the link kept); a device or FIFO
  // (`bundle create /dev/null`, run as root) is refused before anything is written, never
  // replaced by a file.
  std::vector<fs::path> targets;
  for (const auto& volume : plan.volumes) {
    targets.push_back(write_target(volume.file));
    struct stat st {};
    if (::stat(targets.back().c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw Error("cannot write bundle volume " + volume.file.string() +
                  ": it exists and is not a regular file (a bundle volume is a file: name a new one)");
  }

  std::vector<char> buffer(1 << 20);
  for (std::size_t v = 0; v < plan.volumes.size(); ++v) {
    const auto& volume = plan.volumes[v];
    const fs::path& target = targets[v];
    fs::path temp = fs::path(target.string() + ".tmp-" + std::to_string(::getpid()));
    RemoveOnSignal remove_temp_on_signal(temp);
    UniqueFd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.get() < 0) throw Error("cannot create " + temp.string() + ": " + std::strerror(errno));
    try {
      detail::ArchiveWriter writer(out.get(), parse_utc_timestamp(volume.manifest.created_at).value_or(0), volume.file.string());
      writer.add_file(kManifestEntry, volume.manifest_bytes);
      writer.add_file(kSignatureEntry, volume.signature_bytes);
      std::uint64_t unsynced = 0;
      for (const auto& object : volume.manifest.objects) {
        fs::path path = store.object_path(object.digest);
        UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (in.get() < 0) throw Error("cannot open store object " + path.string() + ": " + std::strerror(errno));
        ::posix_fadvise(in.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
        writer.begin_file(std::string(kObjectPrefix) + object.digest, object.size);
        std::uint64_t copied = 0;
        while (copied < object.size) {
          ssize_t n = ::read(in.get(), buffer.data(), std::min<std::uint64_t>(buffer.size(), object.size - copied));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) throw Error("store object " + path.string() + " changed size or could not be read while bundling");
          writer.write(buffer.data(), static_cast<std::size_t>(n));
          copied += static_cast<std::uint64_t>(n);
          // Start writeback of what is written so far without waiting for it: the disk works
          // while we copy, and the fsync before the rename finds little left to do.
          unsynced += static_cast<std::uint64_t>(n);
          if (unsynced >= (32u << 20)) {
            ::sync_file_range(out.get(), 0, 0, SYNC_FILE_RANGE_WRITE);
            unsynced = 0;
          }
        }
      }
      writer.close();
      if (::fsync(out.get()) != 0) throw Error("cannot flush " + temp.string() + ": " + std::strerror(errno));
      out.close_checked(temp.string());
      struct stat st {};
      if (::stat(temp.c_str(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) != volume.bytes)
        throw Error(mismatch_message("volume " + volume.file.string() + " came out at an unexpected size",
                                     std::to_string(volume.bytes), std::to_string(st.st_size)));
      if (::rename(temp.c_str(), target.c_str()) != 0)
        throw Error("cannot rename " + temp.string() + " to " + target.string() + ": " + std::strerror(errno));
    } catch (...) {
      ::unlink(temp.c_str());
      throw;
    }
    sync_directory(target.parent_path().empty() ? fs::path(".") : target.parent_path());
    if (progress)
      progress("wrote " + volume.file.string() + " (volume " + std::to_string(volume.manifest.volume_index) + " of " +
               std::to_string(volume.manifest.volume_count) + ", " + std::to_string(volume.manifest.objects.size()) +
               " objects, " + human_bytes(volume.bytes) + ")");
  }
  WrittenBundle written = write_companions(plan, options, progress);
  if (!store.read_only()) {
    json files = json::array();
    for (const auto& v : plan.volumes) files.push_back(v.file.string());
    json parity = json::array();
    for (const auto& f : written.parity.files) parity.push_back(f.string());
    const auto& first = plan.volumes.front().manifest;
    store.audit("bundle-create", plan.volumes.front().file.string(),
                {{"bundle_id", first.bundle_id},
                 {"files", files},
                 {"objects", plan.objects},
                 {"bytes", plan.total_bytes},
                 {"artifacts", plan.artifacts},
                 {"module_trees", plan.module_trees},
                 {"since", first.since ? first.since->inventory_digest : ""},
                 {"platforms", first.platforms},
                 {"signed", plan.signed_bundle},
                 {"parity_percent", options.parity_percent.value_or(0)},
                 {"parity_files", parity},
                 {"report", written.report.cyclonedx.string()}});
  }
  return written;
}

}  // namespace podplane::bundle
