#include "cache/prune.hpp"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cache/gc.hpp"
#include "cache/row_rules.hpp"
#include "cache/store_impl.hpp"
#include "cache/views.hpp"
#include "lockfile/lock_file.hpp"
#include "lockfile/version.hpp"

namespace podplane::cache {

namespace fs = std::filesystem;

std::size_t PrunePlan::removed_items() const {
  return static_cast<std::size_t>(std::count_if(items.begin(), items.end(), [](const StoreItem& i) { return i.kept_because.empty(); }));
}

namespace {

using ItemKey = std::tuple<ItemFamily, std::string, std::string, std::string>;  // family, name, version, platform

// Everything the plan reads of the index, held small: one entry per row (no row's text
// beyond its key), so that a store of 50,000 objects plans in a few MiB.
class Inventory {
 public:
  struct Row {
    std::int64_t id;
    std::uint32_t item;
    std::string digest;
  };
  struct Manifest {  // a vmconfig_manifest row: what it lists is read from its object
    std::uint32_t item;
    std::string digest, platform;
  };

  std::vector<StoreItem> items;
  std::vector<std::int64_t> newest_id;        // per item: its newest row (by index order)
  std::vector<Row> artifacts;                 // by id
  std::map<std::int64_t, std::uint32_t> trees;  // module tree id → item
  std::vector<Manifest> manifests;
  std::multimap<std::string, std::uint32_t> image_by_digest;    // image index/manifest digest → image item
  std::multimap<std::uint32_t, std::string> manifests_of_image;  // image item → its image manifests' digests
  struct Signature {
    std::uint32_t item;
    std::string signed_digest;    // the image index or manifest it signs ("sha256:<hex>" of its tag)
    std::string manifest_digest;  // the signature manifest's own digest (its blobs' version)
  };
  std::vector<Signature> signatures;

  std::uint32_t item(ItemKey key, std::int64_t id, const std::string& added_at) {
    auto [it, added] = index_.try_emplace(std::move(key), static_cast<std::uint32_t>(items.size()));
    if (added) {
      StoreItem item;
      std::tie(item.family, item.name, item.version, item.platform) = it->first;
      items.push_back(std::move(item));
      newest_id.push_back(id);
    }
    StoreItem& item = items[it->second];
    if (added_at > item.added_at) item.added_at = added_at;
    newest_id[it->second] = std::max(newest_id[it->second], id);
    return it->second;
  }
  std::optional<std::uint32_t> find(const ItemKey& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? std::nullopt : std::optional<std::uint32_t>(it->second);
  }
  const std::map<ItemKey, std::uint32_t>& keys() const { return index_; }

 private:
  std::map<ItemKey, std::uint32_t> index_;
};

Inventory read_inventory(sqlite::Database& db) {
  Inventory inventory;
  sqlite::Statement rows(db, "SELECT id, kind, address, version, platform, filename, digest, size, added_at FROM artifacts ORDER BY id");
  while (rows.step()) {
    const std::int64_t id = rows.integer(0);
    std::string address = rows.text(2), version = rows.text(3), platform = rows.text(4), filename = rows.text(5);
    const KindInfo& kind = kind_info(parse_artifact_kind(rows.text(1)), address);
    const ItemFamily family = *kind.family;
    const bool own = own_family(family);
    // Only what a manifest lists is told apart by platform (two arches' kubelet); a provider's
    // platforms are one item.
    std::string item_platform = own ? "" : platform;
    std::uint32_t item = inventory.item({family, address, version, item_platform}, id, rows.text(8));
    inventory.items[item].rows += 1;
    inventory.items[item].bytes += static_cast<std::uint64_t>(rows.integer(7));
    std::string digest = rows.text(6);
    switch (kind.prune_role) {
      case PruneRole::unset:
      case PruneRole::item: break;
      case PruneRole::lists_needs: inventory.manifests.push_back({item, digest, platform}); break;
      case PruneRole::image_top: inventory.image_by_digest.emplace(filename, item); break;
      case PruneRole::image_manifest:
        inventory.image_by_digest.emplace(filename, item);
        inventory.manifests_of_image.emplace(item, filename);
        break;
      case PruneRole::signs_image:
        // A signature names the digest it signs in its tag; a referrer's version is its subject's digest.
        inventory.signatures.push_back({item, image_attachment_tag(version).value_or(image_digest_problem(version) ? "" : version), filename});
        break;
    }
    inventory.artifacts.push_back({id, item, std::move(digest)});
  }
  sqlite::Statement trees(db,
                          "SELECT t.id, t.address, t.version, t.added_at, count(f.path), coalesce(sum(f.size), 0)"
                          " FROM module_trees t LEFT JOIN module_files f ON f.tree_id = t.id GROUP BY t.id ORDER BY t.id");
  while (trees.step()) {
    std::uint32_t item = inventory.item({ItemFamily::module, trees.text(1), trees.text(2), ""}, trees.integer(0), trees.text(3));
    inventory.items[item].rows += static_cast<std::size_t>(trees.integer(4));
    inventory.items[item].bytes += static_cast<std::uint64_t>(trees.integer(5));
    inventory.trees.emplace(trees.integer(0), item);
  }
  return inventory;
}

std::optional<lockfile::Version> version_of(const std::string& text) {
  std::string_view plain = text;
  if (plain.starts_with('v')) plain.remove_prefix(1);
  try {
    return lockfile::Version::parse(plain);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The items of one name, newest first: by version where every one of them is a version, else
// by when each was added (then by index order, which only grows).
void sort_newest_first(std::vector<std::uint32_t>& group, const Inventory& inventory) {
  bool all_versions = true;
  for (auto item : group) all_versions = all_versions && version_of(inventory.items[item].version).has_value();
  auto by_time = [&](std::uint32_t a, std::uint32_t b) {
    const auto& x = inventory.items[a];
    const auto& y = inventory.items[b];
    if (x.added_at != y.added_at) return x.added_at > y.added_at;
    return inventory.newest_id[a] > inventory.newest_id[b];
  };
  if (!all_versions) {
    std::sort(group.begin(), group.end(), by_time);
    return;
  }
  std::sort(group.begin(), group.end(), [&](std::uint32_t a, std::uint32_t b) {
    auto order = *version_of(inventory.items[a].version) <=> *version_of(inventory.items[b].version);
    if (order != 0) return order > 0;
    return by_time(a, b);
  });
}

}  // namespace

bool older_version(const std::string& a, const std::string& b) {
  auto x = version_of(a), y = version_of(b);
  return x && y && *x < *y;
}

namespace {

std::string describe(const StoreItem& item) {
  std::string text = std::string(to_string(item.family)) + " " + item.name + " " + item.version;
  if (!item.platform.empty()) text += " " + item.platform;
  return text;
}

// What a kept vmconfig manifest needs: the (name, version) of each file it lists (os.image
// and every dependency) and the digests of the images it pins. Only these names are read:
// fetch/vmconfig.cpp owns the whole format, and checked it when the manifest was fetched.
struct ManifestNeeds {
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> image_digests;
};

ManifestNeeds manifest_needs(const Store& store, const std::string& digest, const std::string& label) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(store.read_object(digest));
  } catch (const std::exception& error) {
    throw Error("cannot tell what " + label + " needs, so nothing was pruned: " + error.what() +
                "\n`podplane deps verify` says more; `podplane deps download` takes the manifest again");
  }
  ManifestNeeds needs;
  auto text = [](const nlohmann::json& object, const char* name) {
    auto it = object.find(name);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const auto vmconfig = document.is_object() ? document.value("vmconfig", nlohmann::json::object()) : nlohmann::json::object();
  if (!vmconfig.is_object()) return needs;
  if (auto os = vmconfig.find("os"); os != vmconfig.end() && os->is_object()) {
    if (auto image = os->find("image"); image != os->end() && image->is_object()) needs.files.emplace_back("os-image", text(*image, "version"));
  }
  if (auto deps = vmconfig.find("dependencies"); deps != vmconfig.end() && deps->is_object()) {
    for (const auto& [name, entry] : deps->items())
      if (entry.is_object()) needs.files.emplace_back(name, text(entry, "version"));
  }
  if (auto images = vmconfig.find("images"); images != vmconfig.end() && images->is_array()) {
    for (const auto& entry : *images) {
      if (!entry.is_object()) continue;
      for (const char* field : {"digest", "index"})
        if (auto value = text(entry, field); !value.empty()) needs.image_digests.push_back(value);
    }
  }
  return needs;
}

// Marks `item` kept for `reason` unless something kept it already.
void keep(StoreItem& item, const std::string& reason) {
  if (item.kept_because.empty()) item.kept_because = reason;
}

void decide(const Store& store, const PrunePolicy& policy, Inventory& inventory) {
  auto& items = inventory.items;
  // 1. The newest N of each name.
  std::map<std::pair<ItemFamily, std::string>, std::vector<std::uint32_t>> groups;
  for (std::uint32_t i = 0; i < items.size(); ++i)
    if (own_family(items[i].family)) groups[{items[i].family, items[i].name}].push_back(i);
  const std::string newest = policy.keep == SIZE_MAX ? "every version kept" : "newest " + std::to_string(policy.keep);
  for (auto& [name, group] : groups) {
    sort_newest_first(group, inventory);
    for (std::size_t rank = 0; rank < group.size() && rank < policy.keep; ++rank) keep(items[group[rank]], newest);
  }
  // 2. What someone pins, whatever its age: the pins given, the store's own tf selection, the
  //    manifests and seeds.json its views hold now.
  std::vector<ItemPin> pins = policy.pins;
  if (auto selection = store.tf_selection()) {
    for (const auto& p : selection->providers) pins.push_back({ItemFamily::provider, p.address, p.version, "the tf selection"});
    if (!selection->module_version.empty())
      pins.push_back({ItemFamily::module, selection->module_address, selection->module_version, "the tf selection"});
  }
  for (std::uint32_t i = 0; i < items.size(); ++i) {
    for (const auto& pin : pins) {
      if (items[i].family == pin.family && items[i].version == pin.version && (pin.name.empty() || pin.name == items[i].name))
        keep(items[i], "pinned by " + pin.source);
    }
  }
  std::map<std::pair<ItemFamily, std::string>, std::uint32_t> current;  // the newest row of each name
  for (const auto& m : inventory.manifests) {
    auto [it, added] = current.try_emplace({ItemFamily::vmconfig_manifest, items[m.item].name}, m.item);
    if (inventory.newest_id[m.item] > inventory.newest_id[it->second]) it->second = m.item;
  }
  for (std::uint32_t i = 0; i < items.size(); ++i) {
    if (items[i].family != ItemFamily::seeds) continue;
    auto [it, added] = current.try_emplace({ItemFamily::seeds, ""}, i);
    if (inventory.newest_id[i] > inventory.newest_id[it->second]) it->second = i;
  }
  for (const auto& [name, item] : current) keep(items[item], "current (its view)");
  for (const auto& m : inventory.manifests) {
    for (const auto& [digest, source] : policy.pinned_manifests)
      if (m.digest == digest) keep(items[m.item], "pinned by " + source);
  }
  // 3. --older-than: what was added since is kept, whatever needs it or not.
  if (policy.added_before) {
    for (auto& item : items)
      if (item.added_at >= *policy.added_before) keep(item, "added since " + *policy.added_before);
  }
  // 4. What kept manifests list: their files, boot files and images; then each kept image's blobs.
  for (const auto& m : inventory.manifests) {
    const StoreItem& manifest = items[m.item];
    if (manifest.kept_because.empty()) continue;
    const std::string label = "vmconfig manifest " + manifest.name + " " + manifest.version;
    auto needs = manifest_needs(store, m.digest, label);
    for (const auto& [name, version] : needs.files) {
      for (const auto& platform : {m.platform, std::string()}) {
        for (ItemFamily family : {ItemFamily::vmconfig_artifact, ItemFamily::vmconfig_boot_file}) {
          if (auto item = inventory.find({family, name, version, platform})) keep(items[*item], "needed by " + label);
        }
      }
    }
    for (const auto& digest : needs.image_digests) {
      auto [from, to] = inventory.image_by_digest.equal_range(digest);
      for (auto it = from; it != to; ++it) keep(items[it->second], "needed by " + label);
    }
  }
  for (const auto& [image, manifest_digest] : inventory.manifests_of_image) {
    if (items[image].kept_because.empty()) continue;
    if (auto blobs = inventory.find({ItemFamily::image_blobs, items[image].name, manifest_digest, ""}))
      keep(items[*blobs], "needed by image " + items[image].name + " " + items[image].version);
  }
  // A kept image keeps the cosign signature of its top manifest and its referrers, and they their blobs.
  for (const auto& signature : inventory.signatures) {
    const StoreItem& attachment = items[signature.item];
    auto [from, to] = inventory.image_by_digest.equal_range(signature.signed_digest);
    for (auto it = from; it != to; ++it) {
      const StoreItem& image = items[it->second];
      if (image.kept_because.empty() || image.name != attachment.name) continue;
      keep(items[signature.item], "signature of image " + image.name + " " + image.version);
    }
    if (attachment.kept_because.empty()) continue;
    if (auto blobs = inventory.find({ItemFamily::image_blobs, attachment.name, signature.manifest_digest, ""}))
      keep(items[*blobs], "needed by the signature " + attachment.version);
  }
}

// Counts the indexed objects, and those no kept row names (what the prune frees).
void count_freed(sqlite::Database& db, const Inventory& inventory, PrunePlan& plan) {
  std::vector<std::string> kept;
  kept.reserve(inventory.artifacts.size());
  auto artifact_kept = [&](std::int64_t id) {
    auto it = std::lower_bound(inventory.artifacts.begin(), inventory.artifacts.end(), id,
                               [](const Inventory::Row& row, std::int64_t value) { return row.id < value; });
    return it != inventory.artifacts.end() && it->id == id && !inventory.items[it->item].kept_because.empty();
  };
  for (const auto& row : inventory.artifacts)
    if (!inventory.items[row.item].kept_because.empty()) kept.push_back(row.digest);
  sqlite::Statement provenance(db, "SELECT artifact_id, shasums_digest, signature_digest, keys_digest FROM provenance");
  while (provenance.step()) {
    if (!artifact_kept(provenance.integer(0))) continue;
    for (int column = 1; column <= 3; ++column)
      if (auto digest = provenance.text(column); !digest.empty()) kept.push_back(std::move(digest));
  }
  sqlite::Statement files(db, "SELECT tree_id, digest FROM module_files");
  while (files.step()) {
    auto tree = inventory.trees.find(files.integer(0));
    if (tree != inventory.trees.end() && !inventory.items[tree->second].kept_because.empty()) kept.push_back(files.text(1));
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  sqlite::Statement objects(db, "SELECT digest, size FROM objects");
  while (objects.step()) {
    const auto size = static_cast<std::uint64_t>(objects.integer(1));
    ++plan.objects;
    plan.object_bytes += size;
    if (std::binary_search(kept.begin(), kept.end(), objects.text(0))) continue;
    ++plan.objects_freed;
    plan.bytes_freed += size;
  }
}

struct PlanWithRows {
  PrunePlan plan;
  std::vector<std::int64_t> removed_artifacts, removed_trees;
};

PlanWithRows make_plan(const Store& store, const PrunePolicy& policy) {
  if (policy.keep == 0) throw UsageError("--keep must keep at least the newest version (1 or more)");
  auto& db = const_cast<Store::Impl&>(StoreInternals::of(store)).db;
  PlanWithRows out;
  auto inventory = read_inventory(db);
  decide(store, policy, inventory);
  count_freed(db, inventory, out.plan);
  for (const auto& row : inventory.artifacts)
    if (inventory.items[row.item].kept_because.empty()) out.removed_artifacts.push_back(row.id);
  for (const auto& [id, item] : inventory.trees)
    if (inventory.items[item].kept_because.empty()) out.removed_trees.push_back(id);
  // By family, name, newest version first: the order the user reads them in.
  std::vector<std::uint32_t> order(inventory.items.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::map<std::pair<ItemFamily, std::string>, std::vector<std::uint32_t>> groups;
  for (auto i : order) groups[{inventory.items[i].family, inventory.items[i].name}].push_back(i);
  out.plan.items.reserve(inventory.items.size());
  for (auto& [name, group] : groups) {
    sort_newest_first(group, inventory);
    for (auto i : group) out.plan.items.push_back(std::move(inventory.items[i]));
  }
  return out;
}

// Directories of the view trees that the removed rows' files left empty.
void remove_empty_directories(const std::vector<fs::path>& trees) {
  for (const auto& tree : trees) {
    std::vector<fs::path> directories;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(tree, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_directory(type_ec) && !it->is_symlink(type_ec)) directories.push_back(it->path());
    }
    // Deepest first, so a parent is empty once its children went.
    std::sort(directories.begin(), directories.end(), [](const fs::path& a, const fs::path& b) { return a.native() > b.native(); });
    for (const auto& dir : directories) (void)::rmdir(dir.c_str());
  }
}

}  // namespace

PrunePlan plan_prune(const Store& store, const PrunePolicy& policy) {
  PrunePlan plan;
  // One snapshot of the index: a fill that commits meanwhile is not half seen.
  store.read_snapshot([&] { plan = make_plan(store, policy).plan; });
  return plan;
}

PruneReport prune_store(Store& store, const PrunePolicy& policy, const std::function<void(PruneStep)>& after_step) {
  auto step_done = [&](PruneStep step) {
    if (after_step) after_step(step);
  };
  auto& impl = StoreInternals::of(store);
  impl.require_writable("prune the store");
  ExclusiveStoreLock alone(impl, "prune the store", "deps prune");
  refuse_untrustworthy_index(store, "deps prune");
  PruneReport report;
  PlanWithRows planned = make_plan(store, policy);  // no one else writes: the lock is ours
  report.plan = std::move(planned.plan);
  step_done(PruneStep::planned);

  // 1. The rows, and the audit entry with them: the commit point. A kill before it changed
  //    nothing; after it, the next prune (or gc and verify --repair) finishes the rest.
  nlohmann::json removed = nlohmann::json::array();
  for (const auto& item : report.plan.items)
    if (item.kept_because.empty()) removed.push_back(describe(item));
  impl.transact([&] {
    report.rows_removed = 0;
    sqlite::Statement provenance(impl.db, "DELETE FROM provenance WHERE artifact_id = ?");
    sqlite::Statement artifact(impl.db, "DELETE FROM artifacts WHERE id = ?");
    for (auto id : planned.removed_artifacts) {
      provenance.reset();
      provenance.bind(1, id).run();
      artifact.reset();
      artifact.bind(1, id).run();
      ++report.rows_removed;
    }
    sqlite::Statement files(impl.db, "DELETE FROM module_files WHERE tree_id = ?");
    sqlite::Statement tree(impl.db, "DELETE FROM module_trees WHERE id = ?");
    for (auto id : planned.removed_trees) {
      files.reset();
      files.bind(1, id).run();
      tree.reset();
      tree.bind(1, id).run();
      ++report.rows_removed;
    }
    nlohmann::json detail = {{"keep", policy.keep == SIZE_MAX ? nlohmann::json(nullptr) : nlohmann::json(policy.keep)},
                             {"pins", policy.pins.size() + policy.pinned_manifests.size()},
                             {"items", removed},
                             {"rows", report.rows_removed},
                             {"objects_freed", report.plan.objects_freed},
                             {"bytes_freed", report.plan.bytes_freed}};
    if (policy.added_before) detail["added_before"] = *policy.added_before;
    if (report.rows_removed > 0) store.audit("prune", store.root().string(), detail);
  });
  step_done(PruneStep::rows_removed);

  // 2. The views of the removed rows (derived: rebuilt from the rows that stay).
  {
    auto views = plan_views(store);
    report.removed_views = remove_unplanned_views(views, store.root());
    remove_empty_directories(views.directories);
  }
  (void)rebuild_views(store);
  step_done(PruneStep::views_removed);

  // 3. The objects no row names any more.
  report.gc = remove_garbage(store, DryRun::no);
  return report;
}

std::vector<ItemPin> lock_file_pins(const fs::path& lock_file) {
  auto lock = lockfile::read_lock_file(lock_file);
  std::vector<ItemPin> pins;
  for (const auto& provider : lock.providers)
    pins.push_back({ItemFamily::provider, provider.address, provider.version, "lock " + lock_file.string()});
  return pins;
}

StoreUsage usage_of(const PrunePlan& plan) {
  StoreUsage usage;
  usage.objects = plan.objects;
  usage.object_bytes = plan.object_bytes;
  for (const auto& item : plan.items) {
    const std::string family(to_string(item.family));
    for (UsageTotals* totals : {&usage.by_family[family], &usage.by_name[{family, item.name}]}) {
      ++totals->items;
      totals->rows += item.rows;
      totals->bytes += item.bytes;
    }
  }
  return usage;
}

nlohmann::json to_json(const std::map<std::string, UsageTotals>& by_family) {
  nlohmann::json families = nlohmann::json::object();
  for (const auto& [family, t] : by_family) families[family] = {{"items", t.items}, {"rows", t.rows}, {"bytes", t.bytes}};
  return families;
}

nlohmann::json to_json(const PrunePlan& plan) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& item : plan.items) {
    nlohmann::json entry = {{"family", to_string(item.family)}, {"name", item.name},   {"version", item.version},
                            {"rows", item.rows},                {"bytes", item.bytes}, {"added_at", item.added_at},
                            {"kept", !item.kept_because.empty()}};
    if (!item.platform.empty()) entry["platform"] = item.platform;
    if (!item.kept_because.empty()) entry["kept_because"] = item.kept_because;
    items.push_back(std::move(entry));
  }
  return {{"items", items},
          {"objects", plan.objects},
          {"object_bytes", plan.object_bytes},
          {"removed_items", plan.removed_items()},
          {"objects_freed", plan.objects_freed},
          {"bytes_freed", plan.bytes_freed}};
}

}  // namespace podplane::cache
